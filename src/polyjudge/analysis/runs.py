"""Functions of a runs matrix: one row per judged item, one column per run, NaN
where a run failed or is missing (what :meth:`RunDir.run_scores` returns).

:func:`aggregate_rows` is the one way to turn such a matrix into one score per
item with a registered run aggregator. Its result is defined as calling the
aggregator on each row's scores (NaN left out, run order kept); the work is
vectorised where that gives bit-identical numbers and otherwise done once per
distinct row, so the engine's ``aggregates.tsv`` and the report agree exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
from numpy.typing import NDArray

from polyjudge.aggregate import rrwa as _rrwa
from polyjudge.aggregate import runs as _runs
from polyjudge.aggregate.rrwa import COMPARISON
from polyjudge.aggregate.runs import Aggregator, available_aggregators, get_aggregator

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class _Packed:
    """Each row's scores moved to the front in run order (NaN behind them), and how many."""

    values: Floats
    counts: Ints

    @classmethod
    def of(cls, scores: Floats | Sequence[Sequence[float]]) -> _Packed:
        m = np.asarray(scores, dtype=np.float64)
        if m.ndim != 2:
            raise ValueError(f"a runs matrix must be items x runs, got shape {m.shape}")
        ok = ~np.isnan(m)
        order = np.argsort(~ok, axis=1, kind="stable")
        return cls(np.take_along_axis(m, order, axis=1), ok.sum(axis=1).astype(np.int64))


# -- vectorised forms of built-in aggregators ------------------------------------------
# Each gets rows of finite scores of one length k and must return exactly what the
# aggregator returns on each row. Zero results are recomputed row by row, because
# the sign of a zero (MQM scores of -0.0) may depend on the order of the reduction.

def _first(rows: Floats) -> Floats:
    return np.ascontiguousarray(rows[:, 0])


def _max(rows: Floats) -> Floats:
    return np.asarray(rows.max(axis=1), dtype=np.float64)


def _min(rows: Floats) -> Floats:
    return np.asarray(rows.min(axis=1), dtype=np.float64)


def _median(rows: Floats) -> Floats:
    return np.asarray(np.median(rows, axis=1), dtype=np.float64)


# Means are not vectorised: numpy's reductions round in an order that depends on its
# version and the CPU, while the aggregators sum exactly (polyjudge.aggregate.exact).
_VECTORISED: dict[Callable[..., float], Callable[[Floats], Floats]] = {
    _runs.first: _first, _runs.median: _median, _rrwa.maximum: _max, _rrwa.minimum: _min,
}


def _call(fn: Aggregator, row: Floats) -> float:
    try:
        return float(fn(cast(Sequence[float], row)))  # an array of floats is a float sequence
    except ValueError:  # undefined here (e.g. geo of mixed signs): no score
        return float("nan")


def _aggregate_packed(packed: _Packed, name: str, min_runs: int) -> Floats:
    fn = get_aggregator(name)
    values, counts = packed.values, packed.counts
    out: Floats = np.full(values.shape[0], np.nan)
    todo = counts >= max(1, min_runs)
    if not todo.any():
        return out
    vec = _VECTORISED.get(fn)
    if vec is not None:
        finite = np.isfinite(values) | np.isnan(values)
        clean = todo & finite.all(axis=1)  # rows with an infinite score go to the aggregator
        for k in np.unique(counts[clean]).tolist():
            idx = np.flatnonzero(clean & (counts == k))
            out[idx] = vec(np.ascontiguousarray(values[idx, :k]))
        todo = todo & ~(clean & (out != 0))
    idx = np.flatnonzero(todo)
    if idx.size == 0:
        return out
    # Rows holding the same scores in the same order get the same value: one call each.
    rows = np.ascontiguousarray(values[idx])
    as_bytes = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, first, inverse = np.unique(as_bytes, return_index=True, return_inverse=True)
    vals = np.array([_call(fn, rows[f, : counts[idx[f]]]) for f in first.tolist()], dtype=np.float64)
    out[idx] = vals[inverse.reshape(-1)]
    return out


def aggregate_rows(scores: Floats | Sequence[Sequence[float]], name: str, min_runs: int = 1) -> Floats:
    """One score per item: aggregator ``name`` on the item's ok runs, in run order.

    NaN where an item has fewer than ``min_runs`` (at least one) ok runs or the
    aggregator is undefined for its scores (it raised ``ValueError``). An
    unknown name raises ``UnknownNameError``.
    """
    return _aggregate_packed(_Packed.of(scores), name, min_runs)


def aggregate_table(scores: Floats | Sequence[Sequence[float]], names: Sequence[str] = COMPARISON,
                    min_runs: int = 1) -> dict[str, Floats]:
    """Every named aggregator's per-item scores, e.g. for ``aggregates.tsv``."""
    packed = _Packed.of(scores)
    return {n: _aggregate_packed(packed, n, min_runs) for n in names}


def available_run_aggregators() -> list[str]:
    """Registered aggregators that load (a plugin's may fail to import), sorted."""
    names = []
    for n in available_aggregators():
        try:
            get_aggregator(n)
        except (KeyError, ImportError):
            continue
        names.append(n)
    return names


def segment_deltas(scores: Floats, min_runs: int = 1) -> Floats:
    """Δ = max − min over each item's ok runs; NaN for items with fewer than
    ``min_runs`` (at least one) ok runs."""
    m = np.asarray(scores, dtype=np.float64)
    out: Floats = np.full(m.shape[0], np.nan)
    has = np.sum(~np.isnan(m), axis=1) >= max(1, min_runs)
    if has.any():
        out[has] = np.nanmax(m[has], axis=1) - np.nanmin(m[has], axis=1)
    return out


def distinct_counts(scores: Floats) -> Ints:
    """Number of different scores among each item's ok runs (0 for none)."""
    s = np.sort(np.asarray(scores, dtype=np.float64), axis=1)  # NaN sort last
    ok = ~np.isnan(s)
    if s.shape[1] == 0:
        return np.zeros(s.shape[0], dtype=np.int64)
    changes = (s[:, 1:] != s[:, :-1]) & ok[:, 1:]
    counts: Ints = (ok[:, 0].astype(np.int64) + changes.sum(axis=1)).astype(np.int64)
    return counts


__all__ = ["aggregate_rows", "aggregate_table", "available_run_aggregators", "distinct_counts",
           "segment_deltas"]
