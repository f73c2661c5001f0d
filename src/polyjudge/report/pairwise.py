"""Report blocks for the pairwise study (``polyjudge pairwise``): the Bradley–Terry ranking
with its intervals and the position-bias figure.

The study writes ``pairwise.json`` and ``pairwise.tsv`` next to its run
directory (``OUT/run``); :func:`polyjudge.report.load.load_run` finds them
there (or a ``pairwise.json`` placed in the run directory), reads it into
its typed rows (:class:`polyjudge.studies.pairwise_results.PairwiseRows`, as
:meth:`polyjudge.studies.pairwise.PairwiseResult.results` gives them in memory)
and adds the verdict shares of ``pairwise.tsv``
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
from polyjudge.studies.pairwise_results import Number, PairwiseRows

__all__ = ["pairwise_blocks"]


def _share(x: Number) -> str:
    v = math.nan if x is None else float(x)
    return percent(v) if math.isfinite(v) else "n/a"


def _raw(x: Number) -> str:
    """A count as written (empty when not recorded)."""
    return "" if x is None else str(x)


def pairwise_blocks(rows: PairwiseRows | None) -> list[Any]:
    """Settings, ranking (figure + table), position bias (figure + figures) and agreement with humans."""
    if not isinstance(rows, PairwiseRows):
        return []
    blocks: list[Any] = []
    if rows.note:
        blocks.append(Para(rows.note))
    level = rows.level
    kv = [("judges", ", ".join(rows.judges) or "not recorded"),
          ("source segments", "n/a" if rows.n_segments is None else str(rows.n_segments)),
          ("pairs judged in both orders", "n/a" if rows.n_pairs is None else str(rows.n_pairs)),
          ("intervals", f"{percent(level, digits=0)} bootstrap over source segments, {rows.n_boot} resamples"
           if rows.n_boot and math.isfinite(level) else "none"),
          ("ties", rows.ties)]
    if rows.unranked:
        kv.append(("not ranked (no complete pair)", ", ".join(rows.unranked)))
    blocks.append(KeyValues(kv))
    blocks += _ranking_blocks(rows)
    blocks += _position_blocks(rows)
    a = rows.agreement
    if a is not None:
        blocks.append(KeyValues([
            ("human scores", a.source), ("systems compared", _raw(a.systems)),
            ("pairwise accuracy", number(a.pairwise_accuracy)), ("Pearson", number(a.pearson)),
            ("Kendall", number(a.kendall))]))
    fails = [(k, v) for k, v in rows.failures if v]
    if fails:
        blocks.append(Para("Failed judgments (not counted): " + ", ".join(f"{k}: {v}" for k, v in fails)))
    return blocks


def _ranking_blocks(rows: PairwiseRows) -> list[Any]:
    ranking = rows.ranking
    if not ranking:
        return []
    human = any(r.human is not None for r in ranking)
    points = [(r.system, r.score, r.ci_low, r.ci_high) for r in ranking]
    return [Figure("pairwise-ranking", svg.ci_plot(points, xlabel="Bradley-Terry log-strength",
                                                   title="Pairwise system ranking"),
                   "Bradley–Terry log-strength per system (mean 0), best first, with its bootstrap "
                   "interval. Both orders of every pair count, so a constant position bias cancels."),
            Table(["rank", "system", "log-strength", "interval", "win rate", "comparisons",
                   *(["human score"] if human else [])],
                  [[k, r.system, number(r.score), interval(r.ci_low, r.ci_high), _share(r.win_rate),
                    _raw(r.comparisons), *([number(math.nan if r.human is None else r.human)] if human else [])]
                   for k, r in enumerate(ranking, 1)], "Bradley–Terry ranking")]


def _position_blocks(rows: PairwiseRows) -> list[Any]:
    blocks: list[Any] = []
    shares = dict(rows.verdict_shares)
    at = rows.at
    if shares:
        blocks.append(Figure("position-bias", svg.grouped_bars(
            list(VERDICT_GROUPS), [(f"verdict {v}", list(shares.get(v, ()))) for v in ("A", "B", "tie")],
            ylabel="share of verdicts", ymin=0.0, ymax=1.0, title="Position bias: which candidate the judge chose"),
            "Share of verdicts choosing the candidate shown first (A), second (B) or a tie, over all verdicts and "
            "over the verdicts of consistent and of position-inconsistent pairs. An unbiased judge's A and B bars "
            "are level."))
    elif rows.position:
        blocks.append(Figure("position-bias", svg.grouped_bars(
            list(VERDICT_GROUPS), [("candidate A chosen", [_float(at(k)) for k in (
                "a_share", "a_share_consistent", "a_share_inconsistent")])],
            ylabel="share of decisive verdicts", ymin=0.0, ymax=1.0, title="Position bias: share of A"),
            "Share of decisive verdicts (A or B) that chose the candidate shown first; 0.5 is unbiased."))
    if rows.position:
        p = _float(at("p_value"))
        blocks.append(Table(["pairs", "complete", "missing a verdict", "position-inconsistent", "flips (to A)",
                             "A share of decisive verdicts", "exact binomial p", "ties"],
                            [[_raw(at("pairs")), _raw(at("complete")), _raw(at("missing")),
                              f"{_raw(at('inconsistent'))} ({_share(at('inconsistency_rate'))})",
                              f"{_raw(at('flips'))} ({_raw(at('flips_to_a'))})",
                              Cell(_share(at("a_share")), "loss" if math.isfinite(p) and p < 0.05 else "",
                                   "significantly different from 0.5" if math.isfinite(p) and p < 0.05 else ""),
                              number(p), _raw(at("ties"))]], "Position bias"))
    return blocks


def _float(x: Number) -> float:
    return math.nan if x is None else float(x)
