"""Agreement and downstream metrics: paper examples and independent references."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon
from scipy.stats import entropy
from sklearn.metrics import cohen_kappa_score, log_loss, mean_squared_error

from polyjudge.validation import metrics as M
from polyjudge.validation.metrics import Definition, evaluate

H = np.array([[0.6, 0.3, 0.1]])
Z = np.array([[0.8, 0.1, 0.1]])
W = np.array([[0.5, 0.4, 0.1]])


def test_appendix_c_example_1_hit_rate_vs_kl():
    hr = Definition("hit_rate", "hard", "hard")
    kl = Definition("kl_hj", "soft", "soft")
    # With hard aggregation both judges share the human mode (o1), so hit rate
    # ties at 1.0 (the paper prints 0.0 for w, which a_hard cannot give).
    assert evaluate(hr, Z, Z, H, H) == 1.0 and evaluate(hr, W, W, H, H) == 1.0
    # The expected hit rate of one judge rating against the human mode prefers z.
    soft_hr = Definition("hit_rate", "soft", "hard")
    assert evaluate(soft_hr, Z, Z, H, H) == pytest.approx(0.8)
    assert evaluate(soft_hr, W, W, H, H) == pytest.approx(0.5)
    kz, kw = evaluate(kl, Z, Z, H, H), evaluate(kl, W, W, H, H)
    assert kz == pytest.approx(0.15, abs=0.01) and kw == pytest.approx(0.02, abs=0.005)
    assert kw < kz  # KL(O_h || O_j) prefers w
    assert kz == pytest.approx(entropy(H[0], Z[0]), abs=1e-5)


def test_appendix_c_example_2_kl_vs_mse_srs():
    Oh, Oz, Ow = np.array([[0.4, 0.6]]), np.array([[0.4, 0.6]]), np.array([[0.5, 0.5]])
    om_h, om_z, om_w = np.array([[0.5, 0.6]]), np.array([[0.4, 0.6]]), np.array([[0.5, 0.6]])
    kl = Definition("kl_hj", "soft", "soft")
    mse = Definition("mse", "srs", "srs")
    assert evaluate(kl, Oz, om_z, Oh, om_h) == pytest.approx(0.0, abs=1e-9)
    assert evaluate(kl, Ow, om_w, Oh, om_h) == pytest.approx(0.02, abs=0.001)
    assert evaluate(mse, Oz, om_z, Oh, om_h) == pytest.approx(0.01)
    assert evaluate(mse, Ow, om_w, Oh, om_h) == pytest.approx(0.0)


def _dists(seed, n=50, q=4):
    r = np.random.default_rng(seed)
    return r.dirichlet(np.ones(q), n), r.dirichlet(np.ones(q), n)


@pytest.mark.parametrize("seed", [0, 1])
def test_divergences_match_scipy(seed):
    j, h = _dists(seed)
    assert M.kl(h, j) == pytest.approx(entropy(h.T, j.T), rel=1e-4)
    assert M.cross_entropy(h, j) == pytest.approx(entropy(h.T) + entropy(h.T, j.T), rel=1e-4)
    assert M.js_divergence(j, h) == pytest.approx(jensenshannon(j.T, h.T) ** 2, rel=1e-4)
    js_dist = M.METRICS["js_distance"].fn(j, h)
    assert js_dist == pytest.approx(np.mean(jensenshannon(j.T, h.T)), rel=1e-4)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_categorical_metrics_match_references(seed):
    j, h = _dists(seed, n=80, q=3)
    lj, lh = j.argmax(1), h.argmax(1)
    jh, hh = M.hard(j), M.hard(h)
    assert M.METRICS["hit_rate"].fn(jh, hh) == pytest.approx(np.mean(lj == lh))
    assert M.METRICS["cohen_kappa"].fn(jh, hh) == pytest.approx(cohen_kappa_score(lj, lh, labels=[0, 1, 2]))
    assert M.METRICS["krippendorff_alpha"].fn(jh, hh) == pytest.approx(
        krippendorff.alpha(reliability_data=np.stack([lj, lh]).astype(float), level_of_measurement="nominal"))
    # two raters: Fleiss' kappa is Scott's pi
    assert M.METRICS["fleiss_kappa"].fn(jh, hh) == pytest.approx(M.METRICS["scott_pi"].fn(jh, hh))


def test_bce_and_mse_match_sklearn():
    r = np.random.default_rng(5)
    p = r.random((40, 3))
    y = (r.random((40, 3)) > 0.5).astype(float)
    assert M.bce(p, y) == pytest.approx(log_loss(y.ravel(), p.ravel()))
    assert M.mse(p, y) == pytest.approx(3 * mean_squared_error(y, p))


def test_set_metrics_hand_computed():
    j = np.array([[1, 0, 0], [1, 1, 0], [0, 0, 0], [0, 1, 1]], float)
    h = np.array([[1, 1, 0], [0, 0, 1], [1, 0, 0], [0, 1, 0]], float)
    assert M.coverage(j, h) == pytest.approx(2 / 4)
    assert M.precision(j, h) == pytest.approx(np.mean([1, 0, 0.5]))  # empty judge set skipped
    assert M.recall(j, h) == pytest.approx(np.mean([0.5, 0, 0, 1]))
    assert M.efficiency(j, h) == pytest.approx(5 / 4)


def test_aggregations():
    fc_dist = np.array([[0.3, 0.3, 0.4], [0.5, 0.5, 0.0]])
    assert M.hard(fc_dist).tolist() == [[0, 0, 1], [1, 0, 0]]  # ties -> lowest index
    om = np.array([[0.5, 0.49, 0.7]])
    assert M.hrs(om, 0.5).tolist() == [[1, 0, 1]]  # >= tau


def test_downstream_cutoff_is_greater_or_equal():
    yh = np.array([[0.5, 0.5], [0.2, 0.8], [0.7, 0.3], [0.49, 0.51]])
    yj = np.array([[0.49, 0.51], [0.6, 0.4], [0.9, 0.1], [0.1, 0.9]])
    # human decisions for k=0 at 0.5: [1, 0, 1, 0]; judge: [0, 1, 1, 0]
    assert M.decisions(yh, 0, 0.5).tolist() == [True, False, True, False]
    assert M.decision_consistency(yj, yh, 0, 0.5) == pytest.approx(0.5)
    assert M.estimation_bias(yj, yh, 0, 0.5) == pytest.approx(0.0)
    assert M.estimation_bias(yj, yh, 0, 0.55) == pytest.approx(0.5 - 0.25)
    assert M.prevalence(yh, 0, 0.5) == 0.5


def test_kl_is_finite_with_zeros():
    assert np.isfinite(M.kl(np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]]))).all()
