"""``aggregates.tsv`` is rendered from whole columns with each score formatted once while it repeats
(issue 35: a million judgments); every line is the reference rendering, value by value."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from polyjudge.data.records import Item
from polyjudge.rundir.records import format_cell, tsv_text
from polyjudge.rundir.render import AGGREGATES_KEYS, aggregate_lines


def reference_lines(items, tables):
    """The rendering before the fast path, one numpy element at a time."""
    names = list(next(iter(tables.values())))
    yield "\t".join([*AGGREGATES_KEYS, *names]) + "\n"
    for judge, table in tables.items():
        for i, it in enumerate(items):
            vals = [float(table[n][i]) for n in names]
            yield "\t".join([judge, tsv_text(it.system), tsv_text(it.doc_id), tsv_text(it.seg_id),
                             *(format_cell(None if math.isnan(v) else v) for v in vals)]) + "\n"


scores = st.sampled_from([0.0, -0.0, -1.0, -5.0, -25.0, 70.0, 1 / 3, 1e-7, -1e-7, math.nan, 1e300]) | st.floats(
    allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 12), st.lists(st.sampled_from(["mean", "rrwa", "median"]), min_size=1, max_size=3, unique=True),
       st.lists(st.sampled_from(["m", "judge\tb"]), min_size=1, max_size=2, unique=True), st.data())
def test_aggregate_lines_are_the_reference_rendering(n, names, judges, data):
    systems = st.sampled_from(["A", "B\tx", None])
    items = [Item(src_lang="en", tgt_lang="de", src="s", tgt="t", system=data.draw(systems), doc_id="d",
                  seg_id=str(i)) for i in range(n)]
    tables = {j: {name: np.array(data.draw(st.lists(scores, min_size=n, max_size=n)), dtype=np.float64)
                  for name in names} for j in judges}
    assert list(aggregate_lines(items, tables)) == list(reference_lines(items, tables))


def reference_level_scores(grid, level):
    """mt-metrics-eval's document and domain scores as computed before the one-pass grouping."""
    from polyjudge.rundir.mtme import _mean

    names = grid.docs if level == "doc" else grid.domains
    order = grid.doc_order() if level == "doc" else grid.domain_order()
    return {system: [(label, _mean([v for v, n in zip(values, names or ()) if n == label])) for label in order]
            for system, values in grid.scores.items()}


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 30), st.data())
def test_document_and_domain_scores_are_the_reference_ones(n, data):
    from polyjudge.rundir.mtme import MtmeGrid, level_scores

    values = st.none() | st.sampled_from([0.0, -0.0, -1.0, -5.0, 1 / 3, 0.1, 0.2]) | st.floats(-100, 100)
    scores = {s: data.draw(st.lists(values, min_size=n, max_size=n)) for s in ("A", "B")}
    labels = st.lists(st.sampled_from(["d1", "d2", "d3", "doc 4"]), min_size=n, max_size=n).map(tuple)
    grid = MtmeGrid(("A", "B"), n, scores, data.draw(st.none() | labels), data.draw(st.none() | labels))
    for level in ("doc", "domain"):
        got, want = level_scores(grid, level), reference_level_scores(grid, level)
        assert repr(got) == repr(want)


def reference_segment_lines(rows, score_columns):
    """``segments.tsv`` as rendered before its fast path, value by value."""
    from polyjudge.rundir.records import SegmentRow

    yield "\t".join([*SegmentRow.HEADER, *(f"score:{j}" for j in score_columns)]) + "\n"
    for r in rows:
        cells = [tsv_text(r.system), tsv_text(r.doc_id), tsv_text(r.seg_id), tsv_text(r.src_lang),
                 tsv_text(r.tgt_lang), format_cell(r.score), str(r.runs_ok), str(r.runs_failed)]
        yield "\t".join(cells + [format_cell(r.judge_scores.get(j)) for j in score_columns]) + "\n"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([None, "A", "B\tx", "l\nb", "", "é 漢", 7]),
                          st.sampled_from([None, "d1", "d\t2"]), st.sampled_from([None, "1", "2\n"]),
                          st.none() | scores | st.integers(-3, 3) | st.booleans(),
                          st.integers(0, 3), st.integers(0, 3), st.none() | scores), max_size=12),
       st.sampled_from([(), ("m",), ("m", "n")]))
def test_segment_lines_are_the_reference_rendering(given_rows, columns):
    from polyjudge.rundir.records import SegmentRow
    from polyjudge.rundir.render import segment_lines

    rows = [SegmentRow(system, doc, seg, "en", system, score, ok, failed, {"m": other})
            for system, doc, seg, score, ok, failed, other in given_rows]
    assert list(segment_lines(rows, columns)) == list(reference_segment_lines(rows, columns))
