"""The choice rules and request counts of polyjudge.reranking.choose (no requests sent)."""

from __future__ import annotations

import itertools
import random

import pytest

from polyjudge.reranking.choose import MbrSearch, Pruning, best_index, full_matrix_requests
from polyjudge.reranking.run import cost_row, mbr_requests_per_source


def test_best_index_takes_the_first_of_a_tie_and_skips_failures():
    assert best_index([3.0, 7.0, 7.0, None]) == 1
    assert best_index([None, float("nan"), 2.0]) == 2
    assert best_index([None, None]) is None


@pytest.mark.parametrize("n", [1, 2, 4, 8, 16, 32])
def test_a_full_matrix_is_n_times_n_minus_one_and_half_that_when_symmetric(n):
    cands = [f"c{i}" for i in range(n)]
    assert mbr_requests_per_source(cands) == full_matrix_requests(n) == n * (n - 1)
    assert mbr_requests_per_source(cands, symmetric=True) == full_matrix_requests(n, symmetric=True) == n * (n - 1) // 2


def test_identical_candidates_are_judged_once():
    # 6 candidates, 3 distinct texts (a x3, b x2, c): 3*2 ordered pairs of different texts + (a,a) + (b,b)
    cands = ["a", "b", "a", "c", "b", "a"]
    assert mbr_requests_per_source(cands) == 6 + 2
    assert mbr_requests_per_source(cands, symmetric=True) == 3 + 2
    search = MbrSearch(tuple(cands))
    assert sorted(search.wanted()) == sorted([*itertools.permutations("abc", 2), ("a", "a"), ("b", "b")])


def utility(h: str, r: str) -> float:
    return float(len(set(h) & set(r))) - 0.1 * abs(len(h) - len(r))


def brute_force(cands: list[str]) -> int:
    """The textbook rule: mean utility over the other positions, first best."""
    n = len(cands)
    means = [sum(utility(cands[i], cands[j]) for j in range(n) if j != i) / (n - 1) for i in range(n)]
    return max(range(n), key=lambda i: (means[i], -i))


@pytest.mark.parametrize("seed", range(5))
def test_mbr_choice_is_the_brute_force_choice(seed):
    rng = random.Random(seed)
    cands = ["".join(rng.choice("abcdefg") for _ in range(rng.randint(2, 6))) for _ in range(9)]
    cands[4] = cands[1]  # a repeated sample
    search = MbrSearch(tuple(cands))
    search.advance({k: utility(*k) for k in search.wanted()})
    assert search.chosen() == brute_force(cands) and search.done


def test_symmetric_keys_give_the_same_choice_with_a_symmetric_utility():
    cands = ("abc", "abd", "xyz", "abcd", "ab")
    sym = MbrSearch(cands, symmetric=True)
    sym.advance({k: float(len(set(k[0]) & set(k[1]))) for k in sym.wanted()})
    full = MbrSearch(cands)
    full.advance({k: float(len(set(k[0]) & set(k[1]))) for k in full.wanted()})
    assert len(sym.utilities) == 10 and len(full.utilities) == 20
    assert sym.chosen() == full.chosen() and sym.expected_all() == full.expected_all()


def test_pruning_drops_the_outliers_and_keeps_the_choice():
    quality = [50, 52, 48, 5, 95, 51, 1, 99, 49, 53, 2, 97, 50, 47, 3, 96]
    cands = tuple(f"c{i}" for i in range(len(quality)))

    def u(h: str, r: str) -> float:
        return 100 - abs(quality[int(h[1:])] - quality[int(r[1:])])

    full = MbrSearch(cands)
    full.advance({k: u(*k) for k in full.wanted()})
    pruned = MbrSearch(cands, pruning=Pruning(schedule=(4, 8), n_boot=200))
    steps = 0
    while not pruned.done:
        pruned.advance({k: u(*k) for k in pruned.wanted()})
        steps += 1
    assert steps >= 2 and len(pruned.utilities) < len(full.utilities) == 16 * 15
    assert pruned.chosen() == full.chosen()
    assert {4, 7, 11, 15} <= set(pruned.pruned_at)  # the high outliers, far from the first references, went first
    assert all(r == 4 for i, r in pruned.pruned_at.items() if i in (4, 7, 11, 15))


def test_the_schedule_ends_with_every_candidate():
    assert Pruning(schedule=(4, 8)).steps(20) == [4, 8, 20]
    assert Pruning(schedule=(8, 16)).steps(6) == [6]
    assert Pruning().steps(32) == [8, 16, 32]


def test_pruning_costs_less_than_the_full_matrix_when_candidates_differ():
    rng = random.Random(0)
    quality = [rng.gauss(50, 20) for _ in range(32)]
    row = cost_row(32, symmetric=False, pruning=Pruning(), utility=lambda i, j: 100 - abs(quality[i] - quality[j]))
    assert row < cost_row(32, symmetric=False, pruning=None) == 32 * 31
