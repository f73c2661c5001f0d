"""Answers no retry will change (402 payment required, an exhausted quota) stop a run; the shared
backend settings (--reasoning-effort, --per-server-concurrency) reach the requests."""

import asyncio
import json

import pytest
from click.testing import CliRunner

from polyjudge.api import JudgeConfig, judge
from polyjudge.backends.anthropic import AnthropicBackend
from polyjudge.backends.base import BackendError
from polyjudge.backends.openai import OpenAIBackend
from polyjudge.backends.pool import PoolBackend
from polyjudge.backends.registry import BackendSettings, JudgeSpec, build_judge
from polyjudge.data.chat import GenerateRequest, Message
from polyjudge.engine.errors import EndpointFailed
from polyjudge.engine.runner import RetryPolicy, is_fatal
from tests.helpers.anthropic_server import AnthropicServer, MReply
from tests.helpers.openai_server import Reply, ScriptedServer

REQ = GenerateRequest(messages=(Message("user", "rate"),), max_tokens=20)


def gen(backend, request=REQ):
    async def go():
        try:
            return await backend.generate(request)
        finally:
            await backend.aclose()
    return asyncio.run(go())


def test_payment_required_and_an_exhausted_quota_are_fatal_a_rate_limit_is_not():
    quota = json.dumps({"error": {"message": "You exceeded your current quota", "type": "insufficient_quota",
                                  "code": "insufficient_quota"}})
    replies = {"402": Reply(status=402, raw_body=json.dumps({"error": {"message": "Insufficient credits"}})),
               "quota": Reply(status=429, raw_body=quota),
               "busy": Reply(status=429, headers={"Retry-After": "1"})}
    errors = {}
    for name, reply in replies.items():
        with ScriptedServer(lambda b, r=reply: r) as srv:
            with pytest.raises(BackendError) as exc:
                gen(OpenAIBackend("m", srv.base_url))
        errors[name] = exc.value
    assert errors["402"].status == 402 and not errors["402"].retryable and is_fatal(errors["402"])
    assert "Insufficient credits" in str(errors["402"])
    assert errors["quota"].status == 429 and not errors["quota"].retryable and is_fatal(errors["quota"])
    assert errors["busy"].retryable and errors["busy"].retry_after == 1.0 and not is_fatal(errors["busy"])


def test_anthropic_billing_error_is_fatal():
    with AnthropicServer(lambda b: MReply(status=402, error_message="Your credit balance is too low")) as srv:
        with pytest.raises(BackendError) as exc:
            gen(AnthropicBackend("claude-x", srv.base_url))
    assert exc.value.status == 402 and is_fatal(exc.value) and "credit balance" in str(exc.value)


def test_a_402_stops_the_run_at_once_with_outputs_written(tmp_path):
    items = tmp_path / "in.jsonl"
    items.write_text("".join(json.dumps({"src_lang": "en", "tgt_lang": "de",
                                         "src": f"s{i}", "tgt": f"t{i}", "seg_id": str(i)}) + "\n"
                             for i in range(30)), encoding="utf-8")
    with ScriptedServer(lambda b: Reply(status=402)) as srv:
        with pytest.raises(EndpointFailed) as exc:
            judge(items, JudgeConfig(judges=(f"openai:m@{srv.base_url}",), concurrency=3,
                                     retry=RetryPolicy(max_attempts=5, base_delay_s=0.01)), out=tmp_path / "run")
        sent = len(srv.requests)
    assert sent <= 3  # never retried: at most the requests already in flight
    assert str(exc.value).startswith("the endpoint rejected the request: HTTP 402")
    assert len((tmp_path / "run" / "judgments.jsonl").read_text().splitlines()) == 30


def test_reasoning_effort_setting_is_sent_unless_the_request_sets_its_own():
    low = BackendSettings(reasoning_effort="low")
    with ScriptedServer(lambda b: '{"score": 1}') as srv:
        spec = JudgeSpec.parse(f"openai:o4-mini@{srv.base_url}")
        gen(build_judge(spec, low))
        gen(build_judge(spec, low), GenerateRequest(messages=REQ.messages, reasoning_effort="high"))
        gen(build_judge(spec, BackendSettings()))
    assert [b.get("reasoning_effort") for b in srv.requests] == ["low", "high", None]
    with AnthropicServer(lambda b: MReply(content='{"score": 1}')) as srv:
        gen(build_judge(JudgeSpec.parse(f"anthropic:claude-x@{srv.base_url}"),
                        BackendSettings(reasoning_effort="medium")))
    assert srv.requests[0]["output_config"]["effort"] == "medium"


def test_per_server_concurrency_setting_caps_each_server_of_a_pool():
    urls = "http://127.0.0.1:9/v1,http://127.0.0.1:10/v1"
    pool = build_judge(JudgeSpec.parse(f"openai:m@{urls}"), BackendSettings(max_per_server=3))
    assert isinstance(pool, PoolBackend) and pool.max_per_server == 3
    own = build_judge(JudgeSpec.parse(f"openai:m?per_server=5@{urls}"), BackendSettings(max_per_server=3))
    assert own.max_per_server == 5  # the judge's own option wins


def test_the_judge_command_takes_both_flags():
    from polyjudge.cli.main import cli

    out = CliRunner().invoke(cli, ["judge", "--help"])
    assert "--reasoning-effort [low|medium|high]" in out.output and "--per-server-concurrency N" in out.output
    bad = CliRunner().invoke(cli, ["judge", "x.jsonl", "-o", "r", "--reasoning-effort", "extreme"])
    assert bad.exit_code == 2 and "extreme" in bad.output
