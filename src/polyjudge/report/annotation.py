"""The report's section on a human annotation campaign: progress, agreement among annotators and with the judge.

It renders the typed :class:`~polyjudge.annotate.status.CampaignStatus`, the same
whether the status was computed from a campaign folder in this process or read
back from the file ``polyjudge annotate status --format json`` wrote (the API
hands it over for ``report --annotation CAMPAIGN_OR_STATUS_FILE``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from polyjudge.report.blocks import Table
from polyjudge.report.format import number

if TYPE_CHECKING:
    from polyjudge.annotate.status import CampaignStatus


def annotation_blocks(status: CampaignStatus | None) -> list[Any]:
    """Tables of one campaign status: progress, agreement among annotators, agreement with the judge."""
    if status is None:
        return []
    blocks: list[Any] = [Table(["annotator", "done", "of", "versions saved"],
                               [[p.annotator, p.done, p.total, p.versions] for p in status.progress],
                               f"Campaign {status.name} ({status.scheme}): annotations per annotator "
                               "(edits are versions).")]
    among: list[list[Any]] = [[f"Krippendorff's alpha ({status.alpha_level})", number(status.alpha),
                               status.alpha_items]]
    among += [[f"span F1 {p.first} vs {p.second}", number(p.f1), p.items] for p in status.span_f1]
    blocks.append(Table(["agreement among annotators", "value", "items"], among,
                        "Alpha over the items with two or more annotations; character-level span F1 "
                        "between every pair of annotators on the items both annotated."))
    if status.judge:
        blocks.append(Table(["annotators vs the judge", "Pearson", "Kendall tau", "items"],
                            [[j.who, number(j.pearson), number(j.kendall), j.items] for j in status.judge],
                            "Each annotator's values (and the item means) against the judge's scores."))
    ppi = status.ppi
    if ppi is not None:
        blocks.append(Table(["estimate of the mean human score", "value", "interval"], [
            ["PPI++ (people + judge)", number(ppi.estimate), f"[{number(ppi.lower)}, {number(ppi.upper)}]"],
            ["people alone", number(ppi.human_only),
             f"[{number(ppi.human_only_lower)}, {number(ppi.human_only_upper)}]"]],
            f"{ppi.n_labelled} items annotated, {ppi.n_judged} judged only; "
            f"{number(float(ppi.confidence) * 100)} % intervals."))
    return blocks + quality_blocks(status)


def _rate(x: float | None) -> str:
    return "" if x is None else f"{x:.0%}"


def quality_blocks(status: CampaignStatus) -> list[Any]:
    """Attention checks (pass rate per annotator), active time per item, and with vs without AI suggestions."""
    blocks: list[Any] = []
    if status.checks:
        blocks.append(Table(["attention checks", "passed", "failed", "pending", "pass rate"],
                            [[c.annotator, c.passed, c.failed, c.pending, _rate(c.rate)] for c in status.checks],
                            "Items with an injected error or shown again; the annotator passes when the error is "
                            "marked (or the score drops) and a repeat gets the same answer."))
    if status.time:
        blocks.append(Table(["active time", "items", "mean s/item", "median s/item", "s/span"],
                            [[t.who, t.items, number(t.mean_s), number(t.median_s), number(t.per_span_s)]
                             for t in status.time],
                            "Time the page had focus and input (counting stops 30 s after the last input), every "
                            "version of an item added up."))
    if status.prefill:
        blocks.append(Table(["AI suggestions", "annotations", "s/item", "s/span", "span F1 between annotators",
                             "kept", "edited", "deleted", "added"],
                            [[p.group, p.annotations, number(p.mean_s), number(p.per_span_s), number(p.span_f1),
                              p.kept, p.edited, p.deleted, p.added] for p in status.prefill],
                            "Items shown with the judge's spans as suggestions against items shown without."))
    return blocks


__all__ = ["annotation_blocks"]
