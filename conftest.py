"""Root conftest: puts the repository root on sys.path so tests can import
``tests.helpers`` (the scripted OpenAI-compatible server)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _own_response_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own shared response cache (POLYJUDGE_CACHE, inherited by subprocesses),
    so no test reads another's answers or fills the user's own cache."""
    monkeypatch.setenv("POLYJUDGE_CACHE", str(tmp_path_factory.mktemp("response-cache")))
