"""The numbers behind the report's plots, vectorised with numpy.

Kept apart from the HTML so each one is tested against an independent
reference (scipy's bootstrap, hand-computed ties, ...).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from polyjudge.report.load import RunData


@dataclass(frozen=True, slots=True)
class SystemScore:
    system: str
    mean: float
    lo: float
    hi: float
    n: int


def bootstrap_mean_ci(x: np.ndarray, *, n_boot: int = 1000, level: float = 0.95,
                      seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean, resampling segments with replacement."""
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return math.nan, math.nan
    if x.size == 1:
        return float(x[0]), float(x[0])
    rng = np.random.default_rng(seed)
    # Draw in chunks so 10,000 segments x 1,000 resamples stays small in memory.
    means = np.empty(n_boot)
    chunk = max(1, 2_000_000 // x.size)
    for s in range(0, n_boot, chunk):
        e = min(n_boot, s + chunk)
        means[s:e] = x[rng.integers(0, x.size, size=(e - s, x.size))].mean(axis=1)
    a = (1 - level) / 2
    lo, hi = np.quantile(means, [a, 1 - a])
    return float(lo), float(hi)


def final_scores(run: RunData) -> np.ndarray:
    """Per-item final score: ``segments.tsv`` when it has one, else the panel mean
    of each judge's aggregate over its successful runs."""
    s = np.array([seg.score for seg in run.segments], dtype=float)
    if np.isfinite(s).any():
        return s
    per_judge = [aggregate_matrix(run.score_matrix(j), run.aggregator) for j in run.judges]
    if not per_judge:
        return s
    stack = np.vstack(per_judge)
    with np.errstate(all="ignore"):
        cnt = np.isfinite(stack).sum(axis=0)
        tot = np.nansum(stack, axis=0)
    return np.where(cnt > 0, tot / np.maximum(cnt, 1), np.nan)


def system_ranking(systems: Sequence[str], scores: np.ndarray, *, n_boot: int = 1000,
                   seed: int = 0, higher_is_better: bool = True) -> list[SystemScore]:
    """Mean segment score per system with a bootstrap CI, best first; unscored items left out."""
    sys_arr = np.asarray(systems, dtype=object)
    out = []
    for k, name in enumerate(dict.fromkeys(systems)):
        x = scores[(sys_arr == name) & np.isfinite(scores)]
        if x.size == 0:
            continue
        lo, hi = bootstrap_mean_ci(x, n_boot=n_boot, seed=seed + k)
        out.append(SystemScore(str(name), float(x.mean()), lo, hi, int(x.size)))
    out.sort(key=lambda s: -s.mean if higher_is_better else s.mean)
    return out


def run_deltas(matrix: np.ndarray) -> np.ndarray:
    """Δ = max − min over the successful runs of each item (items with < 2 runs left out)."""
    ok = np.isfinite(matrix)
    keep = ok.sum(axis=1) >= 2
    m = matrix[keep]
    return np.nanmax(m, axis=1) - np.nanmin(m, axis=1) if m.size else np.empty(0)


def tie_stats(scores: np.ndarray) -> tuple[int, int, float]:
    """(n scored, distinct values, share of segment pairs whose scores are tied)."""
    x = scores[np.isfinite(scores)]
    n = x.size
    if n < 2:
        return n, n, math.nan
    _, counts = np.unique(x, return_counts=True)
    tied = float((counts * (counts - 1) // 2).sum())
    return n, int(counts.size), tied / (n * (n - 1) / 2)


def first_run(matrix: np.ndarray) -> np.ndarray:
    """Score of the first successful run per item: the single-judgment baseline."""
    ok = np.isfinite(matrix)
    idx = np.argmax(ok, axis=1)
    out = matrix[np.arange(matrix.shape[0]), idx]
    return np.where(ok.any(axis=1), out, np.nan)


def aggregate_matrix(matrix: np.ndarray, name: str) -> np.ndarray:
    """Aggregate each item's successful runs with a registered aggregator.

    NaN where an item has no successful run or the aggregator is undefined for it.
    """
    ok = np.isfinite(matrix)
    has = ok.any(axis=1)
    out = np.full(matrix.shape[0], np.nan)
    if not has.any():
        return out
    with np.errstate(all="ignore"):
        if name == "median":
            out[has] = np.nanmedian(matrix[has], axis=1)
            return out
        # Same definitions as the registered "max", "min" and "mean-all", vectorised.
        if name in ("max", "min", "mean-all"):
            fn_np = {"max": np.nanmax, "min": np.nanmin, "mean-all": np.nanmean}[name]
            out[has] = fn_np(matrix[has], axis=1)
            return out
    if name == "first":
        return first_run(matrix)
    from polyjudge.aggregate.runs import get_aggregator
    fn: Callable[[Sequence[float]], float] = get_aggregator(name)
    # Every other aggregator ignores run order, so rows holding the same scores in any
    # order get the same value: compute it once per distinct sorted row (NaNs sort last).
    rows = np.sort(matrix[has], axis=1)
    uniq, inverse = np.unique(np.where(np.isfinite(rows), rows, np.inf), axis=0, return_inverse=True)
    vals = np.empty(uniq.shape[0])
    for u in range(uniq.shape[0]):
        r = uniq[u]
        try:
            vals[u] = fn(r[np.isfinite(r)].tolist())
        except ValueError:  # undefined here (e.g. trimmed mean of two runs): no score
            vals[u] = np.nan
    out[has] = vals[inverse.reshape(-1)]
    return out


def available_run_aggregators() -> list[str]:
    """Aggregators that import cleanly (lazy ones may not be installed yet)."""
    from polyjudge.aggregate.runs import available_aggregators, get_aggregator
    for n in available_aggregators():  # importing a lazy module may register more
        try:
            get_aggregator(n)
        except (KeyError, ImportError):
            continue
    names = []
    for n in available_aggregators():
        try:
            get_aggregator(n)
        except (KeyError, ImportError):
            continue
        names.append(n)
    return names


@dataclass(frozen=True, slots=True)
class AggregatorRow:
    aggregator: str
    n: int
    distinct: int
    tie_rate: float
    mean: float
    pearson_vs_mean: float
    kendall_sys_vs_mean: float
    error: str | None = None  # why the aggregator does not apply to these scores


def compare_aggregators(matrix: np.ndarray, systems: Sequence[str],
                        names: Sequence[str]) -> list[AggregatorRow]:
    """Each aggregator's ties and agreement with the plain mean (segment r, system τ)."""
    from scipy.stats import kendalltau, pearsonr
    base = aggregate_matrix(matrix, "mean-all")
    sys_names = list(dict.fromkeys(systems))
    code = {s: k for k, s in enumerate(sys_names)}
    sys_idx = np.fromiter((code[s] for s in systems), np.int64, len(systems))

    def sys_means(v: np.ndarray) -> np.ndarray:
        ok = np.isfinite(v)
        tot = np.bincount(sys_idx[ok], weights=v[ok], minlength=len(sys_names))
        cnt = np.bincount(sys_idx[ok], minlength=len(sys_names))
        with np.errstate(all="ignore"):
            return np.where(cnt > 0, tot / np.maximum(cnt, 1), np.nan)

    base_sys = sys_means(base)
    rows = []
    for name in names:
        try:
            v = aggregate_matrix(matrix, name)
        except (ValueError, ArithmeticError) as exc:  # e.g. a geometric mean of negative scores
            rows.append(AggregatorRow(name, 0, 0, math.nan, math.nan, math.nan, math.nan, str(exc)))
            continue
        n, distinct, tie = tie_stats(v)
        both = np.isfinite(v) & np.isfinite(base)
        r = math.nan
        if both.sum() >= 3 and np.ptp(v[both]) > 0 and np.ptp(base[both]) > 0:
            r = float(pearsonr(v[both], base[both])[0])
        tau = math.nan
        sv = sys_means(v)
        okk = np.isfinite(sv) & np.isfinite(base_sys)
        if okk.sum() >= 2:
            tau = float(kendalltau(sv[okk], base_sys[okk])[0])
        rows.append(AggregatorRow(name, n, distinct, tie,
                                  float(np.nanmean(v)) if n else math.nan, r, tau))
    return rows
