"""span-f1 refuses impossible spans and empty comparisons (issue 13, items 10 and 13).

Impossible spans (start > end, negative start, an end past the gold hypothesis, a
task-2 row whose start/end/type lists differ in length) are input errors naming
file, line and field; the official scorer would read them as Python slices.
Valid input scores exactly as before (the rest of the rules: test_span_f1.py).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from polyjudge.api import SpanF1Config, span_f1
from polyjudge.data.errors import MAX_MESSAGE, InputError
from polyjudge.data.spans import check_span
from polyjudge.metaeval.spans import (
    Span,
    SpanSegment,
    char_f1_reference,
    read_span_jsonl,
    read_spans,
    read_task2_tsv,
    write_task2_tsv,
)
from polyjudge.metaeval.spans import span_f1 as score_segments

GOLD = [SpanSegment("A", "d", "1", (Span(0, 4, "major"),), lp="en-de", hypothesis="0123456789"),
        SpanSegment("A", "d", "2", (Span(2, 5, "minor"),), lp="en-de", hypothesis="abcdefghij")]


def _task2(tmp_path: Path, name: str, bounds: tuple[str, str, str] | None = None) -> Path:
    """The gold as a task-2 TSV; ``bounds`` replaces the spans of the first row."""
    path = tmp_path / name
    write_task2_tsv(path, GOLD)
    if bounds is not None:
        lines = path.read_text(encoding="utf-8").splitlines()
        cells = lines[1].split("\t")
        cells[-3:] = bounds
        lines[1] = "\t".join(cells)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# ------------------------------------------------------------------ item 10: impossible spans
@pytest.mark.parametrize("bounds,field,words", [
    (("5", "2", "major"), "end_indices", "before its start"),
    (("-2", "4", "major"), "start_indices", "negative"),
    (("0 3", "4", "major major"), "end_indices", "2 start, 1 end"),
    (("0 3", "4 5", "major"), "error_types", "1 error type"),
    (("0", "x", "major"), "end_indices", "integers"),
    (("0", "4", "huge"), "error_types", "unknown severity"),
])
def test_task2_rows_with_impossible_spans_are_refused(tmp_path, bounds, field, words):
    path = _task2(tmp_path, "bad.tsv", bounds)
    with pytest.raises(InputError, match=words) as err:
        read_task2_tsv(path)
    assert (err.value.path, err.value.line, err.value.field) == (str(path), 2, field)


def test_an_end_past_the_gold_hypothesis_is_refused(tmp_path):
    gold = _task2(tmp_path, "gold.tsv")
    past = _task2(tmp_path, "past.tsv", ("0", "12", "major"))
    read_task2_tsv(past)  # 12 alone is possible: the gold's length decides
    with pytest.raises(InputError, match="ends past the hypothesis") as err:
        span_f1(SpanF1Config(gold=gold, pred=past))
    assert (err.value.path, err.value.line, err.value.field) == (str(past), 2, "end_indices")
    # in the gold itself, and in JSONL predictions
    with pytest.raises(InputError, match="ends past") as err:
        span_f1(SpanF1Config(gold=past, pred=gold))
    assert (err.value.path, err.value.line) == (str(past), 2)
    pred = tmp_path / "p.jsonl"
    pred.write_text(json.dumps({"system": "A", "doc_id": "d", "seg_id": "2", "lp": "en-de",
                                "spans": [{"start": 8, "end": 11, "severity": "minor"}]}) + "\n")
    with pytest.raises(InputError, match="ends past") as err:
        span_f1(SpanF1Config(gold=gold, pred=pred))
    assert (err.value.path, err.value.line, err.value.field) == (str(pred), 1, "end")
    # spans built in Python are checked too, and named by their ids
    with pytest.raises(InputError, match="seg_id='1'.*ends past"):
        score_segments(GOLD, [replace(GOLD[0], spans=(Span(0, 11, "major"),))])


def test_jsonl_spans_reversed_or_negative_are_refused(tmp_path):
    p = tmp_path / "p.jsonl"
    for span, field in (({"start": 5, "end": 2}, "end"), ({"start": -1, "end": 2}, "start"),
                        ({"start_i": 3, "end_i": 1}, "end")):
        p.write_text('{"system": "A"}\n' + json.dumps({"system": "A", "spans": [dict(span, severity="minor")]})
                     + "\n")
        with pytest.raises(InputError) as err:
            read_span_jsonl(p)
        assert (err.value.path, err.value.line, err.value.field) == (str(p), 2, field)
    p.write_text(json.dumps({"system": "A", "length": "ten"}) + "\n")
    with pytest.raises(InputError) as err:
        read_span_jsonl(p)
    assert err.value.field == "length"


def _run(tmp_path: Path, annotations, protocol: str = "tsa", statuses=None) -> Path:
    """A run directory with one judgment per gold segment (run index 0, judge m)."""
    from polyjudge.data.records import Item
    from polyjudge.engine.result import RunResult
    from polyjudge.protocols import get_protocol
    from polyjudge.rundir import OK, Manifest
    from tests.helpers.judgments import judgment_at

    items = [Item(src="s", tgt=g.hypothesis or "", src_lang="en", tgt_lang="de", system=g.system,
                  doc_id=g.doc_id, seg_id=g.seg_id) for g in GOLD]
    statuses = statuses or [OK] * len(items)
    judgments = [judgment_at(items, i, 0, "m", st, None if st == OK else "HTTP 503", "", ann if st == OK else None,
                          -1.0 if st == OK else None)
                 for i, (ann, st) in enumerate(zip(annotations, statuses))]
    out = tmp_path / f"run-{protocol}-{len(list(tmp_path.iterdir()))}"
    RunResult(items, ["m"], get_protocol(protocol), 1, "mean", judgments,
              manifest=Manifest(protocol=protocol)).write(out)
    return out


def _bad_run_line(run: Path, span: dict) -> Path:
    """Replace the first judgment's spans in judgments.jsonl by ``span`` (as a hand edit would)."""
    path = run / "judgments.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    rec = json.loads(lines[0])
    rec["annotation"]["spans"] = [span]
    lines[0] = json.dumps(rec)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_run_predictions_with_impossible_spans_name_the_judgment_line(tmp_path):
    gold = _task2(tmp_path, "gold.tsv")
    ok = {"spans": [{"start": 0, "end": 4, "severity": "major", "category": "x"}]}
    run = _run(tmp_path, [ok, {"spans": []}])
    assert span_f1(SpanF1Config(gold=gold, pred=run)).avg_f1 == pytest.approx(2 * 4 / 7 / (1 + 4 / 7))
    for span, field, words in (({"start": 6, "end": 3, "severity": "major"}, "end", "before its start"),
                               ({"start": -1, "end": 3, "severity": "major"}, "start", "negative"),
                               ({"start": 1, "end": None, "severity": "major"}, "end", "no end"),
                               ({"start": "one", "end": 3, "severity": "major"}, "start", "integer"),
                               ({"start": 0, "end": 30, "severity": "major"}, "end", "ends past")):
        judgments = _bad_run_line(run, span)
        with pytest.raises(InputError, match=words) as err:
            span_f1(SpanF1Config(gold=gold, pred=run))
        assert (err.value.path, err.value.line, err.value.field) == (str(judgments), 1, field)


