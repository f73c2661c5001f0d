"""``polyjudge cache stats|prune|clear``: the machine's shared response cache."""

from __future__ import annotations

import json
import time

import click

from polyjudge.api.cache import CacheStats, cache_stats, clear_cache, prune_cache
from polyjudge.cli.options import emit, format_option, out_option


def _when(stamp: float | None) -> str:
    return "" if stamp is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp))


def _bytes(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:,} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return str(n)


def render_stats(s: CacheStats, fmt: str) -> str:
    """The cache's totals and its entries per backend and model, as text, TSV or JSON (``imported``:
    entries that came from a --batch-import file, not from the endpoint)."""
    if fmt == "json":
        return json.dumps({"path": str(s.path), "entries": s.entries, "imported": s.imported,
                           "answer_bytes": s.answer_bytes, "file_bytes": s.file_bytes,
                           "oldest": _when(s.oldest) or None, "newest": _when(s.newest) or None,
                           "models": [{"scope": m.scope, "model": m.model, "entries": m.entries,
                                       "answer_bytes": m.answer_bytes, "imported": m.imported}
                                      for m in s.models]}, indent=2) + "\n"
    rows = [[m.scope, m.model, str(m.entries), str(m.answer_bytes), str(m.imported)] for m in s.models]
    if fmt == "tsv":
        return "".join("\t".join(r) + "\n" for r in [["scope", "model", "entries", "answer_bytes", "imported"], *rows])
    lines = [f"cache: {s.path}", f"entries: {s.entries:,}  answers: {_bytes(s.answer_bytes)}  "
             f"on disk: {_bytes(s.file_bytes)}"
             + (f"  oldest: {_when(s.oldest)}  newest: {_when(s.newest)}" if s.entries else "")
             + (f"  imported from batch files: {s.imported:,}" if s.imported else "")]
    lines += [f"  {m.model}  ({m.scope})  {m.entries:,} entries, {_bytes(m.answer_bytes)}"
              + (f", {m.imported:,} imported" if m.imported else "") for m in s.models]
    return "\n".join(lines) + "\n"


def _cache_path(fn: click.decorators.FC) -> click.decorators.FC:
    return click.option("--cache", "cache", type=click.Path(file_okay=False), default=None, metavar="PATH",
                        help="The cache folder (default: POLYJUDGE_CACHE, else the user cache folder).")(fn)


@click.group()
def cache() -> None:
    """The response cache every run shares: what it holds, pruning, clearing."""


@cache.command()
@_cache_path
@format_option()
@out_option("Write the table to this file instead of standard output.")
def stats(cache: str | None, fmt: str, out: str | None) -> None:
    """Entries, size and ages of the cache, per backend and model, and how many were imported from batch files."""
    emit(render_stats(cache_stats(cache), fmt), out)


@cache.command()
@_cache_path
@click.option("--older-than", "older_than", type=click.FloatRange(min=0.0), default=None, metavar="DAYS",
              help="Forget answers stored more than DAYS days ago.")
@click.option("--max-size", "max_size", default=None, metavar="SIZE",
              help="Then forget the oldest answers until the cache file is at most SIZE (500M, 2G, 1.5GiB, bytes).")
def prune(cache: str | None, older_than: float | None, max_size: str | None) -> None:
    """Forget old answers, or the oldest ones beyond a size."""
    done = prune_cache(cache, older_than_days=older_than, max_size=max_size)
    click.echo(f"removed {done.removed:,} entries; {done.entries_left:,} left, {_bytes(done.file_bytes)} on disk"
               + ("" if done.compacted else " (another process holds the cache: freed space is reused, "
                  "the file shrinks at the next prune)"), err=True)


@cache.command()
@_cache_path
def clear(cache: str | None) -> None:
    """Forget every answer in the cache (run directories keep theirs)."""
    click.echo(f"removed {clear_cache(cache):,} entries", err=True)
