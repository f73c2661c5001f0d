"""Pairwise comparison of systems from Python: both orders judged, position bias measured,
systems ranked by Bradley–Terry with bootstrap intervals.

The study is :func:`polyjudge.studies.pairwise.run_pairwise`; with ``out`` this
also draws two figures next to its tables (``polyjudge report --pairwise``
renders the same in its pairwise section): ``position-bias.svg`` (which candidate the judge chose, over all
verdicts and over consistent and inconsistent pairs) and ``systems-bt.svg``
(the ranking with its intervals).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from markupsafe import Markup

from polyjudge.analysis.pairwise import INCONSISTENT, MISSING, PairJudgment
from polyjudge.data.records import Item
from polyjudge.studies.pairwise import HumanAgreement, PairwiseConfig, PairwiseResult, build_pair_items, run_pairwise

POSITION_SVG = "position-bias.svg"
RANKING_SVG = "systems-bt.svg"
_GROUPS = ("all verdicts", "consistent pairs", "inconsistent pairs")


def _verdict_shares(pairs: Sequence[PairJudgment]) -> dict[str, list[float]]:
    """Share of A, B and tie verdicts in each of ``_GROUPS`` (NaN for an empty group)."""
    counts = {g: {"A": 0, "B": 0, "tie": 0} for g in _GROUPS}
    for p in pairs:
        verdicts = [v for v in (p.first_as_a, p.second_as_a) if v is not None]
        groups = [_GROUPS[0]]
        if p.outcome != MISSING:
            groups.append(_GROUPS[2] if p.outcome == INCONSISTENT else _GROUPS[1])
        for g in groups:
            for v in verdicts:
                counts[g][v] += 1
    out: dict[str, list[float]] = {}
    for verdict in ("A", "B", "tie"):
        out[verdict] = [counts[g][verdict] / n if (n := sum(counts[g].values())) else float("nan") for g in _GROUPS]
    return out


def position_figure(result: PairwiseResult) -> Markup:
    """Bars: the share of verdicts choosing candidate A, B or a tie, over all verdicts and
    over the verdicts of consistent and of inconsistent pairs (an unbiased judge's A and B
    bars are level)."""
    from polyjudge.report import svg

    shares = _verdict_shares(result.pairs)
    return svg.grouped_bars(_GROUPS, [(f"verdict {v}", shares[v]) for v in ("A", "B", "tie")],
                            ylabel="share of verdicts", ymin=0.0, ymax=1.0,
                            title="Position bias: which candidate the judge chose")


def ranking_figure(result: PairwiseResult) -> Markup:
    """The Bradley–Terry log-strengths, best first, with their bootstrap intervals."""
    from polyjudge.report import svg

    rows = [(r.system, r.score, r.ci_low, r.ci_high) for r in result.ranking]
    return svg.ci_plot(rows, xlabel="Bradley-Terry log-strength", title="Pairwise system ranking")


def write_figures(result: PairwiseResult, out: str | Path) -> None:
    """``position-bias.svg`` and ``systems-bt.svg`` into ``out``."""
    from polyjudge.report import svg

    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    (d / POSITION_SVG).write_text(svg.standalone(position_figure(result)), encoding="utf-8")
    (d / RANKING_SVG).write_text(svg.standalone(ranking_figure(result)), encoding="utf-8")


def pairwise(items: Sequence[Item] | str | Path, config: PairwiseConfig | None = None,
             out: str | Path | None = None) -> PairwiseResult:
    """Compare the systems of ``items`` (a list or an input file) two at a time on each
    segment, in both orders, and rank them; with ``out``, the run directory is ``OUT/run``
    and the tables and figures go into ``OUT``."""
    if out is not None:
        from polyjudge.rundir.clash import Target, input_target, refuse_clashes
        from polyjudge.rundir.ownership import claim_study
        from polyjudge.studies.pairwise import (
            PAIRS_TSV,
            POSITION_JSON,
            SEGMENTS_TSV,
            STUDY_JSON,
            SYSTEMS_SYS_SCORE,
            SYSTEMS_TSV,
        )

        tables = (PAIRS_TSV, SYSTEMS_TSV, SYSTEMS_SYS_SCORE, SEGMENTS_TSV, POSITION_JSON, STUDY_JSON, POSITION_SVG,
                  RANKING_SVG)
        claim_study(out, "pairwise study", tables, STUDY_JSON)
        if isinstance(items, (str, Path)):
            refuse_clashes([Target("-o/--out", str(out), tables)], input_target("INPUT", items))
    result = run_pairwise(items, config, out)
    if out is not None:
        write_figures(result, out)
    return result


__all__ = ["POSITION_SVG", "RANKING_SVG", "HumanAgreement", "PairwiseConfig", "PairwiseResult", "build_pair_items",
           "pairwise", "position_figure", "ranking_figure", "write_figures"]
