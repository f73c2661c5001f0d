"""Aggregated run scores are the correctly rounded exact values, so they are the
same on every machine and equal exact values always tie (issue 23, item 8).

The reference is rational arithmetic (``fractions.Fraction``), computed here
independently of :mod:`polyjudge.aggregate.exact`.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from polyjudge.aggregate.exact import exact_mean, exact_sum, exact_weighted_mean, reciprocal_rank_mean
from polyjudge.aggregate.rrwa import mean_all, mean_without_outliers, rrwa, trimmed_mean
from polyjudge.analysis.runs import aggregate_rows
from polyjudge.analysis.stats import system_means, tie_stats

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
runs = st.lists(finite, min_size=1, max_size=8)


def rational_rrwa(ranked: list[float]) -> float:
    num = sum((Fraction(x) / r for r, x in enumerate(ranked, 1)), Fraction(0))
    den = sum((Fraction(1, r) for r in range(1, len(ranked) + 1)), Fraction(0))
    return float(num / den)


@settings(max_examples=300, deadline=None)
@given(runs)
def test_rrwa_kernel_is_the_rounded_rational_value(xs):
    ranked = sorted(xs, reverse=True)
    assert reciprocal_rank_mean(ranked) == rational_rrwa(ranked)


@settings(max_examples=300, deadline=None)
@given(runs, st.randoms(use_true_random=False))
def test_means_do_not_depend_on_the_order_of_the_runs(xs, rnd):
    shuffled = list(xs)
    rnd.shuffle(shuffled)
    reference = float(sum((Fraction(x) for x in xs), Fraction(0)) / len(xs))
    assert exact_mean(xs) == exact_mean(shuffled) == mean_all(shuffled) == reference
    assert rrwa(xs) == rrwa(shuffled)
    assert mean_without_outliers(xs) == mean_without_outliers(shuffled)
    assert trimmed_mean(xs) == trimmed_mean(shuffled)


def test_cancellation_that_a_running_sum_gets_wrong():
    """A left-to-right float sum of these runs gives 0 or 1 depending on the order."""
    for order in itertools.permutations([1e16, 1.0, -1e16]):
        assert mean_all(list(order)) == float(Fraction(1, 3))
    rows = np.array(list(itertools.permutations([1e16, 1.0, -1e16])))
    assert set(aggregate_rows(rows, "mean-all").tolist()) == {float(Fraction(1, 3))}
    assert exact_sum([1e308, 1e308, -1e308]) == 1e308


def test_equal_exact_rrwa_values_always_tie():
    """Two runs a >= b give (2a + b) / 3: rows with the same 2a + b must be the same float.

    This is what made the 0.1.0 fixture's tie rate machine-dependent: ``np.dot``
    with normalised weights gives different floats for some of these rows.
    """
    groups: dict[int, set[float]] = {}
    for a in range(101):
        for b in range(a + 1):
            groups.setdefault(2 * a + b, set()).add(rrwa([float(b), float(a)]))
    assert all(len(values) == 1 for values in groups.values())
    # and the floats of different exact values differ (these are small integers over 3)
    assert len({v for values in groups.values() for v in values}) == len(groups)


def test_tie_rate_counts_exactly_tied_rrwa_values():
    rows = np.array([[61.0, 19.0], [47.0, 47.0], [55.0, 31.0]])  # 141/3 = 141/3 = 141/3
    values = aggregate_rows(rows, "rrwa")
    assert len(set(values.tolist())) == 1
    assert tie_stats(values).rate == 1.0


def test_weighted_mean_with_integer_weights():
    assert exact_weighted_mean([0.1, 0.2], [1, 2]) == float((Fraction(0.1) + 2 * Fraction(0.2)) / 3)


def test_system_means_are_exact():
    values = np.array([0.1, 0.2, 0.3, 1e16, 1.0, -1e16])
    means = system_means(values, ["a", "a", "a", "b", "b", "b"])
    assert means == {"a": float((Fraction(0.1) + Fraction(0.2) + Fraction(0.3)) / 3), "b": float(Fraction(1, 3))}


def test_panel_mean_is_exact_and_order_free():
    from polyjudge.aggregate.panel import aggregate_panel

    votes = np.array(list(itertools.permutations([1e16, 1.0, -1e16])) + [[np.nan, 0.1, 0.2], [np.nan] * 3])
    value = aggregate_panel(votes, method="mean").value
    assert value[:6].tolist() == [float(Fraction(1, 3))] * 6
    assert value[6] == float((Fraction(0.1) + Fraction(0.2)) / 2) and np.isnan(value[7])


any_finite = st.floats(allow_nan=False, allow_infinity=False)  # subnormals and the largest floats too


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(any_finite, st.integers(min_value=1, max_value=10**6)), min_size=1, max_size=12))
# Found by CI: the exact sum is the largest float, and the check of it overflowed (OverflowError in fsum).
@example([(8.988465674311579e+307, 1), (8.98846567431158e+307, 1), (-1.0, 1)])
def test_integer_path_gives_the_rational_value_over_every_float(pairs):
    # The weighted mean and the mean are computed in integers (each float is n / 2**k); the reference
    # is Fraction arithmetic, to the bit, across the whole float range (where fsum is not exact).
    xs, ws = [x for x, _ in pairs], [w for _, w in pairs]
    exact = sum((Fraction(x) * w for x, w in pairs), Fraction(0)) / sum(ws)
    assert exact_weighted_mean(xs, ws) == float(exact)
    assert exact_mean(xs) == float(sum((Fraction(x) for x in xs), Fraction(0)) / len(xs))


def test_integer_path_where_fsum_is_not_exact():
    xs = [5e-324, 1.0, 1e308, -1e308, 0.1]
    assert exact_mean(xs) == float(sum(map(Fraction, xs), Fraction(0)) / 5)
    assert reciprocal_rank_mean(xs) == rational_rrwa(xs)
