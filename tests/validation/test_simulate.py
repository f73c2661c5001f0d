"""Simulator pieces and the paper's two qualitative findings (fixed seeds)."""

from __future__ import annotations

import numpy as np
import pytest

from polyjudge.validation.simulate import (
    SimConfig,
    default_grid,
    error_matrix,
    project_simplex,
    sample_forced_choice,
    selection_effect,
    simulate,
    summarise,
)
from polyjudge.validation.task import RatingTask

SEEDS = range(8)


def test_project_simplex():
    x = np.array([[0.5, 0.5, 0.5], [2.0, 0.0, -1.0], [0.2, 0.3, 0.5]])
    p = project_simplex(x)
    np.testing.assert_allclose(p, [[1 / 3] * 3, [1, 0, 0], [0.2, 0.3, 0.5]], atol=1e-12)
    r = np.random.default_rng(0).normal(size=(200, 5))
    p = project_simplex(r)
    assert (p >= 0).all() and np.allclose(p.sum(1), 1)
    # optimality: no random simplex point is closer
    cand = np.random.default_rng(1).dirichlet(np.ones(5), size=500)
    for i in range(20):
        assert ((r[i] - p[i]) ** 2).sum() <= ((r[i] - cand) ** 2).sum(1).min() + 1e-12


def test_error_matrix_and_selection_effect():
    lam = RatingTask.build(["a", "b", "c"]).membership
    E = error_matrix(lam, 0.3, 1.0)
    np.testing.assert_allclose(E.sum(0), 1)
    assert np.allclose(np.diag(E), 0.7)
    # positive skew: errors from {b} go more to sets containing option 0
    assert E[0, 1] > E[2, 1]
    ranks = np.zeros_like(lam)
    for v in range(lam.shape[1]):
        for r, k in enumerate(np.flatnonzero(lam[:, v])):
            ranks[k, v] = r
    rng = np.random.default_rng(0)
    F0 = sample_forced_choice(rng, (10,), lam, ranks, 0.0, 0.0)
    assert selection_effect(F0, lam) == pytest.approx(1.0)
    assert selection_effect(sample_forced_choice(rng, (10,), lam, ranks, 1.0, 0.0), lam) > 1
    assert selection_effect(sample_forced_choice(rng, (10,), lam, ranks, -1.0, 0.0), lam) < 1
    F = sample_forced_choice(rng, (10,), lam, ranks, 1.0, 0.05)
    np.testing.assert_allclose(F.sum(1), 1)
    assert (F[:, lam == 0] == 0).all()


def test_seeded_and_reproducible():
    a = simulate(SimConfig(n_judges=10, n_items=30), seed=4)
    b = simulate(SimConfig(n_judges=10, n_items=30), seed=4)
    assert a.selection == b.selection


def _mean_regret(cfg: SimConfig) -> dict[str, float]:
    return {k: v["regret"] for k, v in summarise([simulate(cfg, seed=s) for s in SEEDS]).items()}


def test_finding_1_more_ratings_per_item_improve_selection():
    base = SimConfig(n_options=3, n_sets=7, gamma_human=1.0, gamma_judge=1.0)
    one = _mean_regret(SimConfig(**{**base.__dict__, "human_ratings": 1}))
    ten = _mean_regret(SimConfig(**{**base.__dict__, "human_ratings": 10}))
    assert np.mean(list(ten.values())) < np.mean(list(one.values()))
    assert ten["hit_rate (h/h)"] < one["hit_rate (h/h)"]


def test_finding_2_categorical_metrics_fail_under_asymmetric_selection_effects():
    kw = dict(n_options=3, n_sets=7, human_ratings=10)
    sym = _mean_regret(SimConfig(gamma_human=1.5, gamma_judge=1.5, **kw))
    asym = _mean_regret(SimConfig(gamma_human=1.5, gamma_judge=-1.5, **kw))
    # the categorical metric degrades under asymmetric selection effects...
    assert asym["hit_rate (h/h)"] > sym["hit_rate (h/h)"] + 0.03
    # ...and is then worse than distributional / multi-label ones, which hold up
    assert asym["hit_rate (h/h)"] > asym["js_divergence (s/s)"] + 0.05
    assert asym["hit_rate (h/h)"] > asym["mse (srs/srs)"] + 0.05
    assert asym["js_divergence (s/s)"] < 0.06 and asym["mse (srs/srs)"] < 0.06


def test_default_grid_has_20_configurations():
    grid = default_grid()
    assert len(grid) == 20
    r = simulate(grid[0], seed=0)
    assert set(r.selection) and 0 <= r.best["consistency"] <= 1
