"""The error-free protocol (WMT26's binary task): parsing, the prompt, and expected probabilities from
token log-probabilities against the scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from polyjudge.cli.main import cli
from polyjudge.data.records import DocumentContext, Item
from polyjudge.protocols.base import ParseFailure, ProtocolOptions
from polyjudge.protocols.registry import get_protocol
from polyjudge.rundir import RunDir
from tests.helpers.openai_server import Reply, ScriptedServer

ITEM = Item(src="Der Hund bellt.", tgt="The dog barks.", ref="SECRET-REFERENCE", src_lang="de", tgt_lang="en")


def test_answers_are_read_strictly():
    ef = get_protocol("error-free")
    assert ef.parse('{"error_free": 1}', ITEM) == {"error_free": True, "score": 1}
    assert ef.parse('{"error_free": false}', ITEM) == {"error_free": False, "score": 0}
    assert ef.score(ef.parse('{"error_free": 0}', ITEM), ITEM) == 0.0
    for bad in ('{"error_free": 2}', '{"error_free": "yes"}', '{"verdict": 1}', "yes"):
        with pytest.raises(ParseFailure):
            ef.parse(bad, ITEM)


def test_the_prompt_never_shows_the_reference():
    text = "\n".join(m.content for m in get_protocol("error-free").messages(ITEM, DocumentContext(None, (), 0)))
    assert "Der Hund bellt." in text and "The dog barks." in text
    assert "SECRET-REFERENCE" not in text


def lp(*alts: tuple[str, float]) -> list[tuple[str, float]]:
    return [(t, math.log(p)) for t, p in alts]


def scripted(body: dict) -> Reply:
    user = body["messages"][-1]["content"]
    if "dog" in user:  # P(1) = .8, P(0) = .15, .05 on text that is no label
        alts = lp(("1", .8), ("0", .15), ('"', .05))
        return Reply(content='{"error_free": 1}',
                     logprobs=[('{"error_free": ', 0.0, []), ("1", math.log(.8), alts), ("}", 0.0, [])])
    alts = lp(("0", .7), ("1", .3))
    return Reply(content='{"error_free": 0}',
                 logprobs=[('{"error_free": ', 0.0, []), ("0", math.log(.7), alts), ("}", 0.0, [])])


def run(tmp, responder, *extra):
    inp = tmp / "items.jsonl"
    rows = [{"src": "Der Hund bellt.", "tgt": "The dog barks.", "seg_id": "1", "ref": "REFERENCE-1"},
            {"src": "Es ist kalt.", "tgt": "It is warm.", "seg_id": "2", "ref": "REFERENCE-2"}]
    inp.write_text("".join(json.dumps(r | {"src_lang": "de", "tgt_lang": "en", "system": "S", "doc_id": "d"}) + "\n"
                           for r in rows))
    out = tmp / "run"
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "test-key")
    try:
        with ScriptedServer(responder) as srv:
            res = CliRunner().invoke(cli, ["judge", str(inp), "--out", str(out), "-p", "error-free",
                                           "--backend", "openai", "--model", "m", "--base-url", srv.base_url,
                                           "-q", "-c", "1", *extra])
            requests = list(srv.requests)
    finally:
        mp.undo()
    return res, out, requests


def test_sampled_labels_end_to_end(tmp_path):
    res, out, requests = run(tmp_path, lambda body: Reply(content='{"error_free": 1}'))
    assert res.exit_code == 0, res.output + str(res.exception)
    assert len(requests) == 2
    assert all("REFERENCE" not in json.dumps(r["messages"]) for r in requests)
    assert [j.score for j in RunDir.open(out).judgments] == [1.0, 1.0]


def test_expected_probability_of_error_free_from_logprobs(tmp_path):
    res, out, requests = run(tmp_path, scripted, "--score-mode", "expected")
    assert res.exit_code == 0, res.output + str(res.exception)
    assert all(r["logprobs"] is True and r["top_logprobs"] == 20 for r in requests)
    by_seg = {j.seg_id: j for j in RunDir.open(out).judgments}
    # renormalised over the two labels: .8 / (.8 + .15); .3 / (.7 + .3)
    assert by_seg["1"].score == pytest.approx(.8 / .95)
    assert by_seg["2"].score == pytest.approx(.3)
    assert by_seg["1"].annotation["error_free"] is True
    assert by_seg["1"].annotation["expected"]["error_free"]["invalid_mass"] == pytest.approx(.05)


def test_no_logprobs_is_a_recorded_failure_not_a_score(tmp_path):
    res, out, _ = run(tmp_path, lambda body: Reply(content='{"error_free": 1}'), "--score-mode", "expected",
                      "--max-failure-rate", "1")
    assert res.exit_code == 0, res.output + str(res.exception)
    judgments = RunDir.open(out).judgments
    assert judgments and all(j.score is None and j.status != "ok" for j in judgments)
    assert all("log-probabilities" in (j.error or "") for j in judgments)


def test_declared_protocol_options():
    assert ProtocolOptions().extra == {}
    assert get_protocol("error-free", ProtocolOptions(extra={"score_mode": "expected"})).top_logprobs == 20
