"""The confidence sequence behind --until-settled: its inversion against the supermartingale it comes
from, its coverage of a finite population's mean at every look, and the error rate and power of the
rule that settles pairs of systems (by simulation, over seeds)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from polyjudge.analysis.sequential import (
    BURN_IN,
    METHODS,
    Retirement,
    SettleState,
    settle_state,
    tie_groups,
    wor_clt_bounds,
    wor_eb_bounds,
)

_SEEDS = 200


def _capital(x: np.ndarray, population: int, alpha: float, m: float) -> list[float]:
    """The log-wealth, after each draw, of the bet against "the population mean is m" (upper side), from its
    definition: draw i is expected at the mean of the units not yet drawn."""
    mu_hat, var_hat, total, squares, log_k = 0.5, 0.25, 0.0, 0.0, 0.0
    out = []
    for i, xi in enumerate(x, start=1):
        lam = min(math.sqrt(2 * math.log(2 / alpha) / (var_hat * i * math.log1p(i))), 0.75)
        expected = (population * m - total) / (population - i + 1)
        log_k += lam * (xi - expected) - (-math.log1p(-lam) - lam) * (xi - mu_hat) ** 2
        out.append(log_k)
        total += xi
        mu_hat = (0.5 + total) / (i + 1)
        squares += (xi - mu_hat) ** 2
        var_hat = (0.25 + squares) / (i + 1)
    return out


def test_the_lower_bound_is_where_the_bet_against_the_mean_stops_winning():
    rng = np.random.default_rng(3)
    x = rng.beta(2, 5, size=60)
    low, _ = wor_eb_bounds(x, 200, 0.1)
    grid = np.linspace(0.0, 1.0, 4001)
    wealth = np.array([_capital(x, 200, 0.1, m) for m in grid])  # grid x draws
    # a mean is refuted once the bet against it has multiplied its stake by 2/alpha (Ville), at any draw so far;
    # the units drawn also fix a floor whatever the rest holds
    floor = np.cumsum(x) / 200
    for t in (5, 20, 59):
        refuted = grid[(wealth[:, :t + 1] >= math.log(2 / 0.1)).any(axis=1)]
        expected = max(refuted.max() if refuted.size else 0.0, floor[:t + 1].max())
        assert low[t, 0] == pytest.approx(expected, abs=3e-4)


def test_the_interval_is_the_exact_mean_once_the_population_is_drawn():
    x = np.random.default_rng(0).random(50)
    low, high = wor_eb_bounds(x, 50, 0.05)
    assert low[-1] == pytest.approx(x.mean()) and high[-1] == pytest.approx(x.mean())
    assert np.all(np.diff(low[:, 0]) >= 0) and np.all(np.diff(high[:, 0]) <= 0)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_the_sequence_covers_the_finite_population_mean_at_every_look(method):
    population = np.random.default_rng(1).beta(0.5, 3, size=300)  # skewed, like error-count scores
    alpha, misses = 0.1, 0
    for seed in range(_SEEDS):
        x = population[np.random.default_rng(seed).permutation(300)]
        low, high = METHODS[method](x, 300, alpha)
        # (sums in another order differ in the last digit: 1e-12 is rounding, not a miss)
        misses += bool(np.any(low[:, 0] > population.mean() + 1e-12) or np.any(high[:, 0] < population.mean() - 1e-12))
    assert misses / _SEEDS <= alpha


def _rounds(scores: np.ndarray, alpha: float, seed: int, size: int,
            method: str = "bernstein") -> tuple[set[tuple[str, str]], int]:
    """The rule as judge --until-settled runs it: look after every round, stop when all are settled."""
    n_units, k = scores.shape
    order = np.random.default_rng(seed).permutation(n_units)
    names = [f"s{i}" for i in range(k)]
    taken = 0
    while True:
        taken = min(n_units, taken + size)
        state = settle_state(scores[order[:taken]], names, n_units, alpha, (0.0, 100.0), method=method)
        if state.all_settled or taken == n_units:
            break
    return {(p.a, p.b) if p.order > 0 else (p.b, p.a) for p in state.settled}, taken


@pytest.mark.parametrize("method", sorted(METHODS))
def test_systems_with_equal_means_are_settled_as_ordered_in_at_most_alpha_of_seeds(method):
    """Three systems whose full-data means are equal (each a shuffle of the same scores) and one clearly
    better: any order settled among the three is an error; the rounds may not make one in over alpha."""
    rng = np.random.default_rng(7)
    base = np.clip(rng.normal(60, 15, size=300), 0, 100)
    scores = np.column_stack([base, rng.permutation(base), rng.permutation(base), np.clip(base + 25, 0, 100)])
    alpha, wrong = 0.05, 0
    for seed in range(_SEEDS):
        settled, _ = _rounds(scores, alpha, seed, 15, method)
        wrong += bool(settled & {("s0", "s1"), ("s1", "s0"), ("s0", "s2"), ("s2", "s0"), ("s1", "s2"), ("s2", "s1")})
    assert wrong / _SEEDS <= alpha


@pytest.mark.parametrize("method", sorted(METHODS))
def test_a_clear_difference_is_settled_long_before_the_segments_run_out(method):
    """Power: systems 0.4 standard deviations apart on 2,000 segments are settled, in the right order, from
    at most half of them in nine seeds of ten."""
    rng = np.random.default_rng(11)
    a = np.clip(rng.normal(70, 12, size=2000), 0, 100)
    b = np.clip(a - 5 + rng.normal(0, 5, size=2000), 0, 100)
    early = 0
    for seed in range(50):
        settled, taken = _rounds(np.column_stack([a, b]), 0.05, seed, 100, method)
        assert settled == {("s0", "s1")}
        early += taken <= 1000
    assert early / 50 >= 0.9


def test_open_pairs_are_ties_in_the_groups_never_an_order():
    scores = np.array([[90.0, 50.0, 50.0]] * 40 + [[90.0, 60.0, 40.0], [90.0, 40.0, 60.0]] * 5)
    state = settle_state(scores, ["a", "b", "c"], 50, 0.05, (0.0, 100.0))
    assert {(p.a, p.b) for p in state.settled} == {("a", "b"), ("a", "c")}
    assert [(p.a, p.b) for p in state.open] == [("b", "c")]
    assert tie_groups(state) == {"a": 1, "b": 2, "c": 2}


def test_lower_is_better_reverses_the_order_and_the_groups():
    scores = np.array([[9.0, 1.0]] * 30)  # error points: b makes fewer
    state = settle_state(scores, ["a", "b"], 30, 0.05, (0.0, 10.0), higher_is_better=False)
    assert state.pairs[0].order == -1 and tie_groups(state) == {"b": 1, "a": 2}


def test_the_asymptotic_sequence_decides_nothing_before_its_burn_in_and_is_exact_at_the_end():
    x = np.random.default_rng(2).random(80)
    low, high = wor_clt_bounds(x, 80, 0.05)
    assert np.all(np.isinf(low[:BURN_IN])) and np.isfinite(low[BURN_IN:]).all()
    assert low[-1, 0] == pytest.approx(x.mean()) and high[-1, 0] == pytest.approx(x.mean())


def test_the_asymptotic_sequence_settles_more_than_the_bounded_one_on_a_small_difference():
    rng = np.random.default_rng(5)
    a = np.clip(rng.normal(70, 10, size=1000), 0, 100)
    b = np.clip(a - 2 + rng.normal(0, 6, size=1000), 0, 100)
    x = (np.column_stack([a - b]) + 100) / 200
    narrow = [METHODS[m](x[:400], 1000, 0.05) for m in ("asymptotic", "bernstein")]
    assert narrow[0][1][-1, 0] - narrow[0][0][-1, 0] < 0.5 * (narrow[1][1][-1, 0] - narrow[1][0][-1, 0])


def test_a_missing_score_is_no_difference_for_its_pairs_and_left_out_of_its_system():
    scores = np.array([[80.0, 20.0]] * 40 + [[np.nan, 20.0]] * 10)
    state = settle_state(scores, ["a", "b"], 50, 0.05, (0.0, 100.0))
    assert state.systems[0].score == 80.0 and state.pairs[0].diff == 60.0
    full = settle_state(np.array([[80.0, 20.0]] * 40 + [[20.0, 20.0]] * 10), ["a", "b"], 50, 0.05, (0.0, 100.0))
    assert state.pairs[0].low == pytest.approx(full.pairs[0].low)  # the same as a difference of zero


@pytest.mark.parametrize("method", sorted(METHODS))
def test_heavy_tailed_error_scores_of_equal_systems_are_not_ordered_in_over_alpha_of_seeds(method):
    """MQM-like scores (most segments perfect, a few -25): six systems with the same scores in another order
    (equal full-data means, 15 pairs); with rounds of 5% no pair may be settled in over alpha of seeds."""
    rng = np.random.default_rng(2)
    base = -rng.choice([0, 1, 2, 5, 6, 10, 25], size=500, p=[0.6, 0.2, 0.05, 0.05, 0.04, 0.04, 0.02])
    scores = np.column_stack([rng.permutation(base) for _ in range(6)]) + 25.0
    names = [f"s{i}" for i in range(6)]
    wrong = 0
    for seed in range(_SEEDS):
        order = np.random.default_rng(seed).permutation(500)
        for taken in range(25, 501, 25):
            state = settle_state(scores[order[:taken]], names, 500, 0.05, (0.0, 25.0), method=method)
            if state.settled:
                wrong += 1
                break
    assert wrong / _SEEDS <= 0.05


def _rounds_retiring(scores: np.ndarray, alpha: float, seed: int, size: int, method: str = "bernstein",
                     ) -> tuple[SettleState, Retirement, int]:
    """The rule with retirement, as judge --until-settled runs it: settled pairs are frozen, a system settled
    against every other one gets no scores on the units drawn after it was retired (NaN: not judged)."""
    n_units, k = scores.shape
    order = np.random.default_rng(seed).permutation(n_units)
    names = [f"s{i}" for i in range(k)]
    retire = Retirement(tuple(names))
    taken, judged = 0, 0
    while True:
        taken = min(n_units, taken + size)
        seen = scores[order[:taken]].copy()
        units = retire.units(taken)
        for c, name in enumerate(names):
            seen[units[name]:, c] = np.nan
        judged = int(np.isfinite(seen).sum())
        state = settle_state(seen, names, n_units, alpha, (0.0, 100.0), method=method, frozen=retire.frozen)
        retire.update(state)
        if state.all_settled or taken == n_units:
            return state, retire, judged


@pytest.mark.parametrize("method", sorted(METHODS))
def test_with_retirement_an_equal_pair_is_settled_as_ordered_in_at_most_alpha_of_seeds(method):
    """One system far above two whose full-data means are equal: the far one is settled against both and
    retired (judged no more), the equal pair goes on; it may be settled as ordered in at most alpha of seeds."""
    rng = np.random.default_rng(17)
    base = np.clip(rng.normal(55, 15, size=400), 0, 100)
    scores = np.column_stack([np.clip(base + 30 + rng.normal(0, 5, size=400), 0, 100), base, rng.permutation(base)])
    alpha, wrong, retired_early = 0.05, 0, 0
    for seed in range(_SEEDS):
        state, retire, judged = _rounds_retiring(scores, alpha, seed, 20, method)
        wrong += any(p.order != 0 and {p.a, p.b} == {"s1", "s2"} for p in state.pairs)
        early = retire.units(state.n)["s0"] < state.n
        retired_early += early
        assert judged == sum(retire.units(state.n).values()) and (not early or judged < 3 * state.n)
        assert {(p.a, p.b): p.order for p in state.pairs if "s0" in (p.a, p.b)} == {("s0", "s1"): 1, ("s0", "s2"): 1}
    assert wrong / _SEEDS <= alpha
    assert retired_early / _SEEDS >= 0.9  # retirement was at work in (nearly) every seed


def test_a_frozen_pair_is_kept_as_settled_and_the_open_pairs_are_tested_as_before():
    rng = np.random.default_rng(4)
    scores = np.column_stack([np.full(60, 90.0), rng.normal(50, 5, 60), rng.normal(50, 5, 60)])
    names = ["a", "b", "c"]
    before = settle_state(scores[:30], names, 60, 0.05, (0.0, 100.0))
    frozen = {(p.a, p.b): p for p in before.settled}
    assert set(frozen) == {("a", "b"), ("a", "c")}
    later = scores.copy()
    later[30:, 0] = np.nan  # a retired: not judged on the units drawn after the look that settled it
    after = settle_state(later, names, 60, 0.05, (0.0, 100.0), frozen=frozen)
    plain = settle_state(scores, names, 60, 0.05, (0.0, 100.0))
    assert after.pairs[:2] == before.pairs[:2]  # never tested again (the NaN would count as no difference)
    assert after.pairs[2] == plain.pairs[2]  # the open pair: all its units, Bonferroni over all three pairs
    assert after.systems[0].n == 30 and after.systems[1].n == 60 and after.systems[0].score == 90.0


def test_a_system_is_retired_once_every_pair_it_belongs_to_is_settled():
    scores = np.array([[90.0, 50.0, 50.0]] * 40 + [[90.0, 60.0, 40.0], [90.0, 40.0, 60.0]] * 5)
    retire = Retirement(("a", "b", "c"))
    state = settle_state(scores, ["a", "b", "c"], 100, 0.05, (0.0, 100.0))
    retire.update(state)
    assert retire.active() == ("b", "c") and retire.retired_at == {"a": 50}
    assert retire.units(70) == {"a": 50, "b": 70, "c": 70}
    assert retire.settled_at == {("a", "b"): 50, ("a", "c"): 50}
