"""Is metric A really better than metric B? Permutation tests, bootstrap CIs, clusters.

* ``pairs_permutation_test``: the WMT "pairs" test for acc23 / acc-t. Each
  metric keeps its own tie threshold; a permutation swaps, pair by pair, which
  metric's verdict (correct or not) is used. Only pairs on which the two
  metrics disagree move the statistic, so a draw is one signed sum and 1000
  draws are one matrix-vector product.
* ``scores_permutation_test``: PERM-BOTH (Deutsch et al. 2021) for any
  statistic: z-normalise both metrics over the cells with human scores, swap
  cells at random, recompute. SPA and Pearson have vectorised fast paths.
* ``bootstrap_ci``: percentile interval over items resampled with replacement.
* ``significance_clusters``: rank r = not significantly beaten by any metric
  of the same rank, nor by a better-ranked one (as in WMT tables).

p-values are P(null difference >= observed difference) for "the first metric
is better"; no early stopping (all ``k`` draws are made, they are cheap).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from polyjudge.data.numbers import MIN_RESAMPLED_ITEMS
from polyjudge.metaeval import stats

ArrayStatistic = Callable[[np.ndarray, np.ndarray], float]
"""``statistic(human, metric)`` on (systems x items) arrays."""


@dataclass(frozen=True)
class PermutationResult:
    p_value: float
    delta: float  # statistic(a) - statistic(b)
    null: np.ndarray = field(repr=False)  # k resampled differences a - b


def _sign_block(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """rows x cols matrix of +/-1 (float32), from raw random bits."""
    nbytes = (cols + 7) // 8
    bits = np.unpackbits(rng.integers(0, 256, size=(rows, nbytes), dtype=np.uint8), axis=1)[:, :cols]
    return bits.astype(np.float32) * 2.0 - 1.0


def _p(null: np.ndarray, delta: float) -> float:
    """Share of draws at least the observed difference; NaN (n/a) when the difference is undefined (a metric's
    statistic is n/a), where ``null >= nan`` would count no draw and claim p = 0."""
    if not np.isfinite(delta):
        return float("nan")
    return float(np.mean(null >= delta - 1e-12 * max(1.0, abs(delta))))


def ranked_names(values: dict[str, float]) -> list[str]:
    """Names by value, best first (ties by name); undefined (NaN) values last, in name order."""
    return sorted(values, key=lambda n: (0, -values[n], n) if np.isfinite(values[n]) else (1, 0.0, n))


# --------------------------------------------------------------------------- acc-t (pairs)

def pairs_permutation_test(human: np.ndarray, metric_a: np.ndarray, metric_b: np.ndarray,
                           grouping: str = "item", epsilon_a: float | None = None,
                           epsilon_b: float | None = None, k: int = 1000, seed: int = 0,
                           block: int = 64) -> PermutationResult:
    """Paired permutation test on acc23 with per-metric thresholds (tie-calibrated when None)."""
    h = np.array(human, dtype=float)
    h[np.isnan(metric_a) | np.isnan(metric_b)] = np.nan
    pa = stats.enumerate_pairs(h, metric_a, grouping)
    pb = stats.enumerate_pairs(h, metric_b, grouping)
    if epsilon_a is None:
        epsilon_a = stats.tie_calibration(h, metric_a, grouping, pairs=pa).epsilon
    if epsilon_b is None:
        epsilon_b = stats.tie_calibration(h, metric_b, grouping, pairs=pb).epsilon
    ca = stats.pair_correct(pa, epsilon_a)
    cb = stats.pair_correct(pb, epsilon_b)
    used = pa.groups_used
    if used.size == 0:
        return PermutationResult(1.0, 0.0, np.zeros(k))
    w = np.zeros(pa.n_pairs.size)
    w[used] = 1.0 / (pa.n_pairs[used] * used.size)
    diff = (ca - cb) * w[pa.group]
    delta = float(diff.sum())
    v = diff[diff != 0].astype(np.float32)
    rng = np.random.default_rng(seed)
    null = np.empty(k)
    for start in range(0, k, block):
        n = min(block, k - start)
        null[start:start + n] = _sign_block(rng, n, v.size) @ v if v.size else 0.0
    return PermutationResult(_p(null, delta), delta, null)


# --------------------------------------------------------------------------- scores (PERM-BOTH)

def _zscore_on(x: np.ndarray, use: np.ndarray) -> np.ndarray:
    vals = stats.rescaled_rows(x[use][None])[0]  # 1e308: std() would overflow to inf and z be 0
    sd = vals.std()
    out = np.full(x.shape, np.nan)
    out[use] = (vals - vals.mean()) / (sd if sd > 0 else 1.0)
    return out


def scores_permutation_test(human: np.ndarray, metric_a: np.ndarray, metric_b: np.ndarray,
                            statistic: ArrayStatistic, k: int = 1000, seed: int = 0) -> PermutationResult:
    """PERM-BOTH test for any statistic(human, metric) over (systems x items) arrays."""
    h = np.asarray(human, dtype=float)
    use = ~np.isnan(h) & ~np.isnan(metric_a) & ~np.isnan(metric_b)
    za, zb = _zscore_on(np.asarray(metric_a, float), use), _zscore_on(np.asarray(metric_b, float), use)
    hh = np.where(use, h, np.nan)
    delta = statistic(hh, za) - statistic(hh, zb)
    rng = np.random.default_rng(seed)
    null = np.empty(k)
    for r in range(k):
        swap = rng.random(h.shape) < 0.5
        ha, hb = np.where(swap, zb, za), np.where(swap, za, zb)
        null[r] = statistic(hh, ha) - statistic(hh, hb)
    return PermutationResult(_p(null, delta), float(delta), null)


def pearson_permutation_test(human: np.ndarray, metric_a: np.ndarray, metric_b: np.ndarray,
                             k: int = 1000, seed: int = 0, block: int = 256) -> PermutationResult:
    """PERM-BOTH on ungrouped Pearson, O(n) per draw through three dot products."""
    h = np.asarray(human, dtype=float)
    use = ~np.isnan(h) & ~np.isnan(metric_a) & ~np.isnan(metric_b)
    g = stats.rescaled_rows(h[use][None])[0]
    a = _zscore_on(np.asarray(metric_a, float), use)[use]
    b = _zscore_on(np.asarray(metric_b, float), use)[use]
    n = g.size
    gc = g - g.mean()
    sg = np.sqrt((gc * gc).sum())

    def corr(sum_x: np.ndarray, sum_xx: np.ndarray, sum_gx: np.ndarray) -> np.ndarray:
        cov = sum_gx - sum_x * g.sum() / n
        var = sum_xx - sum_x * sum_x / n
        with np.errstate(invalid="ignore", divide="ignore"):
            r: np.ndarray = np.where(var > 1e-12, cov / (np.sqrt(np.maximum(var, 0)) * sg), np.nan)
        return r

    def both(s: np.ndarray) -> np.ndarray:  # s: (m, n) 0/1, 1 = take b for hybrid "a"
        d = b - a
        x1 = a.sum() + s @ d
        xx1 = (a * a).sum() + s @ (b * b - a * a)
        gx1 = (g * a).sum() + s @ (g * d)
        tot, tot2, totg = (a + b).sum(), (a * a + b * b).sum(), (g * (a + b)).sum()
        diff: np.ndarray = corr(x1, xx1, gx1) - corr(tot - x1, tot2 - xx1, totg - gx1)
        return diff

    delta = float(stats.pearson(g, a) - stats.pearson(g, b))
    rng = np.random.default_rng(seed)
    null = np.empty(k)
    for start in range(0, k, block):
        m = min(block, k - start)
        s = (_sign_block(rng, m, n) > 0).astype(np.float64)
        null[start:start + m] = np.nan_to_num(both(s))
    return PermutationResult(_p(null, delta), delta, null)


def spa_permutation_test(human: np.ndarray, metric_a: np.ndarray, metric_b: np.ndarray,
                         k: int = 1000, seed: int = 0, spa_k: int = 1000,
                         spa_seed: int = 4) -> PermutationResult:
    """PERM-BOTH on SPA. Each draw's SPA reuses the fixed SPA sign flips, so the
    sign-flip sums of both hybrids come from one product (the second is
    the total minus the first)."""
    h = np.asarray(human, dtype=float)
    cols = stats._spa_columns(h)
    h = h[:, cols]
    a, b = np.asarray(metric_a, float)[:, cols], np.asarray(metric_b, float)[:, cols]
    use = ~np.isnan(h) & ~np.isnan(a) & ~np.isnan(b)
    if not use.all():
        # Ragged data: per-pair item sets; fall back to the generic loop.
        def spa(hh: np.ndarray, mm: np.ndarray) -> float:
            return stats.soft_pairwise_accuracy(hh, mm, spa_k, spa_seed)
        return scores_permutation_test(h, a, b, spa, k, seed)
    za, zb = _zscore_on(a, use), _zscore_on(b, use)
    signs = stats.permutation_signs(h.shape[1], spa_k, spa_seed).astype(np.float32)
    S = h.shape[0]
    i, j = np.triu_indices(S, 1)
    ph = stats.pairwise_p_values(h, signs.astype(np.float64))[i, j]

    def pvals(partial: np.ndarray, tot: np.ndarray) -> np.ndarray:
        obs = tot[..., i] - tot[..., j]
        null = partial[..., i] - partial[..., j]
        tol = 1e-6 * np.maximum(1.0, np.abs(obs))
        p: np.ndarray = (null >= (obs - tol)[..., None, :]).mean(axis=-2)
        return p

    def spa_of(partial: np.ndarray, tot: np.ndarray) -> np.ndarray:
        out: np.ndarray = 1.0 - np.abs(ph - pvals(partial, tot)).mean(axis=-1)
        return out

    Pa, Pb = signs @ za.T.astype(np.float32), signs @ zb.T.astype(np.float32)
    Ta, Tb = za.sum(1), zb.sum(1)
    delta = float(spa_of(Pa, Ta) - spa_of(Pb, Tb))
    rng = np.random.default_rng(seed)
    null = np.empty(k)
    for r in range(k):
        swap = rng.random(h.shape) < 0.5
        h1 = np.where(swap, zb, za).astype(np.float32)
        P1 = signs @ h1.T
        T1 = h1.sum(1, dtype=np.float64)
        null[r] = spa_of(P1, T1) - spa_of(Pa + Pb - P1, Ta + Tb - T1)
    return PermutationResult(_p(null, delta), delta, null)


def accuracy_permutation_test(human_sys: Sequence[np.ndarray], metric_a: Sequence[np.ndarray],
                              metric_b: Sequence[np.ndarray], k: int = 1000,
                              seed: int = 0) -> PermutationResult:
    """PERM-BOTH on pooled system-level pairwise accuracy over language pairs."""
    sizes = [len(x) for x in human_sys]
    h = np.concatenate([np.asarray(x, float) for x in human_sys])
    a = np.concatenate([np.asarray(x, float) for x in metric_a])
    b = np.concatenate([np.asarray(x, float) for x in metric_b])
    cuts = np.cumsum(sizes)[:-1]

    def acc(hh: np.ndarray, mm: np.ndarray) -> float:
        return stats.pairwise_accuracy(np.split(hh[0], cuts), np.split(mm[0], cuts))

    return scores_permutation_test(h[None], a[None], b[None], acc, k, seed)


# --------------------------------------------------------------------------- bootstrap, clusters

@dataclass(frozen=True)
class BootstrapCI:
    value: float
    low: float
    high: float
    level: float


def bootstrap_ci(human: np.ndarray, metric: np.ndarray, statistic: ArrayStatistic, k: int = 1000,
                 seed: int = 0, level: float = 0.95) -> BootstrapCI:
    """Percentile CI of statistic(human, metric), resampling items (columns); NaN ends (n/a) from fewer than
    MIN_RESAMPLED_ITEMS (6) items or when the statistic is undefined on some resamples' data."""
    h, m = np.asarray(human, float), np.asarray(metric, float)
    rng = np.random.default_rng(seed)
    T = h.shape[1]
    if T < MIN_RESAMPLED_ITEMS:
        return BootstrapCI(float(statistic(h, m)), float("nan"), float("nan"), level)
    vals = np.empty(k)
    for r in range(k):
        idx = rng.integers(0, T, T)
        vals[r] = statistic(h[:, idx], m[:, idx])
    lo, hi = np.quantile(vals, [(1 - level) / 2, 1 - (1 - level) / 2])
    return BootstrapCI(float(statistic(h, m)), float(lo), float(hi), level)


