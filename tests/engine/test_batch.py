"""--batch through the OpenAI Batch API (the test server's), and the offline batch files."""

import asyncio
import dataclasses
import json
import sqlite3
from collections import Counter

import pytest

from polyjudge.api import InputError, JudgeConfig, ModelPrice, judge
from polyjudge.backends.base import BackendError
from polyjudge.backends.batch import BatchLimits, BatchLine
from polyjudge.backends.openai_batch import OpenAIBatchClient
from polyjudge.engine.plan import plan_tasks
from polyjudge.engine.store import BatchLineRow, Store
from polyjudge.protocols import get_protocol
from tests.engine.conftest import da_score
from tests.engine.helpers import FAST_BATCH, FAST_RETRY, same_outputs
from tests.helpers.openai_server import Reply, ScriptedServer


def da(body):
    return json.dumps({"score": da_score(body)})


def config(srv, **kw):
    kw.setdefault("retry", FAST_RETRY)
    kw.setdefault("runs", 2)
    return JudgeConfig(judges=(f"openai:m@{srv.base_url}",), **kw)


def batched(srv, **kw):
    kw.setdefault("batch_options", FAST_BATCH)
    return config(srv, batch=True, **kw)


def live_run(items, out, **kw):
    with ScriptedServer(da) as srv:
        return judge(items, config(srv, **kw), out=out)


def test_a_batch_run_gives_the_outputs_of_a_live_run_at_the_batch_price(items, tmp_path):
    prices = {"m": ModelPrice(1.0, 2.0, batch_discount=0.5)}
    live = live_run(items, tmp_path / "live", prices=prices)
    with ScriptedServer(da) as srv:
        result = judge(items, batched(srv, prices=prices), out=tmp_path / "batch")
        assert srv.requests == []  # nothing live
        assert len(srv.batch_lines) == 12 and len({x["custom_id"] for x in srv.batch_lines}) == 12
        line = srv.batch_lines[0]
        assert line["method"] == "POST" and line["url"] == "/v1/chat/completions" and line["body"]["model"] == "m"
        assert len(srv.batches) == 1 and next(iter(srv.batches.values()))["completion_window"] == "24h"
    same_outputs(tmp_path / "live", tmp_path / "batch")
    assert result.manifest.counts["answered_by_batch"] == 12
    assert result.manifest.tokens == live.manifest.tokens
    assert result.manifest.cost_usd == pytest.approx(live.manifest.cost_usd / 2)
    db = sqlite3.connect(tmp_path / "batch" / "store.sqlite")
    assert db.execute("SELECT status, total, collected FROM batches").fetchall() == [("completed", 12, 1)]
    assert db.execute("SELECT COUNT(*) FROM batch_lines").fetchone()[0] == 12
    db.close()


def flaky(failing):
    """Fail each listed translation once (a scripted Reply), then answer."""
    seen = Counter()

    def responder(body):
        user = body["messages"][-1]["content"]
        for text, reply in failing.items():
            if text in user:
                seen[(text, body.get("seed"))] += 1
                if seen[(text, body.get("seed"))] == 1:
                    return reply
        return da(body)
    return responder


FAILING = {"A translation 1": Reply(status=500), "A translation 2": Reply(batch_error="batch_expired")}


def test_failed_and_expired_lines_are_retried_in_a_new_batch(items, tmp_path):
    live_run(items, tmp_path / "live")
    with ScriptedServer(flaky(FAILING)) as srv:
        result = judge(items, batched(srv), out=tmp_path / "batch")
        ids = Counter(x["custom_id"] for x in srv.batch_lines)
        statuses = [b["status"] for b in srv.batches.values()]
    assert result.status_counts() == {"ok": 12}
    assert statuses == ["expired", "completed"]
    assert sorted(ids.values()) == [1] * 8 + [2] * 4  # the 4 failed lines (2 items x 2 runs) went twice
    assert result.manifest.counts["retries"] == 4
    same_outputs(tmp_path / "live", tmp_path / "batch")


