"""``polyjudge span-f1`` end to end on small files and on TED gold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from polyjudge.cli.main import main

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
TED_ZHEN = DATA / "wmt-mqm" / "ted" / "zhen" / "mqm_ted_zhen.tsv"


def run(argv, capsys):
    """span-f1's output as these tests parse it: JSON unless they ask for another format (text is the default)."""
    if "--format" not in argv:
        argv = [*argv, "--format", "json"]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_span_f1_jsonl_and_run_dir(tmp_path, capsys):
    gold = tmp_path / "gold.jsonl"
    gold.write_text("\n".join(json.dumps(x) for x in [
        {"system": "A", "doc_id": "d", "seg_id": "1", "lp": "en-de", "hypothesis": "0123456789",
         "spans": [{"start": 0, "end": 4, "severity": "major"}]},
        {"system": "A", "doc_id": "d", "seg_id": "2", "lp": "en-de", "hypothesis": "0123456789",
         "spans": []}]) + "\n")
    rd = tmp_path / "run"
    rd.mkdir()
    lines = [{"item_index": 0, "system": "A", "doc_id": "d", "seg_id": "1", "run_index": r,
              "judge": "m", "status": "ok",
              "annotation": {"spans": [{"start": 0, "end": 4, "severity": sev}]}}
             for r, sev in enumerate(["minor", "minor", "major"])]
    lines.append({"item_index": 1, "system": "A", "doc_id": "d", "seg_id": "2", "run_index": 0,
                  "judge": "m", "status": "parse_failed", "annotation": None})
    (rd / "judgments.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    out_tsv = tmp_path / "pred.tsv"
    code, out, err = run(["span-f1", "--gold", str(gold), "--pred", str(rd),
                          "--write-tsv", str(out_tsv)], capsys)
    assert code == 0, err
    res = json.loads(out)
    # runs voted: minor (2 of 3) over 0-3 against major gold -> half credit
    assert res["en-de"]["precision"] == 0.5 and res["en-de"]["recall"] == 0.5
    assert res["en-de"]["missing_predictions"] == 1 and res["avg_f1"] == 0.5
    assert "parse_failed=1" in res["warnings"][0]
    code, out, _ = run(["span-f1", "--gold", str(gold), "--pred", str(out_tsv)], capsys)
    assert json.loads(out)["avg_f1"] == 0.5
    code, out, err = run(["span-f1", "--gold", str(gold), "--pred", str(rd), "--missing", "error"], capsys)
    assert code == 2 and "no prediction" in err


def test_span_f1_ted_gold_against_itself(capsys):
    if not TED_ZHEN.is_file():
        pytest.skip("../shared/data/wmt-mqm/ted is absent")
    code, out, err = run(["span-f1", "--gold", str(TED_ZHEN), "--pred", str(TED_ZHEN)], capsys)
    assert code == 0, err
    res = json.loads(out)
    assert res["zh-en"]["f1"] == 1.0 and res["avg_precision"] == 1.0 and res["avg_recall"] == 1.0


def _small_files(tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"system": "A", "doc_id": "d", "seg_id": "1", "lp": "en-de",
                                "hypothesis": "0123456789", "spans": [{"start": 0, "end": 4, "severity": "major"}]})
                    + "\n")
    pred = tmp_path / "pred.jsonl"
    pred.write_text(json.dumps({"system": "A", "doc_id": "d", "seg_id": "1", "lp": "en-de",
                                "spans": [{"start": 0, "end": 2, "severity": "major"}]}) + "\n")
    return gold, pred


def test_legacy_p_still_works_with_a_warning(tmp_path, capsys):
    gold, pred = _small_files(tmp_path)
    code, out, err = run(["span-f1", "--gold", str(gold), "-p", str(pred)], capsys)
    assert code == 0, err
    assert "-p is deprecated" in err and "use --pred" in err
    assert json.loads(out)["en-de"]["recall"] == 0.5
    code, _, err = run(["span-f1", "--gold", str(gold)], capsys)
    assert code == 2 and "--pred" in err


