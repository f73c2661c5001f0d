"""WMT25 character-level span F1: every rule on hand-worked cases, plus TED gold."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polyjudge.data.errors import InputError
from polyjudge.metaeval.spans import (
    Span,
    SpanSegment,
    char_counts,
    char_f1_reference,
    read_run_predictions,
    read_span_jsonl,
    read_spans,
    read_task2_tsv,
    score_lp,
    span_f1,
    write_task2_tsv,
)

DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"
TED_ENDE = DATA / "wmt-mqm" / "ted" / "ende" / "mqm_ted_ende.tsv"


def S(a, b, sev="major"):
    return Span(a, b, sev)


def one(length, gold, pred):
    r = score_lp([length], [gold], [pred])
    return r.precision, r.recall, r.f1, r.tp


# ------------------------------------------------------------------ rules, hand-worked
def test_exact_match_is_perfect():
    assert one(10, [S(2, 6)], [S(2, 6)]) == (1.0, 1.0, 1.0, 4.0)


def test_partial_overlap_same_severity():
    # gold chars 0-9, pred 5-14: 5 shared of 10 each
    p, r, f, tp = one(20, [S(0, 10)], [S(5, 15)])
    assert (p, r, f, tp) == (0.5, 0.5, 0.5, 5.0)


def test_severity_mismatch_gets_half_credit():
    p, r, f, tp = one(10, [S(0, 4, "major")], [S(0, 4, "minor")])
    assert tp == 2.0 and p == 0.5 and r == 0.5 and f == 0.5


def test_critical_counts_as_major():
    assert one(10, [S(0, 4, "critical")], [S(0, 4, "major")])[2] == 1.0


def test_overlapping_gold_spans_count_twice():
    # gold counts per char: 1 1 2 2 1 1 (total 8); pred 1 on 0-5 (total 6)
    p, r, f, tp = one(8, [S(0, 4), S(2, 6)], [S(0, 6)])
    assert tp == 6.0 and p == 1.0 and r == 6 / 8
    assert f == pytest.approx(2 * 0.75 / 1.75)


def test_mixed_severities_on_one_character():
    # per char gold (major 1, minor 1), pred (major 2, minor 0):
    # full = 1, unmatched gold = 1 (minor), unmatched pred = 1 (major) -> +0.5
    p, r, f, tp = one(3, [S(0, 3, "major"), S(0, 3, "minor")], [S(0, 3, "major"), S(0, 3, "major")])
    assert tp == 3 * 1.5 and p == 0.75 and r == 0.75


def test_missing_undecided_and_zero_length_add_nothing():
    gold = [S(0, 4), Span(None, None, "major"), S(5, 5), S(6, 8, "undecided")]
    assert one(10, gold, [S(0, 4)]) == (1.0, 1.0, 1.0, 4.0)


def test_nothing_predicted_gives_precision_one():
    p, r, f, tp = one(10, [S(0, 4)], [])
    assert (p, r, f) == (1.0, 0.0, 0.0)


def test_segment_without_errors():
    assert one(10, [], []) == (1.0, 1.0, 1.0, 0.0)
    p, r, f, _ = one(10, [], [S(1, 3)])
    assert (p, r, f) == (0.0, 1.0, 0.0)


def test_spans_are_cut_at_gold_length_and_follow_slice_rules():
    # end past the hypothesis is cut; negative bounds count from the end like hyp[a:b]
    assert one(5, [S(3, 5)], [S(3, 99)])[:3] == (1.0, 1.0, 1.0)
    assert one(5, [S(3, 5)], [S(-2, 5)])[:3] == (1.0, 1.0, 1.0)
    assert one(5, [S(0, 2)], [S(4, 1)])[:3] == (1.0, 0.0, 0.0)  # reversed span is empty


def test_micro_within_pair_macro_across_pairs():
    a = SpanSegment("s", "d", "1", (S(0, 10),), lp="en-de", length=10)
    b = SpanSegment("s", "d", "2", (S(0, 2),), lp="en-de", length=10)
    c = SpanSegment("s", "d", "3", (S(0, 4),), lp="en-zh", length=10)
    pa = replace(a, spans=(S(0, 10),))  # 10 of 10
    pb = replace(b, spans=())  # misses 2
    pc = replace(c, spans=(S(0, 8),))  # 4 of 8 predicted
    res = span_f1([a, b, c], [pa, pb, pc])
    de, zh = res.per_lp["en-de"], res.per_lp["en-zh"]
    # micro: tp 10, gold 12, pred 10 (not the mean of per-segment F1s)
    assert (de.precision, de.recall) == (1.0, 10 / 12)
    assert (zh.precision, zh.recall) == (0.5, 1.0)
    assert res.avg_precision == pytest.approx(0.75)
    assert res.avg_recall == pytest.approx((10 / 12 + 1) / 2)
    assert res.avg_f1 == pytest.approx((de.f1 + zh.f1) / 2)
    out = res.as_dict()
    assert set(out["en-de"]) >= {"precision", "recall", "f1"} and "avg_f1" in out


def test_pairing_set_filter_and_missing_policies():
    g1 = SpanSegment("s", "d", "1", (S(0, 4),), lp="en-de", length=10, set_id="official")
    g2 = SpanSegment("s", "d", "2", (S(0, 4),), lp="en-de", length=10, set_id="official")
    g3 = SpanSegment("s", "d", "3", (S(0, 4),), lp="en-de", length=10, set_id="test")
    p1 = SpanSegment("s", "d", "1", (S(0, 4),))  # no lp: matches any pair
    # default: a missing prediction is scored as empty, as the official scorer does, and counted
    res = span_f1([g1, g2, g3], [p1])
    assert res.per_lp["en-de"].segments == 2 and res.missing_predictions["en-de"] == 1
    assert res.per_lp["en-de"].recall == 0.5 and res.missing == "empty" and res.total_missing == 1
    assert span_f1([g1, g2, g3], [p1], missing="empty").per_lp == res.per_lp
    res = span_f1([g1, g2, g3], [p1], missing="skip")
    assert res.per_lp["en-de"].segments == 1 and res.missing_predictions["en-de"] == 1
    assert res.per_lp["en-de"].f1 == 1.0 and res.as_dict()["missing_policy"] == "skip"
    with pytest.raises(InputError):
        span_f1([g1, g2], [p1], missing="error")
    res = span_f1([g1, g2, g3], [p1], set_ids=None, missing="empty")
    assert res.per_lp["en-de"].segments == 3
    # a prediction with a different pair does not match
    res = span_f1([g1], [replace(p1, lp="en-zh")])
    assert res.per_lp == {} and res.lps_without_predictions == ["en-de"]
    assert res.unmatched_predictions == 1
    with pytest.raises(InputError, match="2 predictions"):
        span_f1([g1], [p1, replace(p1)])


def test_unknown_severity_is_input_error():
    with pytest.raises(InputError):
        char_counts([3], [[Span(0, 2, "neutral")]])


# ------------------------------------------------------------------ files
def test_task2_tsv_round_trip_and_official_row_rules(tmp_path):
    segs = [SpanSegment("sysA", "doc1", "1", (S(0, 3), Span(None, None, "minor"), S(4, 6, "minor")),
                        lp="en-de", hypothesis="Hallo Welt", source="Hello world"),
            SpanSegment("sysA", "doc1", "2", (), lp="en-de", hypothesis="Tschüss")]
    path = tmp_path / "g.tsv"
    write_task2_tsv(path, segs)
    back, warns = read_task2_tsv(path)
    assert [b.spans for b in back] == [s.spans for s in segs] and warns == []
    assert back[0].hyp_length == 10 and back[0].set_id == "official"
    text = path.read_text(encoding="utf-8").splitlines()
    assert text[1].split("\t")[-3:] == ["0 missing 4", "3 missing 6", "major minor minor"]
    assert text[2].split("\t")[-3:] == ["-1", "-1", "no-error"]
    # a row with an empty entry loses all its spans, as in the official scorer
    text.append(text[1].replace("\t1\t", "\t3\t", 1).replace("0 missing 4", "0  4"))
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    back, warns = read_task2_tsv(path)
    assert back[2].spans == () and len(warns) == 1
    # bad bound
    path.write_text("\n".join(text[:2]).replace("0 missing 4", "x missing 4") + "\n", encoding="utf-8")
    with pytest.raises(InputError):
        read_task2_tsv(path)


def test_span_jsonl_ours_and_esa(tmp_path):
    path = tmp_path / "p.jsonl"
    rows = [{"system": "A", "doc_id": "d", "seg_id": 1, "lp": "en-de", "hypothesis": "abcdef",
             "spans": [{"start": 0, "end": 2, "severity": "Major"}]},
            {"system": "A", "doc_id": "d", "line_id": 2, "langs": "en-de", "tgt": "xyz",
             "esa_spans": [{"start_i": "missing", "end_i": "missing", "severity": "minor"},
                           {"start_i": 1, "end_i": 3, "severity": "undecided"}]}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    a, b = read_span_jsonl(path)
    assert a.spans == (S(0, 2),) and a.seg_id == "1" and a.hyp_length == 6
    assert b.spans == (Span(None, None, "minor"), S(1, 3, "undecided")) and b.seg_id == "2"
    path.write_text('{"system": "A", "spans": [{"start": 0, "end": 1, "severity": "huge"}]}\n')
    with pytest.raises(InputError):
        read_span_jsonl(path)


def test_run_directory_predictions(tmp_path):
    lines = [
        {"item_index": 0, "system": "A", "doc_id": "d", "seg_id": "1", "run_index": 0, "judge": "m",
         "status": "ok", "annotation": {"spans": [{"start": 0, "end": 3, "severity": "major"}]}},
        {"item_index": 1, "system": "A", "doc_id": "d", "seg_id": "2", "run_index": 0, "judge": "m",
         "status": "parse_failed", "annotation": None},
    ]
    (tmp_path / "judgments.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    segs, status = read_run_predictions(tmp_path)
    assert len(segs) == 1 and segs[0].spans == (S(0, 3),)
    assert status == {"ok": 1, "parse_failed": 1}
    segs, warns = read_spans(tmp_path)
    assert "parse_failed=1" in warns[0]
    gold = [SpanSegment("A", "d", "1", (S(0, 3),), lp="en-de", length=5),
            SpanSegment("A", "d", "2", (S(0, 3),), lp="en-de", length=5)]
    res = span_f1(gold, segs, missing="skip")
    # the failed judgment is never read as a prediction: left out with "skip" ...
    assert res.per_lp["en-de"].f1 == 1.0 and res.missing_predictions["en-de"] == 1
    # ... and by default scored as an empty prediction (the official rule), its gold span missed
    res = span_f1(gold, segs)
    assert res.per_lp["en-de"].recall == 0.5 and res.missing_predictions["en-de"] == 1


# ------------------------------------------------------------------ vectorised == loop
span_st = st.builds(Span, st.integers(-5, 40), st.integers(-5, 40),
                    st.sampled_from(["major", "minor", "critical", "undecided"])) | st.just(
    Span(None, None, "major"))
seg_st = st.tuples(st.integers(0, 30), st.lists(span_st, max_size=5), st.lists(span_st, max_size=5))


@settings(max_examples=150, deadline=None)
@given(st.lists(seg_st, min_size=1, max_size=6))
def test_vectorised_equals_per_character_loop(segs):
    lengths = [s[0] for s in segs]
    gold = [s[1] for s in segs]
    pred = [s[2] for s in segs]
    r = score_lp(lengths, gold, pred)
    ref = char_f1_reference(lengths, gold, pred)
    assert (r.precision, r.recall, r.f1) == pytest.approx(ref, abs=1e-12)


# ------------------------------------------------------------------ TED gold
@pytest.fixture(scope="module")
def ted_gold():
    if not TED_ENDE.is_file():
        pytest.skip("../shared/data/wmt-mqm/ted is absent")
    segs, _ = read_spans(TED_ENDE)
    return segs


def test_ted_gold_against_itself(ted_gold, tmp_path):
    assert ted_gold[0].lp == "en-de" and len(ted_gold) == 7406
    n_spans = sum(1 for s in ted_gold for x in s.spans if x.start is not None)
    assert n_spans > 3000
    res = span_f1(ted_gold, ted_gold)
    s = res.per_lp["en-de"]
    assert (s.precision, s.recall, s.f1) == (1.0, 1.0, 1.0) and s.segments == 7406
    # the same through the task-2 TSV
    path = tmp_path / "ted.tsv"
    write_task2_tsv(path, ted_gold)
    back, _ = read_task2_tsv(path)
    assert [b.spans for b in back] == [g.spans for g in ted_gold]
    assert span_f1(ted_gold, back).avg_f1 == 1.0


def _gold_chars(segs):
    return float(sum(min(x.end, s.hyp_length) - max(x.start, 0) for s in segs for x in s.spans
                     if x.start is not None and x.end > x.start))


def test_ted_perturbed_copies_have_known_scores(ted_gold):
    total = _gold_chars(ted_gold)
    # 1. drop the spans of every second segment: P = 1, R = kept / total
    half = [replace(s, spans=()) if i % 2 else s for i, s in enumerate(ted_gold)]
    r = span_f1(ted_gold, half).per_lp["en-de"]
    assert r.precision == 1.0 and r.recall == pytest.approx(_gold_chars(half) / total)
    # 2. swap major and minor: where no character carries both severities, tp = half the chars
    flip = {"major": "minor", "minor": "major"}
    flipped = [replace(s, spans=tuple(Span(x.start, x.end, flip[x.severity]) for x in s.spans))
               for s in ted_gold]
    lengths = [s.hyp_length for s in ted_gold]
    g = char_counts(lengths, [s.spans for s in ted_gold])
    both = np.minimum(g[0], g[1])
    expected_tp = 2 * both.sum() + 0.5 * np.abs(g[0] - g[1]).sum()
    r = span_f1(ted_gold, flipped).per_lp["en-de"]
    assert r.tp == pytest.approx(expected_tp) and r.precision == r.recall
    assert r.f1 == pytest.approx(expected_tp / total)
    # 3. predict every character of every hypothesis as one major error
    everything = [replace(s, spans=(Span(0, s.hyp_length, "major"),)) for s in ted_gold]
    r = span_f1(ted_gold, everything).per_lp["en-de"]
    assert r.recall < 1.0 and r.pred_chars == sum(lengths)
    ref = char_f1_reference(lengths, [s.spans for s in ted_gold], [s.spans for s in everything])
    assert (r.precision, r.recall, r.f1) == pytest.approx(ref)


def test_run_judgments_and_spans_tsv_agree(tmp_path):
    """The spans read from a run's judgments are the spans the run wrote to spans.tsv."""
    from polyjudge.data.records import Item
    from polyjudge.engine.result import RunResult
    from polyjudge.protocols import get_protocol
    from polyjudge.rundir import OK, REQUEST_FAILED, RunDir
    from tests.helpers.judgments import judgment_at

    items = [Item(src="a", tgt="Hallo Welt", src_lang="en", tgt_lang="de", doc_id="d", seg_id="1", system="A"),
             Item(src="b", tgt="Tschüss", src_lang="en", tgt_lang="de", doc_id="d", seg_id="2", system="A")]
    ann = {"spans": [{"start": 0, "end": 5, "severity": "minor", "category": "x"},
                     {"start": 6, "end": 6, "severity": "major", "category": "accuracy/omission"}]}
    judgments = [judgment_at(items, 0, 0, "m", OK, None, "", ann, -6.0),
                 judgment_at(items, 1, 0, "m", REQUEST_FAILED, "HTTP 503", None, None, None)]
    run = tmp_path / "run"
    RunResult(items, ["m"], get_protocol("tsa"), 1, "mean", judgments).write(run)
    written, _ = RunDir.open(run).span_segments()
    # the item without an ok judgment is left out of both, never written as "no error"
    assert len(written) == 1 and written[0].lp == "en-de" and written[0].hypothesis == "Hallo Welt"
    assert written[0].spans == (S(0, 5, "minor"), S(6, 6, "major"))
    for source in (run, run / "judgments.jsonl"):
        segs, status = read_run_predictions(source)
        assert status == {"ok": 1, "request_failed": 1}
        assert [(p.system, p.doc_id, p.seg_id, p.spans) for p in segs] == [
            (w.system, w.doc_id, w.seg_id, w.spans) for w in written]
