"""The synthetic judge-selection experiment of Guerdan et al. §6, seeded and vectorised.

Per configuration:

1. Human stable response sets ``θ* ~ Dir(1_|Q|)`` per item.
2. Rater error ``E``: diagonal ``1-ε``; the ``ε`` of each column is spread over
   the other sets with weights ``exp(η·[set contains option k])``, so η > 0
   moves errors towards sets containing the decision option k, η < 0 away.
3. Forced choice ``F[k, v] ∝ exp(-γ·rank_v(k))`` within each set (rank 0 = the
   lowest-indexed option of the set), plus N(0, f_noise) jitter per item;
   γ > 0 favours option 0 (Γ > 1), γ < 0 disfavours it (Γ < 1). We report
   ``Γ = mean over sets containing option 0 of |S|·P(pick 0 | S)`` (1 = chance).
4. Human forced choices ``O = F(Eθ*)``; a finite budget of ratings per item is
   drawn from O and mapped back with the true reverse matrices,
   ``θ̂* = E'(F'Ô)``, ``Ω̂ = Λθ̂*``.
5. Judges: ``σ_z ~ U(σ_min, σ_max)``, ``θ_z = Π_Δ(θ* + N(0, σ_z²))`` (Euclidean
   projection onto the simplex), their own ``F_z`` with γ_judge, no rater error.
   Each judge is sampled ``judge_samples`` times per item under both
   elicitations (forced choice → Ô_z, response set → θ̂_z).
6. Every definition of performance picks a judge from the finite-sample
   estimates; the pick is scored on the *population* downstream metrics
   against error-free humans: consistency and bias of ``1[Ω_k >= τ]``
   (Ω_z vs Ω*), averaged over the cutoffs τ.
7. Rank correlation (Figures 5 and 14): Kendall τ-b and Spearman ρ between the
   judge ordering by each definition and by downstream consistency (and |bias|).

:mod:`polyjudge.validation.experiments` adds regret against the rating budget
and prevalence by elicitation on the same model.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from polyjudge.data.errors import InputError
from polyjudge.data.rating_task import all_subsets
from polyjudge.data.shapes import normalise_fields
from polyjudge.validation import metrics as M
from polyjudge.validation.rank import kendall_tau_b, spearman_rho
from polyjudge.validation.rating_model import Decomposition, decompose, recover_theta

__all__ = ["SimConfig", "SimResult", "World", "JudgeTable", "draw_world", "judge_tables", "pick",
           "selection_outcome", "rank_correlations", "RANK_KEYS", "simulate", "project_simplex", "sample_forced_choice",
           "error_matrix", "selection_effect", "default_grid", "summarise", "SIM_DEFINITIONS"]

SIM_DEFINITIONS: tuple[M.Definition, ...] = (
    M.Definition("hit_rate", "hard", "hard"),
    M.Definition("cohen_kappa", "hard", "hard"),
    M.Definition("krippendorff_alpha", "hard", "hard"),
    M.Definition("kl_hj", "soft", "soft"),
    M.Definition("kl_jh", "soft", "soft"),
    M.Definition("js_divergence", "soft", "soft"),
    M.Definition("coverage", "hard", "hrs"),
    M.Definition("bce", "srs", "hrs"),
    M.Definition("mse", "srs", "srs"),
)


@dataclass(frozen=True)
class SimConfig:
    n_options: int = 3
    n_sets: int | None = None  # first n_sets of all subsets (size, then order); None = all
    n_items: int = 100
    n_judges: int = 50
    sigma_min: float = 0.02
    sigma_max: float = 0.4
    gamma_human: float = 0.0
    gamma_judge: float = 0.0
    f_noise: float = 0.05
    error_rate: float = 0.0
    skew: float = 0.0
    human_ratings: int = 3
    judge_samples: int | None = 10  # None = population distributions
    taus: tuple[float, ...] = (0.3, 0.5, 0.7)
    k: int = 0

    def validate(self) -> None:
        q = self.n_options
        n_sets = self.n_sets or 2 ** q - 1
        if q < 2 or not q <= n_sets <= 2 ** q - 1:
            raise InputError(f"need 2 <= |O| <= |Q| <= 2^|O|-1, got |O|={q}, |Q|={n_sets}")
        if not 0 <= self.sigma_min <= self.sigma_max:
            raise InputError("need 0 <= sigma_min <= sigma_max")
        if not 0 <= self.error_rate < 1:
            raise InputError("error_rate must be in [0, 1)")
        if self.human_ratings < 1 or self.n_items < 2 or self.n_judges < 2:
            raise InputError("need >= 1 human rating per item, >= 2 items and >= 2 judges")

    def __post_init__(self) -> None:
        normalise_fields(self)  # Python shapes; TypeError names a field


@dataclass
class SimResult:
    config: dict[str, Any]
    seed: int
    gamma_human_effect: float  # Γ^h
    gamma_judge_effect: float  # mean Γ^z
    # definition label -> {"consistency", "abs_bias", "regret", "bias_excess"} (means over τ)
    selection: dict[str, dict[str, float]]
    best: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    # definition label -> Kendall τ-b / Spearman ρ between the judge ranking by the
    # metric and by downstream consistency (``*_consistency``) or |bias| (``*_bias``), means over τ
    rank_correlation: dict[str, dict[str, float]] = field(default_factory=dict)


def project_simplex(x: np.ndarray) -> np.ndarray:
    """Euclidean projection of each row (last axis) onto the probability simplex."""
    u = -np.sort(-x, axis=-1)
    css = np.cumsum(u, axis=-1) - 1.0
    idx = np.arange(1, x.shape[-1] + 1)
    cond = u - css / idx > 0
    rho = x.shape[-1] - 1 - np.argmax(cond[..., ::-1], axis=-1)
    theta = np.take_along_axis(css, rho[..., None], axis=-1) / (rho[..., None] + 1)
    projected: np.ndarray = np.maximum(x - theta, 0.0)
    return projected


def _ranks(sets: list[frozenset[int]], q: int) -> np.ndarray:
    r = np.zeros((q, len(sets)))
    for v, s in enumerate(sets):
        for rank, k in enumerate(sorted(s)):
            r[k, v] = rank
    return r


def sample_forced_choice(rng: np.random.Generator, shape: tuple[int, ...], lam: np.ndarray,
                         ranks: np.ndarray, gamma: float, noise: float) -> np.ndarray:
    """F matrices of shape ``shape + (|O|, |Q|)`` with exponential-decay selection."""
    base = lam * np.exp(-gamma * ranks)
    base = base / base.sum(0, keepdims=True)
    f = base + (rng.normal(0.0, noise, shape + lam.shape) if noise > 0 else 0.0)
    f = np.where(lam > 0, np.maximum(f, 1e-6), 0.0)
    normalised: np.ndarray = f / f.sum(-2, keepdims=True)
    return normalised


def selection_effect(F: np.ndarray, lam: np.ndarray) -> float:
    """Γ: mean over sets containing option 0 of |S|·P(pick option 0 | S)."""
    plus = lam[0] > 0
    sizes = lam.sum(0)
    return float(np.mean(F[..., 0, plus] * sizes[plus]))


def error_matrix(lam: np.ndarray, rate: float, skew: float, k: int = 0) -> np.ndarray:
    """Column-stochastic E with 1-ε on the diagonal and skewed off-diagonal mass."""
    n = lam.shape[1]
    w = np.exp(skew * (lam[k] > 0))
    off = np.tile(w[:, None], (1, n))
    np.fill_diagonal(off, 0.0)
    off = off / np.maximum(off.sum(0, keepdims=True), 1e-300)
    errors: np.ndarray = (1 - rate) * np.eye(n) + rate * off
    return errors


def _multinomial(rng: np.random.Generator, n: int, p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 0, None)
    p = p / p.sum(-1, keepdims=True)
    return rng.multinomial(n, p) / n


@dataclass(frozen=True)
class World:
    """One seed's draw: population rating distributions and their finite-sample estimates.

    ``omega_star`` (error-free humans) and ``omega_j`` (judges' population
    multi-label vectors) decide the downstream truth; the ``*_hat`` arrays are
    what a validation study would see.
    """

    lam: np.ndarray  # |O| x |Q| membership
    F_h: np.ndarray
    F_j: np.ndarray
    dec: Decomposition  # humans: θ*, θ, O, Ω, Ω*, reverse matrices
    O_hat: np.ndarray  # human forced-choice estimate (items x |O|)
    omega_hat: np.ndarray  # human multi-label estimate via the reverse matrices
    theta_j: np.ndarray  # judges' response-set distributions (J x items x |Q|)
    O_j: np.ndarray
    omega_j: np.ndarray
    O_j_hat: np.ndarray
    omega_j_hat: np.ndarray


@dataclass(frozen=True)
class JudgeTable:
    """Every judge's downstream outcome at one cutoff τ and every definition's metric values."""

    tau: float
    consistency: np.ndarray  # (J,) population decision consistency with error-free humans
    abs_bias: np.ndarray  # (J,) |prevalence bias|
    values: dict[str, np.ndarray]  # definition label -> (J,) metric value on the finite-sample estimates


def draw_world(config: SimConfig, seed: int = 0, *, human_rng: np.random.Generator | None = None) -> World:
    """Draw humans and judges for one seed. ``human_rng`` draws the human ratings
    from a stream of its own, so the population (and the judges) stay the same
    when only the rating budget changes; without it the draw matches
    :func:`simulate`'s historical random stream."""
    config.validate()
    rng = np.random.default_rng(seed)
    q = config.n_options
    sets = all_subsets(q)[: (config.n_sets or 2 ** q - 1)]
    Q = len(sets)
    lam = np.zeros((q, Q))
    for v, s in enumerate(sets):
        lam[list(s), v] = 1.0
    ranks = _ranks(sets, q)
    n, J = config.n_items, config.n_judges

    # humans
    theta_star = rng.dirichlet(np.ones(Q), size=n)
    E = np.broadcast_to(error_matrix(lam, config.error_rate, config.skew, config.k), (n, Q, Q))
    F_h = sample_forced_choice(rng, (n,), lam, ranks, config.gamma_human, config.f_noise)
    dec = decompose(theta_star, F_h, E, lam)
    O_hat = _multinomial(human_rng or rng, config.human_ratings, dec.O)
    omega_hat = recover_theta(O_hat, dec.F_rev, dec.E_rev) @ lam.T

    # judges
    sigma = rng.uniform(config.sigma_min, config.sigma_max, size=J)
    theta_j = project_simplex(theta_star[None] + rng.normal(size=(J, n, Q)) * sigma[:, None, None])
    F_j = sample_forced_choice(rng, (J, n), lam, ranks, config.gamma_judge, config.f_noise)
    O_j = np.einsum("znkv,znv->znk", F_j, theta_j)
    omega_j = theta_j @ lam.T
    if config.judge_samples is None:
        O_j_hat, omega_j_hat = O_j, omega_j
    else:
        O_j_hat = _multinomial(rng, config.judge_samples, O_j)
        omega_j_hat = _multinomial(rng, config.judge_samples, theta_j) @ lam.T
    return World(lam, F_h, F_j, dec, O_hat, omega_hat, theta_j, O_j, omega_j, O_j_hat, omega_j_hat)


