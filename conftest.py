"""Root conftest: puts the repository root on sys.path so tests can import
``tests.helpers`` (the scripted OpenAI-compatible server)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


import pytest  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def _session_response_cache(tmp_path_factory):
    """Session-scoped fixtures judge before any module's or test's own cache is set: never in the user's."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("POLYJUDGE_CACHE", str(tmp_path_factory.mktemp("session-response-cache")))
        yield


@pytest.fixture(autouse=True, scope="module")
def _module_response_cache(tmp_path_factory, _session_response_cache):
    """A module-scoped fixture (a module's judged runs) is set up before any test's own cache: it gets its
    module's cache, so it neither reads another module's answers nor fills the user's cache (it once did:
    tests/cli/test_compare_cmd.py found a gemba-esa answer of an earlier CI run there and sent nothing)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("POLYJUDGE_CACHE", str(tmp_path_factory.mktemp("module-response-cache")))
        yield


@pytest.fixture(autouse=True)
def _own_response_cache(tmp_path_factory, monkeypatch, _module_response_cache):
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
