"""One rendering per run-directory table: the lines of ``segments.tsv``, ``systems.tsv``,
``aggregates.tsv`` and ``merged.jsonl``.

The run directory's writer (:func:`polyjudge.rundir.directory.write_run`) and the
registered output writers (:mod:`polyjudge.rundir.writers`: ``segments-tsv`` …)
both render these files through the functions here, so a file has one layout
whichever path writes it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from polyjudge.data.records import Item
from polyjudge.rundir.records import MergedRow, SegmentRow, SystemRow, format_cell, tsv_text

if TYPE_CHECKING:  # numpy is imported where it computes: writing a run's files needs none
    import numpy as np

# json.dumps(obj, ensure_ascii=False), without a new encoder for each line.
_ENCODE = json.JSONEncoder(ensure_ascii=False).encode
SYSTEMS_HEADER = ("system", "score", "n_segments", "n_unscored")
SETTLED_HEADER = ("low", "high", "group")  # a run judged --until-settled
AGGREGATES_KEYS = ("judge", "system", "doc_id", "seg_id")


def segment_lines(rows: Sequence[SegmentRow], score_columns: Sequence[str]) -> Iterator[str]:
    """``segments.tsv``: ids, languages, final score, runs ok and failed, then ``score:JUDGE``
    for each of ``score_columns`` (a panel's judges; none for one judge)."""
    yield "\t".join([*SegmentRow.HEADER, *(f"score:{j}" for j in score_columns)]) + "\n"
    cell = _cells()
    for r in rows:
        # tsv_text and format_cell of each value, the common ones (a text without a tab or line break, a
        # float) written at once (tests/rundir/test_render_fast.py)
        cells = [v if type(v) is str and "\t" not in v and "\n" not in v else tsv_text(v)
                 for v in (r.system, r.doc_id, r.seg_id, r.src_lang, r.tgt_lang)]
        score = r.score
        cells += [cell(score) if type(score) is float else format_cell(score), str(r.runs_ok), str(r.runs_failed)]
        if score_columns:
            cells += [format_cell(r.judge_scores.get(j)) for j in score_columns]
        yield "\t".join(cells) + "\n"


def system_lines(rows: Sequence[SystemRow]) -> Iterator[str]:
    """``systems.tsv``: one row per system, best first; with the interval of the full test set's score and
    the rank group when the run was judged ``--until-settled`` (any row has a group)."""
    settled = any(s.group is not None for s in rows)
    yield "\t".join(SYSTEMS_HEADER + (SETTLED_HEADER if settled else ())) + "\n"
    for s in rows:
        more = (f"\t{format_cell(s.low)}\t{format_cell(s.high)}\t{'' if s.group is None else s.group}"
                if settled else "")
        yield f"{tsv_text(s.system)}\t{format_cell(s.score)}\t{s.n_segments}\t{s.n_unscored}{more}\n"


def aggregate_lines(items: Sequence[Item], tables: Mapping[str, Mapping[str, np.ndarray]]) -> Iterator[str]:
    """``aggregates.tsv``: per judge and item, the score of each aggregator over the runs."""
    names = list(next(iter(tables.values())))
    yield "\t".join([*AGGREGATES_KEYS, *names]) + "\n"
    cell = _cells()
    for judge, table in tables.items():
        import numpy as np

        columns = [np.asarray(table[n], dtype=np.float64).tolist() for n in names]  # Python floats, once
        for it, vals in zip(items, zip(*columns) if columns else ((),) * len(items)):
            yield "\t".join([judge, tsv_text(it.system), tsv_text(it.doc_id), tsv_text(it.seg_id),
                             *map(cell, vals)]) + "\n"


def _cells() -> Callable[[float], str]:
    """``format_cell`` of a float (NaN: empty), each value formatted once while it repeats (scores are few
    distinct numbers); zeros are formatted each time, since ``-0.0 == 0.0`` would share a string."""
    seen: dict[float, str] = {}

    def cell(v: float) -> str:
        if v != v:
            return ""
        if v == 0.0:
            return format_cell(v)
        found = seen.get(v)
        if found is None:
            found = format_cell(v)
            if len(seen) < 100_000:
                seen[v] = found
        return found

    return cell


def merged_lines(rows: Sequence[MergedRow]) -> Iterator[str]:
    """``merged.jsonl``: a judge's annotation of an item merged over its runs, one per line."""
    for m in rows:
        yield _ENCODE({"item_index": m.item_index, "judge": m.judge, "system": m.system, "seg_id": m.seg_id,
                       "annotation": m.annotation}) + "\n"
