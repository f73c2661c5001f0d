"""Judgments for tests that write a run directory without a judge."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from polyjudge.data.records import Item
from polyjudge.rundir import JudgmentRecord


def judgment_at(items: Sequence[Item], item_index: int, run_index: int, judge: str, status: str,
                error: str | None, raw_text: str | None, annotation: Any, score: float | None) -> JudgmentRecord:
    """One judgment of ``items[item_index]``, carrying the item's identifiers as the engine's do."""
    item = items[item_index]
    return JudgmentRecord(item_index, item.system, item.doc_id, item.seg_id, run_index, judge, status, error,
                          raw_text, annotation, score)
