"""--batch through the OpenAI Batch API (the test server's), and the offline batch files.

What every provider's batches do (half price, retries, limits, kill -9) is tested once for all in
``tests/backends/test_batch_providers.py``.
"""

import asyncio
import dataclasses
import json

import pytest

from polyjudge.api import InputError, JudgeConfig, judge
from polyjudge.backends.batch import BatchLine
from polyjudge.engine.plan import plan_tasks
from polyjudge.engine.store import BatchLineRow, Store
from polyjudge.protocols import get_protocol
from tests.engine.helpers import same_outputs
from tests.helpers.batch_providers import OPENAI, da
from tests.helpers.openai_server import ScriptedServer

config, batched = OPENAI.config, OPENAI.batched


def live_run(items, out, **kw):
    with ScriptedServer(da) as srv:
        return judge(items, config(srv, **kw), out=out)


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
            client = OPENAI.client(srv.base_url)
            await client.submit([BatchLine(t.key, t.request) for t in tasks], "pj-lost")
            await client.aclose()
        asyncio.run(submit())
        result = judge(items, batched(srv), out=run_dir)
        assert len(srv.batches) == 1 and len(srv.batch_lines) == 12
    assert result.status_counts() == {"ok": 12} and result.manifest.counts["sent_this_session"] == 12


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
    from polyjudge.backends.openai_batch import chat_body, parse_output_line, request_line
    from polyjudge.data.chat import GenerateRequest, Message

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
    from polyjudge.backends.batch import BATCH_LINE_FORMATS, BatchLineFormat, LineResult, register_batch_format
    from polyjudge.backends.registry import Capabilities
    from polyjudge.data.chat import GenerateRequest

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