def judge_tables(world: World, config: SimConfig,
                 definitions: tuple[M.Definition, ...] = SIM_DEFINITIONS) -> list[JudgeTable]:
    """Per cutoff τ: every judge's population downstream outcome and metric values."""
    k = config.k
    out = []
    for tau in config.taus:
        dh = M.decisions(world.dec.omega_star, k, tau)
        dj = M.decisions(world.omega_j, k, tau)  # (J, n)
        cons = (dj == dh[None]).mean(1)
        bias = np.abs(dj.mean(1) - dh.mean())
        values = {d.label: _metric_values(d, world.O_j_hat, world.omega_j_hat, world.O_hat, world.omega_hat, tau)
                  for d in definitions}
        out.append(JudgeTable(float(tau), cons, bias, values))
    return out


def pick(values: np.ndarray, higher_is_better: bool) -> int:
    """The judge a definition selects (first of ties; NaN values never win)."""
    return int(np.nanargmax(values) if higher_is_better else np.nanargmin(values))


def selection_outcome(values: np.ndarray, higher_is_better: bool, consistency: np.ndarray,
                      abs_bias: np.ndarray) -> dict[str, float]:
    """What selecting by ``values`` costs: regret = best C - selected C, bias
    excess = selected |B| - best |B| (both >= 0)."""
    z = pick(values, higher_is_better)
    return {"consistency": float(consistency[z]), "abs_bias": float(abs_bias[z]),
            "regret": float(consistency.max() - consistency[z]),
            "bias_excess": float(abs_bias[z] - abs_bias.min())}


