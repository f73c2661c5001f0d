"""Human MQM annotations and run-to-run variability, as ``human-mqm`` and ``variability`` use them.

Imported only when one of those commands runs (the analysis pulls in scipy).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from polyjudge.aggregate.mqm import HumanMQMScores, MQMWeights, score_human_annotations
from polyjudge.aggregate.rrwa import COMPARISON
from polyjudge.analysis import aggregate_table, distinct_counts, segment_deltas, variability_report
from polyjudge.data.errors import InputError
from polyjudge.data.textio import short
from polyjudge.data.wmt_mqm import MQMAnnotation, read_wmt_mqm_report

__all__ = ["COMPARISON", "HumanMQMTable", "MQMWeights", "aggregate_table", "distinct_counts", "human_mqm_table",
           "of_rater", "read_wmt_mqm_report", "score_human_annotations", "segment_deltas", "variability_report"]

UNIT = "MQM error points"
SCORINGS = {False: "Freitag et al. (2021): major 5, minor 1, minor punctuation 0.1, non-translation 25",
            True: "classic GEMBA-MQM: every minor error 1 (punctuation too), a non-translation critical, "
                  "at most 5 errors, capped at 25"}


def _fmt(x: float) -> str:
    return f"{x:.6f}".rstrip("0").rstrip(".") if x == x else ""


@dataclass(frozen=True, slots=True)
class HumanMQMTable:
    """Systems best first with their MQM error points (lower is better): the mean over segments of
    each segment's mean over raters; ``score`` is the negation (higher is better), as meta-eval reads it."""

    source: str
    classic: bool
    systems: tuple[tuple[str, float, int], ...]  # (system, points, segments)
    segments: HumanMQMScores

    def to_dict(self) -> dict[str, Any]:
        rows = [{"rank": k, "system": s, "points": p if math.isfinite(p) else None,
                 "score": -p if math.isfinite(p) else None, "n_segments": n}
                for k, (s, p, n) in enumerate(self.systems, 1)]
        return {"source": self.source, "unit": UNIT, "lower_is_better": True, "scoring": SCORINGS[self.classic],
                "aggregation": "mean over raters per segment, then mean over segments", "systems": rows}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, ensure_ascii=False)

    def to_tsv(self) -> str:
        """The systems table (``system points score n_segments``), as ``systems.tsv`` of ``--out``."""
        lines = ["system\tpoints\tscore\tn_segments"]
        lines += [f"{s}\t{_fmt(p)}\t{_fmt(-p)}\t{n}" for s, p, n in self.systems]
        return "\n".join(lines) + "\n"

    def segments_tsv(self) -> str:
        """``system doc seg_id points score n_raters`` per segment (``segments.tsv`` of ``--out``)."""
        lines = ["system\tdoc\tseg_id\tpoints\tscore\tn_raters"]
        lines += [f"{s.system}\t{s.doc}\t{s.seg_id}\t{_fmt(s.points)}\t{_fmt(s.score)}\t{s.n_raters}"
                  for s in self.segments.segments]
        return "\n".join(lines) + "\n"

    def to_text(self) -> str:
        """A line saying what the numbers are, then ``system<TAB>points`` best first."""
        head = (f"# {UNIT} per system, lower is better ({SCORINGS[self.classic]}; mean over raters per "
                "segment, then over segments)")
        return "\n".join([head, *(f"{s}\t{p:.3f}" for s, p, _ in self.systems)]) + "\n"

    def format(self, fmt: str = "text") -> str:
        if fmt == "json":
            return self.to_json() + "\n"
        return self.to_tsv() if fmt == "tsv" else self.to_text()


def of_rater(annotations: list[MQMAnnotation], rater: str | None, source: str) -> list[MQMAnnotation]:
    """The annotations of ``rater`` alone (None: every rater's, each segment then scored as the mean
    over its raters, as mt-metrics-eval does); a rater the file does not have is an InputError naming
    the ones it has."""
    if rater is None:
        return annotations
    kept = [a for a in annotations if a.rater == rater]
    if not kept:
        have = sorted({a.rater for a in annotations})
        raise InputError(f"no rater {short(rater)} in the file (raters: {', '.join(map(short, have[:20]))}"
                         f"{', ...' if len(have) > 20 else ''})", path=source, field="rater")
    return kept


def human_mqm_table(source: str, scores: HumanMQMScores, *, classic: bool = False) -> HumanMQMTable:
    """The ranking of ``scores`` (read from ``source``) as a printable, writable table."""
    rows = tuple((s, p, scores.n_segments[s]) for s, p in scores.ranking())
    return HumanMQMTable(source, classic, rows, scores)
