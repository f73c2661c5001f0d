"""Server numbers are data, not truth: usage, refusals and content a server sends, over real HTTP.

Every case failed before ``engine.spend.vet_usage`` and the refusal statuses: negative usage let
every request through a spending cap and recorded a negative cost; 10**30 tokens, NaN usage and a
JSON object as ``message.content`` crashed the store after the answer came (every re-run paid
again); ``content_filter`` and Anthropic's ``refusal`` answers were scored.
"""

from __future__ import annotations

import json
import math
import sqlite3

import pytest

from polyjudge.api import BudgetExceeded, JudgeConfig, ModelPrice, judge
from polyjudge.data.records import Item
from polyjudge.engine.spend import PROMPT_SLACK_TOKENS
from polyjudge.rundir import RunDir
from tests.engine.helpers import FAST_RETRY, responder
from tests.helpers.anthropic_server import AnthropicServer, MReply
from tests.helpers.openai_server import Reply, ScriptedServer

PRICE = ModelPrice(10.0, 10.0)  # USD per million tokens
DA_MAX_TOKENS = 24


def items(n: int = 20) -> list[Item]:
    return [Item(src=f"source sentence number {i}", tgt=f"translation number {i}", src_lang="en", tgt_lang="de",
                 seg_id=str(i), system="X") for i in range(n)]


def config(url: str, model: str = "openai:m", **kw: object) -> JudgeConfig:
    kw.setdefault("retry", FAST_RETRY)
    kw.setdefault("prices", {"m": PRICE})
    kw.setdefault("max_failure_rate", None)
    return JudgeConfig(judges=(f"{model}@{url}",), **kw)  # type: ignore[arg-type]


def scripted(usage: dict[str, object]):
    def answer(body: dict) -> Reply:
        return Reply(content=responder(body), usage=usage)
    return answer


def manifest(run) -> dict:
    return json.loads((run / "manifest.json").read_text())


def test_negative_usage_cannot_defeat_the_spending_cap(tmp_path):
    # Each answer claims -100000 prompt tokens: summed as reported, the spend fell with every answer.
    with ScriptedServer(scripted({"prompt_tokens": -100_000, "completion_tokens": -5})) as srv:
        cap = 0.1
        with pytest.raises(BudgetExceeded) as exc:
            judge(items(), config(srv.base_url, max_cost=cap, concurrency=1), out=tmp_path / "run")
        sent = len(srv.requests)
    m = manifest(tmp_path / "run")
    # Unknown counts are accounted at the request's bound: at least PROMPT_SLACK_TOKENS + the completion limit.
    least_per_request = (PROMPT_SLACK_TOKENS * PRICE.input + DA_MAX_TOKENS * PRICE.output) / 1e6
    assert 0 < sent <= cap / least_per_request + 1 < 20
    assert 0 < m["cost_usd"] <= cap + least_per_request * 3 and exc.value.spent == pytest.approx(m["cost_usd"])
    assert m["usage_anomalies"]["requests"] == sent
    example = m["usage_anomalies"]["examples"][0]
    assert "prompt_tokens is not a usable count" in example["anomalies"][0]
    assert json.loads(example["reported"])["prompt_tokens"] == -100_000  # recorded as the server said
    assert all(v >= 0 for v in m["tokens"].values())


@pytest.mark.parametrize("usage", [
    {"prompt_tokens": 10**30, "completion_tokens": 3},
    {"prompt_tokens": float("nan"), "completion_tokens": float("inf")},
    {"prompt_tokens": "many", "completion_tokens": {"n": 1}},
    {"prompt_tokens": 12.5, "completion_tokens": 2},
], ids=["huge", "nan-inf", "not-numbers", "fractional"])
def test_any_usage_is_stored_and_a_rerun_sends_nothing(tmp_path, usage):
    with ScriptedServer(scripted(usage)) as srv:
        first = judge(items(4), config(srv.base_url), out=tmp_path / "run")
        sent = len(srv.requests)
        again = judge(items(4), config(srv.base_url), out=tmp_path / "run")
        assert len(srv.requests) == sent == 4  # the stored answers are never paid for twice
    assert first.status_counts() == again.status_counts() == {"ok": 4}
    m = manifest(tmp_path / "run")
    assert m["usage_anomalies"]["requests"] == 4
    assert all(isinstance(v, int) and 0 <= v < 2**63 for v in m["tokens"].values())
    assert math.isfinite(m["cost_usd"]) and m["cost_usd"] >= 0
    assert len(RunDir(tmp_path / "run").judgments) == 4
    with sqlite3.connect(tmp_path / "run" / "store.sqlite") as db:
        notes = [json.loads(n) for (n,) in db.execute("SELECT usage_note FROM responses")]
    assert all(n["anomalies"] for n in notes)


