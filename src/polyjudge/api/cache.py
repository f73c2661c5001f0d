"""The machine's shared response cache from Python: what it holds, and keeping it bounded.

Every run that judges reads and fills the cache by itself (``JudgeConfig.use_cache``,
``cache_path``); these are the housekeeping calls behind ``polyjudge cache``.
``path`` is the cache folder (None: ``POLYJUDGE_CACHE``, else the user cache folder).
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from polyjudge.cache import CacheStats, PruneResult, ResponseCache, cache_dir, parse_size, prune
from polyjudge.cache.location import cache_file
from polyjudge.data.errors import InputError


@contextmanager
def _sound(folder: Path, *, readonly: bool = False) -> Iterator[ResponseCache]:
    """The cache in ``folder``, refused when it is damaged (SQLite's quick check), and any database
    error while using it told as the cache's (one line naming the file), never as a run's store."""
    where = cache_file(folder)
    try:
        with ResponseCache(folder, readonly=readonly) as cache:
            problem = cache.problem()
            if problem is not None:
                raise InputError(f"the response cache is damaged ({problem}); polyjudge leaves it as it is "
                                 "(move it away to start a new cache)", path=str(where), field="cache")
            yield cache
    except sqlite3.Error as exc:
        raise InputError(f"the response cache failed: {exc}", path=str(where), field="cache") from None


def cache_stats(path: str | Path | None = None) -> CacheStats:
    """Entries, bytes and ages of the cache, per backend and model, and how many of them were imported
    from a batch output file (``imported``) rather than answered by the endpoint (a cache not yet made
    reads as empty)."""
    with _sound(cache_dir(path), readonly=True) as cache:
        return cache.stats()


def prune_cache(path: str | Path | None = None, *, older_than_days: float | None = None,
                max_size: str | int | None = None) -> PruneResult:
    """Forget entries older than ``older_than_days``, then the oldest until the cache file is at most
    ``max_size`` (bytes, or a size such as ``500M`` or ``2GiB``)."""
    if older_than_days is None and max_size is None:
        raise InputError("say what to prune: --older-than DAYS and/or --max-size SIZE", field="prune")
    if older_than_days is not None and not (isinstance(older_than_days, int | float)
                                            and math.isfinite(older_than_days) and older_than_days >= 0):
        raise InputError(f"must be a finite number of days, 0 or more, got {older_than_days!r}",
                         field="older-than")
    limit = None if max_size is None else max_size if isinstance(max_size, int) else parse_size(str(max_size))
    if limit is not None and limit < 0:
        raise InputError(f"must be 0 or more bytes, got {limit}", field="max-size")
    folder = cache_dir(path)
    if not cache_file(folder).is_file() and not cache_file(folder).is_symlink():
        return PruneResult(0, 0, 0, True)  # nothing to prune, and no cache is made for it
    with _sound(folder) as cache:
        return prune(cache, older_than_days=older_than_days, max_bytes=limit)


def clear_cache(path: str | Path | None = None) -> int:
    """Forget every entry (the file is compacted when no other process holds it); how many were removed."""
    folder = cache_dir(path)
    if not cache_file(folder).is_file() and not cache_file(folder).is_symlink():
        return 0
    with _sound(folder) as cache:
        removed = cache.clear()
        cache.compact()
        return removed


__all__ = ["CacheStats", "PruneResult", "cache_stats", "clear_cache", "prune_cache"]
