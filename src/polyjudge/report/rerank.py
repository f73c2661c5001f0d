"""The report's "Reranking" section: what ``polyjudge rerank ... -o OUT`` chose, and whether it helped.

It renders the typed :class:`~polyjudge.reranking.summary.RerankSummary` of ``OUT/rerank.json``: the
method, sources, candidates and requests, then the gain of the chosen translations over the baseline
(each source's first candidate) under the judge that chose them and under each held-out check (a
second judge, chrF against references) side by side. The selecting judge's gain is self-reward (it
rates its own choices, so it is high by construction); the held-out columns are the evidence, as the
WMT24 and WMT25 findings ask. A check that was not run reads ``n/a``; a summary of a choice that did
not finish reads "incomplete" and shows no numbers.
"""

from __future__ import annotations

from typing import Any

from polyjudge.report.blocks import Cell, KeyValues, Para, Table
from polyjudge.report.format import NOT_AVAILABLE
from polyjudge.reranking.summary import JUDGE, REFERENCES, SELECTION, GainRow, RerankSummary

__all__ = ["gain_text", "rerank_blocks"]

_METHODS = {"qe": "QE reranking (each candidate scored without a reference)",
            "mbr": "MBR (each candidate judged against the others as pseudo-references)"}
_NOT_RUN = {JUDGE: "not run: give rerank --held-out JUDGE (a judge other than the one that chooses)",
            REFERENCES: "not run: give rerank --references FILE (or a ref field per source)"}


def gain_text(x: float | None, *, sign: bool = False) -> str:
    """A mean score or gain as ``polyjudge rerank`` prints it (four significant digits); ``n/a`` for none."""
    if x is None:
        return NOT_AVAILABLE
    return f"{x:+.4g}" if sign else f"{x:.4g}"


def _facts(s: RerankSummary) -> list[tuple[str, str]]:
    facts = [("method", _METHODS.get(s.method, s.method)), ("selecting judge", s.scorer),
             ("sources", f"{s.sources:,}"), ("candidates", f"{s.candidates:,}"),
             ("requests sent", f"{s.requests:,} distinct (the plain method: {s.requests_full:,}; identical "
                               "candidates judged once" + (", symmetric pairs once" if s.symmetric else "") + ")")]
    if s.pruning:
        facts.append(("pruning", f"schedule {s.pruning.get('schedule')}, alpha {s.pruning.get('alpha')}, "
                                 f"{s.pruning.get('n_boot')} bootstrap resamples"))
    if s.unchosen:
        facts.append(("without a choice", f"{s.unchosen} source(s): every judgment of their candidates failed"))
    return facts


def _columns(s: RerankSummary) -> list[tuple[str, GainRow | None, str]]:
    """(header, gain or None when not run, kind) in order: the selection, held-out judges, chrF."""
    cols: list[tuple[str, GainRow | None, str]] = [
        (f"selecting judge: {g.scorer} (self-reward)", g, SELECTION) for g in s.gains if g.check == SELECTION]
    for kind, label in ((JUDGE, "held-out judge"), (REFERENCES, "held out: chrF vs references")):
        found = [g for g in s.gains if g.check == kind]
        cols += [(label if kind == REFERENCES else f"{label}: {g.scorer.removeprefix('held-out ')}", g, kind)
                 for g in found] or [(label, None, kind)]
    return cols


def _cell(g: GainRow | None, kind: str, value: float | None, *, sign: bool = False) -> Cell:
    if g is None:
        return Cell(NOT_AVAILABLE, "", _NOT_RUN[kind])
    cls = ""
    if sign and kind != SELECTION and value is not None:  # only a held-out gain is evidence worth a colour
        cls = "best" if value > 0 else "loss" if value < 0 else ""
    return Cell(gain_text(value, sign=sign), cls)


def rerank_blocks(summary: RerankSummary | None) -> list[Any]:
    """The blocks of one reranking summary: facts, the self-reward warning and the gains side by side."""
    if summary is None:
        return []
    if not summary.complete:
        return [KeyValues([("method", _METHODS.get(summary.method, summary.method)), ("status", "incomplete")]),
                Para("This reranking did not finish (stopped by the spending cap, an error or Ctrl-C): no "
                     "translation was chosen and there is no gain to show. Run the same polyjudge rerank "
                     "command again: it resumes from the judgments already stored.")]
    cols = _columns(summary)
    rows = [["chosen translations (mean)", *[_cell(g, k, g.chosen if g else None) for _, g, k in cols]],
            ["baseline: first candidate (mean)", *[_cell(g, k, g.baseline if g else None) for _, g, k in cols]],
            ["gain", *[_cell(g, k, g.gain if g else None, sign=True) for _, g, k in cols]],
            ["sources", *[Cell(str(g.sources)) if g else Cell(NOT_AVAILABLE, "", _NOT_RUN[k]) for _, g, k in cols]]]
    held = [g for _, g, k in cols if g is not None and k != SELECTION]
    warning = ("The gain under the selecting judge is self-reward: that judge chose the translations it "
               "rates highest, so it finds them better by construction, whatever their quality. Trust the "
               "held-out columns, scored by checks that took no part in the choice.")
    if not held:
        warning += (" No held-out check was run here ('n/a'), so this reranking has no evidence of a gain: "
                    "give polyjudge rerank --held-out JUDGE or --references FILE.")
    return [KeyValues(_facts(summary)), Para(warning),
            Table(["", *[h for h, _, _ in cols]], rows,
                  "Mean score of the chosen translations and of the baseline (each source's first candidate) "
                  "under each scorer, each on its own scale; a held-out gain above 0 is shown in bold, "
                  "one below 0 in red.")]
