"""The same run gives the same report in every process: categories with as many error spans as each other
are ordered by name, not by the order a set of strings happens to have under this process's hash seed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.report.fixtures import build_run

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = '''
import re, sys
from polyjudge.report.html import render
from polyjudge.report.load import load_run
html = render([load_run(sys.argv[1])], n_boot=100).html
sys.stdout.write(re.sub(r"\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d", "TIME", html))
'''


def _render(run: Path, seed: int) -> str:
    env = {**os.environ, "PYTHONHASHSEED": str(seed),
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(run)], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_tied_span_categories_render_the_same_under_every_hash_seed(tmp_path):
    run = build_run(tmp_path, n_runs=1, spans=True)  # two categories with 9 spans each
    pages = [_render(run, seed) for seed in (1, 2, 3, 4, 5)]
    table = re.findall(r"<tr><td>([a-z/]+)</td>(?:<td>\d+</td>)+</tr>", pages[0])
    assert table[:2] == ["accuracy/mistranslation", "style/awkward"]  # 9 spans each: by name
    assert all(page == pages[0] for page in pages[1:])
