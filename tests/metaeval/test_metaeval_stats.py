"""Statistics against hand-computed cases, scipy, and brute-force references."""

from itertools import combinations

import numpy as np
import pytest
import scipy.stats

from polyjudge.metaeval import significance as sig
from polyjudge.metaeval import stats


def _data(S=9, T=60, seed=0, miss=0.3, discrete=True):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(S, 1)) + rng.normal(size=(S, T))
    h = -np.round(np.clip(-2 * q, 0, None)) if discrete else q
    m = np.round(q + rng.normal(size=(S, T)), 1)
    h[:, rng.random(T) < miss] = np.nan
    h[rng.random((S, T)) < 0.05] = np.nan  # ragged holes too
    return h, m


# --------------------------------------------------------------------------- hand cases

def test_acc23_hand_cases():
    # tie in both counts as correct
    assert stats.acc23(np.array([[1, 2, 2.]]), np.array([[1, 3, 3.]]), "sys") == 1.0
    # tie in human only: wrong until epsilon covers it
    h, m = np.array([[1, 1, 2.]]), np.array([[1, 2, 3.]])
    assert stats.acc23(h, m, "sys") == pytest.approx(2 / 3)
    assert stats.acc23(h, m, "sys", epsilon=1.0) == pytest.approx(2 / 3)  # +1 (0,1), -1 (1,2)
    assert stats.acc23(h, m, "sys", epsilon=2.0) == pytest.approx(1 / 3)
    assert stats.tau23(h, m, "sys") == pytest.approx(1 / 3)
    tc = stats.tie_calibration(h, m, "sys")
    assert (tc.value, tc.epsilon) == (pytest.approx(2 / 3), 0.0)  # smallest maximiser
    # tie in metric only is wrong
    assert stats.acc23(np.array([[1, 2, 3.]]), np.array([[1, 1, 2.]]), "sys") == pytest.approx(2 / 3)
    # calibration that helps: human ties on close metric scores
    h, m = np.array([[1, 1, 1, 5.]]), np.array([[0, 0.1, 0.2, 3.]])
    tc = stats.tie_calibration(h, m, "sys")
    assert tc.value == 1.0 and tc.epsilon == pytest.approx(0.2)


def test_pairwise_accuracy_pooled_and_ties():
    h1, m1 = [3, 2, 1], [3, 1, 2]          # 2 of 3 pairs agree
    h2, m2 = [1, 1], [0, 5]                # human tie, metric not: disagree
    assert stats.pairwise_accuracy([np.array(h1), np.array(h2)], [np.array(m1), np.array(m2)]) == 0.5
    assert stats.pairwise_accuracy(np.array([1, 1.]), np.array([2, 2.])) == 1.0  # tie in both agrees
    assert stats.pairwise_accuracy(np.array([1, np.nan, 3]), np.array([1, 9, 2.])) == 1.0
    assert stats.pairwise_accuracy(np.array([1, np.nan, 3]), np.array([4, 9, 2.])) == 0.0


def test_degenerate_groups_are_skipped():
    h = np.array([[1, 1.0], [2, 1.0], [3, 1.0]])   # item 1 constant in human
    m = np.array([[1, 5.0], [2, 4.0], [4, 3.0]])
    assert stats.pearson(h, m, "item") == pytest.approx(scipy.stats.pearsonr([1, 2, 3], [1, 2, 4])[0])
    assert stats.kendall(h, m, "item") == 1.0
    assert stats.correlation(h, m, "pearson", "item", nan_as_zero=True) == pytest.approx(
        scipy.stats.pearsonr([1, 2, 3], [1, 2, 4])[0] / 2)
    assert np.isnan(stats.pearson(np.full((2, 2), np.nan), np.ones((2, 2)), "item"))  # nothing usable: n/a, not 0
    # constant metric row, single-cell group
    assert np.isnan(stats.spearman(np.array([[1, 2, 3.]]), np.array([[2, 2, 2.]]), "sys"))  # constant: n/a, not 0
    assert np.isnan(stats.pearson(np.array([[1.0], [np.nan]]), np.array([[1.0], [2.0]]), "item"))  # one cell: n/a


