"""Which systems differ: paired tests on segment scores and WMT-style significance clusters.

Every pair of systems is compared on the segments both have a score for
(``d_i = a_i - b_i``, ``delta`` = mean of ``d``). Three paired tests, all
two-sided, all seeded:

* **paired bootstrap** (Koehn 2004; Efron & Tibshirani's shifted test): the
  test set's segments are resampled with replacement ``n_boot`` times (one
  resample shared by every pair, as sacrebleu shares its indices); a pair's
  draw is the mean of ``d`` over the resampled segments both systems scored.
  The interval of ``delta`` is the percentile interval of the draws; the
  p-value is ``(1 + #{|draw - delta| >= |delta|}) / (n_boot + 1)``: the
  draws, shifted to mean zero, taken as the null. sacrebleu's ``paired_bs``
  shifts the *absolute* draws and counts one tail (``>``), so for a clear
  difference its p is about half of ours; comet-compare's bootstrap reports
  win ratios, which we give as ``win_rate`` (share of draws where A's mean
  beats B's).
* **paired approximate randomization** (Noreen 1989; Riezler & Maxwell 2005):
  each draw swaps the two systems' scores of every segment with probability
  1/2 (a random sign on ``d_i``); p = ``(1 + #{|mean(s * d)| >= |delta|}) /
  (n_perm + 1)``, sacrebleu's ``paired_ar`` with ``>=`` in place of ``>`` (a
  system compared with itself gets p = 1). Its exact counterpart is
  ``scipy.stats.permutation_test(..., permutation_type='samples')``.
* **paired t-test** on ``d`` (``scipy.stats.ttest_rel``, as comet-compare uses);
  when every ``d_i`` is equal the p-value is 0 (a constant non-zero shift) or
  1 (no difference), where scipy gives NaN.

A pair sharing fewer than :data:`MIN_PAIRED_SEGMENTS` (6) segments gets no bootstrap or randomization
p-value, no interval and no win rate (NaN, shown n/a, never significant): with n segments the sign flips
have 2**n outcomes, so the smallest two-sided randomization p is 2 / 2**n, which is 0.0625 at n = 5 and
first falls below 0.05 at n = 6; below that a resampling test cannot find any difference at 0.05, and a
bootstrap of 2 segments gave p = 1/1001 (every resample had the same mean) and an interval of one point.
The t-test keeps scipy's minimum of 2 segments: its p-value is exact under its model at any n.

p-values are per pair, **uncorrected**; :class:`CompareSettings.correction`
adds Holm's or Bonferroni's adjustment over all pairs, and the clusters use
the adjusted values.

Clusters (:func:`clusters_of`): systems ranked by mean score, best first; a
boundary falls between ranks k and k+1 exactly when *every* system ranked k
or better is significantly better (positive ``delta`` and a p-value below
``alpha``) than *every* system ranked below k. So a system in a higher cluster
is significantly better than each system of every lower cluster, as in WMT's
ranking tables; within a cluster some pairs may still differ.

The draws are matrix products (draws x segments by segments x pairs), so
20 systems x 2,000 segments x 1,000 draws takes seconds (benchmarks/compare_systems.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from polyjudge.data.numbers import MIN_RESAMPLED_ITEMS

Floats = NDArray[np.float64]

TESTS = ("randomization", "bootstrap", "t-test")
CORRECTIONS = ("none", "holm", "bonferroni")
_BLOCK_CELLS = 4_000_000  # draws x segments per block: bounds memory at 20,000 segments
# Fewest shared segments for a resampling p-value or interval: the smallest two-sided sign-flip p-value,
# 2 / 2**n, is below 0.05 from n = 6 on (0.0625 at 5, 0.125 at 4); see the module docstring.
MIN_PAIRED_SEGMENTS = MIN_RESAMPLED_ITEMS


@dataclass(frozen=True, slots=True)
class CompareSettings:
    """How pairs are tested: draws, seed, the test that decides significance, alpha, correction."""

    n_boot: int = 1000
    n_perm: int = 1000
    seed: int = 0
    alpha: float = 0.05
    test: str = "randomization"
    correction: str = "none"

    def __post_init__(self) -> None:
        if self.test not in TESTS:
            raise ValueError(f"test must be one of {', '.join(TESTS)}, not {self.test!r}")
        if self.correction not in CORRECTIONS:
            raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}, not {self.correction!r}")
        if self.n_boot < 1 or self.n_perm < 1:
            raise ValueError("n_boot and n_perm must be at least 1")
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"alpha must be between 0 and 1, not {self.alpha}")


@dataclass(frozen=True, slots=True)
class PairComparison:
    """System A (ranked higher) against system B on the segments both scored."""

    system_a: str
    system_b: str
    n: int
    mean_a: float
    mean_b: float
    delta: float
    ci_low: float
    ci_high: float
    p_bootstrap: float
    p_randomization: float
    p_ttest: float
    t: float
    win_rate: float
    p_value: float  # the deciding test's, uncorrected
    p_adjusted: float  # after the correction (= p_value without one)
    significant: bool  # delta > 0 and p_adjusted < alpha


@dataclass(frozen=True, slots=True)
class RankedSystem:
    """A system's mean over all the segments it has a score for, its rank and cluster."""

    system: str
    mean: float
    n: int
    rank: int
    cluster: int


