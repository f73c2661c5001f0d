"""The WMT25 task-2 TSV (``export --to task2``, a run's ``spans.tsv``) reads back equal (issue 43, item 5):
texts holding tabs, quotes, line ends (LF, CR, CR LF), ``<v>`` markup and non-BMP characters."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from polyjudge.data.spans import Span, SpanSegment, read_task2_tsv, write_task2_tsv

_PIECES = ["a", " ", "\t", "\n", "\r", "\r\n", '"', "<v>", "</v>", "\U0001f600", "\u2028", "\x85", "é"]
_text = st.lists(st.sampled_from(_PIECES), max_size=8).map("".join)


def _segment(k: int, text: str, source: str, spans: tuple[Span, ...]) -> SpanSegment:
    return SpanSegment(system=f"sys{k % 2}", doc_id=f"doc{k // 2}", seg_id=str(k % 2 + 1), spans=spans,
                       lp="zh-en", hypothesis=text, source=source)


def test_a_carriage_return_inside_a_text_reads_back(tmp_path):
    # before: "a\rb" made the file unreadable ("malformed TSV: new-line character seen in unquoted field")
    # and "a\r\nb" read back as "a\nb"
    segs = [_segment(k, t, t, (Span(0, 1, "minor"),)) for k, t in enumerate(["a\rb", "a\r\nb", "tail\r"])]
    write_task2_tsv(tmp_path / "spans.tsv", segs)
    got, warnings = read_task2_tsv(tmp_path / "spans.tsv")
    assert [(s.hypothesis, s.source) for s in got] == [(s.hypothesis, s.source) for s in segs] and not warnings


_spans = st.lists(st.tuples(st.integers(0, 20), st.integers(1, 20), st.sampled_from(["minor", "major"])),
                  max_size=3).map(lambda xs: tuple(Span(min(a, b), max(a, b) + 1, sev) for a, b, sev in xs))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_text, _text, _spans), min_size=1, max_size=5))
def test_task2_tsv_reads_back_equal(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("t2") / "spans.tsv"
    segs = [_segment(k, text, source, spans) for k, (text, source, spans) in enumerate(rows)]
    write_task2_tsv(path, segs)
    got, _ = read_task2_tsv(path)
    assert [(s.system, s.doc_id, s.seg_id, s.lp, s.hypothesis, s.source, s.spans) for s in got] == \
        [(s.system, s.doc_id, s.seg_id, s.lp, s.hypothesis, s.source, s.spans) for s in segs]
