"""Run-analysis statistics against independent references (scipy, numpy, hand counts)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from polyjudge import analysis as stats
from polyjudge.aggregate.runs import get_aggregator


def test_bootstrap_ci_matches_scipy_percentile():
    rng = np.random.default_rng(1)
    x = rng.normal(3.0, 2.0, size=200)
    lo, hi = stats.bootstrap_mean_ci(x, n_boot=5000, seed=3)
    ref = sps.bootstrap((x,), np.mean, n_resamples=5000, method="percentile",
                        confidence_level=0.95, random_state=7).confidence_interval
    width = ref.high - ref.low
    assert lo == pytest.approx(ref.low, abs=0.08 * width)
    assert hi == pytest.approx(ref.high, abs=0.08 * width)
    assert lo < x.mean() < hi


def test_bootstrap_degenerate_cases():
    # fewer than 6 items: no interval (one item gave the one-point interval (2.0, 2.0), issue 43 item 4)
    assert all(math.isnan(v) for v in stats.bootstrap_mean_ci(np.array([2.0])))
    assert all(math.isnan(v) for v in stats.bootstrap_mean_ci(np.arange(5.0)))
    assert all(math.isfinite(v) for v in stats.bootstrap_mean_ci(np.arange(6.0)))
    assert all(math.isnan(v) for v in stats.bootstrap_mean_ci(np.array([])))
    assert stats.bootstrap_mean_ci(np.full(10, 4.0)) == (4.0, 4.0)


def test_tie_stats_hand_counted():
    # values 1,1,2,2,2,3: tied pairs = C(2,2) + C(3,2) = 4 of C(6,2) = 15
    n, distinct, rate = stats.tie_stats(np.array([1, 2, 1, 3, 2, 2, np.nan], dtype=float))
    assert (n, distinct) == (6, 3)
    assert rate == pytest.approx(4 / 15)
    assert stats.tie_stats(np.array([1.0, 2.0, 3.0]))[2] == 0.0


def _run_deltas(m):
    d = stats.segment_deltas(m, min_runs=2)
    return d[~np.isnan(d)]


def _first_run(m):
    return stats.aggregate_rows(m, "first")


def test_run_deltas_and_first_run():
    m = np.array([[1.0, 5.0, np.nan], [np.nan, 2.0, 2.0], [np.nan, np.nan, 7.0], [-3.0, 0.0, -10.0]])
    np.testing.assert_allclose(_run_deltas(m), [4.0, 0.0, 10.0])  # row 3 has one run only
    np.testing.assert_allclose(_first_run(m), [1.0, 2.0, 7.0, -3.0])
    assert np.isnan(_first_run(np.array([[np.nan, np.nan]]))[0])


@pytest.mark.parametrize("name", ["mean", "median", "first", "rrwa", "max", "min", "mean-all", "mean-2s",
                                  "geo", "trimmed-mean", "majority"])
def test_aggregate_matrix_matches_aggregator_per_row(name):
    rng = np.random.default_rng(2)
    m = rng.integers(-25, 0, size=(40, 6)).astype(float)
    m[rng.random(m.shape) < 0.2] = np.nan
    m[0] = np.nan
    m[1] = [-3, -3, -3, np.nan, np.nan, np.nan]
    m[2] = [np.nan, -3, np.nan, -3, -3, np.nan]  # same scores as row 1 in other runs
    m[3] = [-7, np.nan, np.nan, np.nan, np.nan, -2]
    try:
        fn = get_aggregator(name)
    except (KeyError, ImportError):
        pytest.skip(f"aggregator {name} not available in this checkout")
    got = stats.aggregate_rows(m, name)
    assert np.isnan(got[0])
    for i in range(1, m.shape[0]):
        row = m[i][np.isfinite(m[i])]
        if row.size:
            try:
                want = fn(row.tolist())
            except ValueError:
                assert np.isnan(got[i])
                continue
            assert got[i] == pytest.approx(want)


def test_system_ranking_order_and_counts():
    systems = ["a"] * 6 + ["b"] * 6 + ["c"] * 3  # six items: the fewest an interval needs
    scores = np.array([1, 2, 3, 4, 5, 6, 10, 11, 12, 13, 14, 15, np.nan, 0, 0], dtype=float)
    r = stats.system_ranking(systems, scores, n_boot=500)
    assert [s.system for s in r] == ["b", "a", "c"]
    assert [s.n for s in r] == [6, 6, 2]
    assert r[0].mean == pytest.approx(12.5)
    assert r[0].lo <= 12.5 <= r[0].hi
    assert math.isnan(r[2].lo) and math.isnan(r[2].hi)  # two items: n/a
    low = stats.system_ranking(systems, scores, n_boot=200, higher_is_better=False)
    assert low[0].system == "c"


def test_compare_aggregators_mean_agrees_with_itself():
    rng = np.random.default_rng(5)
    m = rng.integers(0, 10, size=(30, 4)).astype(float)
    systems = [f"s{i % 3}" for i in range(30)]
    rows = {r.aggregator: r for r in stats.compare_aggregators(m, systems, ["mean", "first"])}
    assert rows["mean"].pearson_vs_mean == pytest.approx(1.0)
    assert rows["mean"].kendall_sys_vs_mean == pytest.approx(1.0)
    first = m[:, 0]
    assert rows["first"].distinct == np.unique(first).size
    assert rows["first"].pearson_vs_mean == pytest.approx(sps.pearsonr(first, m.mean(axis=1))[0])


def test_tie_rate_and_deltas_against_brute_force():
    rng = np.random.default_rng(9)
    v = rng.integers(0, 6, size=300).astype(float)
    v[::17] = np.nan
    ok = v[~np.isnan(v)]
    pairs = list(itertools.combinations(ok.tolist(), 2))
    assert stats.tie_stats(v)[2] == stats.tie_rate(v) == pytest.approx(sum(a == b for a, b in pairs) / len(pairs))
    m = rng.integers(-10, 0, size=(50, 5)).astype(float)
    m[rng.random(m.shape) < 0.3] = np.nan
    ref = [max(r[~np.isnan(r)]) - min(r[~np.isnan(r)]) for r in m if np.sum(~np.isnan(r)) >= 2]
    np.testing.assert_allclose(_run_deltas(m), ref)
    one = stats.segment_deltas(m)
    assert np.array_equal(np.isnan(one), np.sum(~np.isnan(m), axis=1) == 0)