@dataclass(frozen=True, slots=True)
class SystemComparison:
    """Systems best first with their clusters, and every pair (higher-ranked system first)."""

    systems: tuple[RankedSystem, ...]
    pairs: tuple[PairComparison, ...]
    settings: CompareSettings
    n_segments: int

    def clusters(self) -> list[list[str]]:
        """System names per cluster, best cluster first."""
        out: list[list[str]] = []
        for s in self.systems:
            if not out or s.cluster != len(out):
                out.append([])
            out[-1].append(s.system)
        return out

    def pair(self, a: str, b: str) -> PairComparison | None:
        """The comparison of ``a`` and ``b`` in either order (as stored: higher-ranked first)."""
        for p in self.pairs:
            if {p.system_a, p.system_b} == {a, b}:
                return p
        return None


# --------------------------------------------------------------------------- pair matrices

def _pair_matrices(x: Floats, pairs: Sequence[tuple[int, int]]) -> tuple[Floats, Floats]:
    """Differences (0 where a side is missing) and the both-scored mask, segments x pairs."""
    a = x[[i for i, _ in pairs]].T
    b = x[[j for _, j in pairs]].T
    both = np.isfinite(a) & np.isfinite(b)
    return np.where(both, a - b, 0.0), both.astype(np.float64)


