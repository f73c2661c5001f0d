"""Agreement statistics between human and metric scores, WMT-style.

Definitions follow the WMT metrics task toolkit (google-research/mt-metrics-eval)
so a number computed here can stand next to a published one:

* Inputs are (systems x items) arrays with NaN for missing. A cell is used
  only when both the human and the metric score are present.
* Grouping: ``"none"`` pools all cells into one vector (system-major order),
  ``"item"`` computes one statistic per item (column) over systems, ``"sys"``
  one per system (row) over items; the result is the plain mean over groups.
  Groups with fewer than three usable cells are skipped (the reference skips
  only those under two: over two cells every correlation is +-1, which the
  average would take as agreement); when no group is left for that reason
  the result is NaN (n/a). The rule holds without grouping too (one vector
  of two cells is n/a, where the reference gives +-1). Groups whose statistic
  is undefined (a constant vector for Pearson/Spearman/Kendall) are skipped,
  or count as 0 with ``nan_as_zero=True``. With no usable group the result
  is NaN (n/a): the reference returns 0.0 there, which a table prints as a
  correlation of 0.0000 for a metric that gave every segment the same score.
* Scores of very large or very small magnitude (1e308) are rescaled (divided
  by the largest magnitude) before sums of squares, which would overflow to
  inf and turn a correlation into 0; correlations and z-scores do not change
  under a positive scale, so the result is the one scipy gives where it can.
* acc23 / tau23 (Deutsch et al. 2023): a pair is a metric tie when
  ``|m_i - m_j| <= epsilon``, a human tie when the human scores are equal.
  acc23 = (concordant + tied in both) / all pairs.
* Tie calibration (acc-t) chooses the epsilon that maximises the grouped
  mean acc23, exactly, with one sort over all pairs.
* Soft pairwise accuracy (SPA, Thompson et al. 2024): 1 - mean over system
  pairs of |p_human - p_metric|, where p is a paired permutation p-value for
  "system i is better than system j".

Everything is vectorised over pairs and groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

# Fewer points than this and a correlation is not shown: over two systems Pearson and Kendall are +-1 whatever
# the scores, which a table would print like any other value.
MIN_CORRELATION_POINTS = 3

Grouping = Literal["none", "item", "sys"]
GROUPINGS = ("none", "item", "sys")
# Rows wider than this are handled one at a time (pairs grow quadratically).
_NARROW = 64


# --------------------------------------------------------------------------- layout

def grouped(human: ArrayLike, metric: ArrayLike, grouping: str) -> tuple[np.ndarray, np.ndarray]:
    """(groups x members) views: rows are the vectors a statistic is computed on.

    Cells without a human or metric score are set to NaN in both.
    """
    h = np.asarray(human, dtype=float)
    m = np.asarray(metric, dtype=float)
    if h.shape != m.shape:
        raise ValueError(f"human {h.shape} and metric {m.shape} shapes differ")
    if h.ndim == 1:
        h, m = h[None, :], m[None, :]
    bad = np.isnan(h) | np.isnan(m)
    h = np.where(bad, np.nan, h)
    m = np.where(bad, np.nan, m)
    if grouping == "none":
        return h.reshape(1, -1), m.reshape(1, -1)
    if grouping == "sys":
        return h, m
    if grouping == "item":
        return h.T.copy(), m.T.copy()
    raise ValueError(f"grouping must be one of {GROUPINGS}, not {grouping!r}")


def average_groups(values: ArrayLike, sizes: ArrayLike, nan_as_zero: bool = False,
                   min_points: int = MIN_CORRELATION_POINTS) -> float:
    """Mean of per-group values, with the reference's rules for degenerate groups, except that a group of
    fewer than ``min_points`` cells is left out (over two cells a correlation is +-1 whatever the scores).
    NaN (shown n/a) when no group is left: none had ``min_points`` cells, or every group's value is undefined
    (constant scores)."""
    n = np.asarray(sizes)
    use = n >= min_points
    v = np.asarray(values, dtype=float)[use]
    if nan_as_zero:
        v = np.nan_to_num(v, nan=0.0)
    else:
        v = v[~np.isnan(v)]
    return float(v.mean()) if v.size else float("nan")


@dataclass(frozen=True)
class GroupedCorrelation:
    """A correlation averaged over groups, with how many groups it rests on and how many were left out."""

    value: float  # NaN when no group had MIN_CORRELATION_POINTS cells
    groups: int  # groups of at least MIN_CORRELATION_POINTS cells (their undefined values skipped)
    left_out: int  # groups of 1 to MIN_CORRELATION_POINTS - 1 cells, not averaged


def grouped_correlation(human: ArrayLike, metric: ArrayLike, method: str = "pearson", grouping: str = "none",
                        variant: str = "b") -> GroupedCorrelation:
    """A correlation with the count of groups used and left out (for a table's note); unlike
    :func:`correlation`, a single vector (``"none"``) of fewer than MIN_CORRELATION_POINTS cells is n/a too."""
    vals, sizes = per_group(human, metric, method, grouping, variant)
    big = sizes >= MIN_CORRELATION_POINTS
    return GroupedCorrelation(average_groups(vals, sizes), int(big.sum()), int(((sizes > 0) & ~big).sum()))


def _compact_rows(h: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Move usable cells to the left of each row (order kept); return counts."""
    ok = ~np.isnan(h)
    order = np.argsort(~ok, axis=1, kind="stable")
    h2 = np.take_along_axis(h, order, axis=1)
    m2 = np.take_along_axis(m, order, axis=1)
    n = ok.sum(axis=1)
    width = int(n.max()) if n.size else 0
    return h2[:, :width], m2[:, :width], n


# --------------------------------------------------------------------------- correlations

# Magnitudes whose squares and sums stay exact in float64 (1e308 squared is inf); rows with a value outside
# are rescaled first. Inside, nothing is touched, so ordinary scores give the same bits as before.
SAFE_MAGNITUDE = (1e-100, 1e100)


def rescaled_rows(x: np.ndarray) -> np.ndarray:
    """Each row of ``x`` (NaN = missing) divided by its largest magnitude when that lies outside
    :data:`SAFE_MAGNITUDE`; other rows unchanged. Scale-free statistics (correlations, z-scores, sign tests)
    give the same value on the result, without overflow."""
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return x
    two = x if x.ndim == 2 else x.reshape(1, -1)
    top = np.max(np.where(np.isfinite(two), np.abs(two), 0.0), axis=1, keepdims=True)
    lo, hi = SAFE_MAGNITUDE
    scale = np.where((top > hi) | ((top > 0) & (top < lo)), top, 1.0)
    if not (scale != 1.0).any():
        return x
    return (two / scale).reshape(x.shape)


def _row_pearson(h: np.ndarray, m: np.ndarray) -> np.ndarray:
    h, m = rescaled_rows(h), rescaled_rows(m)
    ok = ~np.isnan(h)
    n = ok.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mh = np.nansum(h, axis=1) / n
        mm = np.nansum(m, axis=1) / n
        dh = np.where(ok, h - mh[:, None], 0.0)
        dm = np.where(ok, m - mm[:, None], 0.0)
        r = (dh * dm).sum(1) / np.sqrt((dh * dh).sum(1) * (dm * dm).sum(1))
        const = (np.nanmax(np.where(ok, h, -np.inf), axis=1) == np.nanmin(np.where(ok, h, np.inf), axis=1)) | \
                (np.nanmax(np.where(ok, m, -np.inf), axis=1) == np.nanmin(np.where(ok, m, np.inf), axis=1))
    r = np.where(const | (n < 2), np.nan, np.clip(r, -1.0, 1.0))
    return r


def _row_ranks(x: np.ndarray) -> np.ndarray:
    import scipy.stats  # on first use: importing it costs ~0.8 s, and `meta-eval --help` needs none of it

    return np.asarray(scipy.stats.rankdata(x, axis=1, nan_policy="omit"), dtype=float)


def _pair_index(width: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(width, 1)


def _row_kendall(h: np.ndarray, m: np.ndarray, variant: str) -> np.ndarray:
    out = np.full(h.shape[0], np.nan)
    if h.shape[1] > _NARROW:
        import scipy.stats

        for g in range(h.shape[0]):
            ok = ~np.isnan(h[g])
            if ok.sum() < 2:
                continue
            out[g] = scipy.stats.kendalltau(h[g, ok], m[g, ok], variant=variant)[0]
        return out
    h, m, n = _compact_rows(h, m)
    i, j = _pair_index(h.shape[1])
    dh = np.sign(h[:, j] - h[:, i])
    dm = np.sign(m[:, j] - m[:, i])
    valid = ~np.isnan(dh)
    prod = np.where(valid, dh * dm, 0.0)
    con = (prod > 0).sum(1)
    dis = (prod < 0).sum(1)
    tot = n * (n - 1) // 2
    th = (valid & (dh == 0)).sum(1)
    tm = (valid & (dm == 0)).sum(1)
    degenerate = (th == tot) | (tm == tot) | (n < 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        if variant == "b":
            tau = (con - dis) / np.sqrt((tot - th).astype(float)) / np.sqrt((tot - tm).astype(float))
        elif variant == "c":
            distinct_h = _distinct_counts(h)
            distinct_m = _distinct_counts(m)
            mc = np.minimum(distinct_h, distinct_m).astype(float)
            tau = 2.0 * (con - dis) / (n.astype(float) ** 2 * (mc - 1) / mc)
        else:
            raise ValueError(f"Kendall variant must be 'b' or 'c', not {variant!r}")
    out = np.where(degenerate, np.nan, np.clip(tau, -1.0, 1.0))
    return out


def _distinct_counts(x: np.ndarray) -> np.ndarray:
    s = np.sort(x, axis=1)  # NaN last
    changes = (s[:, 1:] != s[:, :-1]) & ~np.isnan(s[:, 1:])
    return np.where(np.isnan(s[:, 0]), 0, 1 + changes.sum(1))


def per_group(human: ArrayLike, metric: ArrayLike, method: str, grouping: str = "none",
              variant: str = "b") -> tuple[np.ndarray, np.ndarray]:
    """Per-group statistic values and group sizes (usable cells)."""
    h, m = grouped(human, metric, grouping)
    sizes = (~np.isnan(h)).sum(axis=1)
    if method == "pearson":
        vals = _row_pearson(h, m)
    elif method == "spearman":
        hr, mr = _row_ranks(h), _row_ranks(m)
        vals = _row_pearson(hr, mr)
        const = _row_pearson(h, m)  # NaN exactly when a row is constant / too short
        vals = np.where(np.isnan(const), np.nan, vals)
    elif method == "kendall":
        vals = _row_kendall(h, m, variant)
    else:
        raise ValueError(f"unknown correlation {method!r}")
    return vals, sizes


def correlation(human: ArrayLike, metric: ArrayLike, method: str = "pearson",
                grouping: str = "none", variant: str = "b", nan_as_zero: bool = False) -> float:
    """Pearson / Spearman / Kendall (``variant`` b or c) averaged over groups."""
    vals, sizes = per_group(human, metric, method, grouping, variant)
    return average_groups(vals, sizes, nan_as_zero, _min_points(grouping))


def _min_points(grouping: str) -> int:
    """Groups smaller than this are left out, one vector (``"none"``) too: the reference keeps a vector of two
    cells, whose correlation is +-1 whatever the scores (a segment-level Pearson over two segments, a
    system-level one over two systems); here it is NaN (n/a)."""
    return MIN_CORRELATION_POINTS


def pearson(human: ArrayLike, metric: ArrayLike, grouping: str = "none") -> float:
    return correlation(human, metric, "pearson", grouping)


def spearman(human: ArrayLike, metric: ArrayLike, grouping: str = "none") -> float:
    return correlation(human, metric, "spearman", grouping)


def kendall(human: ArrayLike, metric: ArrayLike, grouping: str = "none", variant: str = "b") -> float:
    return correlation(human, metric, "kendall", grouping, variant)


# --------------------------------------------------------------------------- pairs

@dataclass(frozen=True)
class Pairs:
    """Every usable within-group pair, flattened over groups.

    ``group`` is the pair's group index, ``dh``/``dm`` the human and metric
    differences (second minus first), ``n_pairs[g]`` the number of pairs of
    group g (groups with < 2 cells have 0 and are ignored by averages).
    """

    group: np.ndarray
    dh: np.ndarray
    dm: np.ndarray
    n_pairs: np.ndarray

    @property
    def groups_used(self) -> np.ndarray:
        return np.flatnonzero(self.n_pairs > 0)


def enumerate_pairs(human: ArrayLike, metric: ArrayLike, grouping: str = "item",
                    max_pairs: int = 200_000_000) -> Pairs:
    """All within-group pairs, vectorised (wide groups one at a time)."""
    h, m = grouped(human, metric, grouping)
    h, m, n = _compact_rows(h, m)
    n_pairs = n * (n - 1) // 2
    total = int(n_pairs.sum())
    if total > max_pairs:
        raise ValueError(f"{total} pairs exceed the limit of {max_pairs}; "
                         "use item or system grouping")
    if h.shape[1] <= _NARROW:
        i, j = _pair_index(h.shape[1])
        dh = h[:, j] - h[:, i]
        dm = m[:, j] - m[:, i]
        ok = ~np.isnan(dh)
        grp = np.broadcast_to(np.arange(h.shape[0])[:, None], dh.shape)
        return Pairs(grp[ok], dh[ok], dm[ok], n_pairs)
    groups, dhs, dms = [], [], []
    for g in range(h.shape[0]):
        k = int(n[g])
        if k < 2:
            continue
        i, j = _pair_index(k)
        dhs.append(h[g, j] - h[g, i])
        dms.append(m[g, j] - m[g, i])
        groups.append(np.full(i.size, g))
    if not groups:
        e = np.zeros(0)
        return Pairs(e.astype(int), e, e, n_pairs)
    return Pairs(np.concatenate(groups), np.concatenate(dhs), np.concatenate(dms), n_pairs)


def pair_correct(pairs: Pairs, epsilon: float = 0.0) -> np.ndarray:
    """1 where a pair counts for acc23: concordant, or tied in both (metric tie = |dm| <= eps)."""
    if epsilon < 0:
        raise ValueError("epsilon must be non-negative")
    mtie = np.abs(pairs.dm) <= epsilon
    htie = pairs.dh == 0
    con = ~mtie & ~htie & (np.sign(pairs.dh) == np.sign(pairs.dm))
    correct: np.ndarray = (con | (mtie & htie)).astype(np.int64)
    return correct


def _grouped_mean_of_pair_values(pairs: Pairs, values: np.ndarray) -> float:
    used = pairs.groups_used
    if used.size == 0:
        return float("nan")  # no group of two cells: no pair to be right or wrong about
    sums = np.bincount(pairs.group, weights=values, minlength=pairs.n_pairs.size)
    return float(np.mean(sums[used] / pairs.n_pairs[used]))


def acc23(human: ArrayLike, metric: ArrayLike, grouping: str = "item", epsilon: float = 0.0) -> float:
    """Pairwise accuracy with ties (acc23) at a fixed metric tie threshold."""
    p = enumerate_pairs(human, metric, grouping)
    return _grouped_mean_of_pair_values(p, pair_correct(p, epsilon).astype(float))


def tau23(human: ArrayLike, metric: ArrayLike, grouping: str = "item", epsilon: float = 0.0) -> float:
    """tau23 = (C + T_both - D - T_human - T_metric) / pairs = 2 * acc23 - 1 per group."""
    p = enumerate_pairs(human, metric, grouping)
    if p.groups_used.size == 0:
        return float("nan")
    return 2.0 * _grouped_mean_of_pair_values(p, pair_correct(p, epsilon).astype(float)) - 1.0


@dataclass(frozen=True)
class TieCalibration:
    """Best grouped acc23 (or tau23) and its threshold; all candidates for plots."""

    value: float
    epsilon: float
    thresholds: np.ndarray
    values: np.ndarray


def tie_calibration(human: ArrayLike, metric: ArrayLike, grouping: str = "item", variant: str = "acc23",
                    pairs: Pairs | None = None) -> TieCalibration:
    """Exact tie calibration: one stable sort of all pairs by |metric difference|.

    Raising epsilon past a pair's |dm| turns it into a metric tie. For acc23
    that changes the pair's contribution by +1 (human tie), -1 (it was
    concordant) or 0 (it was discordant), divided by its group's pair count
    and the number of groups: the objective is a cumulative sum over the
    sorted pairs, evaluated at the last pair of each distinct |dm|. The
    smallest maximising threshold wins (0 when no tie helps).
    """
    if variant not in ("acc23", "tau23"):
        raise ValueError("tie calibration supports 'acc23' and 'tau23'")
    p = enumerate_pairs(human, metric, grouping) if pairs is None else pairs
    used = p.groups_used
    if used.size == 0:  # no pair: accuracy undefined (n/a), not 0
        return TieCalibration(float("nan"), 0.0, np.zeros(1), np.full(1, np.nan))
    R = used.size
    htie = p.dh == 0
    mtie0 = p.dm == 0
    correct0 = pair_correct(p, 0.0)
    concordant0 = correct0.astype(bool) & ~htie
    delta = np.where(htie & ~mtie0, 1, np.where(concordant0, -1, 0)).astype(np.int64)
    diff = np.abs(p.dm)
    order = np.argsort(diff, kind="stable")
    diff_s = diff[order]
    npairs = p.n_pairs[used]
    base_counts = np.bincount(p.group, weights=correct0, minlength=p.n_pairs.size)[used]
    if np.all(npairs == npairs[0]):
        # Same pair count in every group (the usual case): integer arithmetic, exact.
        scale = float(npairs[0]) * R
        cum = np.cumsum(delta[order])
        base = float(base_counts.sum())
        total = (base + cum) / scale
        base_val = base / scale
    else:
        w = np.zeros(p.n_pairs.size)
        w[used] = 1.0 / (npairs * R)
        cum = np.cumsum(delta[order] * w[p.group[order]])
        base_val = float(np.sum(base_counts / npairs) / R)
        total = base_val + cum
    last = np.r_[diff_s[1:] != diff_s[:-1], True]
    thresholds = diff_s[last]
    values = total[last]
    if thresholds.size == 0 or thresholds[0] != 0.0:
        thresholds = np.r_[0.0, thresholds]
        values = np.r_[base_val, values]
    if variant == "tau23":
        values = 2.0 * values - 1.0
    best = int(np.flatnonzero(values >= values.max() - 1e-12)[0])
    return TieCalibration(float(values[best]), float(thresholds[best]), thresholds, values)


# --------------------------------------------------------------------------- system level

def pairwise_accuracy(human_sys: ArrayLike | Sequence[ArrayLike],
                      metric_sys: ArrayLike | Sequence[ArrayLike]) -> float:
    """System-level pairwise accuracy, pooled over several language pairs.

    ``human_sys`` and ``metric_sys`` are lists of per-LP system score vectors
    (or single vectors). A pair agrees when the signs of the human and metric
    differences are equal (a tie in both agrees). Pairs are pooled, not averaged.
    NaN (n/a) when there is no pair (fewer than two systems).
    """
    agree = total = 0
    for h, m in zip(_vectors(human_sys), _vectors(metric_sys)):
        a, n = pairwise_agreement(h, m)
        agree += a
        total += n
    return agree / total if total else float("nan")


def _vectors(x: ArrayLike | Sequence[ArrayLike]) -> list[np.ndarray]:
    """One score vector, or a list of per-LP vectors, as a list of float vectors."""
    if isinstance(x, Sequence) and not isinstance(x, str | bytes) and not (len(x) and np.isscalar(x[0])):
        return [np.asarray(v, dtype=float) for v in x]
    return [np.asarray(x, dtype=float)]


def pairwise_agreement(human: ArrayLike, metric: ArrayLike) -> tuple[int, int]:
    """(agreeing pairs, pairs) for one vector of system scores."""
    h = np.asarray(human, dtype=float)
    m = np.asarray(metric, dtype=float)
    ok = ~np.isnan(h) & ~np.isnan(m)
    h, m = h[ok], m[ok]
    i, j = _pair_index(h.size)
    agree = np.sign(h[i] - h[j]) == np.sign(m[i] - m[j])
    return int(agree.sum()), int(i.size)


def permutation_signs(n_items: int, k: int = 1000, seed: int = 4) -> np.ndarray:
    """(k x n_items) matrix of +/-1 used by the SPA paired permutation tests.

    Drawn as in the WMT24 toolkit (uniform float32 draws rounded to 0/1), so
    that with the same seed and item count the p-values match it exactly.
    """
    rng = np.random.default_rng(seed)
    u = rng.random(size=(k, n_items), dtype=np.float32)
    np.rint(u, out=u)
    return (u * 2.0 - 1.0).astype(np.float64)


def _spa_columns(human: np.ndarray) -> np.ndarray:
    """Items kept for SPA: those with a human score for at least one system."""
    return np.flatnonzero((~np.isnan(human)).any(axis=0))


def pairwise_p_values(scores: np.ndarray, signs: np.ndarray,
                      mask: np.ndarray | None = None, float32: bool = False) -> np.ndarray:
    """p[i, j] (i < j): share of sign flips whose delta >= the observed sum(x_i - x_j).

    ``mask`` (systems x items, bool) says which cells each pair may use: a pair
    uses the items usable for both systems. NaN elsewhere in the matrix.
    By default sums are float64 and exact ties count as ">=";
    ``float32=True`` reproduces the WMT24 toolkit's float32 arithmetic bit for
    bit (it can miss exact ties of non-integer scores; complete rows only).
    """
    x = np.asarray(scores, dtype=float)
    S = x.shape[0]
    if mask is None:
        mask = ~np.isnan(x)
    i, j = _pair_index(S)
    if float32:
        if not mask.all():
            raise ValueError("float32 compatibility mode needs complete score rows")
        x32 = x.astype(np.float32)
        partial = signs.astype(np.float32) @ x32.T
        tot = x32.sum(axis=1)
        out = np.full((S, S), np.nan)
        out[i, j] = ((partial[:, i] - partial[:, j]) >= (tot[i] - tot[j])).sum(0) / signs.shape[0]
        return out
    common = mask[i] & mask[j]
    d = _pair_differences(x, i, j, common)
    observed = d.sum(axis=1)
    null = signs @ d.T  # (k, pairs)
    tol = 1e-9 * np.maximum(1.0, np.abs(observed))
    p = (null >= observed - tol).mean(axis=0)
    out = np.full((S, S), np.nan)
    out[i, j] = p
    return out


def _pair_differences(x: np.ndarray, i: np.ndarray, j: np.ndarray, common: np.ndarray) -> np.ndarray:
    """(pairs, items) differences x_i - x_j (0 where not shared). A pair whose differences are too large
    (1e308 - -1e308 is inf) or small for exact sums is taken at half scale and rescaled on its own: its
    p-value does not change under a positive scale, and the other pairs keep their bits."""
    with np.errstate(over="ignore", invalid="ignore"):
        d = np.where(common, np.nan_to_num(x[i]) - np.nan_to_num(x[j]), 0.0)
    wild = ~np.isfinite(d).all(axis=1)
    if wild.any():
        half = np.nan_to_num(x) * 0.5
        d[wild] = np.where(common[wild], half[i[wild]] - half[j[wild]], 0.0)
    return rescaled_rows(d)


def soft_pairwise_accuracy(human: np.ndarray, metric: np.ndarray, k: int = 1000, seed: int = 4,
                           signs: np.ndarray | None = None, float32: bool = False) -> float:
    """SPA = 1 - mean over system pairs of |p_human - p_metric| (segment-level inputs).

    Both p-value matrices use the same sign flips. Items without any human
    score are dropped first; a pair of systems uses the items where both have
    human and metric scores.
    """
    h = np.asarray(human, dtype=float)
    m = np.asarray(metric, dtype=float)
    cols = _spa_columns(h)
    h, m = h[:, cols], m[:, cols]
    if signs is None:
        signs = permutation_signs(h.shape[1], k, seed)
    mask = ~np.isnan(h) & ~np.isnan(m)
    ph = pairwise_p_values(h, signs, mask, float32)
    pm = pairwise_p_values(m, signs, mask, float32)
    i, j = _pair_index(h.shape[0])
    if i.size == 0:
        return float("nan")  # fewer than two systems: no pair to rank
    return float(1.0 - np.mean(np.abs(ph[i, j] - pm[i, j])))
