"""One rendering per run-directory table: the lines of ``segments.tsv``, ``systems.tsv``,
``aggregates.tsv`` and ``merged.jsonl``.

The run directory's writer (:func:`polyjudge.rundir.directory.write_run`) and the
registered output writers (:mod:`polyjudge.rundir.writers`: ``segments-tsv`` …)
both render these files through the functions here, so a file has one layout
whichever path writes it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from polyjudge.data.records import Item
from polyjudge.rundir.records import MergedRow, SegmentRow, SystemRow, format_cell, tsv_text

SYSTEMS_HEADER = ("system", "score", "n_segments", "n_unscored")
AGGREGATES_KEYS = ("judge", "system", "doc_id", "seg_id")


def segment_lines(rows: Sequence[SegmentRow], score_columns: Sequence[str]) -> Iterator[str]:
    """``segments.tsv``: ids, languages, final score, runs ok and failed, then ``score:JUDGE``
    for each of ``score_columns`` (a panel's judges; none for one judge)."""
    yield "\t".join([*SegmentRow.HEADER, *(f"score:{j}" for j in score_columns)]) + "\n"
    for r in rows:
        cells = [tsv_text(r.system), tsv_text(r.doc_id), tsv_text(r.seg_id), tsv_text(r.src_lang),
                 tsv_text(r.tgt_lang), format_cell(r.score), str(r.runs_ok), str(r.runs_failed)]
        yield "\t".join(cells + [format_cell(r.judge_scores.get(j)) for j in score_columns]) + "\n"


def system_lines(rows: Sequence[SystemRow]) -> Iterator[str]:
    """``systems.tsv``: one row per system, best first."""
    yield "\t".join(SYSTEMS_HEADER) + "\n"
    for s in rows:
        yield f"{tsv_text(s.system)}\t{format_cell(s.score)}\t{s.n_segments}\t{s.n_unscored}\n"


def aggregate_lines(items: Sequence[Item], tables: Mapping[str, Mapping[str, np.ndarray]]) -> Iterator[str]:
    """``aggregates.tsv``: per judge and item, the score of each aggregator over the runs."""
    names = list(next(iter(tables.values())))
    yield "\t".join([*AGGREGATES_KEYS, *names]) + "\n"
    for judge, table in tables.items():
        for i, it in enumerate(items):
            vals = [float(table[n][i]) for n in names]
            yield "\t".join([judge, tsv_text(it.system), tsv_text(it.doc_id), tsv_text(it.seg_id),
                             *(format_cell(None if math.isnan(v) else v) for v in vals)]) + "\n"


def merged_lines(rows: Sequence[MergedRow]) -> Iterator[str]:
    """``merged.jsonl``: a judge's annotation of an item merged over its runs, one per line."""
    for m in rows:
        yield json.dumps({"item_index": m.item_index, "judge": m.judge, "system": m.system, "seg_id": m.seg_id,
                          "annotation": m.annotation}, ensure_ascii=False) + "\n"
