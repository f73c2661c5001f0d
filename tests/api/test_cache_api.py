"""polyjudge.api.cache: the housekeeping calls check their input and never create a cache to prune it."""

import math

import pytest

from polyjudge.api.cache import cache_stats, clear_cache, prune_cache
from polyjudge.cache import CachedAnswer, ResponseCache
from polyjudge.data.errors import InputError


@pytest.mark.parametrize("days", [-1, math.nan, math.inf])
def test_bad_ages_are_input_errors(tmp_path, days):
    with pytest.raises(InputError) as exc:
        prune_cache(tmp_path, older_than_days=days)
    assert exc.value.field == "older-than"


def test_nothing_to_prune_or_clear_creates_nothing(tmp_path):
    assert prune_cache(tmp_path / "none", older_than_days=1).removed == 0
    assert clear_cache(tmp_path / "none") == 0
    assert cache_stats(tmp_path / "none").entries == 0
    assert not (tmp_path / "none").exists()


def test_the_default_folder_is_polyjudge_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("POLYJUDGE_CACHE", str(tmp_path / "env"))
    with ResponseCache(tmp_path / "env") as cache:
        cache.put_many("s", [CachedAnswer("k", "m", "t", "stop")])
    assert cache_stats().entries == 1
    assert prune_cache(max_size="1GiB").entries_left == 1
    assert clear_cache() == 1 and cache_stats().entries == 0
