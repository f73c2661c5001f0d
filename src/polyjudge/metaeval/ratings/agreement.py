"""Chance-corrected agreement on categorical (and ordinal/interval) ratings.

All statistics are vectorised with numpy and checked in tests against
scikit-learn (Cohen's kappa), statsmodels (Fleiss' kappa) and the
``krippendorff`` package. Conventions:

* two-rater statistics take two equally long 1-D label sequences;
* Fleiss' kappa takes either an ``items x categories`` count matrix or an
  ``items x raters`` label matrix (every item rated by the same number of raters);
* Krippendorff's alpha takes a ``raters x items`` matrix (the ``krippendorff``
  package's ``reliability_data`` layout) in which ``NaN`` marks a missing rating.

Undefined statistics (expected disagreement of zero, e.g. everybody always uses
the same category) return ``nan`` rather than raising, so that a table of many
statistics can still be printed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from polyjudge.data.errors import InputError

Weights = Literal["linear", "quadratic"] | None
Level = Literal["nominal", "ordinal", "interval", "ratio"]

__all__ = [
    "percent_agreement",
    "cohen_kappa",
    "scott_pi",
    "fleiss_kappa",
    "fleiss_kappa_from_labels",
    "labels_to_counts",
    "krippendorff_alpha",
]


def _pair(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(a), np.asarray(b)
    if x.ndim != 1 or y.ndim != 1 or x.shape != y.shape:
        raise InputError(f"two raters need equally long 1-D label sequences, got shapes "
                         f"{x.shape} and {y.shape}")
    if x.size == 0:
        raise InputError("no ratings to compare")
    return x, y


def _codes(x: np.ndarray, y: np.ndarray, labels: Sequence[Any] | None) -> tuple[np.ndarray, np.ndarray, int]:
    """Map both label sequences to integer codes over a shared label set
    (the sorted distinct labels, or ``labels`` in the given order)."""
    both = np.concatenate([x, y])
    if labels is None:
        cats, inv = np.unique(both, return_inverse=True)
    else:
        cats = np.asarray(labels)
        hit = both[:, None] == cats[None, :]
        if not hit.any(1).all():
            bad = both[~hit.any(1)][0]
            raise InputError(f"label {bad!r} is not among the given labels")
        inv = hit.argmax(1)
    return inv[: x.size], inv[x.size:], len(cats)


def percent_agreement(a: ArrayLike, b: ArrayLike) -> float:
    """Share of items on which the two raters give the same label (no chance correction)."""
    x, y = _pair(a, b)
    return float(np.mean(x == y))


def _confusion(a: ArrayLike, b: ArrayLike, labels: Sequence[Any] | None) -> np.ndarray:
    x, y = _pair(a, b)
    cx, cy, k = _codes(x, y, labels)
    m = np.zeros((k, k))
    np.add.at(m, (cx, cy), 1.0)
    return m


def _weight_matrix(k: int, weights: Weights) -> np.ndarray:
    """Disagreement weights on label *positions* (0..k-1), as scikit-learn does."""
    i = np.arange(k)
    d = np.abs(i[:, None] - i[None, :]).astype(float)
    w: np.ndarray
    if weights is None:
        w = (d > 0).astype(float)
    elif weights == "linear":
        w = d
    elif weights == "quadratic":
        w = d ** 2
    else:
        raise InputError(f"unknown kappa weights {weights!r}; use None, 'linear' or 'quadratic'")
    return w


def cohen_kappa(a: ArrayLike, b: ArrayLike, *, weights: Weights = None,
                labels: Sequence[Any] | None = None) -> float:
    """Cohen's kappa between two raters.

    Chance agreement uses each rater's own marginals. With ``weights`` the
    disagreement between labels i and j (their positions in the sorted label
    set, or in ``labels`` when given) is ``|i-j|`` or ``(i-j)**2``; this matches
    ``sklearn.metrics.cohen_kappa_score``.
    """
    conf = _confusion(a, b, labels)
    n = conf.sum()
    expected = np.outer(conf.sum(1), conf.sum(0)) / n
    w = _weight_matrix(conf.shape[0], weights)
    denom = float((w * expected).sum())
    if denom == 0.0:
        return float("nan")
    return 1.0 - float((w * conf).sum()) / denom


def scott_pi(a: ArrayLike, b: ArrayLike, *, labels: Sequence[Any] | None = None) -> float:
    """Scott's pi: like Cohen's kappa but chance agreement from the pooled marginals
    of both raters (the raters are treated as interchangeable)."""
    conf = _confusion(a, b, labels)
    n = conf.sum()
    p_obs = np.trace(conf) / n
    pooled = (conf.sum(0) + conf.sum(1)) / (2 * n)
    p_exp = float((pooled ** 2).sum())
    if p_exp == 1.0:
        return float("nan")
    return float((p_obs - p_exp) / (1.0 - p_exp))


def fleiss_kappa(counts: ArrayLike) -> float:
    """Fleiss' kappa from an ``items x categories`` matrix of rating counts.

    Every row must sum to the same number of raters m >= 2 (Fleiss' design);
    matches ``statsmodels.stats.inter_rater.fleiss_kappa(method='fleiss')``.
    """
    c = np.asarray(counts, dtype=float)
    if c.ndim != 2 or c.shape[0] == 0:
        raise InputError(f"Fleiss' kappa needs an items x categories count matrix, got shape {c.shape}")
    if (c < 0).any():
        raise InputError("Fleiss' kappa counts must be non-negative")
    m_per_item = c.sum(1)
    m = m_per_item[0]
    if not np.allclose(m_per_item, m):
        raise InputError("Fleiss' kappa needs the same number of ratings for every item")
    if m < 2:
        raise InputError("Fleiss' kappa needs at least two ratings per item")
    n_items = c.shape[0]
    p_cat = c.sum(0) / (n_items * m)
    p_item = ((c ** 2).sum(1) - m) / (m * (m - 1))
    p_bar = p_item.mean()
    p_exp = float((p_cat ** 2).sum())
    if p_exp == 1.0:
        return float("nan")
    return float((p_bar - p_exp) / (1.0 - p_exp))


def labels_to_counts(labels: ArrayLike, categories: Sequence[Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Turn an ``items x raters`` label matrix into an ``items x categories`` count
    matrix; returns ``(counts, categories)``. Categories default to the sorted
    distinct labels."""
    lab = np.asarray(labels)
    if lab.ndim != 2:
        raise InputError(f"expected an items x raters label matrix, got shape {lab.shape}")
    cats = np.unique(lab) if categories is None else np.asarray(categories)
    counts = (lab[:, :, None] == cats[None, None, :]).sum(1)
    if counts.sum() != lab.size:
        raise InputError("some labels are not among the given categories")
    return counts.astype(float), cats


def fleiss_kappa_from_labels(labels: ArrayLike, categories: Sequence[Any] | None = None) -> float:
    """Fleiss' kappa from an ``items x raters`` label matrix (no missing ratings)."""
    counts, _ = labels_to_counts(labels, categories)
    return fleiss_kappa(counts)


def krippendorff_alpha(data: ArrayLike, *, level: Level = "nominal",
                       value_domain: Sequence[float] | None = None) -> float:
    """Krippendorff's alpha for a ``raters x items`` matrix; ``NaN`` = missing.

    Values must be numeric (encode categories as integers). Units with fewer than
    two ratings are not pairable and are ignored. ``value_domain`` lists the
    possible values in order (it matters for ``ordinal``, where unobserved
    values still count in the rank distances); by default the observed values.
    Matches ``krippendorff.alpha`` for all four levels of measurement.
    """
    d = np.asarray(data, dtype=float)
    if d.ndim != 2:
        raise InputError(f"Krippendorff's alpha needs a raters x items matrix, got shape {d.shape}")
    observed = d[~np.isnan(d)]
    values = np.unique(observed) if value_domain is None else np.asarray(value_domain, dtype=float)
    if values.size == 0:
        raise InputError("Krippendorff's alpha: no ratings at all")
    if value_domain is not None and not np.isin(observed, values).all():
        raise InputError("Krippendorff's alpha: a rating is outside value_domain")
    # units x values count matrix
    counts = (d.T[:, :, None] == values[None, None, :]).sum(1).astype(float)
    m_u = counts.sum(1)
    keep = m_u >= 2
    counts, m_u = counts[keep], m_u[keep]
    if counts.shape[0] == 0:
        return float("nan")
    # coincidence matrix: o_ck = sum_u (n_uc n_uk - [c=k] n_uc) / (m_u - 1)
    scaled = counts / (m_u - 1)[:, None]
    coinc = counts.T @ scaled - np.diag(scaled.sum(0))
    n_c = coinc.sum(1)
    n = n_c.sum()
    delta = _alpha_distance(values, n_c, level)
    d_obs = float((coinc * delta).sum())
    d_exp = float((np.outer(n_c, n_c) * delta).sum()) / (n - 1)
    if d_exp == 0.0:
        return float("nan")
    return float(1.0 - d_obs / d_exp)


def _alpha_distance(values: np.ndarray, n_c: np.ndarray, level: Level) -> np.ndarray:
    """Squared distance between every pair of values for a level of measurement."""
    v = values
    dist: np.ndarray
    if level == "nominal":
        dist = (v[:, None] != v[None, :]).astype(float)
    elif level == "interval":
        dist = (v[:, None] - v[None, :]) ** 2
    elif level == "ratio":
        s = v[:, None] + v[None, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            out = ((v[:, None] - v[None, :]) / s) ** 2
        dist = np.nan_to_num(out, nan=0.0)
    elif level == "ordinal":
        # distance between ranks c<k: (sum_{g=c..k} n_g - (n_c + n_k)/2)^2
        cum = np.concatenate([[0.0], np.cumsum(n_c)])
        i = np.arange(len(v))
        lo, hi = np.minimum(i[:, None], i[None, :]), np.maximum(i[:, None], i[None, :])
        between = cum[hi + 1] - cum[lo]
        dist = (between - (n_c[:, None] + n_c[None, :]) / 2.0) ** 2
    else:
        raise InputError(f"unknown level of measurement {level!r}")
    return dist
