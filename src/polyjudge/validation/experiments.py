"""Guerdan et al.'s other synthetic analyses, next to the selection regrets of :mod:`.simulate`.

* :func:`regret_by_budget` (Finding 1, Figure 4): the regret of the judge each
  definition of performance selects, over a grid of validation budgets (items x
  human ratings per item). Within one seed and corpus size the population and
  the judges stay fixed; only the human ratings are redrawn (from a stream of
  their own), so the curves show the effect of the budget alone.
* :func:`prevalence_bias` (Finding 4, Figure 6 right): the prevalence of each
  option, ``E[1[y_k >= τ]]``, under forced-choice elicitation (``y = O``) and
  response-set elicitation (``y = Ω``), against the true prevalence defined on
  the error-free stable response sets (``y = Ω* = Λθ*``), across ambiguity
  levels: the share ``a`` of each item's stable response-set mass on sets of two
  or more options (``θ*`` = (1-a)·Dir over singletons ⊕ a·Dir over the larger
  sets). Without rater error ``O_k <= Ω_k`` item by item (a forced choice of k
  needs k in the set), so forced choice can only under-count.

Every number is a mean over seeds ``0..seeds-1`` with its standard deviation.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from polyjudge.data.errors import InputError
from polyjudge.data.rating_task import all_subsets
from polyjudge.validation import metrics as M
from polyjudge.validation.simulate import (
    SIM_DEFINITIONS,
    SimConfig,
    _multinomial,
    _ranks,
    draw_world,
    error_matrix,
    judge_tables,
    sample_forced_choice,
    selection_outcome,
)

__all__ = ["DEFAULT_AMBIGUITY", "DEFAULT_BUDGET_ITEMS", "DEFAULT_BUDGET_RATINGS", "BudgetCell", "BudgetResult",
           "PrevalenceResult", "PrevalenceRow", "PrevalenceSetup", "elicited", "regret_by_budget", "prevalence_bias",
           "prevalences", "stable_sets"]

DEFAULT_BUDGET_ITEMS = (50, 100, 200)
DEFAULT_BUDGET_RATINGS = (1, 3, 5, 10)
DEFAULT_AMBIGUITY = (0.0, 0.2, 0.4, 0.6, 0.8)


def _stats(values: list[float]) -> dict[str, float]:
    a = np.asarray(values, dtype=float)
    sd = float(a.std(ddof=1)) if a.size > 1 else 0.0
    return {"mean": float(a.mean()), "sd": sd, "min": float(a.min()), "max": float(a.max())}


# --------------------------------------------------------------------------- budget

@dataclass(frozen=True)
class BudgetCell:
    """One definition at one budget: regret (best C - selected C, mean over τ) over seeds."""

    n_items: int
    ratings: int
    definition: str
    mean: float
    sd: float
    min: float
    max: float
    best_consistency: float  # mean over seeds of the best judge's consistency (the oracle)

    @property
    def budget(self) -> int:
        return self.n_items * self.ratings

    @property
    def band(self) -> tuple[float, float]:
        """Mean ± one standard deviation over seeds, clipped to [0, 1]."""
        return max(0.0, self.mean - self.sd), min(1.0, self.mean + self.sd)


@dataclass
class BudgetResult:
    base: SimConfig
    items: tuple[int, ...]
    ratings: tuple[int, ...]
    seeds: int
    cells: list[BudgetCell]

    COLUMNS = ("n_items", "ratings_per_item", "budget", "definition", "regret_mean", "regret_sd", "regret_min",
               "regret_max", "best_consistency", "seeds")

    def rows(self) -> list[dict[str, Any]]:
        return [{"n_items": c.n_items, "ratings_per_item": c.ratings, "budget": c.budget,
                 "definition": c.definition, "regret_mean": c.mean, "regret_sd": c.sd, "regret_min": c.min,
                 "regret_max": c.max, "best_consistency": c.best_consistency, "seeds": self.seeds}
                for c in self.cells]

    def to_dict(self) -> dict[str, Any]:
        return {"base": _config_dict(self.base), "items": list(self.items), "ratings": list(self.ratings),
                "seeds": self.seeds, "seed_values": list(range(self.seeds)), "band": "mean ± 1 sd over seeds",
                "rows": self.rows()}

    def to_text(self) -> str:
        defs = list(dict.fromkeys(c.definition for c in self.cells))
        cell = {(c.n_items, c.ratings, c.definition): c for c in self.cells}
        lines = [f"Regret vs rating budget (base: {_describe(self.base)}; seeds 0..{self.seeds - 1}; "
                 "mean ± sd of best C − selected C, mean over τ)"]
        for n in self.items:
            lines.append(f"  items={n}")
            lines.append(f"    {'definition':28s} " + " ".join(f"{'r=' + str(r):>13s}" for r in self.ratings))
            for d in defs:
                lines.append(f"    {d:28s} " + " ".join(
                    f"{cell[(n, r, d)].mean:6.3f}±{cell[(n, r, d)].sd:5.3f} " for r in self.ratings))
        return "\n".join(lines) + "\n"


def regret_by_budget(base: SimConfig, *, items: tuple[int, ...] = DEFAULT_BUDGET_ITEMS,
                     ratings: tuple[int, ...] = DEFAULT_BUDGET_RATINGS, seeds: int = 5,
                     definitions: tuple[M.Definition, ...] = SIM_DEFINITIONS) -> BudgetResult:
    """Selection regret per definition over the grid ``items x ratings`` (seeds ``0..seeds-1``)."""
    if seeds < 1:
        raise InputError(f"seeds must be at least 1, got {seeds}", field="seeds")
    if not items or not ratings or min(items) < 2 or min(ratings) < 1:
        raise InputError("the budget grid needs item counts >= 2 and ratings per item >= 1")
    cells = []
    for n in items:
        per: dict[tuple[int, str], list[float]] = {}
        oracle: dict[int, list[float]] = {}
        for seed in range(seeds):
            for r in ratings:
                cfg = replace(base, n_items=n, human_ratings=r)
                world = draw_world(cfg, seed, human_rng=np.random.default_rng([seed, n, r]))
                tables = judge_tables(world, cfg, definitions)
                oracle.setdefault(r, []).append(float(np.mean([t.consistency.max() for t in tables])))
                for d in definitions:
                    regret = np.mean([selection_outcome(t.values[d.label], d.higher_is_better, t.consistency,
                                                        t.abs_bias)["regret"] for t in tables])
                    per.setdefault((r, d.label), []).append(float(regret))
        for r in ratings:
            for d in definitions:
                s = _stats(per[(r, d.label)])
                cells.append(BudgetCell(n, r, d.label, s["mean"], s["sd"], s["min"], s["max"],
                                        float(np.mean(oracle[r]))))
    return BudgetResult(base, tuple(items), tuple(ratings), seeds, cells)


# --------------------------------------------------------------------------- prevalence

def prevalences(y: np.ndarray, tau: float) -> np.ndarray:
    """Share of items with ``y_k >= τ``, per option k (``y``: items x options)."""
    return np.asarray(np.mean(np.asarray(y) >= tau, axis=0), dtype=float)


def stable_sets(rng: np.random.Generator, n_items: int, lam: np.ndarray, ambiguity: float) -> np.ndarray:
    """θ* per item with exactly ``ambiguity`` of its mass on sets of two or more options."""
    sizes = lam.sum(0)
    single, multi = np.flatnonzero(sizes == 1), np.flatnonzero(sizes > 1)
    theta = np.zeros((n_items, lam.shape[1]))
    theta[:, single] = (1 - ambiguity) * rng.dirichlet(np.ones(single.size), size=n_items)
    if ambiguity > 0:
        theta[:, multi] = ambiguity * rng.dirichlet(np.ones(multi.size), size=n_items)
    return theta


def elicited(theta_star: np.ndarray, F: np.ndarray, E: np.ndarray, lam: np.ndarray) -> dict[str, np.ndarray]:
    """Population vectors per item: ``true`` = Ω* = Λθ*, ``forced_choice`` = O = F(Eθ*),
    ``response_set`` = Ω = Λ(Eθ*), and ``theta`` = Eθ* (the observed set distribution).
    ``theta_star``: items x |Q|; ``F``: items x |O| x |Q|; ``E``: |Q| x |Q| column-stochastic."""
    theta = theta_star @ E.T
    return {"true": theta_star @ lam.T, "forced_choice": np.einsum("nkv,nv->nk", F, theta),
            "response_set": theta @ lam.T, "theta": theta}


@dataclass(frozen=True)
class PrevalenceRow:
    """Prevalence of one option at one ambiguity level and cutoff (means and sds over seeds).

    ``true``: from the stable response sets (Ω*); ``forced_choice``: from the
    forced-choice distribution (O); ``response_set``: from the observed response
    sets (Ω, with rater error when ε > 0). ``*_sampled``: the same two
    elicitations estimated from ``ratings`` ratings per item.
    """

    ambiguity: float
    option: int
    tau: float
    values: dict[str, dict[str, float]]  # name -> {"mean", "sd", "min", "max"}

    @property
    def fc_bias(self) -> float:
        return self.values["forced_choice"]["mean"] - self.values["true"]["mean"]

    @property
    def rs_bias(self) -> float:
        return self.values["response_set"]["mean"] - self.values["true"]["mean"]


PREVALENCE_KINDS = ("true", "forced_choice", "response_set", "forced_choice_sampled", "response_set_sampled")


@dataclass
class PrevalenceResult:
    n_options: int
    n_sets: int
    n_items: int
    ratings: int
    gamma: float
    error_rate: float
    skew: float
    seeds: int
    gamma_effect: float  # mean Γ of the forced-choice matrices drawn
    rows: list[PrevalenceRow]

    COLUMNS = ("ambiguity", "option", "tau", *(f"{k}_{s}" for k in PREVALENCE_KINDS for s in ("mean", "sd")),
               "fc_bias", "rs_bias", "seeds")

    def table(self) -> list[dict[str, Any]]:
        out = []
        for r in self.rows:
            row: dict[str, Any] = {"ambiguity": r.ambiguity, "option": r.option, "tau": r.tau}
            for k in PREVALENCE_KINDS:
                row[f"{k}_mean"] = r.values[k]["mean"]
                row[f"{k}_sd"] = r.values[k]["sd"]
            row.update(fc_bias=r.fc_bias, rs_bias=r.rs_bias, seeds=self.seeds)
            out.append(row)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"n_options": self.n_options, "n_sets": self.n_sets, "n_items": self.n_items,
                "ratings": self.ratings, "gamma": self.gamma, "gamma_effect": self.gamma_effect,
                "error_rate": self.error_rate, "skew": self.skew, "seeds": self.seeds,
                "seed_values": list(range(self.seeds)), "rows": self.table()}

    def to_text(self) -> str:
        lines = [f"Prevalence by elicitation (|O|={self.n_options} |Q|={self.n_sets} items={self.n_items} "
                 f"ratings/item={self.ratings} γ={self.gamma} (Γ={self.gamma_effect:.2f}) ε={self.error_rate} "
                 f"η={self.skew}; seeds 0..{self.seeds - 1}; means over seeds)",
                 f"  {'ambiguity':>9s} {'option':>6s} {'τ':>4s} {'true':>6s} {'FC':>6s} {'RS':>6s} "
                 f"{'FC-true':>8s} {'RS-true':>8s} {'FC^':>6s} {'RS^':>6s}"]
        for r in self.rows:
            v = r.values
            lines.append(f"  {r.ambiguity:9.2f} {r.option:6d} {r.tau:4.2f} {v['true']['mean']:6.3f} "
                         f"{v['forced_choice']['mean']:6.3f} {v['response_set']['mean']:6.3f} {r.fc_bias:+8.3f} "
                         f"{r.rs_bias:+8.3f} {v['forced_choice_sampled']['mean']:6.3f} "
                         f"{v['response_set_sampled']['mean']:6.3f}")
        return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class PrevalenceSetup:
    """The simulated task and raters of :func:`prevalence_bias` (the ambiguity levels vary over it)."""

    n_options: int = 3
    n_sets: int | None = None
    n_items: int = 100
    gamma: float = 1.0
    f_noise: float = 0.05
    error_rate: float = 0.0
    skew: float = 0.0
    ratings: int = 3


def prevalence_bias(setup: PrevalenceSetup = PrevalenceSetup(), *,
                    ambiguity: tuple[float, ...] = DEFAULT_AMBIGUITY, taus: tuple[float, ...] = (0.5,),
                    seeds: int = 5) -> PrevalenceResult:
    """Prevalence of every option under forced-choice vs response-set elicitation vs the truth."""
    n_options, n_sets, n_items, gamma = setup.n_options, setup.n_sets, setup.n_items, setup.gamma
    f_noise, error_rate, skew, ratings = setup.f_noise, setup.error_rate, setup.skew, setup.ratings
    n_sets_ = n_sets or 2 ** n_options - 1
    SimConfig(n_options=n_options, n_sets=n_sets_, n_items=max(n_items, 2), error_rate=error_rate,
              human_ratings=ratings).validate()
    if n_items < 1 or seeds < 1:
        raise InputError("need at least one item and one seed")
    if any(not 0.0 <= a <= 1.0 for a in ambiguity) or not ambiguity:
        raise InputError(f"ambiguity levels must be in [0, 1], got {list(ambiguity)}")
    if n_sets_ == n_options and any(a > 0 for a in ambiguity):
        raise InputError("a fully specified task (|Q| = |O|) has no multi-option sets; use ambiguity 0 "
                         "or more response sets")
    sets = all_subsets(n_options)[:n_sets_]
    lam = np.zeros((n_options, len(sets)))
    for v, s in enumerate(sets):
        lam[list(s), v] = 1.0
    ranks = _ranks(sets, n_options)
    E = error_matrix(lam, error_rate, skew, 0)
    acc: dict[tuple[float, float, str], list[np.ndarray]] = {}
    gammas = []
    for a in ambiguity:
        for seed in range(seeds):
            rng = np.random.default_rng([seed, int(round(a * 1e6))])
            theta_star = stable_sets(rng, n_items, lam, a)
            F = sample_forced_choice(rng, (n_items,), lam, ranks, gamma, f_noise)
            gammas.append(float(np.mean(F[..., 0, lam[0] > 0] * lam.sum(0)[lam[0] > 0])))
            ys = elicited(theta_star, F, E, lam)
            ys["forced_choice_sampled"] = _multinomial(rng, ratings, ys["forced_choice"])
            ys["response_set_sampled"] = _multinomial(rng, ratings, ys["theta"]) @ lam.T
            del ys["theta"]
            for tau in taus:
                for name, y in ys.items():
                    acc.setdefault((a, tau, name), []).append(prevalences(y, tau))
    rows = []
    for a in ambiguity:
        for tau in taus:
            for k in range(n_options):
                vals = {name: _stats([float(p[k]) for p in acc[(a, tau, name)]]) for name in PREVALENCE_KINDS}
                rows.append(PrevalenceRow(float(a), k, float(tau), vals))
    return PrevalenceResult(n_options, n_sets_, n_items, ratings, gamma, error_rate, skew, seeds,
                            float(np.mean(gammas)), rows)


# --------------------------------------------------------------------------- helpers

def _config_dict(cfg: SimConfig) -> dict[str, Any]:
    d = asdict(cfg)
    d["taus"] = list(cfg.taus)
    return d


def _describe(cfg: SimConfig) -> str:
    return (f"|O|={cfg.n_options} |Q|={cfg.n_sets or 2 ** cfg.n_options - 1} judges={cfg.n_judges} "
            f"γh={cfg.gamma_human} γj={cfg.gamma_judge} ε={cfg.error_rate} η={cfg.skew}")
