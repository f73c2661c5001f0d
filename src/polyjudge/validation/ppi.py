"""Prediction-powered inference (PPI++) for a mean, e.g. a prevalence.

Combines ``n`` items rated by humans (labels ``Y``, judge predictions ``Yhat``)
with ``N`` items rated only by the judge (``Yhat_unlabelled``):

    θ̂(λ) = λ·mean(Yhat_unlabelled) + mean(Y − λ·Yhat)

λ = 0 is the classical human-only mean, λ = 1 plain PPI; PPI++ picks the λ that
minimises the variance, ``cov(Y, Yhat) / ((1 + n/N) var(Yhat))`` clipped to
[0, 1] (Angelopoulos, Duchi & Zrnic 2023). The interval is the normal one with
standard error ``sqrt(λ² var(Yhat_u)/N + var(Y − λ Yhat)/n)``. Conventions
(biased covariance, pooled unbiased prediction variance, ddof=0 standard
errors) follow the ``ppi-python`` reference so results agree to rounding.

Undefined parts are NaN (printed n/a, JSON null), never a number that claims more than the data hold:
the estimates need :data:`MIN_LABELLED` (3) human-labelled items, as every statistic over items does,
and an interval needs :data:`MIN_INTERVAL_LABELLED` (6) and a standard error above 0. Two labels of 1
gave ``1.000 [1.000, 1.000]``: a sample without spread does not show that the population has none.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from polyjudge.data.errors import InputError
from polyjudge.data.numbers import MIN_ITEMS, MIN_RESAMPLED_ITEMS

__all__ = ["MIN_INTERVAL_LABELLED", "MIN_LABELLED", "PPIResult", "ppi_mean"]

# Fewest human-labelled items for an estimate (as for any statistic over items) and for an interval (as for
# the paired tests' intervals: docs/explanations/statistics.md gives the reasons).
MIN_LABELLED = MIN_ITEMS
MIN_INTERVAL_LABELLED = MIN_RESAMPLED_ITEMS


@dataclass(frozen=True)
class PPIResult:
    estimate: float
    lower: float
    upper: float
    lam: float
    n_labelled: int
    n_unlabelled: int
    classical: float  # human-only mean, for comparison
    classical_lower: float
    classical_upper: float


def ppi_mean(Y: np.ndarray, Yhat: np.ndarray, Yhat_unlabelled: np.ndarray, *, alpha: float = 0.1,
             lam: float | None = None) -> PPIResult:
    """PPI++ point estimate and (1 − alpha) confidence interval for E[Y]."""
    y = np.asarray(Y, dtype=float).ravel()
    f = np.asarray(Yhat, dtype=float).ravel()
    fu = np.asarray(Yhat_unlabelled, dtype=float).ravel()
    n, N = y.size, fu.size
    if n < 2 or N < 2 or f.size != n:
        raise InputError(f"PPI needs >= 2 labelled items with predictions and >= 2 unlabelled "
                         f"items (got n={n}, predictions={f.size}, N={N})")
    if not 0 < alpha < 1:
        raise InputError("alpha must be in (0, 1)")
    if lam is None:
        cov = float(np.mean((y - y.mean()) * (f - f.mean())))
        var = float(np.var(np.concatenate([f, fu]), ddof=1))
        lam = 0.0 if var == 0 else float(np.clip(cov / ((1 + n / N) * var), 0.0, 1.0))
    est = lam * fu.mean() + np.mean(y - lam * f)
    se = np.sqrt((lam ** 2) * np.var(fu) / N + np.var(y - lam * f) / n)
    z = norm.ppf(1 - alpha / 2)
    cse = np.std(y) / np.sqrt(n)
    if n < MIN_LABELLED:
        nan = float("nan")
        return PPIResult(nan, nan, nan, nan, n, N, nan, nan, nan)
    ppi_lo, ppi_hi = _interval(float(est), float(se), z, n)
    cl_lo, cl_hi = _interval(float(y.mean()), float(cse), z, n)
    return PPIResult(float(est), ppi_lo, ppi_hi, float(lam), n, N, float(y.mean()), cl_lo, cl_hi)


def _interval(centre: float, se: float, z: float, n: int) -> tuple[float, float]:
    """The normal interval, or (NaN, NaN) from fewer than MIN_INTERVAL_LABELLED labels or a zero standard error."""
    if n < MIN_INTERVAL_LABELLED or not se > 0:
        return float("nan"), float("nan")
    return centre - z * se, centre + z * se
