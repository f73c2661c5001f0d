"""The drift check's statistics against independent references (scipy, statsmodels) and by simulation."""

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from polyjudge.analysis.drift import (
    DEFAULT_ALPHA,
    difference_test,
    holm,
    mcnemar_exact_p,
    paired_effect,
    paired_permutation_p,
    projected_orderings,
    rate_test,
    verdict,
)


@pytest.mark.parametrize("seed", range(5))
def test_exact_sign_flip_p_is_scipys_exact_paired_permutation_test(seed):
    rng = np.random.default_rng(seed)
    stored = rng.integers(0, 100, 12).astype(float)
    fresh = stored + rng.normal(3, 5, 12).round()
    ref = stats.permutation_test((fresh, stored), lambda x, y: np.mean(x - y), permutation_type="samples",
                                 alternative="two-sided", n_resamples=np.inf)
    # zero differences are dropped here and flipped by scipy: a flip of a zero changes nothing, so p is the same
    assert paired_permutation_p(fresh - stored) == pytest.approx(ref.pvalue, abs=1e-12)


def test_monte_carlo_sign_flip_p_is_close_to_scipys_and_never_zero():
    rng = np.random.default_rng(7)
    diffs = rng.normal(0.4, 1, 60)
    ref = stats.permutation_test((diffs, np.zeros(60)), lambda x, y: np.mean(x - y), permutation_type="samples",
                                 n_resamples=20000, random_state=1)
    assert paired_permutation_p(diffs, resamples=20000) == pytest.approx(ref.pvalue, abs=0.01)
    assert paired_permutation_p(np.full(60, 5.0), resamples=999) == pytest.approx(1 / 1000)
    assert paired_permutation_p([0, 0, 0]) == 1.0 and paired_permutation_p([]) == 1.0


@pytest.mark.parametrize(("b", "c"), [(0, 0), (1, 0), (3, 9), (10, 2), (25, 40), (0, 7)])
def test_mcnemar_is_statsmodels_exact_mcnemar(b, c):
    expected = 1.0 if b + c == 0 else mcnemar([[5, b], [c, 5]], exact=True).pvalue
    assert mcnemar_exact_p(b, c) == pytest.approx(expected, abs=1e-12)


def test_holm_is_statsmodels_holm():
    p = [0.01, 0.04, 0.03, 0.2, 0.001]
    assert holm(p) == pytest.approx(list(multipletests(p, method="holm")[1]))


def test_effect_size_is_cohens_dz():
    d = [1.0, 2.0, 4.0, 5.0]
    assert paired_effect(d) == pytest.approx(np.mean(d) / np.std(d, ddof=1))
    assert paired_effect([2.0, 2.0]) == math.inf and paired_effect([0.0, 0.0]) == 0.0 and paired_effect([1.0]) is None


def test_tests_that_cannot_reach_the_level_are_left_out_of_the_holm_family():
    shifted = difference_test("scores", [50.0] * 20, [55.0] * 20)
    unchanged = rate_test("parsed", [True] * 20, [True] * 20)
    v = verdict([shifted, unchanged, None])
    assert v.drift and v.reasons == ("scores",)
    assert v.tests[0].p_holm == v.tests[0].p  # a family of one: no Holm factor for the test that could not reject
    assert v.tests[1].p_holm == 1.0


def test_an_unchanged_noisy_judge_is_flagged_at_most_alpha_of_the_time():
    """The check's false-alarm rate by simulation (benchmarks/drift_power.py measures it at more sizes)."""
    rng = np.random.default_rng(2026)
    flagged, checks = 0, 600
    for _ in range(checks):
        quality = rng.uniform(20, 90, 30)
        stored = np.clip(np.round(quality + rng.normal(0, 10, 30)), 0, 100)
        fresh = np.clip(np.round(quality + rng.normal(0, 10, 30)), 0, 100)
        ok_s, ok_f = rng.random(30) > 0.03, rng.random(30) > 0.03
        both = ok_s & ok_f
        tests = [difference_test("scores", stored[both].tolist(), fresh[both].tolist(), resamples=1000,
                                 seed=int(rng.integers(1 << 30))), rate_test("parsed", ok_s.tolist(), ok_f.tolist())]
        flagged += verdict(tests).drift
    # 5% of 600 = 30; the binomial's 99.9% upper bound is about 49: more would mean a test that is not exact
    assert flagged / checks <= DEFAULT_ALPHA + 3.1 * math.sqrt(DEFAULT_ALPHA * (1 - DEFAULT_ALPHA) / checks)


def test_projected_orderings_name_the_pairs_a_shift_reverses():
    scores = {"A": 80.0, "B": 78.0, "C": 60.0}
    assert projected_orderings(scores, {"A": -3.0}) == [("A", "B")]
    assert projected_orderings(scores, {"A": -1.0, "B": 0.5}) == []