def test_failed_lines_go_live_with_batch_fallback_live(items, tmp_path):
    with ScriptedServer(flaky(FAILING)) as srv:
        options = dataclasses.replace(FAST_BATCH, fallback="live")
        result = judge(items, batched(srv, batch_options=options), out=tmp_path / "batch")
        assert len(srv.batches) == 1 and len(srv.requests) == 4
    assert result.status_counts() == {"ok": 12}
    assert result.manifest.counts["answered_by_batch"] == 8


def test_lines_that_cannot_succeed_are_recorded_and_never_retried(items, tmp_path):
    def responder(body):
        return Reply(status=400) if "B translation 3" in body["messages"][-1]["content"] else da(body)

    with ScriptedServer(responder) as srv:
        result = judge(items, batched(srv, max_failure_rate=None), out=tmp_path / "batch")
        assert len(srv.batches) == 1
    failed = [j for j in result.judgments if j.status != "ok"]
    assert len(failed) == 2 and all("HTTP 400" in j.error and "after 1 attempt" in j.error for j in failed)


def test_batches_are_split_at_the_provider_limits(items, tmp_path):
    with ScriptedServer(da) as srv:
        options = dataclasses.replace(FAST_BATCH, limits=BatchLimits(max_requests=5))
        judge(items, batched(srv, batch_options=options), out=tmp_path / "by_count")
        assert [b["request_counts"]["total"] for b in srv.batches.values()] == [5, 5, 2]
    with ScriptedServer(da) as srv:
        options = dataclasses.replace(FAST_BATCH, limits=BatchLimits(max_bytes=3000))
        judge(items, batched(srv, batch_options=options), out=tmp_path / "by_bytes")
        sizes = [len(srv.files[b["input_file_id"]]) for b in srv.batches.values()]
        assert len(sizes) > 1 and all(s <= 3000 for s in sizes)
    same_outputs(tmp_path / "by_count", tmp_path / "by_bytes")


def test_samples_per_request_in_a_batch(items, tmp_path):
    live_run(items, tmp_path / "live", runs=4)
    with ScriptedServer(da) as srv:
        result = judge(items, batched(srv, runs=4, samples_per_request=4), out=tmp_path / "batch")
        assert len(srv.batch_lines) == 6 and {x["body"]["n"] for x in srv.batch_lines} == {4}
    assert result.manifest.counts["multi_sample_requests"] == 6
    same_outputs(tmp_path / "live", tmp_path / "batch")
    with ScriptedServer(da, ignore_n=True) as srv:  # a server that ignores n: the rest go again, singly
        result = judge(items, batched(srv, runs=4, samples_per_request=4), out=tmp_path / "ignored")
        assert len(srv.batch_lines) == 6 + 18
    assert result.samples_fallback == {"m": "n was ignored (1 of 4 choices came back)"}
    same_outputs(tmp_path / "live", tmp_path / "ignored")