def simulate(config: SimConfig, seed: int = 0,
             definitions: tuple[M.Definition, ...] = SIM_DEFINITIONS) -> SimResult:
    """Run one configuration of the selection experiment."""
    t0 = time.perf_counter()
    world = draw_world(config, seed)
    tables = judge_tables(world, config, definitions)
    sel: dict[str, dict[str, list[float]]] = {d.label: {} for d in definitions}
    for t in tables:
        for d in definitions:
            for m, v in selection_outcome(t.values[d.label], d.higher_is_better, t.consistency,
                                          t.abs_bias).items():
                sel[d.label].setdefault(m, []).append(v)
    out = {lab: {m: float(np.mean(v)) for m, v in d.items()} for lab, d in sel.items()}
    best = {"consistency": float(np.mean([t.consistency.max() for t in tables])),
            "abs_bias": float(np.mean([t.abs_bias.min() for t in tables]))}
    return SimResult(asdict(config), seed, selection_effect(world.F_h, world.lam),
                     selection_effect(world.F_j, world.lam), out, best, time.perf_counter() - t0,
                     rank_correlations(tables, definitions))


def _metric_values(d: M.Definition, O_j: np.ndarray, om_j: np.ndarray, O_h: np.ndarray,
                   om_h: np.ndarray, tau: float) -> np.ndarray:
    """Metric value for every judge; the common per-item metrics are vectorised
    over judges, the rest loop over judges."""
    J = O_j.shape[0]
    jv = M.aggregate(d.judge_agg, O_j.reshape(-1, O_j.shape[-1]), om_j.reshape(-1, om_j.shape[-1]), tau)
    jv = jv.reshape(J, -1, O_j.shape[-1])
    hv = M.aggregate(d.human_agg, O_h, om_h, tau)
    per_judge: np.ndarray
    if d.metric == "hit_rate":
        per_judge = (jv * hv[None]).sum(-1).mean(1)
        return per_judge
    if d.metric == "mse":
        per_judge = ((jv - hv[None]) ** 2).sum(-1).mean(1)
        return per_judge
    if d.metric in ("kl_hj", "kl_jh", "js_divergence"):
        flat = jv.reshape(-1, jv.shape[-1])
        hh = np.tile(hv, (J, 1))
        if d.metric == "kl_hj":
            v = M.kl(hh, flat)
        elif d.metric == "kl_jh":
            v = M.kl(flat, hh)
        else:
            v = M.js_divergence(flat, hh)
        per_judge = v.reshape(J, -1).mean(1)
        return per_judge
    fn = M.METRICS[d.metric].fn
    return np.array([fn(jv[z], hv) for z in range(J)], dtype=float)