# --------------------------------------------------------------------------- scipy

@pytest.mark.parametrize("seed", [0, 1])
def test_correlations_match_scipy(seed):
    h, m = _data(seed=seed)
    ok = ~np.isnan(h)
    x, y = h[ok], m[ok]  # row-major == system-major pooling
    assert stats.pearson(h, m) == pytest.approx(scipy.stats.pearsonr(x, y)[0], abs=1e-12)
    assert stats.spearman(h, m) == pytest.approx(scipy.stats.spearmanr(x, y)[0], abs=1e-12)
    for v in "bc":
        assert stats.kendall(h, m, "none", v) == pytest.approx(
            scipy.stats.kendalltau(x, y, variant=v)[0], abs=1e-12)
    for grouping, hv, mv in (("item", h.T, m.T), ("sys", h, m)):
        for method, fn in (("pearson", scipy.stats.pearsonr), ("spearman", scipy.stats.spearmanr),
                           ("kendall", scipy.stats.kendalltau)):
            vals = []
            for a, b in zip(hv, mv):
                k = ~np.isnan(a)
                if k.sum() < 2 or np.ptp(a[k]) == 0 or np.ptp(b[k]) == 0:
                    continue
                vals.append(fn(a[k], b[k])[0])
            assert stats.correlation(h, m, method, grouping) == pytest.approx(np.mean(vals), abs=1e-12)


# --------------------------------------------------------------------------- brute force

def _brute_acc23(h, m, grouping, eps):
    hv, mv = {"item": (h.T, m.T), "sys": (h, m), "none": (h.reshape(1, -1), m.reshape(1, -1))}[grouping]
    accs = []
    for a, b in zip(hv, mv):
        k = ~np.isnan(a)
        a, b = a[k], b[k]
        if a.size < 2:
            continue
        good = 0
        pairs = list(combinations(range(a.size), 2))
        for i, j in pairs:
            htie, mtie = a[i] == a[j], abs(b[i] - b[j]) <= eps
            good += (htie and mtie) or (not htie and not mtie and (a[i] - a[j]) * (b[i] - b[j]) > 0)
        accs.append(good / len(pairs))
    return float(np.mean(accs))


@pytest.mark.parametrize("grouping", ["item", "sys"])
def test_tie_calibration_matches_brute_force(grouping):
    h, m = _data(S=6, T=25, seed=3)
    tc = stats.tie_calibration(h, m, grouping)
    cands = {0.0}
    hv, mv = (h.T, m.T) if grouping == "item" else (h, m)
    for a, b in zip(hv, mv):
        k = ~np.isnan(a)
        cands |= {abs(x - y) for x, y in combinations(b[k], 2)}
    best_val, best_eps = -1, None
    for e in sorted(cands):
        v = _brute_acc23(h, m, grouping, e)
        if v > best_val + 1e-12:
            best_val, best_eps = v, e
    assert tc.value == pytest.approx(best_val, abs=1e-12)
    assert tc.epsilon == best_eps
    assert stats.acc23(h, m, grouping, tc.epsilon) == pytest.approx(tc.value, abs=1e-12)
    assert stats.acc23(h, m, grouping, 0.35) == pytest.approx(_brute_acc23(h, m, grouping, 0.35))


def _brute_p(x, signs):
    S = x.shape[0]
    p = np.full((S, S), np.nan)
    for i in range(S):
        for j in range(i + 1, S):
            k = ~np.isnan(x[i]) & ~np.isnan(x[j])
            d = x[i, k] - x[j, k]
            p[i, j] = np.mean([(s[k] * d).sum() >= d.sum() - 1e-9 for s in signs])
    return p


