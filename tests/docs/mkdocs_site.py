"""Build the documentation site once per test session (``mkdocs build --strict``, as .ci/run does)."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.helpers.extras import skip_reason

ROOT = Path(__file__).resolve().parents[2]


def need_mkdocs() -> None:
    reason = skip_reason("docs")
    if reason is not None:
        pytest.skip(reason)


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of ``config`` into ``site``, with this checkout's code importable."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
                          cwd=config.parent, env=env, capture_output=True, text=True, timeout=600, check=False)


@functools.cache
def built_site() -> Path:
    """The site built from the repository's mkdocs.yml (kept for the session, removed at exit)."""
    need_mkdocs()
    site = Path(tempfile.mkdtemp(prefix="polyjudge-site-")) / "site"
    done = build(ROOT / "mkdocs.yml", site)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    import atexit
    atexit.register(shutil.rmtree, site.parent, True)
    return site
