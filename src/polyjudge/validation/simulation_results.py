"""Typed results of the synthetic experiments (``polyjudge simulate``), as the report renders them.

:meth:`polyjudge.api.validation.SimulationResult.results` gives them from a
run in this process, :func:`read_simulation` from the JSON ``polyjudge simulate
--format json`` wrote (the writer is unchanged); both go through one
constructor, so the report is the same either way.

* :class:`SimRun`: one configuration's selection outcome per definition of
  performance (mean C, regret, |B| over seeds) and rank correlations;
* :class:`BudgetRow`: regret against the rating budget (corpus size x ratings
  per item, per definition);
* :class:`PrevalenceRow`: an option's prevalence under forced-choice and
  response-set elicitation against the truth, per ambiguity level and cutoff.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from polyjudge.validation.results import JsonDoc, Values, as_float

# What a simulation file may look like, for the message when it does not.
EXPECTED = ('the JSON of "polyjudge simulate --format json" ({"runs": [{"label", "selection", '
            '"rank_correlation"}, ...], "budget": {"rows": [...]}, "prevalence": {"rows": [...]}})')

BUDGET_NUMBERS = ("n_items", "ratings_per_item", "regret_mean", "regret_sd")
PREVALENCE_NUMBERS = ("ambiguity", "option", "tau", "true_mean", "forced_choice_mean", "response_set_mean")
PREVALENCE_OPTIONAL = ("fc_bias", "rs_bias", "forced_choice_sampled_mean", "response_set_sampled_mean")


@dataclass(frozen=True, slots=True)
class SimRun:
    """One configuration: per definition its selection outcome (``selection``: ``consistency``,
    ``regret``, ``abs_bias``, ...) and rank correlations (``rank_correlation``: ``kendall_consistency``,
    ``spearman_consistency``, ...), means over seeds; NaN where a value is unknown."""

    label: str
    gamma_human: float
    gamma_judge: float
    selection: tuple[tuple[str, Values], ...] = ()
    rank_correlation: tuple[tuple[str, Values], ...] = ()

    def outcome(self, definition: str) -> dict[str, float]:
        return dict(dict(self.selection).get(definition, ()))

    def ranks(self, definition: str) -> dict[str, float]:
        return dict(dict(self.rank_correlation).get(definition, ()))


@dataclass(frozen=True, slots=True)
class BudgetRow:
    """Regret (mean and sd over seeds) of the judge ``definition`` selects with ``n_items`` items
    rated ``ratings_per_item`` times each."""

    n_items: float
    ratings_per_item: float
    definition: str
    regret_mean: float
    regret_sd: float


@dataclass(frozen=True, slots=True)
class PrevalenceRow:
    """Prevalence of option ``option`` at cutoff ``tau`` and ambiguity level ``ambiguity``: the
    truth, forced choice and response sets (population and sampled), and the biases."""

    ambiguity: float
    option: float
    tau: float
    true_mean: float
    forced_choice_mean: float
    response_set_mean: float
    fc_bias: float = math.nan
    rs_bias: float = math.nan
    forced_choice_sampled_mean: float = math.nan
    response_set_sampled_mean: float = math.nan


@dataclass(frozen=True, slots=True)
class SimulationResults:
    """The report's view of a simulation: the runs, the budget rows (with the base configuration's
    ``name``/``value`` pairs) and the prevalence rows (with the setting's). ``*_seeds``: the number of
    seeds each part records (None: not recorded)."""

    seeds: int | None
    runs: tuple[SimRun, ...] = ()
    budget: tuple[BudgetRow, ...] = ()
    budget_base: tuple[tuple[str, str], ...] = ()
    budget_seeds: int | None = None
    prevalence: tuple[PrevalenceRow, ...] = ()
    prevalence_setting: tuple[tuple[str, str], ...] = ()
    prevalence_seeds: int | None = None


def _seeds(n: Any) -> int | None:
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None


def _nested(doc: JsonDoc, v: Any, where: str) -> tuple[tuple[str, Values], ...]:
    if v is None:
        return ()
    return tuple((str(k), doc.values(x, f"{where}.{k}")) for k, x in doc.obj(v, where).items())


def _runs(doc: JsonDoc, v: Any) -> tuple[SimRun, ...]:
    out = []
    for i, r in enumerate(doc.objects(v, "runs", optional=True)):
        g = [as_float(doc.number(r.get(k), f"runs[{i}].{k}")) for k in ("gamma_human", "gamma_judge")]
        out.append(SimRun(str(r.get("label") or f"setting {i + 1}"), g[0], g[1],
                          _nested(doc, r.get("selection"), f"runs[{i}].selection"),
                          _nested(doc, r.get("rank_correlation"), f"runs[{i}].rank_correlation")))
    return tuple(out)


def _rows(doc: JsonDoc, part: dict[str, Any], key: str, numbers: tuple[str, ...],
          optional: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    rows = []
    for i, r in enumerate(doc.objects(part.get("rows"), f"{key}.rows")):
        got = {}
        for name in numbers + optional:
            x = doc.number(r.get(name), f"{key}.rows[{i}].{name}")
            if x is None and name in numbers:
                raise doc.fail(f"{key}.rows[{i}].{name}", "missing")
            got[name] = as_float(x)
        rows.append({**got, "definition": str(r.get("definition"))} if key == "budget" else got)
    return rows


def simulation_results(obj: Any, path: str) -> SimulationResults:
    """The typed rows of a simulation document (``polyjudge simulate --format json``, parsed or as
    :meth:`~polyjudge.api.validation.SimulationResult.to_dict` returns it); an InputError naming
    ``path`` and the place in the JSON when it is not one, or holds nothing to show."""
    doc = JsonDoc(path, EXPECTED)
    d = doc.obj(obj, "the file")
    runs = _runs(doc, d.get("runs"))
    seeds = _seeds(d.get("seeds"))
    parts: dict[str, dict[str, Any]] = {}
    for key in ("budget", "prevalence"):
        if d.get(key) is not None:
            parts[key] = doc.obj(d.get(key), key)
    budget = parts.get("budget", {})
    brows = _rows(doc, budget, "budget", BUDGET_NUMBERS) if "budget" in parts else []
    prev = parts.get("prevalence", {})
    prows = _rows(doc, prev, "prevalence", PREVALENCE_NUMBERS, PREVALENCE_OPTIONAL) if "prevalence" in parts else []
    if not runs and not brows and not prows:
        raise doc.fail("the file", "no selection runs, budget rows or prevalence rows")
    base: dict[str, Any] = budget["base"] if isinstance(budget.get("base"), dict) else {}
    return SimulationResults(
        seeds, runs,
        tuple(BudgetRow(r["n_items"], r["ratings_per_item"], r["definition"], r["regret_mean"], r["regret_sd"])
              for r in brows),
        tuple((str(k), str(v)) for k, v in base.items()),
        _seeds(budget["seeds"]) if "seeds" in budget else seeds,
        tuple(PrevalenceRow(**r) for r in prows),
        tuple((k, str(prev[k])) for k in ("n_options", "n_sets", "n_items", "ratings", "gamma", "error_rate", "skew")
              if k in prev),
        _seeds(prev["seeds"]) if "seeds" in prev else seeds)


read_simulation = simulation_results

__all__ = ["EXPECTED", "BudgetRow", "PrevalenceRow", "SimRun", "SimulationResults", "read_simulation",
           "simulation_results"]
