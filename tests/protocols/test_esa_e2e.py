"""End to end: ``polyjudge judge --protocol gemba-esa --runs 2`` against the scripted
server, then the segment scores, ``spans.tsv`` and ``polyjudge span-f1`` on the run."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from polyjudge.cli.main import cli
from polyjudge.rundir import RunDir
from tests.helpers.openai_server import ScriptedServer

ITEMS = [
    {"src": "Er kam am Dienstag an.", "tgt": "He arrived on Monday.", "seg_id": "1"},
    {"src": "Das Haus ist rot.", "tgt": "The house is red.", "seg_id": "2"},
    {"src": "Sie las das Buch.", "tgt": "Her read the book.", "seg_id": "3"},
]


def responder(body: dict) -> str:
    run = body["seed"]  # seed 0 + run index
    user = body["messages"][-1]["content"]
    if "Monday" in user:  # both runs mark "Monday"; scores 30 and 50
        return json.dumps({"errors": [{"span": "Monday", "severity": "major"}], "score": 30 + 20 * run})
    if "house" in user:  # run 0 clean, run 1 out of range: a failure, not a score
        return json.dumps({"errors": [], "score": 90 if run == 0 else 150})
    return '{"errors": [{"span": "Her", "severity": "minor"}], "score": '  # cut short: both runs fail


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("esa")
    inp = tmp / "items.jsonl"
    inp.write_text("\n".join(json.dumps(it | {"src_lang": "de", "tgt_lang": "en", "system": "S", "doc_id": "d"})
                             for it in ITEMS) + "\n")
    out = tmp / "run"
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "test-key")
    try:
        with ScriptedServer(responder) as srv:
            res = CliRunner().invoke(cli, ["judge", str(inp), "--out", str(out), "--protocol", "gemba-esa",
                                           "--runs", "2", "--backend", "openai", "--model", "m", "--base-url",
                                           srv.base_url, "-q", "-c", "2",
                                           "--max-failure-rate", "1"])  # three failures on purpose
            requests = list(srv.requests)
    finally:
        mp.undo()
    assert res.exit_code == 0, res.output + str(res.exception)
    gold = tmp / "gold.jsonl"
    gold.write_text("\n".join(json.dumps({"system": "S", "doc_id": "d", "seg_id": it["seg_id"], "lp": "de-en",
                                          "hypothesis": it["tgt"], "spans": sp})
                              for it, sp in zip(ITEMS, [[{"start": 14, "end": 20, "severity": "major"}], [],
                                                        [{"start": 0, "end": 3, "severity": "minor"}]])) + "\n")
    return out, gold, requests


def test_requests(run_dir):
    _, _, requests = run_dir
    assert len(requests) == 6
    body = requests[0]
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["errors", "score"]


def test_judgments_and_segment_scores(run_dir):
    out, _, _ = run_dir
    rd = RunDir.open(out)
    by = {(j.item_index, j.run_index): j for j in rd.judgments}
    assert by[(0, 0)].score == 30.0 and by[(0, 1)].score == 50.0
    assert by[(0, 0)].annotation["spans"][0]["text"] == "Monday"
    assert by[(1, 1)].status == "parse_failed" and "outside 0" in by[(1, 1)].error and by[(1, 1)].score is None
    assert {by[(2, r)].status for r in (0, 1)} == {"parse_failed"}
    rows = rd.segment_rows
    assert [r.score for r in rows] == [40.0, 90.0, None]  # mean of the ok runs; item 3 unscored
    assert [(r.runs_ok, r.runs_failed) for r in rows] == [(2, 0), (1, 1), (0, 2)]
    assert rd.manifest.protocol == "gemba-esa" and rd.manifest.signature.startswith("gemba-esa|")


def test_spans_tsv_holds_the_merged_spans(run_dir):
    out, _, _ = run_dir
    segs, warnings = RunDir.open(out).span_segments()
    assert not warnings
    assert [(s.seg_id, [(sp.start, sp.end, sp.severity) for sp in s.spans]) for s in segs] == [
        ("1", [(14, 20, "major")]), ("2", [])]  # item 3 had no ok run: no row, never "no error"


def test_span_f1_scores_the_missing_prediction_as_empty(run_dir):
    out, gold, _ = run_dir
    res = CliRunner().invoke(cli, ["span-f1", "--gold", str(gold), "--pred", str(out), "--format", "json"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)["de-en"]
    # tp 6 ("Monday"); gold 6 + 3 ("Her", whose prediction is missing and scored as empty)
    assert (got["precision"], got["recall"]) == (1.0, pytest.approx(6 / 9))
    assert got["f1"] == pytest.approx(0.8) and got["missing_predictions"] == 1
    res = CliRunner().invoke(cli, ["span-f1", "--gold", str(gold), "--pred", str(out), "--missing", "skip",
                                   "--format", "json"])
    assert json.loads(res.output)["de-en"]["f1"] == 1.0
