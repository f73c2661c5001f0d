"""The rating model of Guerdan et al. §3: θ* -> (error E) -> θ -> (forced choice F) -> O.

Shapes (one item; every function also accepts a leading items axis):

* ``theta_star``: stable response-set distribution, length ``|Q|``;
* ``E``: ``|Q| x |Q|``, ``E[v, v*] = P(observed set v | stable set v*)`` (columns sum to 1);
* ``F``: ``|O| x |Q|``, ``F[k, v] = P(pick option k | response set v)``; zero when
  option k is not in set v (columns sum to 1);
* reverse matrices ``F_rev`` (``|Q| x |O|``, ``P(set v | picked k)``) and
  ``E_rev`` (``|Q| x |Q|``, ``P(stable v* | observed v)``), columns sum to 1.

Theorem 3.3: ``O = F (E θ*)`` and ``θ* = E_rev (F_rev O)``, where the reverse
matrices follow from the forward ones by Bayes' rule (:func:`reverse_matrices`).
Ω = Λ θ is the multi-label vector: the chance that each option is in the set.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from polyjudge.data.errors import InputError
from polyjudge.data.rating_task import RatingTask

__all__ = ["forward", "reverse_matrices", "recover_theta", "beta_template",
           "check_reverse_forced_choice", "identifiable", "Decomposition", "decompose"]


def _mv(m: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Matrix-vector product that broadcasts a leading items axis on either side."""
    product: np.ndarray = np.einsum("...ij,...j->...i", m, x)
    return product


def forward(theta_star: np.ndarray, F: np.ndarray, E: np.ndarray | None = None) -> np.ndarray:
    """Forced-choice distribution ``O = F (E θ*)``."""
    theta = theta_star if E is None else _mv(E, theta_star)
    return _mv(F, theta)


def _bayes(cond: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """Reverse a column-stochastic ``cond[a, b] = P(a | b)`` with prior ``P(b)``:
    returns ``rev[b, a] = P(b | a)``. Where ``P(a) = 0`` the column is uniform over
    b with non-zero forward probability (any choice reproduces the forward model)."""
    joint = cond * prior[..., None, :]  # P(a, b)
    marg = joint.sum(-1, keepdims=True)  # P(a)
    with np.errstate(invalid="ignore", divide="ignore"):
        rev = np.where(marg > 0, joint / marg, 0.0)
    support = (cond > 0).astype(float)
    fallback = support / np.maximum(support.sum(-1, keepdims=True), 1)
    rev = np.where(marg > 0, rev, fallback)
    return np.swapaxes(rev, -1, -2)


def reverse_matrices(theta_star: np.ndarray, F: np.ndarray,
                     E: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(F_rev, E_rev)`` from the forward model by Bayes' rule."""
    q = theta_star.shape[-1]
    if E is None:
        E = np.broadcast_to(np.eye(q), theta_star.shape[:-1] + (q, q))
    theta = _mv(E, theta_star)
    return _bayes(F, theta), _bayes(E, theta_star)


def recover_theta(fc_dist: np.ndarray, F_rev: np.ndarray, E_rev: np.ndarray | None = None) -> np.ndarray:
    """``θ* = E_rev (F_rev O)`` (Theorem 3.3, reverse direction); ``fc_dist`` is O."""
    theta = _mv(F_rev, fc_dist)
    return theta if E_rev is None else _mv(E_rev, theta)


@dataclass(frozen=True)
class Decomposition:
    """Every representation of one (or many) items' human rating distribution."""

    theta_star: np.ndarray
    theta: np.ndarray
    O: np.ndarray  # noqa: E741 - the paper's name for the forced-choice distribution
    omega: np.ndarray
    omega_star: np.ndarray
    F_rev: np.ndarray
    E_rev: np.ndarray


def decompose(theta_star: np.ndarray, F: np.ndarray, E: np.ndarray | None, lam: np.ndarray) -> Decomposition:
    """Run the forward model and compute the reverse matrices."""
    q = theta_star.shape[-1]
    E_ = np.broadcast_to(np.eye(q), theta_star.shape[:-1] + (q, q)) if E is None else E
    theta = _mv(E_, theta_star)
    fc_dist = _mv(F, theta)
    F_rev, E_rev = reverse_matrices(theta_star, F, E_)
    return Decomposition(theta_star, theta, fc_dist, theta @ lam.T, theta_star @ lam.T, F_rev, E_rev)


def check_reverse_forced_choice(F_rev: np.ndarray, task: RatingTask, *, name: str = "F_rev") -> np.ndarray:
    """Validate a user-given reverse forced-choice matrix (``|Q| x |O|``, columns
    are distributions over response sets)."""
    m = np.asarray(F_rev, dtype=float)
    if m.shape != (task.n_sets, task.n_options):
        raise InputError(f"{name} must be |Q| x |O| = {task.n_sets} x {task.n_options}, got {m.shape}")
    if (m < -1e-12).any() or not np.allclose(m.sum(0), 1.0, atol=1e-8):
        raise InputError(f"{name}: every column (one per option) must be a probability distribution")
    return m


def beta_template(task: RatingTask, beta: float, *, source: int, target: int) -> np.ndarray:
    """Reverse forced-choice matrix of the paper's Table 2, generalised.

    Every option maps to its own singleton set, except that a forced choice of
    option ``source`` comes from response set ``target`` (an index in Q) with
    probability β and from ``{source}`` with probability 1-β. The paper's
    toxicity case uses source = "No/Unsure" and target = {Toxic}.
    """
    if not 0.0 <= beta <= 1.0:
        raise InputError(f"beta must be in [0, 1], got {beta}")
    singles = task.singleton_index
    if any(s is None for s in singles):
        raise InputError("the beta template needs every singleton {o_k} to be admissible")
    m = np.zeros((task.n_sets, task.n_options))
    for k, v in enumerate(singles):
        m[v, k] = 1.0
    sv = singles[source]
    m[sv, source] = 1.0 - beta
    m[target, source] += beta
    return m


def identifiable(task: RatingTask) -> bool:
    """Whether θ* can be recovered from O alone (no rater error, O ⊆ Q):
    Theorem 3.4 says exactly when the task is fully specified."""
    return task.fully_specified