# ------------------------------------------------------------------ item 10: nothing to score
def test_nothing_to_score_is_an_input_error_never_nan(tmp_path):
    from polyjudge.rundir import REQUEST_FAILED

    gold = _task2(tmp_path, "gold.tsv")
    header_only = tmp_path / "empty.tsv"
    header_only.write_text(gold.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="no gold segments") as err:
        span_f1(SpanF1Config(gold=header_only, pred=gold))
    assert err.value.path == str(header_only)
    # every judgment failed: no prediction at all, and the failures are said
    failed = _run(tmp_path, [None, None], statuses=[REQUEST_FAILED, REQUEST_FAILED])
    with pytest.raises(InputError, match="request_failed=2") as err:
        span_f1(SpanF1Config(gold=gold, pred=failed))
    assert err.value.path == str(failed)
    # a run of a protocol without spans
    mqm = _run(tmp_path, [{"errors": {"major": [], "minor": [], "critical": []}}] * 2, protocol="mqm")
    with pytest.raises(InputError, match="protocol 'mqm', which produces no error spans") as err:
        span_f1(SpanF1Config(gold=gold, pred=mqm))
    assert err.value.field == "protocol"
    # predictions that match no gold segment (another language pair)
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"system": "A", "doc_id": "d", "seg_id": "1", "lp": "en-zh", "spans": []}) + "\n")
    with pytest.raises(InputError, match="no prediction matches a gold segment.*en-de"):
        span_f1(SpanF1Config(gold=gold, pred=other))
    # a set_id filter that keeps nothing says which sets there are
    with pytest.raises(InputError, match="found: official") as err:
        span_f1(SpanF1Config(gold=gold, pred=gold, set_id="test"))
    assert err.value.field == "set_id"
    # whatever the reason, a result never carries NaN
    res = span_f1(SpanF1Config(gold=gold, pred=gold))
    assert not any(isinstance(v, float) and math.isnan(v) for v in res.as_dict().values())