def test_spa_matches_straightforward_loop():
    h, m = _data(S=5, T=40, seed=4)
    signs = stats.permutation_signs(int((~np.isnan(h)).any(0).sum()), 200, 4)
    cols = (~np.isnan(h)).any(0)
    hh, mm = h[:, cols], np.where(np.isnan(h[:, cols]), np.nan, m[:, cols])
    ph, pm = _brute_p(hh, signs), _brute_p(mm, signs)
    iu = np.triu_indices(5, 1)
    want = 1 - np.mean(np.abs(ph[iu] - pm[iu]))
    assert stats.soft_pairwise_accuracy(h, m, 200, 4) == pytest.approx(want, abs=1e-12)
    assert stats.soft_pairwise_accuracy(h, h, 200, 4) == 1.0


def test_spa_p_values_are_one_sided():
    x = np.array([[1.0] * 30, [0.0] * 30])
    p = stats.pairwise_p_values(x, stats.permutation_signs(30, 500, 1))
    assert p[0, 1] == pytest.approx(1 / 500, abs=2 / 500)  # only the all-(+1)-like flips reach it
    p2 = stats.pairwise_p_values(x[::-1], stats.permutation_signs(30, 500, 1))
    assert p2[0, 1] == 1.0


# --------------------------------------------------------------------------- significance

def test_pairs_permutation_test_null_and_power():
    h, m = _data(S=8, T=200, seed=5, miss=0.0)
    same = sig.pairs_permutation_test(h, m, m.copy(), k=300, seed=0)
    assert same.delta == 0 and same.p_value == 1.0
    rng = np.random.default_rng(0)
    noisy = m + rng.normal(scale=3, size=m.shape)
    res = sig.pairs_permutation_test(h, m, noisy, k=1000, seed=0)
    assert res.delta > 0 and res.p_value < 0.01
    rev = sig.pairs_permutation_test(h, noisy, m, k=1000, seed=0)
    assert rev.delta == pytest.approx(-res.delta) and rev.p_value > 0.99
    # null draws are sums of independent +/- contributions: mean 0, known variance
    assert abs(res.null.mean()) < 4 * res.null.std() / np.sqrt(1000)


def test_pearson_fast_path_equals_generic_definition():
    h, m = _data(S=6, T=50, seed=6, miss=0.2)
    m2 = m + np.random.default_rng(1).normal(size=m.shape)
    fast = sig.pearson_permutation_test(h, m, m2, k=400, seed=3)
    generic = sig.scores_permutation_test(h, m, m2, lambda a, b: stats.pearson(a, b), k=400, seed=3)
    assert fast.delta == pytest.approx(generic.delta, abs=1e-12)
    assert abs(fast.p_value - generic.p_value) < 0.08  # different draws, same test


def test_spa_fast_path_equals_generic_definition():
    h, m = _data(S=5, T=40, seed=7, miss=0.25)
    cols = ~np.isnan(h).any(0)
    h, m = h[:, cols], m[:, cols]
    m2 = m + np.random.default_rng(2).normal(scale=2, size=m.shape)
    fast = sig.spa_permutation_test(h, m, m2, k=30, seed=1, spa_k=300)
    generic = sig.scores_permutation_test(h, m, m2, lambda a, b: stats.soft_pairwise_accuracy(a, b, 300),
                                          k=30, seed=1)
    assert fast.delta == pytest.approx(generic.delta, abs=1e-9)
    np.testing.assert_allclose(fast.null, generic.null, atol=1e-9)  # same swaps, same draws


def test_clusters_and_bootstrap():
    pm = np.array([[0, 0.5, 0.01, 0.0], [0, 0, 0.2, 0.01], [0, 0, 0, 0.3], [0, 0, 0, 0]])
    # metric 3 is beaten by metric 1 but not by metric 2, the head of its cluster
    assert sig.significance_clusters(pm) == [1, 1, 2, 2]
    assert sig.significance_clusters(np.triu(np.full((3, 3), 0.001), 1)) == [1, 2, 3]
    h, m = _data(S=6, T=80, seed=8, miss=0.0)
    ci = sig.bootstrap_ci(h, m, lambda a, b: stats.pearson(a, b), k=200, seed=0)
    assert ci.low < ci.value < ci.high
    cmp = sig.compare_metrics({"a": 0.5, "b": 0.7}, None)
    assert cmp.names == ["b", "a"] and cmp.ranks == [1, 2]
