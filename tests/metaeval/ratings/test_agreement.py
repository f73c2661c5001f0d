"""Agreement statistics against independent references."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from polyjudge.data.errors import InputError
from polyjudge.metaeval.ratings.agreement import (
    cohen_kappa,
    fleiss_kappa,
    fleiss_kappa_from_labels,
    krippendorff_alpha,
    labels_to_counts,
    percent_agreement,
    scott_pi,
)

rng = np.random.default_rng(7)


def _correlated(n: int, k: int, p_same: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    r = np.random.default_rng(seed)
    a = r.integers(0, k, n)
    b = np.where(r.random(n) < p_same, a, r.integers(0, k, n))
    return a, b


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cohen_matches_sklearn(weights, seed):
    a, b = _correlated(200, 5, 0.6, seed)
    assert cohen_kappa(a, b, weights=weights) == pytest.approx(
        cohen_kappa_score(a, b, weights=weights), abs=1e-12)


def test_cohen_string_labels_and_explicit_order():
    a = ["bad", "ok", "good", "ok", "good", "bad", "ok"]
    b = ["ok", "ok", "good", "bad", "good", "bad", "good"]
    order = ["bad", "ok", "good"]
    assert cohen_kappa(a, b, weights="linear", labels=order) == pytest.approx(
        cohen_kappa_score(a, b, weights="linear", labels=order))
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))
    with pytest.raises(InputError):
        cohen_kappa(a, b, labels=["bad", "ok"])


def test_cohen_hand_computed():
    # 2x2 table [[20, 5], [10, 15]]: po = 0.7, pe = 0.5*0.6 + 0.5*0.4 = 0.5 -> 0.4
    a = [0] * 25 + [1] * 25
    b = [0] * 20 + [1] * 5 + [0] * 10 + [1] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert percent_agreement(a, b) == pytest.approx(0.7)


def test_scott_pi_hand_computed():
    # same table: pooled marginals (0.55, 0.45): pe = 0.505 -> (0.7-0.505)/0.495
    a = [0] * 25 + [1] * 25
    b = [0] * 20 + [1] * 5 + [0] * 10 + [1] * 15
    assert scott_pi(a, b) == pytest.approx((0.7 - 0.505) / 0.495)


def test_scott_pi_equals_two_rater_fleiss_and_nominal_alpha_limit():
    a, b = _correlated(300, 4, 0.5, 3)
    # Fleiss' kappa with two raters is Scott's pi
    assert scott_pi(a, b) == pytest.approx(fleiss_kappa_from_labels(np.stack([a, b], 1)))
    # Krippendorff's alpha (nominal, two raters, no missing) = pi with small-sample correction
    n = len(a)
    pi = scott_pi(a, b)
    alpha = krippendorff_alpha(np.stack([a, b]))
    assert alpha == pytest.approx(1 - (2 * n - 1) / (2 * n) * (1 - pi))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_fleiss_matches_statsmodels(seed):
    r = np.random.default_rng(seed)
    truth = r.integers(0, 4, 80)
    labels = np.where(r.random((80, 6)) < 0.55, truth[:, None], r.integers(0, 4, (80, 6)))
    table, _ = aggregate_raters(labels)
    assert fleiss_kappa(table) == pytest.approx(sm_fleiss(table, method="fleiss"), abs=1e-12)
    assert fleiss_kappa_from_labels(labels) == pytest.approx(sm_fleiss(table, method="fleiss"))


def test_fleiss_rejects_unequal_raters():
    with pytest.raises(InputError):
        fleiss_kappa([[2, 1], [1, 1]])
    with pytest.raises(InputError):
        fleiss_kappa([[1, 0], [0, 1]])


def test_labels_to_counts_with_unseen_category():
    counts, cats = labels_to_counts([[0, 0, 1], [1, 1, 1]], categories=[0, 1, 2])
    assert counts.tolist() == [[2, 1, 0], [0, 3, 0]]
    assert list(cats) == [0, 1, 2]
    with pytest.raises(InputError):
        labels_to_counts([[0, 5]], categories=[0, 1])


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_alpha_matches_krippendorff_package(level, seed):
    r = np.random.default_rng(seed)
    truth = r.integers(1, 6, 60).astype(float)
    data = np.where(r.random((5, 60)) < 0.6, truth[None, :], r.integers(1, 6, (5, 60)))
    data = data.astype(float)
    data[r.random(data.shape) < 0.2] = np.nan  # missing ratings
    ours = krippendorff_alpha(data, level=level)
    ref = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert ours == pytest.approx(ref, abs=1e-10)


def test_alpha_ordinal_with_value_domain_matches_package():
    data = np.array([[1, 2, 3, 3, np.nan], [1, 2, 5, 3, 5], [2, 2, 5, np.nan, 5.0]])
    dom = [1, 2, 3, 4, 5]
    ours = krippendorff_alpha(data, level="ordinal", value_domain=dom)
    ref = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal", value_domain=dom)
    assert ours == pytest.approx(ref, abs=1e-12)


def test_alpha_krippendorff_textbook_example():
    # Krippendorff's canonical 4 coders x 12 units example (nominal alpha = 0.743)
    nan = np.nan
    data = np.array([
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ])
    assert krippendorff_alpha(data) == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(data, level="interval") == pytest.approx(0.849, abs=5e-4)


def test_degenerate_cases_are_nan_not_errors():
    assert math.isnan(cohen_kappa([1, 1, 1], [1, 1, 1]))
    assert math.isnan(scott_pi([1, 1], [1, 1]))
    assert math.isnan(krippendorff_alpha([[1, 1], [1, 1]]))
    assert math.isnan(krippendorff_alpha([[1, np.nan], [np.nan, 2]]))  # nothing pairable


def test_input_errors():
    with pytest.raises(InputError):
        cohen_kappa([1, 2], [1])
    with pytest.raises(InputError):
        percent_agreement([], [])
    with pytest.raises(InputError):
        cohen_kappa([1, 2], [1, 2], weights="cubic")  # type: ignore[arg-type]
    with pytest.raises(InputError):
        krippendorff_alpha([1, 2, 3])
    with pytest.raises(InputError):
        krippendorff_alpha([[1, 2], [1, 9]], value_domain=[1, 2])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=2, max_size=40))
def test_cohen_property_vs_sklearn(pairs):
    a = [p[0] for p in pairs]
    b = [p[1] for p in pairs]
    ref = cohen_kappa_score(a, b)
    ours = cohen_kappa(a, b)
    if math.isnan(ref):
        assert math.isnan(ours)
    else:
        assert ours == pytest.approx(ref, abs=1e-9)
