"""End to end: ``polyjudge judge --protocol tsa`` against the scripted server, then
``polyjudge span-f1`` on the run directory; failed extractions stay failures."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from polyjudge.cli.main import cli
from tests.helpers.openai_server import ScriptedServer

ITEMS = [
    {"src": "Er kam am Dienstag an.", "tgt": "He arrived on Monday.", "seg_id": "1"},
    {"src": "Das Haus ist rot.", "tgt": "The house is red.", "seg_id": "2"},
    {"src": "Sie las das Buch.", "tgt": "She read the book.", "seg_id": "3"},
]


def responder(body: dict) -> str:
    last = body["messages"][-1]["content"]
    if "Monday" in last:  # one error, tagged after reformatting the text
        return json.dumps({"annotated_translation": "He  arrived on <v0>Monday</v0>.",
                           "errors": [{"severity": "major", "category": "accuracy/mistranslation"}]})
    if "house" in last:  # the error has no tag: a failed extraction, not "no error"
        return json.dumps({"annotated_translation": "The house is red.",
                           "errors": [{"severity": "minor", "category": "style/awkward"}]})
    return json.dumps({"annotated_translation": "She read the book.", "errors": []})


def test_tsa_judge_then_span_f1(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    inp = tmp_path / "items.jsonl"
    inp.write_text("\n".join(json.dumps(it | {"src_lang": "de", "tgt_lang": "en", "system": "S",
                                              "doc_id": "d"}) for it in ITEMS) + "\n")
    out = tmp_path / "run"
    with ScriptedServer(responder) as srv:
        res = CliRunner().invoke(cli, ["judge", str(inp), "--out", str(out), "--protocol", "tsa",
                                       "--backend", "openai", "--model", "m", "--base-url",
                                       srv.base_url, "-q", "-c", "2",
                                       "--max-failure-rate", "1"])  # one answer's unlocated error on purpose
        body = srv.requests[0]
    assert res.exit_code == 0, res.output + str(res.exception)
    assert body["messages"][0]["role"] == "system" and len(body["messages"]) == 8
    rows = {r["item_index"]: r for r in map(json.loads, (out / "judgments.jsonl").read_text().splitlines())}
    assert rows[0]["status"] == "ok" and rows[0]["score"] == -5.0
    assert rows[0]["annotation"]["spans"][0]["text"] == "Monday"
    assert rows[1]["status"] == "parse_failed" and "no tag <v0>" in rows[1]["error"]
    assert rows[1]["score"] is None
    assert rows[2]["status"] == "ok" and rows[2]["score"] == 0.0

    gold = tmp_path / "gold.jsonl"
    gold.write_text("\n".join(json.dumps({"system": "S", "doc_id": "d", "seg_id": it["seg_id"],
                                          "lp": "de-en", "hypothesis": it["tgt"], "spans": sp})
                              for it, sp in zip(ITEMS, [[{"start": 14, "end": 20, "severity": "major"}],
                                                        [{"start": 13, "end": 16, "severity": "minor"}],
                                                        []])) + "\n")
    res = CliRunner().invoke(cli, ["span-f1", "--gold", str(gold), "--pred", str(out), "--missing", "skip",
                                   "--format", "json"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)
    assert got["de-en"]["f1"] == 1.0 and got["de-en"]["missing_predictions"] == 1
    # by default the failed item counts as predicting no errors (the official scorer's rule):
    # its 3 gold characters are missed, R = 6/9, F1 = 0.8
    res = CliRunner().invoke(cli, ["span-f1", "--gold", str(gold), "--pred", str(out), "--format", "json"])
    got = json.loads(res.output)
    assert got["de-en"]["f1"] == pytest.approx(0.8) and got["de-en"]["missing_predictions"] == 1