def test_tsv_text_and_out(tmp_path, capsys):
    gold, pred = _small_files(tmp_path)
    code, out, err = run(["span-f1", "--gold", str(gold), "--pred", str(pred), "--format", "tsv"], capsys)
    assert code == 0, err
    lines = [x.split("\t") for x in out.splitlines()]
    assert lines[0][:4] == ["lp", "precision", "recall", "f1"] and lines[1][:3] == ["en-de", "1", "0.5"]
    assert lines[2][0] == "avg"
    code, out, _ = run(["span-f1", "--gold", str(gold), "--pred", str(pred), "--format", "text"], capsys)
    assert out.split()[:4] == ["lp", "precision", "recall", "f1"]
    code, out, err = run(["span-f1", "--gold", str(gold), "--pred", str(pred), "-o", str(tmp_path / "s.json")], capsys)
    assert code == 0 and out == "" and json.loads((tmp_path / "s.json").read_text())["avg_recall"] == 0.5


def test_nothing_to_score_exits_2_without_nan(tmp_path, capsys):
    gold, pred = _small_files(tmp_path)
    header_only = tmp_path / "gold.tsv"
    header_only.write_text("doc_id\tsegment_id\tsource_lang\ttarget_lang\tsystem_id\tstart_indices\tend_indices"
                           "\terror_types\n", encoding="utf-8")
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"system": "B", "doc_id": "d", "seg_id": "1", "lp": "en-de", "spans": []}) + "\n")
    for g, p, words in ((header_only, pred, "no gold segments"), (gold, other, "no prediction matches")):
        code, out, err = run(["span-f1", "--gold", str(g), "--pred", str(p)], capsys)
        assert code == 2 and out == "" and words in err and "NaN" not in err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_impossible_spans_exit_2_naming_file_line_and_field(tmp_path, capsys):
    gold, _ = _small_files(tmp_path)
    pred = tmp_path / "rev.jsonl"
    pred.write_text(json.dumps({"system": "A", "doc_id": "d", "seg_id": "1", "lp": "en-de",
                                "spans": [{"start": 6, "end": 2, "severity": "major"}]}) + "\n")
    code, out, err = run(["span-f1", "--gold", str(gold), "--pred", str(pred)], capsys)
    assert code == 2 and out == "" and f"{pred}:1, field 'end'" in err and "before its start" in err


def test_random_gold_files_exit_0_or_2_with_one_line(tmp_path_factory, capsys):
    """Random task-2 rows, bytes, BOMs and CRLF as gold: scores or one line, never a
    traceback, never NaN. 100 generated cases."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    header = (b"doc_id\tsegment_id\tsource_lang\ttarget_lang\tset_id\tsystem_id\thypothesis_segment\t"
              b"start_indices\tend_indices\terror_types")
    cell = st.sampled_from([b"0", b"3", b"-1", b"12", b"missing", b"", b"0 4", b"x", b"\xff"])
    kind = st.sampled_from([b"major", b"minor", b"no-error", b"major minor", b"Huge", b""])
    row = st.tuples(cell, cell, kind).map(
        lambda r: b"d\t1\ten\tde\tofficial\tA\t0123456789\t" + b"\t".join(r))
    body = st.lists(row, max_size=3).map(lambda rs: b"\n".join(rs)) | st.binary(max_size=150)

    @settings(max_examples=100, deadline=None)
    @given(st.sampled_from([b"", b"\xef\xbb\xbf"]), body, st.booleans())
    def check(bom, rows, crlf):
        d = tmp_path_factory.mktemp("fuzz")
        gold = d / "gold.tsv"
        end = b"\r\n" if crlf else b"\n"
        gold.write_bytes(bom + header + end + rows.replace(b"\n", end) + end)
        code, out, err = run(["span-f1", "--gold", str(gold), "--pred", str(gold), "--gold-format", "task2",
                              "--pred-format", "task2"], capsys)
        assert code in (0, 2), err
        assert "Traceback" not in err and "NaN" not in out
        if code == 2:
            assert out == "" and len(err.strip().splitlines()) == 1

    check()


def test_missing_predictions_are_scored_as_empty_and_reported(tmp_path, capsys):
    """The official scorer's rule by default: a failed item predicts no errors (its gold is missed)."""
    gold = tmp_path / "gold.jsonl"
    gold.write_text("\n".join(json.dumps({"system": "A", "doc_id": "d", "seg_id": str(i), "lp": "en-de",
                                          "hypothesis": "0123456789",
                                          "spans": [{"start": 0, "end": 4, "severity": "major"}]})
                              for i in (1, 2)) + "\n")
    pred = tmp_path / "pred.jsonl"
    pred.write_text(json.dumps({"system": "A", "doc_id": "d", "seg_id": "1", "lp": "en-de",
                                "spans": [{"start": 0, "end": 4, "severity": "major"}]}) + "\n")
    code, out, err = run(["span-f1", "--gold", str(gold), "--pred", str(pred)], capsys)
    assert code == 0, err
    res = json.loads(out)
    # tp 4 of 8 gold characters: R = 0.5, P = 1, F1 = 2/3
    assert res["en-de"]["recall"] == 0.5 and res["en-de"]["precision"] == 1.0
    assert res["en-de"]["missing_predictions"] == 1 and res["missing_policy"] == "empty"
    code, out, _ = run(["span-f1", "--gold", str(gold), "--pred", str(pred), "--format", "text"], capsys)
    assert "gold segments without a prediction: 1 (scored as predicting no errors)" in out
    code, out, _ = run(["span-f1", "--gold", str(gold), "--pred", str(pred), "--missing", "skip"], capsys)
    assert json.loads(out)["en-de"]["f1"] == 1.0 and json.loads(out)["en-de"]["missing_predictions"] == 1


