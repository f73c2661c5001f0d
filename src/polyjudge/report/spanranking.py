"""The report's "Span metrics under each span-F1 variant" section (``report --span-ranking FILE``).

It renders the typed :class:`~polyjudge.metaeval.spans.ranking.VariantRanking` that
``polyjudge span-f1 --pred A --rank B ... --variants all --format json -o FILE`` wrote (or the
:class:`~polyjudge.api.SpanRanking` itself, from Python): one row per variant with each metric's rank,
a rank that differs from the official WMT25 scorer's highlighted (the official variant: wmt25, micro;
when it was not ranked, the first variant), how many metrics moved, the winner and Kendall's tau-b
against the official order of F1; then the F1 behind every rank.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from polyjudge.report.blocks import Cell, Para, Table
from polyjudge.report.format import number

if TYPE_CHECKING:
    from polyjudge.metaeval.spans.ranking import VariantRanking

__all__ = ["span_ranking_blocks"]


def span_ranking_blocks(ranking: VariantRanking | None) -> list[Any]:
    """The rank table (changes against the official variant highlighted), a summary and the F1 table."""
    if ranking is None:
        return []
    ref = ranking.official
    ref_ranks = ranking.ranks(ref)
    changes = {c["variant"]: c for c in ranking.changes(ref)}
    label = f"the official WMT25 scorer ({ref.name})" if ref.official else f"the first variant ({ref.name})"
    rows = []
    for v in ranking.variants:
        ranks = ranking.ranks(v)
        c = changes.get(v.name)
        cells = [Cell(str(ranks[m]), "loss" if ranks[m] != ref_ranks[m] else "",
                      f"F1 {number(ranking.f1[v.name][m])}; rank {ref_ranks[m]} under {ref.name}")
                 for m in ranking.metrics]
        winners = [m for m in ranking.metrics if ranks[m] == 1]
        rows.append([Cell(v.name, "best" if v == ref else ""), *cells, str(len(c["moved"])) if c else "reference",
                     ", ".join(winners), number(c["kendall_tau"]) if c else "1"])
    moved = [c for c in changes.values() if c["moved"]]
    new_winner = [name for name, c in changes.items() if set(c["winner"]) != {m for m in ranking.metrics
                                                                                   if ref_ranks[m] == 1}]
    summary = (f"{len(moved)} of {len(changes)} other variant(s) rank the {len(ranking.metrics)} span metrics "
               f"otherwise than {label}" + (f"; the best metric changes under {', '.join(new_winner)}." if new_winner
                                            else "; the best metric is the same under every variant."))
    f1_rows = [[v.name, *[number(ranking.f1[v.name][m]) for m in ranking.metrics]] for v in ranking.variants]
    return [Para(summary + " Rank 1 is the highest F1 (F1 averaged over language pairs, as span-f1 reports it); "
                 "equal F1s share the better rank. A span-F1 variant is a choice of what a matched span is worth "
                 "(match), which spans may be paired (matching) and how segments are averaged."),
            Table(["variant", *ranking.metrics, f"metrics moved vs {ref.name}", "best", f"Kendall tau-b vs {ref.name}"],
                  rows, f"Rank of each metric under each variant; a rank that differs from {label} is highlighted "
                        "(its F1 in the tooltip)."),
            Table(["variant", *[f"F1: {m}" for m in ranking.metrics]], f1_rows, "The span F1 behind the ranks.")]
