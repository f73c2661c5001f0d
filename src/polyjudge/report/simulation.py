"""Report blocks for ``polyjudge simulate --format json`` (Guerdan et al.'s synthetic analyses).

Rendered from the typed rows
(:class:`polyjudge.validation.simulation_results.SimulationResults`) of the
document (``simulation.json``)::

    {"seeds": 5,
     "runs": [{"label": "|O|=3 |Q|=7 ...", "gamma_human": 1.4, "gamma_judge": 0.6,
               "selection": {"hit_rate (h/h)": {"consistency", "regret", "abs_bias", "bias_excess"}},
               "rank_correlation": {"hit_rate (h/h)": {"kendall_consistency", "spearman_consistency",
                                                       "kendall_bias", "spearman_bias", "..._sd"}}}],
     "budget": {"seeds": 5, "rows": [{"n_items", "ratings_per_item", "budget", "definition",
                                      "regret_mean", "regret_sd", ...}]},
     "prevalence": {"seeds": 5, "rows": [{"ambiguity", "option", "tau", "true_mean",
                                          "forced_choice_mean", "response_set_mean", ...}]}}

Figures: Spearman ρ of each definition's judge ranking with the decision-consistency
ranking (grouped bars, a group per definition, a bar per setting); regret
against ratings per item with a ±1 sd band (one figure per corpus size); the
prevalence of each option under both elicitations against the truth (grouped bars).
"""

from __future__ import annotations

import math
from typing import Any

from polyjudge.report import svg
from polyjudge.report.blocks import Cell, Figure, KeyValues, Para, Table
from polyjudge.report.format import number
from polyjudge.validation.simulation_results import BudgetRow, SimulationResults

__all__ = ["PLOTTED_DEFINITIONS", "simulation_blocks"]

# Lines drawn in the budget figures when present (the table lists every definition).
PLOTTED_DEFINITIONS = ("hit_rate (h/h)", "cohen_kappa (h/h)", "js_divergence (s/s)", "mse (srs/srs)")
SETTINGS_PER_FIGURE = 6


def _slug(s: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in s).split()).lower() or "x"


def _seeds(n: int | None) -> str:
    return f"{n} seeds (0..{n - 1})" if n is not None else "seeds not recorded"


def _rank_blocks(res: SimulationResults) -> list[Any]:
    runs = res.runs
    if not runs:
        return []
    names = [f"{i + 1}: {r.label} Γh={number(r.gamma_human)} Γj={number(r.gamma_judge)}" for i, r in enumerate(runs)]
    defs = list(dict.fromkeys(d for r in runs for d, _ in r.selection))
    blocks: list[Any] = [KeyValues([(f"setting {n.split(':', 1)[0]}", n.split(": ", 1)[1]) for n in names])]
    rows = []
    for name, r in zip(names, runs):
        ordered = sorted(defs, key=lambda d: r.outcome(d).get("regret", math.nan))
        for d in ordered:
            s, c = r.outcome(d), r.ranks(d)
            regret = s.get("regret", math.nan)
            rows.append([Cell(name.split(":", 1)[0], "", name), d, number(s.get("consistency", math.nan)),
                         Cell(number(regret), "loss" if regret > 1e-12 else ""),
                         number(s.get("abs_bias", math.nan)),
                         *[number(c.get(k, math.nan)) for k in ("kendall_consistency", "spearman_consistency",
                                                                "kendall_bias", "spearman_bias")]])
    blocks.append(Table(["setting", "definition", "selected C", "regret", "selected |B|", "Kendall τ-b vs C",
                         "Spearman ρ vs C", "Kendall τ-b vs |B|", "Spearman ρ vs |B|"], rows,
                        f"Judge selection per setting ({_seeds(res.seeds)}): the selected judge's decision "
                        "consistency C and |prevalence bias| (population, against error-free humans), the regret "
                        "(best C − selected C), and the rank correlation between ordering the judges by the metric "
                        "and by C or |B|. Means over seeds and cutoffs τ."))
    for start in range(0, len(runs), SETTINGS_PER_FIGURE):
        chunk = list(range(start, min(start + SETTINGS_PER_FIGURE, len(runs))))
        series = [(names[i], [runs[i].ranks(d).get("spearman_consistency", math.nan) for d in defs]) for i in chunk]
        suffix = f" (settings {chunk[0] + 1}–{chunk[-1] + 1})" if len(runs) > SETTINGS_PER_FIGURE else ""
        blocks.append(Figure(f"rank-correlation-{chunk[0] + 1}", svg.grouped_bars(
            defs, series, ylabel="Spearman ρ with consistency ranking", ymin=-1, ymax=1,
            title=f"Metric vs decision-consistency judge rankings{suffix}"),
            f"Spearman ρ between the judge ranking by each agreement metric and by decision consistency "
            f"(one bar per setting{suffix}; means over {_seeds(res.seeds)} and τ). Near 1: the metric orders judges "
            "as the downstream decisions would."))
    return blocks


def _band(rs: list[BudgetRow], scale: float | None = None) -> tuple[list[float], list[float], list[float], list[float]]:
    """x (ratings per item, or the total budget with ``scale`` items), mean, and the ±1 sd band clipped to [0, 1]."""
    m = [r.regret_mean for r in rs]
    sd = [r.regret_sd for r in rs]
    xs = [r.ratings_per_item if scale is None else scale * r.ratings_per_item for r in rs]
    return xs, m, [max(0.0, a - b) for a, b in zip(m, sd)], [min(1.0, a + b) for a, b in zip(m, sd)]