# ------------------------------------------------------------------ valid input: unchanged scores
def test_valid_spans_score_as_the_official_rules(tmp_path):
    gold = _task2(tmp_path, "gold.tsv")
    # zero-length spans, "missing" spans and spans that end exactly at the text end are valid
    pred = _task2(tmp_path, "pred.tsv", ("3 missing 6", "3 missing 10", "major minor minor"))
    res = span_f1(SpanF1Config(gold=gold, pred=pred)).scores.per_lp["en-de"]
    want = char_f1_reference([10, 10], [g.spans for g in GOLD],
                             [(Span(3, 3, "major"), Span(None, None, "minor"), Span(6, 10, "minor")),
                              GOLD[1].spans])
    assert (res.precision, res.recall, res.f1) == pytest.approx(want)
    check_span(Span(0, 10, "major"), length=10)
    check_span(Span(10, 10, "major"), length=10)


# ------------------------------------------------------------------ item 13: text input
def test_task2_with_bom_and_crlf_reads_like_plain(tmp_path):
    plain = _task2(tmp_path, "plain.tsv")
    odd = tmp_path / "odd.tsv"
    odd.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes().replace(b"\n", b"\r\n"))
    a, _ = read_task2_tsv(plain)
    b, _ = read_task2_tsv(odd)
    assert [(s.system, s.seg_id, s.hypothesis, s.spans) for s in a] == [
        (s.system, s.seg_id, s.hypothesis, s.spans) for s in b]
    assert read_spans(odd)[0][0].spans == GOLD[0].spans  # the format is recognised despite the BOM


def test_task2_bad_bytes_and_huge_lines(tmp_path):
    plain = _task2(tmp_path, "plain.tsv")
    bad = tmp_path / "bad.tsv"
    bad.write_bytes(plain.read_bytes().replace(b"abcdefghij", b"abc\xffdefghi"))
    with pytest.raises(InputError) as err:
        span_f1(SpanF1Config(gold=bad, pred=plain))
    assert (err.value.path, err.value.line) == (str(bad), 3) and "column" in str(err.value)
    with pytest.raises(InputError) as err:
        span_f1(SpanF1Config(gold=plain, pred=bad))
    assert err.value.line == 3
    wide = tmp_path / "wide.tsv"
    wide.write_text("start_indices\t" + "\t".join("c" * 300 for _ in range(20000)) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_task2_tsv(wide)
    assert len(str(err.value)) <= MAX_MESSAGE + 100


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=400), st.sampled_from([b"", b"\xef\xbb\xbf"]), st.booleans())
def test_random_bytes_after_a_task2_header_give_segments_or_an_input_error(tmp_path, blob, bom, crlf):
    header = "\t".join(("doc_id", "segment_id", "source_lang", "target_lang", "set_id", "system_id",
                        "hypothesis_segment", "start_indices", "end_indices", "error_types")).encode()
    p = tmp_path / "fuzz.tsv"
    p.write_bytes(bom + header + (b"\r\n" if crlf else b"\n") + blob)
    try:
        segs, _ = read_task2_tsv(p)
    except InputError as exc:
        assert "\n" not in str(exc) and len(str(exc)) <= 2 * MAX_MESSAGE
    else:
        for s in segs:
            for sp in s.spans:
                check_span(sp)


def test_span_f1_asks_its_caller_which_protocols_write_spans(tmp_path):
    """Span F1 imports no protocol: the refusal of a spanless run follows the SpanProtocols given."""
    from polyjudge.api.spans import SPAN_PROTOCOLS
    from polyjudge.metaeval.spans import SpanProtocols, read_run_predictions

    ann = {"spans": [{"start": 0, "end": 4, "severity": "major"}]}
    run = _run(tmp_path, [ann, ann], protocol="mqm")  # spans in the annotations, whatever the manifest says
    asked: list[str] = []

    def says(answer: bool | None) -> SpanProtocols:
        return SpanProtocols(lambda name: asked.append(name) or answer, lambda: ["x-spans", "y-spans"])

    with pytest.raises(InputError, match=r"protocol 'mqm', which produces no error spans; .*\(x-spans, y-spans\)"):
        read_run_predictions(run, protocols=says(False))
    assert asked == ["mqm"]
    for protocols in (None, says(None), says(True)):  # nobody asked, a plugin not installed here, a span protocol
        segs, status = read_run_predictions(run, protocols=protocols)
        assert [s.spans for s in segs] == [(Span(0, 4, "major"),)] * 2 and status == {"ok": 2}
    # the API's answers come from the protocol registry
    assert SPAN_PROTOCOLS.produces_spans("mqm") is False and SPAN_PROTOCOLS.produces_spans("tsa") is True
    assert SPAN_PROTOCOLS.produces_spans("no-such-protocol") is None
    assert {"tsa", "gemba-esa"} <= set(SPAN_PROTOCOLS.names()) and "mqm" not in SPAN_PROTOCOLS.names()
