"""Statistics of per-item scores: ties, per-system means, bootstrap intervals.

One function per quantity, shared by ``polyjudge variability`` and the report,
each checked in tests against an independent reference (scipy, brute force).
NaN marks an unscored item and is left out everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from polyjudge.aggregate.exact import exact_mean
from polyjudge.data.numbers import MIN_RESAMPLED_ITEMS

Floats = NDArray[np.float64]


class TieStats(NamedTuple):
    """Scored items, their distinct values, and the share of item pairs with equal scores."""

    n: int
    distinct: int
    rate: float  # NaN with fewer than two scored items


def tie_stats(values: Sequence[float] | Floats) -> TieStats:
    """How many scored items tie: MQM sums of a few weights tie a lot, aggregation breaks ties."""
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    n = int(v.size)
    if n < 2:
        return TieStats(n, n, math.nan)
    _, counts = np.unique(v, return_counts=True)
    return TieStats(n, int(counts.size), float(np.sum(counts * (counts - 1)) / (n * (n - 1))))


def tie_rate(values: Sequence[float] | Floats) -> float:
    """Share of pairs of scored items with exactly equal scores (NaN with fewer than two)."""
    return tie_stats(values).rate


def scores_by_system(values: Floats, systems: Sequence[str]) -> dict[str, Floats]:
    """Each system's scored values in item order; systems in first-seen order (empty if none scored)."""
    v = np.asarray(values, dtype=np.float64)
    names = list(dict.fromkeys(systems))
    code = {s: k for k, s in enumerate(names)}
    codes = np.fromiter((code[s] for s in systems), np.int64, len(systems))
    scored = ~np.isnan(v)
    return {s: v[(codes == k) & scored] for k, s in enumerate(names)}


def system_means(values: Floats, systems: Sequence[str]) -> dict[str, float]:
    """Mean scored value per system, first-seen order (NaN for a system with none).

    Exact means (correctly rounded), so systems with equal means tie on every machine.
    """
    return {s: exact_mean(x.tolist()) if x.size else math.nan for s, x in scores_by_system(values, systems).items()}


def bootstrap_mean_ci(x: Floats, *, n_boot: int = 1000, level: float = 0.95,
                      seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean, resampling items with replacement; (NaN, NaN), shown n/a,
    from fewer than MIN_RESAMPLED_ITEMS (6) items (one item gave an interval of one point)."""
    x = np.asarray(x, dtype=np.float64)
    if x.size < MIN_RESAMPLED_ITEMS:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    # Draw in chunks so 10,000 items x 1,000 resamples stays small in memory.
    means = np.empty(n_boot)
    chunk = max(1, 2_000_000 // x.size)
    for s in range(0, n_boot, chunk):
        e = min(n_boot, s + chunk)
        means[s:e] = x[rng.integers(0, x.size, size=(e - s, x.size))].mean(axis=1)
    a = (1 - level) / 2
    lo, hi = np.quantile(means, [a, 1 - a])
    return float(lo), float(hi)


@dataclass(frozen=True, slots=True)
class SystemScore:
    """A system's mean score over its scored items, with a bootstrap interval."""

    system: str
    mean: float
    lo: float
    hi: float
    n: int


def system_ranking(systems: Sequence[str], scores: Floats, *, n_boot: int = 1000, seed: int = 0,
                   higher_is_better: bool = True) -> list[SystemScore]:
    """Systems best first by mean score, each with a percentile bootstrap CI; unscored systems left out.

    System ``k`` (first-seen order) resamples with seed ``seed + k``, so a system's
    interval does not depend on which other systems are in the run.
    """
    groups = scores_by_system(scores, systems)
    means = system_means(scores, systems)
    out = []
    for k, (name, x) in enumerate(groups.items()):
        if x.size == 0:
            continue
        lo, hi = bootstrap_mean_ci(x, n_boot=n_boot, seed=seed + k)
        out.append(SystemScore(name, means[name], lo, hi, int(x.size)))
    out.sort(key=lambda s: -s.mean if higher_is_better else s.mean)
    return out


__all__ = ["SystemScore", "TieStats", "bootstrap_mean_ci", "scores_by_system", "system_means",
           "system_ranking", "tie_rate", "tie_stats"]