def _budget_blocks(res: SimulationResults) -> list[Any]:
    rows = list(res.budget)
    if not rows:
        return []
    blocks: list[Any] = []
    if res.budget_base:
        blocks.append(KeyValues([("base setting", ", ".join(f"{k}={v}" for k, v in res.budget_base
                                                             if k not in ("n_items", "human_ratings"))),
                                 ("repetitions", _seeds(res.budget_seeds)),
                                 ("band", "mean ± 1 standard deviation over seeds (clipped at 0)")]))
    seeds = _seeds(res.budget_seeds)
    items = list(dict.fromkeys(int(r.n_items) for r in rows))
    defs = list(dict.fromkeys(r.definition for r in rows))
    plotted = [d for d in PLOTTED_DEFINITIONS if d in defs] or defs[:4]
    for n in items:
        mine = [r for r in rows if int(r.n_items) == n]
        series = [(d, *_band(sorted((r for r in mine if r.definition == d), key=lambda r: r.ratings_per_item)))
                  for d in plotted]
        blocks.append(Figure(f"regret-budget-{n}-items", svg.line_band(
            series, xlabel="human ratings per item", ylabel="regret (best C − selected C)", ymin=0,
            title=f"Regret vs rating budget, {n} items"),
            f"Regret of the judge each metric selects against the human ratings per item, {n} items "
            f"(budget = {n} × ratings). Line: mean over {seeds}; band: ± 1 sd."))
    if len(items) > 1:  # the same budget spent on more items or on more ratings per item
        for d in [x for x in ("hit_rate (h/h)", "mse (srs/srs)") if x in defs] or defs[:1]:
            series = [(f"{n} items", *_band(sorted((r for r in rows if int(r.n_items) == n and r.definition == d),
                                                    key=lambda r: r.ratings_per_item), n)) for n in items]
            blocks.append(Figure(f"regret-total-budget-{_slug(d)}", svg.line_band(
                series, xlabel="human ratings in total (items × ratings per item)",
                ylabel="regret (best C − selected C)", ymin=0, title=f"Regret vs total budget: {d}"),
                f"Regret of the judge {d} selects against the total number of human ratings, one line per corpus "
                f"size: at equal budget, more items or more ratings per item. Mean over {seeds}; "
                "band: ± 1 sd."))
    ratings = sorted({int(r.ratings_per_item) for r in rows})
    cell = {(int(r.n_items), int(r.ratings_per_item), r.definition): r for r in rows}
    trows = []
    for n in items:
        for d in defs:
            trows.append([n, d, *[(f"{number(c.regret_mean)} ± {number(c.regret_sd)}"
                                   if (c := cell.get((n, r, d))) else "") for r in ratings]])
    blocks.append(Table(["items", "definition", *[f"{r} rating{'s' if r != 1 else ''}/item" for r in ratings]],
                        trows, "Regret (mean ± sd over seeds) per corpus size and ratings per item"))
    return blocks


def _prevalence_blocks(res: SimulationResults) -> list[Any]:
    rows = list(res.prevalence)
    if not rows:
        return []
    setting = ", ".join(f"{k}={v}" for k, v in res.prevalence_setting)
    blocks: list[Any] = [Para(
        "Prevalence of each option, E[1[y_k ≥ τ]], under forced-choice elicitation (y = O) and response-set "
        "elicitation (y = Ω), against the true prevalence from the stable response sets (y = Ω* = Λθ*). "
        "Ambiguity = share of each item's stable response-set mass on sets of two or more options. "
        f"Setting: {setting}; {_seeds(res.prevalence_seeds)}.")]
    taus = list(dict.fromkeys(r.tau for r in rows))
    for tau in taus:
        rs = [r for r in rows if r.tau == tau]
        cats = [f"a={number(r.ambiguity)} · option {int(r.option)}" for r in rs]
        series = [(name, [getattr(r, key) for r in rs]) for name, key in (
            ("true (stable sets)", "true_mean"), ("forced choice", "forced_choice_mean"),
            ("response set", "response_set_mean"))]
        blocks.append(Figure(f"prevalence-tau-{_slug(number(tau))}", svg.grouped_bars(
            cats, series, ylabel="prevalence", ymin=0, ymax=1, title=f"Prevalence by elicitation, τ = {number(tau)}"),
            f"Population prevalence per ambiguity level and option at τ = {number(tau)} (means over seeds)."))
    trows = [[number(r.ambiguity), int(r.option), number(r.tau), number(r.true_mean), number(r.forced_choice_mean),
              number(r.response_set_mean), Cell(f"{r.fc_bias:+.3f}", "loss" if abs(r.fc_bias) > 0.005 else ""),
              f"{r.rs_bias:+.3f}", number(r.forced_choice_sampled_mean), number(r.response_set_sampled_mean)]
             for r in rows]
    blocks.append(Table(["ambiguity", "option", "τ", "true", "forced choice", "response set", "FC − true",
                         "RS − true", "FC, sampled", "RS, sampled"], trows,
                        "Prevalence by elicitation (means over seeds); 'sampled': estimated from the given "
                        "ratings per item"))
    return blocks


def simulation_blocks(res: SimulationResults | None) -> list[Any]:
    """Tables and figures of a simulation's typed rows (empty when it holds none)."""
    if not isinstance(res, SimulationResults):
        return []
    return _rank_blocks(res) + _budget_blocks(res) + _prevalence_blocks(res)