def _blocks(total: int, n: int) -> list[tuple[int, int]]:
    step = max(1, _BLOCK_CELLS // max(1, n))
    return [(s, min(total, s + step)) for s in range(0, total, step)]


def bootstrap_draws(d: Floats, both: Floats, n_boot: int, rng: np.random.Generator) -> Floats:
    """Mean difference per pair in each resample of the segments (draws x pairs; NaN if none shared)."""
    n = d.shape[0]
    out = np.empty((n_boot, d.shape[1]))
    for s, e in _blocks(n_boot, n):
        rows = e - s
        picks = rng.integers(0, n, size=(rows, n)) + (np.arange(rows) * n)[:, None]
        counts = np.bincount(picks.ravel(), minlength=rows * n).reshape(rows, n).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[s:e] = (counts @ d) / (counts @ both)
    return out


def randomization_draws(d: Floats, n_shared: Floats, n_perm: int, rng: np.random.Generator) -> Floats:
    """Mean of the randomly signed differences per pair in each draw (draws x pairs)."""
    n = d.shape[0]
    out = np.empty((n_perm, d.shape[1]))
    for s, e in _blocks(n_perm, n):
        signs = rng.integers(0, 2, size=(e - s, n), dtype=np.int8).astype(np.float64) * 2.0 - 1.0
        with np.errstate(invalid="ignore", divide="ignore"):
            out[s:e] = (signs @ d) / n_shared
    return out


def _tail_p(null: Floats, observed: Floats) -> Floats:
    """Two-sided p per pair: (1 + draws at least as far from 0 as observed) / (finite draws + 1)."""
    tol = 1e-9 * np.maximum(1.0, np.abs(observed))
    finite = np.isfinite(null)
    hits = (np.abs(np.where(finite, null, 0.0)) >= np.abs(observed) - tol) & finite
    p: Floats = (1.0 + hits.sum(axis=0)) / (finite.sum(axis=0) + 1.0)
    return np.where(np.isfinite(observed), p, np.nan)


def paired_t(d: Floats, both: Floats) -> tuple[Floats, Floats]:
    """Paired t statistic and two-sided p per pair (scipy's ttest_rel on the shared segments)."""
    from scipy.special import stdtr

    n = both.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = d.sum(axis=0) / n
        var = np.maximum((d * d).sum(axis=0) - n * mean * mean, 0.0) / (n - 1)
        scale = 1e-12 * np.maximum(1.0, (d * d).sum(axis=0) / n)
        flat = var <= scale
        t = np.where(flat, np.sign(mean) * np.inf, mean / np.sqrt(var / n))
        p = np.where(flat, np.where(mean == 0, 1.0, 0.0), 2.0 * stdtr(n - 1, -np.abs(t)))
    bad = n < 2
    return np.where(bad, np.nan, np.where(flat & (mean == 0), 0.0, t)), np.where(bad, np.nan, p)


# --------------------------------------------------------------------------- corrections, clusters

def adjust(p: Sequence[float] | Floats, correction: str) -> Floats:
    """Holm's step-down or Bonferroni's adjustment over the finite p-values (NaN stays NaN)."""
    v = np.asarray(p, dtype=np.float64)
    out = v.copy()
    ok = np.flatnonzero(np.isfinite(v))
    m = ok.size
    if correction == "none" or m == 0:
        return out
    if correction == "bonferroni":
        out[ok] = np.minimum(1.0, v[ok] * m)
        return out
    order = ok[np.argsort(v[ok], kind="stable")]
    scaled = np.minimum(1.0, v[order] * (m - np.arange(m)))
    out[order] = np.maximum.accumulate(scaled)
    return out


def clusters_of(n_systems: int, beats: NDArray[np.bool_]) -> list[int]:
    """Cluster number per rank (1 = best): a boundary below rank k when each system at rank <= k
    significantly beats each one below (``beats[i, j]``: ranked i beats ranked j)."""
    clusters, current = [], 1
    for k in range(n_systems):
        clusters.append(current)
        if k + 1 < n_systems and bool(beats[: k + 1, k + 1:].all()):
            current += 1
    return clusters


# --------------------------------------------------------------------------- the comparison

def _ranked(names: Sequence[str], x: Floats) -> list[int]:
    """Row indices best first by mean score (ties by name); systems without scores left out."""
    n = np.isfinite(x).sum(axis=1)
    with np.errstate(invalid="ignore"):
        means = np.where(n > 0, np.nansum(x, axis=1) / np.maximum(n, 1), np.nan)
    keep = [i for i in range(len(names)) if n[i] > 0]
    return sorted(keep, key=lambda i: (-means[i], names[i]))


@dataclass(frozen=True, slots=True)
class _PairStats:
    n: Floats
    delta: Floats
    boot: Floats
    perm: Floats
    t: Floats
    p_t: Floats


def _pair_stats(x: Floats, pairs: Sequence[tuple[int, int]], settings: CompareSettings) -> _PairStats:
    d, both = _pair_matrices(x, pairs)
    n = both.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        delta = np.where(n > 0, d.sum(axis=0) / n, np.nan)
    boot_rng, perm_rng = (np.random.default_rng([settings.seed, k]) for k in (0, 1))
    boot = bootstrap_draws(d, both, settings.n_boot, boot_rng)
    perm = randomization_draws(d, n, settings.n_perm, perm_rng)
    t, p_t = paired_t(d, both)
    return _PairStats(n, delta, boot, perm, t, p_t)


def _pair_rows(names: Sequence[str], x: Floats, pairs: Sequence[tuple[int, int]], st: _PairStats,
               settings: CompareSettings) -> list[PairComparison]:
    few = st.n < MIN_PAIRED_SEGMENTS
    p_boot = np.where(few, np.nan, _tail_p(st.boot - st.delta, st.delta))
    p_perm = np.where(few, np.nan, _tail_p(st.perm, st.delta))
    deciding = {"bootstrap": p_boot, "randomization": p_perm, "t-test": st.p_t}[settings.test]
    p_adj = adjust(deciding, settings.correction)
    half = settings.alpha / 2
    rows = []
    for k, (i, j) in enumerate(pairs):
        draws = st.boot[:, k][np.isfinite(st.boot[:, k])] if not few[k] else np.zeros(0)
        lo, hi = (np.quantile(draws, [half, 1 - half]) if draws.size else (math.nan, math.nan))
        shared = np.isfinite(x[i]) & np.isfinite(x[j])
        rows.append(PairComparison(
            system_a=names[i], system_b=names[j], n=int(st.n[k]),
            mean_a=float(x[i][shared].mean()) if shared.any() else math.nan,
            mean_b=float(x[j][shared].mean()) if shared.any() else math.nan,
            delta=float(st.delta[k]), ci_low=float(lo), ci_high=float(hi), p_bootstrap=float(p_boot[k]),
            p_randomization=float(p_perm[k]), p_ttest=float(st.p_t[k]), t=float(st.t[k]),
            win_rate=float(np.mean(draws > 0)) if draws.size else math.nan, p_value=float(deciding[k]),
            p_adjusted=float(p_adj[k]),
            significant=bool(st.delta[k] > 0 and np.isfinite(p_adj[k]) and p_adj[k] < settings.alpha)))
    return rows


def compare_systems(names: Sequence[str], scores: Floats, settings: CompareSettings | None = None) -> SystemComparison:
    """Every pair of systems (rows of ``scores``, segments as columns, NaN = unscored) tested,
    and the systems ranked into significance clusters."""
    settings = settings or CompareSettings()
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] != len(names):
        raise ValueError(f"scores of shape {x.shape} do not match {len(names)} systems")
    order = _ranked(names, x)
    pairs = [(order[a], order[b]) for a in range(len(order)) for b in range(a + 1, len(order))]
    rows = _pair_rows(names, x, pairs, _pair_stats(x, pairs, settings), settings) if pairs else []
    beats = np.zeros((len(order), len(order)), dtype=bool)
    position = {row: r for r, row in enumerate(order)}
    for (i, j), row in zip(pairs, rows):
        beats[position[i], position[j]] = row.significant
    cl = clusters_of(len(order), beats)
    counts = np.isfinite(x).sum(axis=1)
    ranked = tuple(RankedSystem(names[i], float(np.nanmean(x[i])), int(counts[i]), r + 1, cl[r])
                   for r, i in enumerate(order))
    return SystemComparison(ranked, tuple(rows), settings, int(x.shape[1]))


def pivot(systems: Sequence[str], items: Sequence[str], values: Sequence[float] | Floats) -> tuple[list[str], Floats]:
    """Parallel (system, item, score) lists as systems x items (first-seen order, NaN where absent).

    A repeated (system, item) is a ValueError: which of the two scores counts is not ours to guess."""
    names = list(dict.fromkeys(systems))
    keys = list(dict.fromkeys(items))
    row = {s: k for k, s in enumerate(names)}
    col = {s: k for k, s in enumerate(keys)}
    out = np.full((len(names), len(keys)), np.nan)
    seen = np.zeros(out.shape, dtype=bool)
    for s, it, v in zip(systems, items, np.asarray(values, dtype=np.float64)):
        r, c = row[s], col[it]
        if seen[r, c]:
            raise ValueError(f"system {s!r} has two scores for item {it!r}")
        seen[r, c] = True
        out[r, c] = v
    return names, out


__all__ = ["CORRECTIONS", "MIN_PAIRED_SEGMENTS", "TESTS", "CompareSettings", "PairComparison", "RankedSystem",
           "SystemComparison", "adjust", "bootstrap_draws",
           "clusters_of", "compare_systems", "paired_t", "pivot", "randomization_draws"]