def test_a_completion_above_the_token_limit_is_accounted_at_the_limit(tmp_path):
    with ScriptedServer(scripted({"prompt_tokens": 30, "completion_tokens": 5_000})) as srv:
        judge(items(5), config(srv.base_url), out=tmp_path / "run")
    m = manifest(tmp_path / "run")
    assert m["tokens"]["completion"] == 5 * DA_MAX_TOKENS and m["tokens"]["prompt"] == 5 * 30
    assert m["cost_usd"] == pytest.approx(5 * (30 + DA_MAX_TOKENS) * 10.0 / 1e6)
    assert "completion_tokens 5,000 is above the 24 the request allows" in m["usage_anomalies"]["examples"][0][
        "anomalies"][0]


@pytest.mark.parametrize(("protocol", "content"), [("da", '{"score": 90}'), ("mqm", '{"errors": {}}')])
def test_a_content_filter_is_a_recorded_failure_never_a_score(tmp_path, protocol, content):
    with ScriptedServer(lambda body: Reply(content=content, finish_reason="content_filter")) as srv:
        result = judge(items(3), config(srv.base_url, protocol=protocol, runs=1), out=tmp_path / "run")
        judge(items(3), config(srv.base_url, protocol=protocol, runs=1), out=tmp_path / "run")
        assert len(srv.requests) == 3  # a refusal is an answer: it is not bought again
    assert result.status_counts() == {"request_failed": 3}
    for j in result.judgments:
        assert j.score is None and "content filter" in (j.error or "")
    rows = (tmp_path / "run" / "segments.tsv").read_text().splitlines()[1:]
    assert all(row.split("\t")[5] == "" for row in rows)  # no segment score


def test_anthropic_refusal_is_a_recorded_failure(tmp_path):
    with AnthropicServer(lambda body: MReply(content='{"score": 90}', stop_reason="refusal")) as srv:
        result = judge(items(2), config(srv.base_url, "anthropic:claude-x", prices={"claude-x": PRICE}),
                       out=tmp_path / "run")
    assert result.status_counts() == {"request_failed": 2}
    assert all("refused" in (j.error or "") and j.score is None for j in result.judgments)


def test_content_that_is_not_text_is_kept_as_json_and_a_recorded_failure(tmp_path):
    with ScriptedServer(lambda body: Reply(message_content={"score": 90})) as srv:
        result = judge(items(3), config(srv.base_url), out=tmp_path / "run")
        judge(items(3), config(srv.base_url), out=tmp_path / "run")
        assert len(srv.requests) == 3
    assert result.status_counts() == {"request_failed": 3}
    j = result.judgments[0]
    assert j.raw_text == '{"score": 90}' and "not text" in (j.error or "") and j.score is None


def test_deep_nesting_is_a_parse_failure_and_a_rerun_sends_nothing(tmp_path):
    deep = '{"score": ' + "[" * 1_500 + "90" + "]" * 1_500 + "}"
    with ScriptedServer(lambda body: deep) as srv:
        first = judge(items(2), config(srv.base_url, protocol="mqm", runs=1), out=tmp_path / "run")
        again = judge(items(2), config(srv.base_url, protocol="mqm", runs=1), out=tmp_path / "run")
        assert len(srv.requests) == 2
    assert first.status_counts() == again.status_counts() == {"parse_failed": 2}
    assert "levels deep" in (first.judgments[0].error or "")


def test_usage_of_one_choice_for_n_choices_is_corrected_from_the_text(tmp_path):
    cfg = {"runs": 3, "samples_per_request": 3, "concurrency": 1}
    with ScriptedServer(responder) as whole:
        judge(items(4), config(whole.base_url, **cfg), out=tmp_path / "whole")
    with ScriptedServer(responder, one_choice_usage=True) as partial:
        judge(items(4), config(partial.base_url, **cfg), out=tmp_path / "partial")
    reference, corrected = manifest(tmp_path / "whole"), manifest(tmp_path / "partial")
    # the server's own count of every choice's words is the reference; each answer's choices are alike
    assert corrected["tokens"] == reference["tokens"]
    assert reference["usage_anomalies"]["requests"] == 0 and corrected["usage_anomalies"]["requests"] == 4
    assert "cannot cover the text of 3 choices" in corrected["usage_anomalies"]["examples"][0]["anomalies"][0]
