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


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_extra(*extras, partial=False): the test needs these extras of "
                                       "pyproject (tests/helpers/extras.py); without one it skips naming it")


def pytest_runtest_setup(item):
    """A test marked ``needs_extra`` skips when one of its extras is not installed, naming it and its install."""
    from tests.helpers.extras import skip_if_missing

    skip_if_missing(item)
