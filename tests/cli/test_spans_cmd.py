"""``polyjudge span-f1`` end to end on small files and on TED gold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from polyjudge.cli.main import main

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
TED_ZHEN = DATA / "wmt-mqm" / "ted" / "zhen" / "mqm_ted_zhen.tsv"


def run(argv, capsys):
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
