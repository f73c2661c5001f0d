"""The suite never reads or fills the user's shared response cache: module-scoped fixtures, which are set up
before a test's own cache exists, get a cache of their module (conftest.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def cache_seen_by_a_module_fixture(tmp_path_factory) -> str | None:
    return os.environ.get("POLYJUDGE_CACHE")


def test_a_module_fixture_judges_in_a_cache_of_the_tests_own(cache_seen_by_a_module_fixture, tmp_path_factory):
    seen = cache_seen_by_a_module_fixture
    assert seen is not None  # unset: the user's own cache (~/.cache/polyjudge)
    assert Path(seen).resolve().is_relative_to(tmp_path_factory.getbasetemp().resolve())
    assert os.environ["POLYJUDGE_CACHE"] != seen  # the test itself has its own again
