"""Robust merging of repeated runs (GEMBA-MQM V2, Section 4 and Appendix A.2).

A judge sampled at temperature > 0 gives a different score on every run.
GEMBA-MQM V2 drops runs more than two standard deviations from the segment's
mean, sorts the rest from best to worst and weights rank ``r`` by ``1/r``
(reciprocal-rank weighted average, "rrwa"): a soft maximum that trusts the
most lenient runs but lets consistent error reports pull the score down.

The standard deviation is the population one (``ddof=0``); the paper does not
say, and on its Table 1 example both choices remove the same run. A run is an
outlier only when it is *strictly* more than ``k`` standard deviations away,
so identical scores (σ = 0) never lose a run.

Every mean and weighted sum here is computed by :mod:`polyjudge.aggregate.exact`
(correctly rounded, independent of summation order, numpy version and BLAS), so
equal aggregates are equal floats on every machine and tie counts reproduce.

Other aggregators registered here let the paper's comparison be repeated:
``mean-2s`` (mean after the same outlier removal; the paper's "mean"),
``mean-all``, ``max``, ``min``, ``geo``, ``geo+1``, ``trimmed-mean`` and
``majority``.

Zero policy of the geometric means. MQM scores are minus error points and an
error-free run scores 0, which a geometric mean cannot take a logarithm of:

* ``geo`` is the paper's column (Table 1: -9.29 on its example). It is
  *zero-absorbing*: as soon as one kept run found no errors the result is 0,
  the limit of the product (scipy's ``gmean`` agrees). On MQM data, where a
  clean run is common, ``geo`` then behaves much like ``max``.
* ``geo+1`` shifts the error points by one before averaging and back after,
  ``-(exp(mean(log(1 + points))) - 1)``: a clean run pulls the score towards 0
  without fixing it there, and equal runs still give their own value. It
  differs from ``geo`` also without zeros (-9.45 on Table 1), so it is a
  variant, not a replacement.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from polyjudge.aggregate.exact import exact_mean, exact_sum, reciprocal_rank_mean
from polyjudge.aggregate.runs import get_aggregator, register_aggregator

OUTLIER_SIGMAS = 2.0

# numpy is imported by the functions that compute, not here: the aggregator registry is listed by
# ``--help``, which must not pay for numpy (tests/architecture/test_startup.py).
if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Floats = NDArray[np.float64]
    Mask = NDArray[np.bool_]


def _array(scores: Sequence[float] | Floats) -> Floats:
    import numpy as np

    a = np.asarray(scores, dtype=np.float64)
    if a.ndim != 1 or a.size == 0:
        raise ValueError("an aggregator needs at least one score")
    if not np.all(np.isfinite(a)):
        raise ValueError("scores must be finite numbers")
    return a


def outlier_mask(scores: Sequence[float] | Floats, k: float = OUTLIER_SIGMAS) -> Mask:
    """Boolean mask of the runs kept: ``|s - mean| <= k * std`` (population std)."""
    import numpy as np

    a = _array(scores)
    mean = exact_mean(a.tolist())
    deviations = a - mean
    sd = math.sqrt(exact_sum((deviations * deviations).tolist()) / a.size)
    # A run exactly at k·σ is kept ("beyond" means strictly more). The small
    # relative slack stops rounding from deciding that case: with five runs
    # of which one differs, that run lies exactly 2σ from the mean.
    slack = 1e-9 * max(1.0, float(np.abs(a).max()))
    kept: Mask = np.abs(deviations) <= k * sd + slack
    return kept


def _floats(scores: Sequence[float] | Floats) -> list[float]:
    """``scores`` as a list of finite floats; the errors of :func:`_array` otherwise."""
    try:
        xs = [float(x) for x in scores]
    except TypeError:
        xs = []  # not one number each (a nested sequence): _array names the problem
    if not xs or not all(math.isfinite(x) for x in xs):
        _array(scores)  # raises the ValueError of an empty, nested or non-finite input
    return xs


def kept_runs(scores: Sequence[float] | Floats, k: float = OUTLIER_SIGMAS) -> list[float]:
    """The runs within ``k`` standard deviations of the mean, in input order, as floats.

    The same floating-point operations as :func:`outlier_mask` (elementwise IEEE arithmetic, the same
    correctly rounded sums), on a list: aggregating short rows of runs is dominated by numpy's per-call
    cost, so the aggregators use this; a test holds the two to the same runs bit for bit."""
    xs = _floats(scores)
    mean = exact_mean(xs)
    deviations = [x - mean for x in xs]
    sd = math.sqrt(exact_sum([d * d for d in deviations]) / len(xs))
    limit = k * sd + 1e-9 * max(1.0, max(abs(x) for x in xs))
    return [x for x, d in zip(xs, deviations) if abs(d) <= limit]


def remove_outliers(scores: Sequence[float] | Floats, k: float = OUTLIER_SIGMAS) -> Floats:
    """The runs within ``k`` standard deviations of the mean, in input order."""
    import numpy as np

    return np.array(kept_runs(scores, k), dtype=np.float64)


def rrwa_weights(n: int) -> Floats:
    """Normalised 1/rank weights for ``n`` sorted runs (sum to 1), for display; :func:`rrwa` sums exactly."""
    import numpy as np

    w: Floats = 1.0 / np.arange(1, n + 1, dtype=np.float64)
    normalised: Floats = w / w.sum()
    return normalised


@register_aggregator("rrwa")
def rrwa(scores: Sequence[float]) -> float:
    """Reciprocal-rank weighted average after 2σ outlier removal (GEMBA-MQM V2)."""
    return reciprocal_rank_mean(sorted(kept_runs(scores), reverse=True))  # best (highest) first


@register_aggregator("mean")
@register_aggregator("mean-2s")
def mean_without_outliers(scores: Sequence[float]) -> float:
    """Mean after 2σ outlier removal (GEMBA-MQM V2's "mean"; mean = mean-2s)."""
    return exact_mean(kept_runs(scores))


@register_aggregator("mean-all")
def mean_all(scores: Sequence[float]) -> float:
    """Plain mean of every successful run (no outlier removal)."""
    return exact_mean(_floats(scores))


@register_aggregator("max")
def maximum(scores: Sequence[float]) -> float:
    """Highest run: the most lenient (fewest error points for MQM)."""
    return float(_array(scores).max())


@register_aggregator("min")
def minimum(scores: Sequence[float]) -> float:
    """Lowest run: the harshest."""
    return float(_array(scores).min())


def _one_sign(kept: Floats, name: str) -> float:
    """-1 when every kept score is <= 0, +1 when every one is >= 0; mixed signs have no geometric mean."""
    import numpy as np

    if np.all(kept <= 0):
        return -1.0
    if np.all(kept >= 0):
        return 1.0
    raise ValueError(f"{name} needs scores of one sign (all <= 0 or all >= 0)")


@register_aggregator("geo")
def geometric(scores: Sequence[float]) -> float:
    """Geometric mean of magnitudes after 2σ removal; 0 if any kept run is 0 (paper's geo).

    For MQM (scores <= 0) this is minus the geometric mean of the error points.
    Zero policy, on purpose: if any kept run has magnitude 0 the result is 0,
    the limit of the geometric mean (one error-free run makes the product
    zero; scipy's ``gmean`` gives the same), which is what reproduces the
    paper's column. Use ``geo+1`` for a geometric mean that a clean run does
    not collapse. Scores of mixed sign have no geometric mean and raise
    ``ValueError``.
    """
    import numpy as np

    kept = remove_outliers(scores)
    sign = _one_sign(kept, "geo")
    mags = np.abs(kept)
    if np.any(mags == 0):
        return 0.0
    return sign * math.exp(exact_mean([math.log(m) for m in mags.tolist()]))


@register_aggregator("geo+1")
def geometric_shifted(scores: Sequence[float]) -> float:
    """Geometric mean shifted by +1 after 2σ removal: an error-free run does not make it 0.

    ``sign * (exp(mean(log(1 + |s|))) - 1)`` over the kept runs: the usual
    shifted geometric mean, defined for error-free runs (magnitude 0 adds
    ``log 1 = 0``). On runs that all found errors it is close to, but not
    equal to, ``geo``. Scores of mixed sign raise ``ValueError``, as for ``geo``.
    """
    import numpy as np

    kept = remove_outliers(scores)
    sign = _one_sign(kept, "geo+1")
    return sign * math.expm1(exact_mean([math.log1p(m) for m in np.abs(kept).tolist()]))


@register_aggregator("trimmed-mean")
def trimmed_mean(scores: Sequence[float]) -> float:
    """Mean after dropping the single highest and lowest run.

    Needs at least three runs; with fewer it is the plain mean.
    """
    import numpy as np

    a = np.sort(_array(scores))
    return exact_mean((a[1:-1] if a.size >= 3 else a).tolist())


@register_aggregator("majority")
def majority(scores: Sequence[float]) -> float:
    """Most frequent value, for categorical answers (labels, choices, 1-5 ratings).

    Ties between equally frequent values go to the lowest one: deterministic,
    independent of run order, and conservative for higher-is-better scores.
    """
    import numpy as np

    values, counts = np.unique(_array(scores), return_counts=True)
    return float(values[np.argmax(counts)])  # unique sorts ascending; argmax takes the first


# Aggregators compared side by side (e.g. in aggregates.tsv), in display order.
COMPARISON = ("rrwa", "mean-2s", "mean-all", "median", "max", "min", "geo", "trimmed-mean")


def aggregate_all(scores: Sequence[float], names: Sequence[str] = COMPARISON) -> dict[str, float | None]:
    """Every named aggregator on one segment's run scores; None where one is undefined
    (no scores, or geo on scores of mixed sign)."""
    out: dict[str, float | None] = {}
    for name in names:
        try:
            out[name] = get_aggregator(name)(scores)
        except ValueError:
            out[name] = None
    return out


__all__ = ["COMPARISON", "OUTLIER_SIGMAS", "aggregate_all", "geometric", "geometric_shifted", "majority", "maximum",
           "mean_all", "mean_without_outliers", "minimum", "kept_runs", "outlier_mask", "remove_outliers",
           "rrwa", "rrwa_weights", "trimmed_mean"]
