"""Paired system comparisons against scipy and statsmodels, and the clusters' definition."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.stats as ss

from polyjudge.metaeval.systems import (
    CompareSettings,
    adjust,
    clusters_of,
    compare_systems,
    pivot,
)


def _scores(seed: int = 1, systems: int = 4, segments: int = 12, missing: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(systems, segments)) + np.linspace(0.8, 0, systems)[:, None]
    for k in range(missing):  # a few unscored cells, so pairs share different segments
        x[k % systems, (3 * k + 1) % segments] = np.nan
    return x


def _shared(x: np.ndarray, names: list[str], a: str, b: str) -> tuple[np.ndarray, np.ndarray]:
    i, j = names.index(a), names.index(b)
    both = np.isfinite(x[i]) & np.isfinite(x[j])
    return x[i][both], x[j][both]


def test_t_test_equals_scipy_ttest_rel_on_the_shared_segments():
    x = _scores()
    names = ["a", "b", "c", "d"]
    res = compare_systems(names, x, CompareSettings(n_boot=10, n_perm=10))
    assert len(res.pairs) == 6
    for p in res.pairs:
        a, b = _shared(x, names, p.system_a, p.system_b)
        ref = ss.ttest_rel(a, b)
        assert p.n == a.size and p.delta == pytest.approx(float(np.mean(a - b)), abs=1e-12)
        assert p.t == pytest.approx(ref.statistic, rel=1e-9) and p.p_ttest == pytest.approx(ref.pvalue, rel=1e-9)
        assert (p.mean_a, p.mean_b) == (pytest.approx(a.mean()), pytest.approx(b.mean()))


def test_randomization_matches_scipy_exact_permutation_test():
    """10 shared segments: scipy enumerates all 1,024 sign patterns; 200,000 draws come within 0.005."""
    x = _scores(seed=5, systems=3, segments=10, missing=0)
    names = ["a", "b", "c"]
    res = compare_systems(names, x, CompareSettings(n_boot=10, n_perm=200_000))
    for p in res.pairs:
        a, b = _shared(x, names, p.system_a, p.system_b)
        exact = ss.permutation_test((a, b), lambda u, v, axis: np.mean(u - v, axis=axis),
                                    permutation_type="samples", n_resamples=10**6).pvalue
        assert p.p_randomization == pytest.approx(exact, abs=0.005)


def test_bootstrap_interval_matches_scipy_bootstrap_percentile():
    x = _scores(seed=2, systems=2, segments=60, missing=0)
    res = compare_systems(["a", "b"], x, CompareSettings(n_boot=20_000, n_perm=10))
    p = res.pairs[0]
    a, b = _shared(x, ["a", "b"], p.system_a, p.system_b)
    ci = ss.bootstrap((a - b,), np.mean, method="percentile", n_resamples=20_000, random_state=0).confidence_interval
    width = ci.high - ci.low
    assert p.ci_low == pytest.approx(ci.low, abs=0.03 * width) and p.ci_high == pytest.approx(ci.high, abs=0.03 * width)


def test_bootstrap_p_value_matches_a_loop_of_the_same_definition():
    """The shifted two-sided test, written as a plain loop with another generator."""
    x = _scores(seed=3, systems=2, segments=40, missing=0)
    x[0] += 0.25
    res = compare_systems(["a", "b"], x, CompareSettings(n_boot=40_000, n_perm=10))
    p = res.pairs[0]
    d = x[0] - x[1] if p.system_a == "a" else x[1] - x[0]
    rng = np.random.default_rng(99)
    draws = np.array([d[rng.integers(0, d.size, d.size)].mean() for _ in range(40_000)])
    expected = (1 + np.sum(np.abs(draws - d.mean()) >= abs(d.mean()))) / (draws.size + 1)
    assert p.p_bootstrap == pytest.approx(expected, abs=0.01)
    assert p.win_rate == pytest.approx(float(np.mean(draws > 0)), abs=0.01)


@pytest.mark.parametrize("method", ["holm", "bonferroni"])
def test_corrections_equal_statsmodels(method):
    from statsmodels.stats.multitest import multipletests

    p = np.array([0.01, 0.04, 0.03, 0.2, np.nan, 0.005, 0.5])
    ours = adjust(p, method)
    ok = np.isfinite(p)
    assert np.allclose(ours[ok], multipletests(p[ok], method=method)[1]) and np.isnan(ours[4])
    assert np.array_equal(adjust(p, "none")[ok], p[ok])


def test_corrected_p_values_decide_significance():
    x = _scores(seed=4, systems=5, segments=30, missing=0)
    plain = compare_systems(list("abcde"), x, CompareSettings(n_boot=200, n_perm=2000))
    holm = compare_systems(list("abcde"), x, CompareSettings(n_boot=200, n_perm=2000, correction="holm"))
    expected = adjust([p.p_value for p in plain.pairs], "holm")
    assert [p.p_adjusted for p in holm.pairs] == pytest.approx(list(expected))
    assert [p.p_value for p in holm.pairs] == [p.p_value for p in plain.pairs]  # uncorrected stays as it was


def test_clusters_follow_the_definition():
    # ranked 0..3: 0 and 1 each beat 2 and 3, but 0 does not beat 1, nor 2 beat 3
    beats = np.zeros((4, 4), dtype=bool)
    beats[0, 2:] = beats[1, 2:] = True
    assert clusters_of(4, beats) == [1, 1, 2, 2]
    beats[1, 3] = False  # 1 no longer beats 3: no boundary anywhere
    assert clusters_of(4, beats) == [1, 1, 1, 1]
    assert clusters_of(3, np.triu(np.ones((3, 3), dtype=bool), 1)) == [1, 2, 3]


def test_every_system_beats_every_system_of_every_lower_cluster():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(8, 300)) + np.repeat([1.0, 0.9, 0.5, 0.45, 0.0, -0.05, -0.1, -0.6], 1)[:, None]
    res = compare_systems([f"s{k}" for k in range(8)], x, CompareSettings(n_boot=200, n_perm=2000))
    cluster = {r.system: r.cluster for r in res.systems}
    assert len(res.clusters()) > 1
    for a, b in itertools.combinations([r.system for r in res.systems], 2):
        p = res.pair(a, b)
        assert p is not None
        if cluster[a] < cluster[b]:
            assert p.significant and p.system_a == a
    means = [r.mean for r in res.systems]
    assert means == sorted(means, reverse=True)


def test_seeded_and_settable_draws():
    x = _scores()
    one = compare_systems(list("abcd"), x, CompareSettings(seed=3))
    assert one == compare_systems(list("abcd"), x, CompareSettings(seed=3))
    other = compare_systems(list("abcd"), x, CompareSettings(seed=4))
    assert [p.ci_low for p in one.pairs] != [p.ci_low for p in other.pairs]
    few = compare_systems(list("abcd"), x, CompareSettings(n_boot=9, n_perm=9))
    assert all(p.p_randomization >= 0.1 for p in few.pairs)  # (1 + hits) / 10 at the least


def test_identical_systems_and_systems_without_shared_segments():
    # six shared segments: the fewest a resampling p-value needs (MIN_PAIRED_SEGMENTS; 3 gave p = 1 before)
    six = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, np.nan, np.nan]
    x = np.array([six, six, [np.nan] * 6 + [5.0, 6.0]])
    res = compare_systems(["a", "b", "c"], x)
    same = res.pair("a", "b")
    assert same is not None and same.delta == 0 and not same.significant
    assert (same.p_bootstrap, same.p_randomization, same.p_ttest) == (1.0, 1.0, 1.0)  # scipy gives NaN for t
    apart = res.pair("a", "c")
    assert apart is not None and apart.n == 0 and np.isnan(apart.p_value) and not apart.significant
    assert res.clusters() == [["c", "a", "b"]]


def test_a_constant_shift_is_significant_for_the_t_test():
    x = np.array([[2.0, 3.0, 4.0, 5.0], [1.0, 2.0, 3.0, 4.0]])
    p = compare_systems(["a", "b"], x, CompareSettings(test="t-test")).pairs[0]
    assert p.p_ttest == 0.0 and p.significant and p.t == np.inf


def test_settings_refuse_unknown_names_and_pivot_refuses_a_repeated_cell():
    with pytest.raises(ValueError, match="test must be"):
        CompareSettings(test="wilcoxon")
    with pytest.raises(ValueError, match="correction"):
        CompareSettings(correction="fdr")
    names, m = pivot(["a", "b", "a"], ["1", "1", "2"], [1.0, 2.0, 3.0])
    assert names == ["a", "b"] and np.isnan(m[1, 1]) and m[0, 1] == 3.0
    with pytest.raises(ValueError, match="two scores"):
        pivot(["a", "a"], ["1", "1"], [1.0, 2.0])