def _two_rater_files(tmp_path):
    """ESA JSONL gold of two annotators who marked different spans, predictions matching ann2's."""
    gold, pred = tmp_path / "gold.jsonl", tmp_path / "pred.jsonl"
    seg = {"system": "A", "doc_id": "d", "seg_id": "1", "lp": "en-de", "hypothesis": "0123456789"}
    gold.write_text("\n".join(json.dumps({**seg, "annotator": a, "spans": [sp]}) for a, sp in [
        ("ann1", {"start": 0, "end": 4, "severity": "major"}),
        ("ann2", {"start": 5, "end": 9, "severity": "major"})]) + "\n")
    pred.write_text(json.dumps({**seg, "spans": [{"start": 5, "end": 9, "severity": "major"}]}) + "\n")
    return gold, pred


def test_raters_name_scores_that_rater(tmp_path, capsys):
    """span-f1 --raters NAME scores against one rater's spans (issue 43 item 5; was: not a choice, exit 2)."""
    gold, pred = _two_rater_files(tmp_path)
    code, out, err = run(["span-f1", "-g", str(gold), "--pred", str(pred), "--raters", "ann2"], capsys)
    assert code == 0, err
    assert json.loads(out)["en-de"]["f1"] == pytest.approx(1.0)
    code, out, _ = run(["span-f1", "-g", str(gold), "--pred", str(pred), "--raters", "ann1"], capsys)
    assert code == 0 and json.loads(out)["en-de"]["f1"] == pytest.approx(0.0)


def test_raters_unknown_name_exits_2_listing_the_raters(tmp_path, capsys):
    gold, pred = _two_rater_files(tmp_path)
    code, out, err = run(["span-f1", "-g", str(gold), "--pred", str(pred), "--raters", "ann3"], capsys)
    assert code == 2 and out == ""
    assert "ann3" in err and "'ann1', 'ann2'" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_raters_name_in_a_wmt_mqm_file(tmp_path, capsys):
    head = "system\tdoc\tdoc_id\tseg_id\trater\tsource\ttarget\tcategory\tseverity\n"
    rows = ["A\td\t1\t1\tr1\tsrc\t<v>bad</v> text here\tAccuracy/Mistranslation\tMajor",
            "A\td\t1\t1\tr2\tsrc\tbad text <v>here</v>\tAccuracy/Mistranslation\tMajor"]
    gold = tmp_path / "mqm_x_ende.tsv"
    gold.write_text(head + "\n".join(rows) + "\n")
    pred = tmp_path / "pred.jsonl"
    pred.write_text(json.dumps({"system": "A", "doc_id": "d", "seg_id": "1", "lp": "en-de",
                                "hypothesis": "bad text here",
                                "spans": [{"start": 9, "end": 13, "severity": "major"}]}) + "\n")
    code, out, err = run(["span-f1", "-g", str(gold), "--pred", str(pred), "--raters", "r2"], capsys)
    assert code == 0, err
    assert json.loads(out)["en-de"]["f1"] == pytest.approx(1.0)
    code, out, err = run(["span-f1", "-g", str(gold), "--pred", str(pred), "--raters", "nobody"], capsys)
    assert code == 2 and "'r1', 'r2'" in err