def test_a_batch_created_before_a_crash_is_found_by_its_tag_and_never_sent_again(items, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    tasks = plan_tasks(items, get_protocol("da"), ["m"], runs=2, temperature=0.0, seed=0)
    with ScriptedServer(da, batch_delay_s=0.2) as srv:
        # a run died after the provider created its batch and before the batch id was recorded
        store = Store(run_dir / "store.sqlite")
        rows = [BatchLineRow(t.key, 0, t.key, t.prompt_hash, t.judge, t.run_index) for t in tasks]
        store.add_batch("pj-lost", "openai", "m", rows, endpoint=srv.base_url)
        store.close()

        async def submit():
            client = OpenAIBatchClient("m", srv.base_url)
            await client.submit([BatchLine(t.key, t.request) for t in tasks], "pj-lost")
            await client.aclose()
        asyncio.run(submit())
        result = judge(items, batched(srv), out=run_dir)
        assert len(srv.batches) == 1 and len(srv.batch_lines) == 12
    assert result.status_counts() == {"ok": 12} and result.manifest.counts["sent_this_session"] == 12


def test_a_submission_whose_answer_was_lost_is_attached_not_repeated(items, tmp_path, monkeypatch):
    original = OpenAIBatchClient.submit

    async def lost(self, lines, tag):
        await original(self, lines, tag)
        raise BackendError("connection error: ReadError", retryable=True)

    monkeypatch.setattr(OpenAIBatchClient, "submit", lost)
    with ScriptedServer(da) as srv:
        result = judge(items, batched(srv), out=tmp_path / "run")
        assert len(srv.batches) == 1 and len(srv.batch_lines) == 12
    assert result.status_counts() == {"ok": 12}


def test_export_then_import_as_vllm_run_batch_would(items, tmp_path):
    live_run(items, tmp_path / "live", runs=4)
    exported = tmp_path / "requests.jsonl"
    with ScriptedServer(da) as srv:
        cfg = config(srv, runs=4, samples_per_request=2)
        pending = judge(items, dataclasses.replace(cfg, batch_export=str(exported)), out=tmp_path / "run")
        assert srv.requests == [] and pending.status_counts() == {"pending": 24}
        lines = [json.loads(x) for x in exported.read_text().splitlines()]
        assert len(lines) == 12 and set(lines[0]) == {"custom_id", "method", "url", "body"}
        assert lines[0]["body"]["n"] == 2 and lines[0]["url"] == "/v1/chat/completions"
        # the self-hosted server answers the file offline (as vLLM's run_batch writes its output)
        outputs = []
        for n, line in enumerate(lines):
            status, payload, *_ = srv.complete(line["body"])
            outputs.append({"id": f"vllm-{n}", "custom_id": line["custom_id"],
                            "response": {"status_code": status, "request_id": f"r{n}", "body": payload},
                            "error": None})
        answered = tmp_path / "answers.jsonl"
        answered.write_text("".join(json.dumps(o) + "\n" for o in outputs))
        result = judge(items, dataclasses.replace(cfg, batch_import=str(answered)), out=tmp_path / "run")
        assert srv.requests == []
    assert result.status_counts() == {"ok": 24}
    same_outputs(tmp_path / "live", tmp_path / "run")
    answered.write_text(json.dumps({**outputs[0], "custom_id": "not-ours"}) + "\n")
    with pytest.raises(InputError, match="names no request of this run") as exc:
        judge(items, dataclasses.replace(cfg, batch_import=str(answered)), out=tmp_path / "run")
    assert f"{answered}:1" in str(exc.value)


def test_batch_needs_a_backend_with_a_batch_api(items, tmp_path):
    rec = tmp_path / "rec.jsonl"
    rec.write_text("")
    with pytest.raises(InputError, match="replay backend has no Batch API"):
        judge(items, JudgeConfig(judges=(f"replay:{rec}",), batch=True), out=tmp_path / "run")
    with pytest.raises(InputError, match="give one of --batch, --batch-export"):
        judge(items, JudgeConfig(judges=("openai:m",), batch=True, batch_export="x.jsonl"), out=tmp_path / "r")


def test_line_formats_follow_the_openai_batch_api():
    from polyjudge.backends.base import GenerateRequest, Message
    from polyjudge.backends.openai_batch import chat_body, parse_output_line, request_line

    request = GenerateRequest(messages=(Message("user", "hi"),), temperature=0.3, max_tokens=9, seed=4, n=2,
                              json_schema={"type": "object"})
    line = request_line("gpt-x", "k1", request)
    assert line == {"custom_id": "k1", "method": "POST", "url": "/v1/chat/completions", "body": {
        "model": "gpt-x", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.3, "max_tokens": 9,
        "seed": 4, "n": 2, "response_format": {"type": "json_schema", "json_schema": {
            "name": "judgment", "schema": {"type": "object"}, "strict": True}}}}
    reasoning = chat_body("o4-mini", request, reasoning=True, structured=False)
    assert "temperature" not in reasoning and reasoning["max_completion_tokens"] == 9
    assert "response_format" not in reasoning
    ok = parse_output_line({"id": "r", "custom_id": "k1", "error": None, "response": {"status_code": 200, "body": {
        "choices": [{"index": 1, "message": {"content": "b"}, "finish_reason": "length"},
                    {"index": 0, "message": {"content": "a"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": 8},
                  "completion_tokens_details": {"reasoning_tokens": 2}}}}})
    assert ok.result is not None and ok.result.choices == ("a", "b") and ok.result.choice_finish_reasons[1] == "length"
    assert (ok.result.usage.cached_prompt_tokens, ok.result.usage.reasoning_tokens) == (8, 2)
    http = parse_output_line({"custom_id": "k2", "response": {"status_code": 429, "body": {
        "error": {"message": "slow down"}}}, "error": None})
    assert http.error is not None and http.error.retryable and str(http.error) == "HTTP 429: slow down"
    expired = parse_output_line({"custom_id": "k3", "response": None,
                                 "error": {"code": "batch_expired", "message": "not done in time"}})
    assert expired.error is not None and expired.error.retryable
    cancelled = parse_output_line({"custom_id": "k4", "response": None, "error": {"code": "batch_cancelled"}})
    assert cancelled.error is not None and not cancelled.error.retryable
    with pytest.raises(ValueError):
        parse_output_line({"response": {}})


def test_a_backend_brings_its_own_batch_line_format_without_an_engine_edit(items, tmp_path, monkeypatch):
    """A second provider registers a backend declaring a format and the format itself; export and import use it."""
    from typing import Any, ClassVar

    from polyjudge.backends import BACKENDS, GenerateResult, RegisteredBackend, register_backend
    from polyjudge.backends.base import GenerateRequest
    from polyjudge.backends.batch import BATCH_LINE_FORMATS, BatchLineFormat, LineResult, register_batch_format
    from polyjudge.backends.registry import Capabilities

    for registry in (BACKENDS, BATCH_LINE_FORMATS):
        registry.names()
        monkeypatch.setattr(registry, "_entries", dict(registry._entries))

    @register_batch_format()
    class Tagged(BatchLineFormat):
        """Lines of a made-up provider: {"tag", "ask"} out, {"tag", "said"} back."""

        name: ClassVar[str] = "tagged"

        @classmethod
        def request_line(cls, model: str, custom_id: str, request: GenerateRequest) -> dict[str, Any]:
            return {"tag": custom_id, "ask": request.messages[-1].content, "seed": request.seed}

        @classmethod
        def parse_output_line(cls, obj: Any) -> LineResult:
            if not isinstance(obj, dict) or "tag" not in obj:
                raise ValueError("not a tagged line")
            return LineResult(obj["tag"], GenerateResult(obj["said"], "stop"))

    @register_backend()
    class TaggedJudge(RegisteredBackend):
        """A judge whose provider batches in its own line format: tagged:MODEL."""

        name: ClassVar[str] = "tagged"
        capabilities: ClassVar[Capabilities] = Capabilities(local=True, batch_formats=("tagged",))

        def __init__(self, model: str) -> None:
            self.model = model

        @classmethod
        def from_spec(cls, spec, settings):
            return cls(spec.model or "t")

        async def generate(self, request):
            raise AssertionError("a batch-file run sends nothing live")

        async def aclose(self) -> None:
            return None

    exported, answered = tmp_path / "requests.jsonl", tmp_path / "answers.jsonl"
    cfg = JudgeConfig(judges=("tagged:t",), runs=1)
    judge(items, dataclasses.replace(cfg, batch_export=str(exported)), out=tmp_path / "run")
    lines = [json.loads(x) for x in exported.read_text().splitlines()]
    assert len(lines) == 6 and all(set(x) == {"tag", "ask", "seed"} for x in lines)
    answers = [{"tag": x["tag"], "said": da({"messages": [{"content": x["ask"]}], "seed": x["seed"]})} for x in lines]
    answered.write_text("".join(json.dumps(a) + "\n" for a in answers))
    result = judge(items, dataclasses.replace(cfg, batch_import=str(answered)), out=tmp_path / "run")
    assert result.status_counts() == {"ok": 6}
    assert sorted((j.item_index, j.score) for j in result.judgments) == [
        (0, 81), (1, 82), (2, 83), (3, 51), (4, 52), (5, 53)]
