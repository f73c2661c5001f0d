"""Keeping the cache bounded: ``polyjudge cache prune --older-than DAYS --max-size SIZE``."""

from __future__ import annotations

import re
from dataclasses import dataclass

from polyjudge.cache.store import ResponseCache
from polyjudge.data.errors import InputError

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3,
          "t": 1000**4, "tb": 1000**4, "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
SECONDS_PER_DAY = 86_400.0
# Rounds of "forget the oldest, compact, measure" before --max-size gives up on the file's own overhead.
MAX_ROUNDS = 8


def parse_size(text: str, field: str = "max-size") -> int:
    """Bytes of a size such as ``500M``, ``2GB``, ``1.5GiB`` or ``1048576`` (K/M/G/T are powers of 1000,
    KiB/MiB/GiB/TiB of 1024)."""
    found = _SIZE.match(text)
    unit = found.group(2).lower() if found else ""
    if found is None or unit not in _UNITS:
        raise InputError(f"not a size: {text!r} (e.g. 500M, 2G, 1.5GiB, 1048576)", field=field)
    return int(float(found.group(1)) * _UNITS[unit])


@dataclass(frozen=True, slots=True)
class PruneResult:
    removed: int
    entries_left: int
    file_bytes: int
    compacted: bool


def prune(cache: ResponseCache, *, older_than_days: float | None = None, max_bytes: int | None = None) -> PruneResult:
    """Forget entries stored more than ``older_than_days`` ago, then the oldest ones until the cache
    file is at most ``max_bytes`` (when another process holds the cache and it cannot be compacted,
    until its answers take at most ``max_bytes``)."""
    removed = 0
    if older_than_days is not None:
        removed += cache.remove_older_than(older_than_days * SECONDS_PER_DAY)
    compacted = cache.compact() if removed else True
    if max_bytes is not None:
        removed_now, compacted = _shrink(cache, max_bytes)
        removed += removed_now
    return PruneResult(removed, cache.stats().entries, cache.file_bytes(), compacted)


def _shrink(cache: ResponseCache, max_bytes: int) -> tuple[int, bool]:
    """Forget the oldest entries, in rounds, until the file fits ``max_bytes``: each round drops the
    answers' share of the excess, then compacts the file and measures again."""
    removed, compacted = 0, cache.compact()
    for _ in range(MAX_ROUNDS):
        stats = cache.stats()
        size = stats.file_bytes if compacted else stats.answer_bytes
        if size <= max_bytes or stats.entries == 0:
            break
        share = stats.answer_bytes / size if size else 1.0
        removed += cache.remove_oldest(max(1, int((size - max_bytes) * share)))
        compacted = cache.compact()
    return removed, compacted


__all__ = ["PruneResult", "parse_size", "prune"]
