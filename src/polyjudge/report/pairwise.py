"""Report blocks for the pairwise study (``polyjudge pairwise``): the Bradley–Terry ranking
with its intervals and the position-bias figure.

The study writes ``pairwise.json`` and ``pairwise.tsv`` next to its run
directory (``OUT/run``); :func:`polyjudge.report.load.load_run` finds them
there (or a ``pairwise.json`` placed in the run directory) and adds the
verdict shares of ``pairwise.tsv`` to the document as ``verdict_shares``
(:func:`polyjudge.report.adapters.pairwise_verdict_shares`). Without the TSV the
figure shows the share of decisive verdicts that chose candidate A.
"""

from __future__ import annotations

import math
from typing import Any

from polyjudge.report import svg
from polyjudge.report.adapters import VERDICT_GROUPS
from polyjudge.report.blocks import Cell, Figure, KeyValues, Para, Table
from polyjudge.report.format import interval, number, percent

__all__ = ["pairwise_blocks"]


def _num(v: Any) -> float:
    try:
        return float(v) if v is not None else math.nan
    except (TypeError, ValueError, OverflowError):
        return math.nan


def _share(x: Any) -> str:
    v = _num(x)
    return percent(v) if math.isfinite(v) else "n/a"


def pairwise_blocks(obj: Any) -> list[Any]:
    """Settings, ranking (figure + table), position bias (figure + figures) and agreement with humans."""
    if not isinstance(obj, dict):
        return []
    ranking = [r for r in obj.get("ranking") or [] if isinstance(r, dict)]
    pos: dict[str, Any] = obj["position"] if isinstance(obj.get("position"), dict) else {}
    settings: dict[str, Any] = obj["settings"] if isinstance(obj.get("settings"), dict) else {}
    blocks: list[Any] = []
    if obj.get("note"):
        blocks.append(Para(str(obj["note"])))
    level = _num(settings.get("level"))
    n_boot = settings.get("n_boot")
    kv = [("judges", ", ".join(str(j) for j in settings.get("judges") or []) or "not recorded"),
          ("source segments", str(obj.get("n_segments", "n/a"))),
          ("pairs judged in both orders", str(obj.get("n_pairs", "n/a"))),
          ("intervals", f"{percent(level, digits=0)} bootstrap over source segments, {n_boot} resamples"
           if n_boot and math.isfinite(level) else "none"),
          ("ties", str(settings.get("ties", "")))]
    if obj.get("unranked"):
        kv.append(("not ranked (no complete pair)", ", ".join(str(s) for s in obj["unranked"])))
    blocks.append(KeyValues(kv))
    if ranking:
        rows = [(str(r.get("system")), _num(r.get("score")), _num(r.get("ci_low")), _num(r.get("ci_high")))
                for r in ranking]
        blocks.append(Figure("pairwise-ranking", svg.ci_plot(rows, xlabel="Bradley-Terry log-strength",
                                                             title="Pairwise system ranking"),
                             "Bradley–Terry log-strength per system (mean 0), best first, with its bootstrap "
                             "interval. Both orders of every pair count, so a constant position bias cancels."))
        human = any("human" in r for r in ranking)
        blocks.append(Table(["rank", "system", "log-strength", "interval", "win rate", "comparisons",
                             *(["human score"] if human else [])],
                            [[k, str(r.get("system")), number(_num(r.get("score"))),
                              interval(_num(r.get("ci_low")), _num(r.get("ci_high"))),
                              _share(r.get("win_rate")), str(r.get("comparisons", "")),
                              *([number(_num(r.get("human")))] if human else [])]
                             for k, r in enumerate(ranking, 1)], "Bradley–Terry ranking"))
    shares = obj.get("verdict_shares")
    if isinstance(shares, dict) and shares:
        blocks.append(Figure("position-bias", svg.grouped_bars(
            list(VERDICT_GROUPS), [(f"verdict {v}", [_num(x) for x in shares.get(v, [])]) for v in ("A", "B", "tie")],
            ylabel="share of verdicts", ymin=0.0, ymax=1.0, title="Position bias: which candidate the judge chose"),
            "Share of verdicts choosing the candidate shown first (A), second (B) or a tie, over all verdicts and "
            "over the verdicts of consistent and of position-inconsistent pairs. An unbiased judge's A and B bars "
            "are level."))
    elif pos:
        blocks.append(Figure("position-bias", svg.grouped_bars(
            list(VERDICT_GROUPS), [("candidate A chosen", [_num(pos.get(k)) for k in (
                "a_share", "a_share_consistent", "a_share_inconsistent")])],
            ylabel="share of decisive verdicts", ymin=0.0, ymax=1.0, title="Position bias: share of A"),
            "Share of decisive verdicts (A or B) that chose the candidate shown first; 0.5 is unbiased."))
    if pos:
        p = _num(pos.get("p_value"))
        blocks.append(Table(["pairs", "complete", "missing a verdict", "position-inconsistent", "flips (to A)",
                             "A share of decisive verdicts", "exact binomial p", "ties"],
                            [[str(pos.get("pairs", "")), str(pos.get("complete", "")), str(pos.get("missing", "")),
                              f"{pos.get('inconsistent', '')} ({_share(pos.get('inconsistency_rate'))})",
                              f"{pos.get('flips', '')} ({pos.get('flips_to_a', '')})",
                              Cell(_share(pos.get("a_share")), "loss" if math.isfinite(p) and p < 0.05 else "",
                                   "significantly different from 0.5" if math.isfinite(p) and p < 0.05 else ""),
                              number(p), str(pos.get("ties", ""))]], "Position bias"))
    agreement = obj.get("agreement")
    if isinstance(agreement, dict):
        blocks.append(KeyValues([
            ("human scores", str(agreement.get("source", ""))),
            ("systems compared", str(agreement.get("systems", ""))),
            ("pairwise accuracy", number(_num(agreement.get("pairwise_accuracy")))),
            ("Pearson", number(_num(agreement.get("pearson")))),
            ("Kendall", number(_num(agreement.get("kendall"))))]))
    fails = {k: v for k, v in (obj.get("failures") or {}).items() if v} if isinstance(obj.get("failures"), dict) else {}
    if fails:
        blocks.append(Para("Failed judgments (not counted): " + ", ".join(f"{k}: {v}" for k, v in fails.items())))
    return blocks