def significance_clusters(p_matrix: np.ndarray, alpha: float = 0.05) -> list[int]:
    """Cluster ranks for metrics sorted best first; p_matrix[i, j] (i < j) = p(i better than j)."""
    n = p_matrix.shape[0]
    ranks, rank, start = [], 1, 0
    for j in range(n):
        if np.any(p_matrix[start:j, j] <= alpha):
            rank += 1
            start = j
        ranks.append(rank)
    return ranks


@dataclass
class Comparison:
    """Metrics ordered best first, their values, pairwise p-values, cluster ranks and draws."""

    names: list[str]
    values: list[float]
    p_matrix: np.ndarray
    ranks: list[int]
    null: dict[tuple[str, str], np.ndarray] = field(default_factory=dict, repr=False)


def compare_metrics(values: dict[str, float],
                    test: Callable[[str, str], PermutationResult] | None,
                    alpha: float = 0.05) -> Comparison:
    """Order metrics, run ``test(better, worse)`` on every pair, assign cluster ranks."""
    names = ranked_names(values)
    n = len(names)
    pm = np.zeros((n, n))
    null: dict[tuple[str, str], np.ndarray] = {}
    if test is not None:
        for i in range(n):
            for j in range(i + 1, n):
                res = test(names[i], names[j])
                pm[i, j] = res.p_value
                null[(names[i], names[j])] = res.null
        ranks = significance_clusters(pm, alpha)
    else:
        ranks = list(range(1, n + 1))
    return Comparison(names, [values[x] for x in names], pm, ranks, null)
