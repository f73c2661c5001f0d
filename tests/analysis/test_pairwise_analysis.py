"""Pairwise outcomes, position bias and Bradley–Terry, checked by hand and against
independent fits (scipy.optimize on the log-likelihood, statsmodels' binomial GLM)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polyjudge.analysis.pairwise import (
    PairJudgment,
    bootstrap_strengths,
    bradley_terry,
    bradley_terry_ranking,
    comparison_matrix,
    position_bias,
    segment_win_shares,
)


def pj(first, second, ab, ba, seg="1", doc=None) -> PairJudgment:
    return PairJudgment(doc, seg, first, second, ab, ba)


def won(first, second, n, seg0=0) -> list[PairJudgment]:
    """``n`` pairs, each on its own segment, that ``first`` wins in both orders."""
    return [pj(first, second, "A", "B", seg=str(seg0 + k)) for k in range(n)]


# ------------------------------------------------------------------ outcomes
@pytest.mark.parametrize(("ab", "ba", "outcome", "score", "flipped"), [
    ("A", "B", "win", 1.0, False), ("B", "A", "lose", 0.0, False), ("tie", "tie", "tie", 0.5, False),
    ("A", "A", "inconsistent", 0.5, True), ("B", "B", "inconsistent", 0.5, True),
    ("A", "tie", "inconsistent", 0.75, False), ("tie", "A", "inconsistent", 0.25, False),
    ("A", None, "missing", None, False), (None, None, "missing", None, False),
])
def test_both_orders_merge_into_one_outcome(ab, ba, outcome, score, flipped):
    p = pj("x", "y", ab, ba)
    assert (p.outcome, p.score, p.flipped) == (outcome, score, flipped)


def test_bad_pairs_are_refused():
    with pytest.raises(ValueError, match="verdict"):
        pj("x", "y", "C", "A")
    with pytest.raises(ValueError, match="two different systems"):
        pj("x", "x", "A", "B")


# ------------------------------------------------------------------ position bias
def test_position_bias_counts_by_hand():
    pairs = [pj("x", "y", "A", "B"), pj("x", "z", "tie", "tie"), pj("y", "z", "A", "A"), pj("y", "x", "B", "B"),
             pj("z", "x", "A", "tie"), pj("x", "y", "A", None, seg="2")]
    b = position_bias(pairs)
    assert (b.pairs, b.complete, b.missing) == (6, 5, 1)
    assert (b.consistent, b.inconsistent, b.flips, b.flips_to_a) == (2, 3, 2, 1)
    assert (b.verdicts, b.a_wins, b.b_wins, b.ties) == (11, 5, 3, 3)
    assert b.a_share == pytest.approx(5 / 8)
    assert b.a_share_consistent == 0.5  # by construction
    assert b.a_share_inconsistent == pytest.approx(3 / 5)
    assert b.inconsistency_rate == pytest.approx(3 / 5) and b.flip_rate == pytest.approx(2 / 5)
    from scipy.stats import binomtest
    assert b.p_value == pytest.approx(binomtest(5, 8).pvalue)
    d = b.to_dict()
    assert d["inconsistency_rate"] == pytest.approx(0.6) and d["pairs"] == 6


def test_position_bias_of_nothing_is_not_a_number():
    b = position_bias([pj("x", "y", None, None)])
    assert b.complete == 0 and math.isnan(b.a_share) and math.isnan(b.p_value) and math.isnan(b.flip_rate)
    assert b.to_dict()["a_share"] is None


# ------------------------------------------------------------------ Bradley–Terry by hand
def test_hand_computed_three_systems():
    """a beats b 2:1, b beats c 2:1, a beats c 4:1. Strengths p = (4, 2, 1) give exactly these
    odds (2/3, 2/3, 4/5), so they are the MLE: θ = log p − mean = (ln 2, 0, −ln 2)."""
    pairs = (won("a", "b", 2) + won("b", "a", 1, 10) + won("b", "c", 2, 20) + won("c", "b", 1, 30)
             + won("a", "c", 4, 40) + won("c", "a", 1, 50))
    w = comparison_matrix(pairs, ["a", "b", "c"])
    assert w.tolist() == [[0, 2, 4], [1, 0, 2], [1, 1, 0]]
    assert bradley_terry(w) == pytest.approx([math.log(2), 0.0, -math.log(2)], abs=1e-9)
    # ties count half: one a-win and two ties is the same as two wins to one
    tied = won("a", "b", 1) + [pj("a", "b", "tie", "tie", seg="t1"), pj("b", "a", "tie", "tie", seg="t2")]
    assert comparison_matrix(tied, ["a", "b"]).tolist() == [[0, 2], [1, 0]]
    assert bradley_terry(comparison_matrix(tied, ["a", "b"])) == pytest.approx([math.log(2) / 2, -math.log(2) / 2])


def test_a_flip_counts_as_a_tie_and_a_partial_verdict_as_three_quarters():
    w = comparison_matrix([pj("a", "b", "A", "A"), pj("a", "b", "A", "tie", seg="2")], ["a", "b"])
    assert w.tolist() == [[0, 1.25], [0.75, 0]]


def _scipy_bt(w: np.ndarray) -> np.ndarray:
    """Independent MLE: minimise the negative log-likelihood with the first strength fixed at 0."""
    from scipy.optimize import minimize

    def nll(free):
        t = np.concatenate([[0.0], free])
        d = t[:, None] - t[None, :]
        return float((w * np.logaddexp(0.0, -d)).sum())

    res = minimize(nll, np.zeros(w.shape[0] - 1), method="BFGS", options={"gtol": 1e-11})
    t = np.concatenate([[0.0], res.x])
    return t - t.mean()


def _statsmodels_bt(w: np.ndarray) -> np.ndarray:
    """Independent MLE: a binomial GLM (logit) on the paired design, one row per ordered pair."""
    import statsmodels.api as sm

    k = w.shape[0]
    rows, wins, totals = [], [], []
    for i, j in itertools.combinations(range(k), 2):
        n = w[i, j] + w[j, i]
        if n == 0:
            continue
        x = np.zeros(k)
        x[i], x[j] = 1.0, -1.0
        rows.append(x[1:])  # system 0 is the baseline
        wins.append(w[i, j])
        totals.append(n)
    wins_arr, totals_arr = np.array(wins), np.array(totals)
    endog = np.column_stack([wins_arr, totals_arr - wins_arr])
    fit = sm.GLM(endog, np.array(rows), family=sm.families.Binomial()).fit(tol=1e-12)
    t = np.concatenate([[0.0], fit.params])
    return t - t.mean()


@pytest.mark.parametrize("seed", range(6))
def test_matches_scipy_and_statsmodels_on_random_data(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(3, 7))
    w = rng.integers(0, 8, (k, k)) + rng.choice([0.0, 0.5], (k, k))
    w = w + 1.0  # every pair compared with wins both ways: the MLE exists
    np.fill_diagonal(w, 0.0)
    ours = bradley_terry(w)
    assert ours == pytest.approx(_scipy_bt(w), abs=1e-6)
    assert ours == pytest.approx(_statsmodels_bt(w), abs=1e-6)
    assert ours.mean() == pytest.approx(0.0, abs=1e-12)


def test_prior_is_virtual_ties_and_keeps_a_clean_sweep_finite():
    pairs = won("a", "b", 3) + won("b", "c", 3, 10) + won("a", "c", 3, 20)
    w = comparison_matrix(pairs, ["a", "b", "c"])
    with pytest.raises(ValueError, match="give a prior"):
        bradley_terry(w)
    theta = bradley_terry(w, prior=2.0)
    assert np.all(np.isfinite(theta)) and theta[0] > theta[1] > theta[2]
    virtual = w + 1.0  # two virtual ties = one virtual win each way
    np.fill_diagonal(virtual, 0.0)
    assert theta == pytest.approx(_scipy_bt(virtual), abs=1e-6)


def test_bad_win_matrices_are_refused():
    with pytest.raises(ValueError, match="square"):
        bradley_terry(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="non-negative"):
        bradley_terry(np.array([[0.0, -1.0], [1.0, 0.0]]))
    with pytest.raises(ValueError, match="prior"):
        bradley_terry(np.ones((2, 2)), prior=-1)
    assert bradley_terry(np.zeros((1, 1))).tolist() == [0.0]


@settings(max_examples=60, deadline=None)
@given(st.integers(3, 6).flatmap(lambda k: st.lists(st.integers(0, 6), min_size=k * (k - 1) // 2,
                                                     max_size=k * (k - 1) // 2).map(lambda v: (k, v))))
def test_round_robin_ranks_like_the_win_counts(data):
    """With the same number of comparisons between every two systems, the BT order is the
    order of total wins (the likelihood equations make strength increasing in wins)."""
    k, first_wins = data
    pairs, seg = [], 0
    for (i, j), n in zip(itertools.combinations(range(k), 2), first_wins):
        for r in range(6):
            seg += 1
            pairs.append(pj(f"s{i}", f"s{j}", *(("A", "B") if r < n else ("B", "A")), seg=str(seg)))
    names = [f"s{i}" for i in range(k)]
    w = comparison_matrix(pairs, names)
    theta = bradley_terry(w, prior=1.0)
    total = w.sum(axis=1)
    for a, b in itertools.combinations(range(k), 2):
        if total[a] != total[b]:
            assert (theta[a] > theta[b]) == (total[a] > total[b])
        else:
            assert theta[a] == pytest.approx(theta[b], abs=1e-6)


# ------------------------------------------------------------------ bootstrap and ranking
def _pairs_of_two_segments() -> list[PairJudgment]:
    return [pj("a", "b", "A", "B", seg="1"), pj("a", "c", "A", "B", seg="1"), pj("b", "c", "tie", "tie", seg="1"),
            pj("a", "b", "B", "A", seg="2"), pj("a", "c", "A", "B", seg="2"), pj("b", "c", "A", "B", seg="2")]


def test_bootstrap_resamples_whole_segments_with_a_seed():
    pairs = _pairs_of_two_segments()
    names = ["a", "b", "c"]
    boot = bootstrap_strengths(pairs, names, n_boot=200, seed=3, prior=1.0)
    assert boot.shape == (200, 3)
    assert np.array_equal(boot, bootstrap_strengths(pairs, names, n_boot=200, seed=3, prior=1.0))
    # two segments: every resample is {1,1}, {2,2} or {1,2}, so at most three distinct fits
    assert len({tuple(np.round(r, 9)) for r in boot}) == 3
    one = bootstrap_strengths(pairs[:3], names, n_boot=20, seed=0, prior=1.0)
    assert np.allclose(one, one[0])  # one segment: nothing to resample


def test_ranking_is_best_first_with_intervals_around_the_estimate():
    rng = np.random.default_rng(0)
    quality = {"good": 1.5, "mid": 0.0, "bad": -1.5}
    pairs = []
    for seg in range(60):
        for x, y in itertools.combinations(quality, 2):
            p = 1 / (1 + math.exp(quality[y] - quality[x]))
            v = "A" if rng.random() < p else "B"
            pairs.append(pj(x, y, v, "B" if v == "A" else "A", seg=str(seg)))
    rows = bradley_terry_ranking(pairs, n_boot=300, seed=1)
    assert [r.system for r in rows] == ["good", "mid", "bad"]
    for r in rows:
        assert r.ci_low <= r.score <= r.ci_high and r.comparisons == 120
    assert rows[0].ci_low > rows[2].ci_high
    assert sum(r.win_rate * r.comparisons for r in rows) == pytest.approx(180)
    again = bradley_terry_ranking(pairs, n_boot=300, seed=1)
    assert again == rows
    bare = bradley_terry_ranking(pairs, n_boot=0)
    assert math.isnan(bare[0].ci_low) and [r.score for r in bare] == [r.score for r in rows]
    assert bradley_terry_ranking([], n_boot=10) == []
    with pytest.raises(ValueError, match="level"):
        bradley_terry_ranking(pairs, level=1.5)


def test_segment_win_shares():
    shares = {(s.seg_id, s.system): (s.score, s.comparisons) for s in segment_win_shares(_pairs_of_two_segments())}
    assert shares[("1", "a")] == (1.0, 2) and shares[("1", "b")] == (0.25, 2) and shares[("1", "c")] == (0.25, 2)
    assert shares[("2", "a")] == (0.5, 2) and shares[("2", "b")] == (1.0, 2) and shares[("2", "c")] == (0.0, 2)
    assert segment_win_shares([pj("a", "b", "A", None)]) == []
