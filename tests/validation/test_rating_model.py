"""Theorem 3.3 (decomposition), Theorem 3.4 (identifiability) and the Table 2 template."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polyjudge.data.errors import InputError
from polyjudge.validation.rating_model import (
    beta_template,
    check_reverse_forced_choice,
    decompose,
    forward,
    identifiable,
    recover_theta,
    reverse_matrices,
)
from polyjudge.validation.task import RatingTask, all_subsets


def _random_model(seed: int, q: int, n_sets: int):
    rng = np.random.default_rng(seed)
    sets = all_subsets(q)[:n_sets]
    lam = np.zeros((q, len(sets)))
    for v, s in enumerate(sets):
        lam[list(s), v] = 1
    theta = rng.dirichlet(np.ones(len(sets)))
    F = lam * rng.random(lam.shape)
    F /= F.sum(0, keepdims=True)
    E = rng.dirichlet(np.ones(len(sets)), size=len(sets)).T  # column-stochastic
    return theta, F, E, lam


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), q=st.integers(2, 4), extra=st.integers(0, 11))
def test_theorem_3_3_decompose_recompose(seed, q, extra):
    n_sets = min(q + extra, 2 ** q - 1)
    theta, F, E, lam = _random_model(seed, q, n_sets)
    fc_dist = forward(theta, F, E)
    assert fc_dist.sum() == pytest.approx(1.0)
    F_rev, E_rev = reverse_matrices(theta, F, E)
    np.testing.assert_allclose(F_rev.sum(0), 1.0, atol=1e-9)  # reverse matrices are stochastic
    np.testing.assert_allclose(E_rev.sum(0), 1.0, atol=1e-9)
    np.testing.assert_allclose(recover_theta(fc_dist, F_rev, E_rev), theta, atol=1e-9)
    # and forward again from the recovered distribution gives the same O
    np.testing.assert_allclose(forward(recover_theta(fc_dist, F_rev, E_rev), F, E), fc_dist, atol=1e-9)


def test_theorem_3_3_batched_over_items():
    rng = np.random.default_rng(3)
    lam = RatingTask.build(["a", "b", "c"]).membership
    n = 20
    theta = rng.dirichlet(np.ones(7), size=n)
    F = lam[None] * rng.random((n, 3, 7))
    F /= F.sum(1, keepdims=True)
    dec = decompose(theta, F, None, lam)
    np.testing.assert_allclose(recover_theta(dec.O, dec.F_rev, dec.E_rev), theta, atol=1e-9)
    np.testing.assert_allclose(dec.omega, theta @ lam.T)


def test_appendix_c_example_2_decomposition():
    F = np.array([[1.0, 0, 0], [0, 1, 1]])
    lam = np.array([[1.0, 0, 1], [0, 1, 1]])
    dec = decompose(np.array([0.4, 0.5, 0.1]), F, None, lam)
    np.testing.assert_allclose(dec.O, [0.4, 0.6])
    np.testing.assert_allclose(dec.omega, [0.5, 0.6])
    Fz = np.array([[1.0, 0, 1], [0, 1, 0]])
    dz = decompose(np.array([0.0, 0.6, 0.4]), Fz, None, lam)
    np.testing.assert_allclose(dz.O, [0.4, 0.6])
    # The paper prints Ω^z = (.4, .6), but Λθ* with θ* = (0, .6, .4) is (.4, 1.0):
    # the set {o1, o2} (mass .4) contains o2 too. The ranking it illustrates is unchanged.
    np.testing.assert_allclose(dz.omega, [0.4, 1.0])


@pytest.mark.parametrize("q", [2, 3, 4])
def test_theorem_3_4_identifiable_iff_fully_specified(q):
    rng = np.random.default_rng(q)
    for n_sets in range(q, 2 ** q):
        task = RatingTask.build([f"o{k}" for k in range(q)], [sorted(s) for s in all_subsets(q)[:n_sets]])
        lam = task.membership
        F = lam * rng.random(lam.shape)
        F /= F.sum(0, keepdims=True)
        full_rank = np.linalg.matrix_rank(F) == task.n_sets
        assert full_rank == identifiable(task) == (n_sets == q)


def test_beta_template_is_table_2():
    task = RatingTask.build(["Very toxic", "Toxic", "No/Unsure"],
                            [["Very toxic"], ["Toxic"], ["No/Unsure"], ["Very toxic", "Toxic"],
                             ["Toxic", "No/Unsure"], ["Very toxic", "No/Unsure"],
                             ["Very toxic", "Toxic", "No/Unsure"]])
    m = beta_template(task, 0.3, source=2, target=1)
    # Table 2 is printed options x sets; ours is its transpose (sets x options)
    table2 = np.array([[1, 0, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0, 0], [0, 0.3, 0.7, 0, 0, 0, 0]])
    np.testing.assert_allclose(m, table2.T)
    # theta = F' O moves beta of the No/Unsure mass to {Toxic}
    np.testing.assert_allclose(m @ np.array([0.2, 0.3, 0.5]), [0.2, 0.3 + 0.15, 0.35, 0, 0, 0, 0])
    check_reverse_forced_choice(m, task)
    with pytest.raises(InputError):
        beta_template(task, 1.5, source=2, target=1)
    with pytest.raises(InputError):
        check_reverse_forced_choice(np.ones((7, 3)), task)