def default_grid() -> list[SimConfig]:
    """20 configurations: 5 task shapes x {symmetric, asymmetric selection} x {1, 5} ratings."""
    shapes = [(2, 2), (2, 3), (3, 3), (3, 7), (4, 10)]
    out = []
    for q, nq in shapes:
        for gh, gj in ((1.0, 1.0), (1.0, -1.0)):
            for budget in (1, 5):
                out.append(SimConfig(n_options=q, n_sets=nq, gamma_human=gh, gamma_judge=gj,
                                     human_ratings=budget))
    return out


def summarise(results: list[SimResult]) -> dict[str, dict[str, float]]:
    """Mean selection outcome per definition over several results."""
    labels = list(results[0].selection)
    return {lab: {m: float(np.mean([r.selection[lab][m] for r in results]))
                  for m in results[0].selection[lab]} for lab in labels}


def with_overrides(config: SimConfig, **kw: Any) -> SimConfig:
    return replace(config, **{k: v for k, v in kw.items() if v is not None})


RANK_KEYS = ("kendall_consistency", "spearman_consistency", "kendall_bias", "spearman_bias")


def rank_correlations(tables: list[JudgeTable],
                      definitions: tuple[M.Definition, ...] = SIM_DEFINITIONS) -> dict[str, dict[str, float]]:
    """Per definition: rank agreement between ordering the judges by the metric
    (best first) and by each downstream metric (consistency: higher is better;
    |bias|: lower is better), Kendall τ-b and Spearman ρ, averaged over τ (NaN
    cutoffs, where one side is constant, are left out; all NaN gives NaN)."""
    out: dict[str, dict[str, float]] = {}
    for d in definitions:
        acc: dict[str, list[float]] = {key: [] for key in RANK_KEYS}
        for t in tables:
            v = t.values[d.label]
            score = v if d.higher_is_better else -v
            for name, target in (("consistency", t.consistency), ("bias", -t.abs_bias)):
                acc[f"kendall_{name}"].append(kendall_tau_b(score, target))
                acc[f"spearman_{name}"].append(spearman_rho(score, target))
        out[d.label] = {key: _nanmean(vals) for key, vals in acc.items()}
    return out


def _nanmean(vals: list[float]) -> float:
    a = np.asarray(vals, dtype=float)
    return float(a[np.isfinite(a)].mean()) if np.isfinite(a).any() else float("nan")
