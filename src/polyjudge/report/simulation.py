"""Report blocks for ``polyjudge simulate --format json`` (Guerdan et al.'s synthetic analyses).

The document (``simulation.json``)::

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

__all__ = ["PLOTTED_DEFINITIONS", "simulation_blocks"]

# Lines drawn in the budget figures when present (the table lists every definition).
PLOTTED_DEFINITIONS = ("hit_rate (h/h)", "cohen_kappa (h/h)", "js_divergence (s/s)", "mse (srs/srs)")
SETTINGS_PER_FIGURE = 6


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        return math.nan


def _dicts(x: Any) -> list[dict[str, Any]]:
    return [r for r in x if isinstance(r, dict)] if isinstance(x, list) else []


def _slug(s: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in s).split()).lower() or "x"


def _seeds(doc: dict[str, Any], part: dict[str, Any] | None = None) -> str:
    n = (part or {}).get("seeds", doc.get("seeds"))
    return f"{n} seeds (0..{int(n) - 1})" if isinstance(n, int) and n > 0 else "seeds not recorded"


def _rank_blocks(doc: dict[str, Any]) -> list[Any]:
    runs = _dicts(doc.get("runs"))
    if not runs:
        return []
    labels = [str(r.get("label") or f"setting {i + 1}") for i, r in enumerate(runs)]
    names = [f"{i + 1}: {lab} Γh={number(_num(r.get('gamma_human')))} Γj={number(_num(r.get('gamma_judge')))}"
             for i, (lab, r) in enumerate(zip(labels, runs))]
    defs = list(dict.fromkeys(d for r in runs for d in (r.get("selection") or {})))
    blocks: list[Any] = [KeyValues([(f"setting {n.split(':', 1)[0]}", n.split(": ", 1)[1]) for n in names])]
    rows = []
    for name, r in zip(names, runs):
        sel = r.get("selection") or {}
        rc = r.get("rank_correlation") or {}
        ordered = sorted(defs, key=lambda d: _num((sel.get(d) or {}).get("regret")))
        for d in ordered:
            s, c = sel.get(d) or {}, rc.get(d) or {}
            regret = _num(s.get("regret"))
            rows.append([Cell(name.split(":", 1)[0], "", name), d, number(_num(s.get("consistency"))),
                         Cell(number(regret), "loss" if regret > 1e-12 else ""),
                         number(_num(s.get("abs_bias"))),
                         *[number(_num(c.get(k))) for k in ("kendall_consistency", "spearman_consistency",
                                                            "kendall_bias", "spearman_bias")]])
    blocks.append(Table(["setting", "definition", "selected C", "regret", "selected |B|", "Kendall τ-b vs C",
                         "Spearman ρ vs C", "Kendall τ-b vs |B|", "Spearman ρ vs |B|"], rows,
                        f"Judge selection per setting ({_seeds(doc)}): the selected judge's decision consistency "
                        "C and |prevalence bias| (population, against error-free humans), the regret (best C − "
                        "selected C), and the rank correlation between ordering the judges by the metric and by "
                        "C or |B|. Means over seeds and cutoffs τ."))
    for start in range(0, len(runs), SETTINGS_PER_FIGURE):
        chunk = list(range(start, min(start + SETTINGS_PER_FIGURE, len(runs))))
        series = [(names[i], [_num(((runs[i].get("rank_correlation") or {}).get(d) or {}).get("spearman_consistency"))
                              for d in defs]) for i in chunk]
        suffix = f" (settings {chunk[0] + 1}–{chunk[-1] + 1})" if len(runs) > SETTINGS_PER_FIGURE else ""
        blocks.append(Figure(f"rank-correlation-{chunk[0] + 1}", svg.grouped_bars(
            defs, series, ylabel="Spearman ρ with consistency ranking", ymin=-1, ymax=1,
            title=f"Metric vs decision-consistency judge rankings{suffix}"),
            f"Spearman ρ between the judge ranking by each agreement metric and by decision consistency "
            f"(one bar per setting{suffix}; means over {_seeds(doc)} and τ). Near 1: the metric orders judges "
            "as the downstream decisions would."))
    return blocks


def _budget_blocks(doc: dict[str, Any]) -> list[Any]:
    part = doc.get("budget")
    if not isinstance(part, dict):
        return []
    rows = _dicts(part.get("rows"))
    if not rows:
        return []
    blocks: list[Any] = []
    base = part.get("base") if isinstance(part.get("base"), dict) else {}
    if base:
        blocks.append(KeyValues([("base setting", ", ".join(f"{k}={v}" for k, v in base.items()
                                                             if k not in ("n_items", "human_ratings"))),
                                 ("repetitions", _seeds(doc, part)),
                                 ("band", "mean ± 1 standard deviation over seeds (clipped at 0)")]))
    items = list(dict.fromkeys(int(_num(r.get("n_items"))) for r in rows))
    defs = list(dict.fromkeys(str(r.get("definition")) for r in rows))
    plotted = [d for d in PLOTTED_DEFINITIONS if d in defs] or defs[:4]
    for n in items:
        mine = [r for r in rows if int(_num(r.get("n_items"))) == n]
        series = []
        for d in plotted:
            rs = sorted((r for r in mine if str(r.get("definition")) == d),
                        key=lambda r: _num(r.get("ratings_per_item")))
            m = [_num(r.get("regret_mean")) for r in rs]
            sd = [_num(r.get("regret_sd")) for r in rs]
            series.append((d, [_num(r.get("ratings_per_item")) for r in rs], m,
                           [max(0.0, a - b) for a, b in zip(m, sd)], [min(1.0, a + b) for a, b in zip(m, sd)]))
        blocks.append(Figure(f"regret-budget-{n}-items", svg.line_band(
            series, xlabel="human ratings per item", ylabel="regret (best C − selected C)", ymin=0,
            title=f"Regret vs rating budget, {n} items"),
            f"Regret of the judge each metric selects against the human ratings per item, {n} items "
            f"(budget = {n} × ratings). Line: mean over {_seeds(doc, part)}; band: ± 1 sd."))
    if len(items) > 1:  # the same budget spent on more items or on more ratings per item
        for d in [x for x in ("hit_rate (h/h)", "mse (srs/srs)") if x in defs] or defs[:1]:
            series = []
            for n in items:
                rs = sorted((r for r in rows if int(_num(r.get("n_items"))) == n and str(r.get("definition")) == d),
                            key=lambda r: _num(r.get("ratings_per_item")))
                m = [_num(r.get("regret_mean")) for r in rs]
                sd = [_num(r.get("regret_sd")) for r in rs]
                series.append((f"{n} items", [n * _num(r.get("ratings_per_item")) for r in rs], m,
                               [max(0.0, a - b) for a, b in zip(m, sd)], [min(1.0, a + b) for a, b in zip(m, sd)]))
            blocks.append(Figure(f"regret-total-budget-{_slug(d)}", svg.line_band(
                series, xlabel="human ratings in total (items × ratings per item)",
                ylabel="regret (best C − selected C)", ymin=0, title=f"Regret vs total budget: {d}"),
                f"Regret of the judge {d} selects against the total number of human ratings, one line per corpus "
                f"size: at equal budget, more items or more ratings per item. Mean over {_seeds(doc, part)}; "
                "band: ± 1 sd."))
    ratings = sorted({int(_num(r.get("ratings_per_item"))) for r in rows})
    cell = {(int(_num(r.get("n_items"))), int(_num(r.get("ratings_per_item"))), str(r.get("definition"))): r
            for r in rows}
    trows = []
    for n in items:
        for d in defs:
            trows.append([n, d, *[(f"{number(_num(c.get('regret_mean')))} ± {number(_num(c.get('regret_sd')))}"
                                   if (c := cell.get((n, r, d))) else "") for r in ratings]])
    blocks.append(Table(["items", "definition", *[f"{r} rating{'s' if r != 1 else ''}/item" for r in ratings]],
                        trows, "Regret (mean ± sd over seeds) per corpus size and ratings per item"))
    return blocks


def _prevalence_blocks(doc: dict[str, Any]) -> list[Any]:
    part = doc.get("prevalence")
    if not isinstance(part, dict):
        return []
    rows = _dicts(part.get("rows"))
    if not rows:
        return []
    setting = ", ".join(f"{k}={part[k]}" for k in ("n_options", "n_sets", "n_items", "ratings", "gamma",
                                                   "error_rate", "skew") if k in part)
    blocks: list[Any] = [Para(
        "Prevalence of each option, E[1[y_k ≥ τ]], under forced-choice elicitation (y = O) and response-set "
        "elicitation (y = Ω), against the true prevalence from the stable response sets (y = Ω* = Λθ*). "
        "Ambiguity = share of each item's stable response-set mass on sets of two or more options. "
        f"Setting: {setting}; {_seeds(doc, part)}.")]
    taus = list(dict.fromkeys(_num(r.get("tau")) for r in rows))
    for tau in taus:
        rs = [r for r in rows if _num(r.get("tau")) == tau]
        cats = [f"a={number(_num(r.get('ambiguity')))} · option {int(_num(r.get('option')))}" for r in rs]
        series = [(name, [_num(r.get(key)) for r in rs]) for name, key in (
            ("true (stable sets)", "true_mean"), ("forced choice", "forced_choice_mean"),
            ("response set", "response_set_mean"))]
        blocks.append(Figure(f"prevalence-tau-{_slug(number(tau))}", svg.grouped_bars(
            cats, series, ylabel="prevalence", ymin=0, ymax=1, title=f"Prevalence by elicitation, τ = {number(tau)}"),
            f"Population prevalence per ambiguity level and option at τ = {number(tau)} (means over seeds)."))
    trows = [[number(_num(r.get("ambiguity"))), int(_num(r.get("option"))), number(_num(r.get("tau"))),
              number(_num(r.get("true_mean"))), number(_num(r.get("forced_choice_mean"))),
              number(_num(r.get("response_set_mean"))),
              Cell(f"{_num(r.get('fc_bias')):+.3f}", "loss" if abs(_num(r.get("fc_bias"))) > 0.005 else ""),
              f"{_num(r.get('rs_bias')):+.3f}",
              number(_num(r.get("forced_choice_sampled_mean"))), number(_num(r.get("response_set_sampled_mean")))]
             for r in rows]
    blocks.append(Table(["ambiguity", "option", "τ", "true", "forced choice", "response set", "FC − true",
                         "RS − true", "FC, sampled", "RS, sampled"], trows,
                        "Prevalence by elicitation (means over seeds); 'sampled': estimated from the given "
                        "ratings per item"))
    return blocks


def simulation_blocks(obj: Any) -> list[Any]:
    """Tables and figures of a simulation document (empty when it holds none)."""
    if not isinstance(obj, dict):
        return []
    return _rank_blocks(obj) + _budget_blocks(obj) + _prevalence_blocks(obj)
