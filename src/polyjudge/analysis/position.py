"""Position bias of contrastive judging: does a translation score higher for where it was shown?

``contrastive-esa`` shows the systems of each source in a seeded random order and records each item's
``position`` (1-based) and its unit's ``key`` in the annotation. Because the order is random, a judge
without position bias gives, on average, the same *relative* score at every position: the item's score
minus the mean score of its unit (the same judge, run and source), which takes out how hard the source
was and which systems it drew. :func:`position_bias` tabulates the relative score per position with its
standard error, from the successful judgments of a run.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class PositionRow:
    """One position of the prompt: how many judgments, their mean score, and the mean relative score."""

    position: int
    n: int
    mean_score: float
    relative: float  # mean of (score - its unit's mean score); 0 without position bias
    stderr: float  # standard error of ``relative`` (nan with fewer than two judgments)

    def to_json(self) -> dict[str, Any]:
        return {"position": self.position, "n": self.n, "mean_score": self.mean_score,
                "relative": self.relative, "stderr": self.stderr}


def _unit_scores(judgments: Iterable[Any]) -> dict[tuple[Any, ...], list[tuple[int, float]]]:
    units: dict[tuple[Any, ...], list[tuple[int, float]]] = {}
    for j in judgments:
        unit = j.annotation.get("unit") if j.status == "ok" and isinstance(j.annotation, dict) else None
        if not isinstance(unit, dict) or not isinstance(unit.get("position"), int) or j.score is None:
            continue
        ident = (j.judge, j.run_index, unit.get("key"), j.doc_id, j.seg_id)
        units.setdefault(ident, []).append((unit["position"], float(j.score)))
    return units


def position_bias(judgments: Iterable[Any]) -> list[PositionRow]:
    """The relative score per position over every unit of at least two scored translations (judgments are
    ``rundir.records.JudgmentRecord``s: ``RunDir.open(path).judgments``)."""
    by_position: dict[int, list[tuple[float, float]]] = {}
    for members in _unit_scores(judgments).values():
        if len(members) < 2:
            continue
        mean = math.fsum(s for _, s in members) / len(members)
        for position, score in members:
            by_position.setdefault(position, []).append((score, score - mean))
    rows = []
    for position in sorted(by_position):
        values = by_position[position]
        n = len(values)
        rel = math.fsum(r for _, r in values) / n
        var = math.fsum((r - rel) ** 2 for _, r in values) / (n - 1) if n > 1 else math.nan
        rows.append(PositionRow(position, n, math.fsum(s for s, _ in values) / n, rel, math.sqrt(var / n)))
    return rows


__all__ = ["PositionRow", "position_bias"]
