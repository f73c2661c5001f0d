"""Sums and weighted means whose result depends only on the numbers, never on the machine.

A float sum rounds after every addition, so its result depends on the order
of the additions, and numpy's order depends on its version, the CPU's vector
width and the BLAS behind ``np.dot``. Aggregated run scores are compared for
equality (tie rates, rankings), so they must not: every weighted combination
of run scores goes through here and is the *correctly rounded* value of the
exact rational result. Two rows whose exact results are equal then always give
the same float, on every machine.

The common case (scores that are small integers or short decimals) takes a
fast path through :func:`math.fsum`, whose sum is exact whenever it can be;
anything else is computed exactly in integers (each float is an integer over a
power of two), which is what :class:`fractions.Fraction` would give, faster.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction
from functools import cache


def _fsum_is_exact(values: Sequence[float], total: float) -> bool:
    """Whether ``total`` (the fsum of ``values``) is their exact sum: the residual sums to exactly 0.
    A residual whose partial sums overflow (values near the largest float) is not taken as exact."""
    if not math.isfinite(total):
        return False
    try:
        return math.fsum([*values, -total]) == 0.0
    except OverflowError:
        return False


def exact_sum(values: Iterable[float]) -> float:
    """The correctly rounded sum, whatever the order of ``values`` (inf when it overflows)."""
    xs = [float(v) for v in values]
    try:
        return math.fsum(xs)
    except OverflowError:  # an intermediate overflowed: the exact sum may still be a float
        exact = sum((Fraction(x) for x in xs), Fraction(0))
        try:
            return float(exact)
        except OverflowError:
            return math.inf if exact > 0 else -math.inf


def exact_mean(values: Sequence[float]) -> float:
    """The correctly rounded arithmetic mean (the exact sum divided by the count, rounded once)."""
    if not values:
        raise ValueError("a mean needs at least one value")
    xs = [float(v) for v in values]
    if not all(math.isfinite(x) for x in xs):
        return sum(xs) / len(xs)  # inf or NaN: the same result in any order
    total = exact_sum(xs)
    if _fsum_is_exact(xs, total):
        return total / len(xs)  # one IEEE division of exact operands: correctly rounded
    return _scaled_ratio(xs, [1] * len(xs))


def _scaled_ratio(xs: Sequence[float], weights: Sequence[int]) -> float:
    """``sum(w * x) / sum(w)`` of finite floats, correctly rounded, in integers.

    Every finite float is ``n / 2**k`` exactly, so scaling each numerator to the largest power-of-two
    denominator ``q`` gives the exact sum as one integer over ``q``; Python's int / int is correctly
    rounded, so this is the value :class:`fractions.Fraction` gives, without a gcd at every addition
    (an int / int too large for a float raises OverflowError, as ``float(Fraction)`` does)."""
    ratios = [x.as_integer_ratio() for x in xs]
    q = max(d for _, d in ratios)
    numerator = sum(n * (q // d) * w for (n, d), w in zip(ratios, weights))
    return numerator / (q * sum(weights))


def exact_weighted_mean(values: Sequence[float], weights: Sequence[int]) -> float:
    """``sum(w * x) / sum(w)`` for positive integer weights, correctly rounded."""
    if not values or len(values) != len(weights):
        raise ValueError("a weighted mean needs one positive integer weight per value")
    if any(w <= 0 for w in weights):
        raise ValueError("weights must be positive integers")
    if not all(math.isfinite(float(x)) for x in values):
        return math.fsum(float(x) * w for x, w in zip(values, weights)) / sum(weights)
    return _scaled_ratio([float(x) for x in values], [int(w) for w in weights])


@cache
def reciprocal_rank_weights(n: int) -> tuple[int, ...]:
    """Integer weights proportional to 1/rank for ranks 1..n: lcm(1..n) / rank (exact, no rounding)."""
    scale = math.lcm(*range(1, n + 1))
    return tuple(scale // rank for rank in range(1, n + 1))


def reciprocal_rank_mean(ranked: Sequence[float]) -> float:
    """``sum(x_r / r) / sum(1 / r)`` over values already in rank order, correctly rounded."""
    return exact_weighted_mean(ranked, reciprocal_rank_weights(len(ranked)))


__all__ = ["exact_mean", "exact_sum", "exact_weighted_mean", "reciprocal_rank_mean", "reciprocal_rank_weights"]
