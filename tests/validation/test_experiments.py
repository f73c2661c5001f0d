"""Guerdan et al.'s other analyses: rank correlations, regret by budget, prevalence by elicitation.

Hand-computed cases first, scipy as the reference for the rank statistics,
then the paper's qualitative findings on fixed seeds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from polyjudge.data.errors import InputError
from polyjudge.validation.experiments import (
    PrevalenceSetup,
    elicited,
    prevalence_bias,
    prevalences,
    regret_by_budget,
    stable_sets,
)
from polyjudge.validation.rank import average_ranks, kendall_tau_b, spearman_rho
from polyjudge.validation.rating_model import Decomposition
from polyjudge.validation.simulate import (
    SIM_DEFINITIONS,
    SimConfig,
    World,
    draw_world,
    error_matrix,
    judge_tables,
    rank_correlations,
    selection_outcome,
    simulate,
)
from polyjudge.validation.task import RatingTask

# --------------------------------------------------------------------------- rank statistics


def test_rank_statistics_hand_case():
    # x = 1 2 3 4, y = 1 3 2 4: 5 concordant pairs, 1 discordant -> τ = 4/6
    assert kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    # d = (0, 1, -1, 0): ρ = 1 - 6·2 / (4·15) = 0.8
    assert spearman_rho([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert kendall_tau_b([1, 2], [2, 1]) == -1.0
    np.testing.assert_allclose(average_ranks([10, 20, 20, 5]), [2, 3.5, 3.5, 1])
    assert math.isnan(kendall_tau_b([1, 1, 1], [1, 2, 3]))
    assert math.isnan(spearman_rho([1, 2, 3], [4, 4, 4]))
    assert math.isnan(kendall_tau_b([1], [2]))


@pytest.mark.parametrize("seed", range(6))
def test_rank_statistics_match_scipy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 60))
    x = rng.integers(0, 6, n).astype(float)  # many ties
    y = x + rng.normal(0, 2, n).round()
    if seed == 0:
        x[3] = np.nan  # a missing value leaves its pair out
    ok = np.isfinite(x) & np.isfinite(y)
    assert kendall_tau_b(x, y) == pytest.approx(stats.kendalltau(x[ok], y[ok], variant="b")[0], abs=1e-12)
    assert spearman_rho(x, y) == pytest.approx(stats.spearmanr(x[ok], y[ok])[0], abs=1e-12)


# --------------------------------------------------------------------------- 2 judges x 3 items by hand

def _hand_world() -> World:
    """|O| = 2, Q = {a}, {b}, {a, b}; decisions on option a at τ = 0.5.

    Humans (error-free Ω*): a-decisions 1, 0, 1 (prevalence 2/3).
    Judge A: Ω_a = .9 .6 .7 -> 1 1 1: C = 2/3, |B| = 1/3; its forced choices
    agree with every human mode (hit rate 1). Judge B: Ω_a = .7 .1 .65 ->
    1 0 1: C = 1, |B| = 0; forced-choice mode b everywhere (hit rate 1/3).
    MSE (srs/srs): A (.01+.09+.01)/3 = .0367, B (.01+.04+.0025)/3 = .0175.
    """
    omega_star = np.array([[0.8, 0.5], [0.3, 0.9], [0.6, 0.6]])
    omega_j = np.array([[[0.9, 0.5], [0.6, 0.9], [0.7, 0.6]],
                        [[0.7, 0.5], [0.1, 0.9], [0.65, 0.6]]])
    O_hat = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    O_j_hat = np.array([[[0.8, 0.2], [0.3, 0.7], [0.6, 0.4]],
                        [[0.4, 0.6], [0.3, 0.7], [0.45, 0.55]]])
    lam = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    dummy = np.zeros((3, 3))
    dec = Decomposition(dummy, dummy, O_hat, omega_star, omega_star, dummy, dummy)
    return World(lam, np.zeros((3, 2, 3)), np.zeros((2, 3, 2, 3)), dec, O_hat, omega_star, np.zeros((2, 3, 3)),
                 O_j_hat, omega_j, O_j_hat, omega_j)


def test_regret_and_rank_correlation_by_hand():
    cfg = SimConfig(n_options=2, n_items=3, n_judges=2, taus=(0.5,), k=0)
    defs = tuple(d for d in SIM_DEFINITIONS if d.label in ("hit_rate (h/h)", "mse (srs/srs)"))
    (t,) = judge_tables(_hand_world(), cfg, defs)
    np.testing.assert_allclose(t.consistency, [2 / 3, 1.0])
    np.testing.assert_allclose(t.abs_bias, [1 / 3, 0.0])
    np.testing.assert_allclose(t.values["hit_rate (h/h)"], [1.0, 1 / 3])
    np.testing.assert_allclose(t.values["mse (srs/srs)"], [0.11 / 3, 0.0525 / 3])
    hit = selection_outcome(t.values["hit_rate (h/h)"], True, t.consistency, t.abs_bias)
    assert hit["regret"] == pytest.approx(1 / 3) and hit["bias_excess"] == pytest.approx(1 / 3)
    mse = selection_outcome(t.values["mse (srs/srs)"], False, t.consistency, t.abs_bias)
    assert mse["regret"] == 0 and mse["bias_excess"] == 0
    rc = rank_correlations([t], defs)
    # hit rate orders A over B, consistency and |bias| B over A; MSE agrees with both
    assert rc["hit_rate (h/h)"] == {"kendall_consistency": -1.0, "spearman_consistency": -1.0,
                                    "kendall_bias": -1.0, "spearman_bias": -1.0}
    assert rc["mse (srs/srs)"] == {"kendall_consistency": 1.0, "spearman_consistency": 1.0,
                                   "kendall_bias": 1.0, "spearman_bias": 1.0}


# --------------------------------------------------------------------------- prevalence by hand

def test_elicited_prevalences_by_hand():
    """Two items, θ* over ({a}, {b}, {a,b}) = (.4, .2, .4) and (.1, .6, .3); with γ = 0 a
    rater holding {a,b} picks a or b with probability 1/2 each.

    Ω* = (.8, .6), (.4, .9); O = (.6, .4), (.25, .75). At τ = .5: true prevalence
    (1/2, 1), forced choice (1/2, 1/2). With ε = .3, η = 0 every stable set is
    kept with .7 and becomes each other set with .15: θ = (.37, .26, .37) and
    (.205, .48, .315), Ω = (.74, .63), (.52, .795): response sets give (1, 1).
    """
    lam = RatingTask.build(["a", "b"]).membership
    theta_star = np.array([[0.4, 0.2, 0.4], [0.1, 0.6, 0.3]])
    F = np.broadcast_to(np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.5]]), (2, 2, 3))
    ys = elicited(theta_star, F, np.eye(3), lam)
    np.testing.assert_allclose(ys["true"], [[0.8, 0.6], [0.4, 0.9]])
    np.testing.assert_allclose(ys["forced_choice"], [[0.6, 0.4], [0.25, 0.75]])
    np.testing.assert_allclose(prevalences(ys["true"], 0.5), [0.5, 1.0])
    np.testing.assert_allclose(prevalences(ys["forced_choice"], 0.5), [0.5, 0.5])
    np.testing.assert_allclose(prevalences(ys["response_set"], 0.5), [0.5, 1.0])
    E = error_matrix(lam, 0.3, 0.0)
    noisy = elicited(theta_star, F, E, lam)
    np.testing.assert_allclose(noisy["theta"], [[0.37, 0.26, 0.37], [0.205, 0.48, 0.315]])
    np.testing.assert_allclose(noisy["response_set"], [[0.74, 0.63], [0.52, 0.795]])
    np.testing.assert_allclose(prevalences(noisy["response_set"], 0.5), [1.0, 1.0])


def test_stable_sets_put_exactly_the_ambiguity_on_multi_option_sets():
    lam = RatingTask.build(["a", "b", "c"]).membership
    th = stable_sets(np.random.default_rng(0), 50, lam, 0.3)
    multi = lam.sum(0) > 1
    np.testing.assert_allclose(th[:, multi].sum(1), 0.3)
    np.testing.assert_allclose(th.sum(1), 1.0)


def test_prevalence_bias_rows_and_guards():
    res = prevalence_bias(PrevalenceSetup(n_options=3, n_items=80), ambiguity=(0.0, 0.5), taus=(0.3, 0.5), seeds=3)
    assert len(res.rows) == 2 * 2 * 3 and res.seeds == 3
    for r in res.rows:
        v = r.values
        if r.ambiguity == 0:  # fully determined: both elicitations see the truth
            assert v["forced_choice"]["mean"] == v["true"]["mean"] == v["response_set"]["mean"]
        # no rater error: O_k <= Ω_k item by item, so forced choice never counts more
        assert v["forced_choice"]["mean"] <= v["response_set"]["mean"] + 1e-12
        assert r.rs_bias == 0
    assert res.to_dict()["seed_values"] == [0, 1, 2]
    with pytest.raises(InputError, match="fully specified"):
        prevalence_bias(PrevalenceSetup(n_options=3, n_sets=3), ambiguity=(0.2,))
    with pytest.raises(InputError, match="ambiguity"):
        prevalence_bias(ambiguity=(1.5,))


def test_finding_4_forced_choice_underestimates_more_as_ambiguity_grows():
    res = prevalence_bias(PrevalenceSetup(n_options=3, n_items=200), ambiguity=(0.0, 0.2, 0.4, 0.6), taus=(0.5,),
                          seeds=5)
    fc_bias = [np.mean([r.fc_bias for r in res.rows if r.ambiguity == a]) for a in (0.0, 0.2, 0.4, 0.6)]
    assert fc_bias[0] == 0
    assert fc_bias[1] < -0.05 and all(b < a for a, b in zip(fc_bias, fc_bias[1:]))


# --------------------------------------------------------------------------- budget

def test_budget_keeps_the_population_fixed_across_ratings():
    cfg = SimConfig(n_items=20, n_judges=6)
    a = draw_world(cfg, 3, human_rng=np.random.default_rng(1))
    b = draw_world(SimConfig(n_items=20, n_judges=6, human_ratings=9), 3, human_rng=np.random.default_rng(2))
    np.testing.assert_array_equal(a.dec.omega_star, b.dec.omega_star)
    np.testing.assert_array_equal(a.omega_j, b.omega_j)
    assert not np.array_equal(a.O_hat, b.O_hat)
    # without its own stream the draw is simulate()'s
    w = draw_world(cfg, 3)
    t = judge_tables(w, cfg)
    assert simulate(cfg, seed=3).best["consistency"] == pytest.approx(np.mean([x.consistency.max() for x in t]))


def test_budget_grid_shape_determinism_and_guards():
    base = SimConfig(n_judges=8)
    r1 = regret_by_budget(base, items=(20, 40), ratings=(1, 4), seeds=2)
    r2 = regret_by_budget(base, items=(20, 40), ratings=(1, 4), seeds=2)
    assert r1.rows() == r2.rows()
    assert len(r1.cells) == 2 * 2 * len(SIM_DEFINITIONS)
    row = r1.rows()[0]
    assert row["budget"] == row["n_items"] * row["ratings_per_item"] and row["seeds"] == 2
    for c in r1.cells:
        assert 0 <= c.min <= c.mean <= c.max <= 1 and c.band[0] <= c.mean <= c.band[1]
    with pytest.raises(InputError):
        regret_by_budget(base, items=(1,), ratings=(1,))
    with pytest.raises(InputError):
        regret_by_budget(base, seeds=0)


def test_finding_1_regret_falls_with_the_budget_and_full_specification_saves_ratings():
    under = regret_by_budget(SimConfig(n_options=3, n_sets=7, gamma_human=1.0, gamma_judge=1.0),
                             items=(100,), ratings=(1, 10), seeds=10)
    full = regret_by_budget(SimConfig(n_options=3, n_sets=3, gamma_human=1.0, gamma_judge=1.0),
                            items=(100,), ratings=(1,), seeds=10)

    def mean_regret(res, r):
        return np.mean([c.mean for c in res.cells if c.ratings == r])

    assert mean_regret(under, 10) < mean_regret(under, 1) - 0.02
    # a fully specified task with 1 rating/item does at least as well as an underspecified one with 1
    assert mean_regret(full, 1) < mean_regret(under, 1)


# --------------------------------------------------------------------------- rank correlations

def test_finding_2_categorical_rankings_decouple_from_decisions_under_asymmetric_effects():
    """Figures 5 and 14: under asymmetric forced-choice selection effects the hit-rate
    ranking of judges no longer follows their decision consistency; distributional
    and multi-label rankings still do."""
    def rho(gamma_judge):
        cfg = SimConfig(n_options=3, n_sets=7, gamma_human=1.5, gamma_judge=gamma_judge, human_ratings=10,
                        judge_samples=None)
        runs = [simulate(cfg, seed=s).rank_correlation for s in range(6)]
        return {d: np.mean([r[d]["spearman_consistency"] for r in runs]) for d in runs[0]}

    sym, asym = rho(1.5), rho(-1.5)
    assert sym["hit_rate (h/h)"] > 0.6 and asym["hit_rate (h/h)"] < 0.2
    for d in ("js_divergence (s/s)", "mse (srs/srs)"):
        assert sym[d] > 0.75 and asym[d] > 0.75
