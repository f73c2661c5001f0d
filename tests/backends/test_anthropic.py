"""The anthropic backend against a scripted server speaking the Messages API."""

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest

from polyjudge.backends import BACKENDS, BackendSettings, JudgeSpec, build_backends, make_backend
from polyjudge.backends.anthropic import API_VERSION, TOOL_NAME, AnthropicBackend, rate_limit_wait
from polyjudge.backends.base import BackendError
from polyjudge.data.chat import GenerateRequest, Message
from polyjudge.engine.runner import is_fatal
from tests.helpers.anthropic_server import AnthropicServer, MReply

SCHEMA = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}
REQ = GenerateRequest(messages=(Message("system", "You are a judge."), Message("user", "Rate: Hallo.")),
                      temperature=0.3, max_tokens=200, seed=4, json_schema=SCHEMA)


def run(backend, *requests):
    async def go():
        try:
            return [await backend.generate(r) for r in requests]
        finally:
            await backend.aclose()
    return asyncio.run(go())


def header(seen, name):
    return {k.lower(): v for k, v in seen.items()}.get(name)


def test_registered_and_parsed_like_the_other_http_backends():
    assert BACKENDS.get("anthropic") is AnthropicBackend
    assert JudgeSpec.parse("anthropic:claude-x@http://h:1/v1") == JudgeSpec("anthropic", "claude-x", "http://h:1/v1")
    with pytest.raises(ValueError, match="the anthropic backend needs a model"):
        make_backend(JudgeSpec("anthropic"))
    for base in ("https://api.anthropic.com", "https://api.anthropic.com/v1/"):
        assert AnthropicBackend("m", base).url == "https://api.anthropic.com/v1/messages"


def test_system_field_tool_json_output_headers_and_usage(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    reply = MReply('{"score": 83}', thinking="Minor fluency issue.", preamble="Here is my judgment.",
                   usage={"input_tokens": 20, "output_tokens": 30, "cache_creation_input_tokens": 5,
                          "cache_read_input_tokens": 100})
    with AnthropicServer(lambda b: reply) as srv:
        backend = make_backend(JudgeSpec("anthropic", "claude-x", srv.base_url), BackendSettings())
        (res,) = run(backend, REQ)
    body = srv.requests[0]
    assert body["system"] == "You are a judge."
    assert body["messages"] == [{"role": "user", "content": "Rate: Hallo."}]
    assert body["max_tokens"] == 200 and body["temperature"] == 0.3 and "seed" not in body
    assert body["tools"] == [{"name": TOOL_NAME, "description": body["tools"][0]["description"],
                              "input_schema": SCHEMA}]
    assert body["tool_choice"] == {"type": "tool", "name": TOOL_NAME}
    seen = srv.headers_seen[0]
    assert header(seen, "x-api-key") == "sk-ant-test-0123456789" and header(seen, "anthropic-version") == API_VERSION
    assert header(seen, "authorization") is None
    # the tool's input is the answer, as JSON; thinking and the text beside the call are kept apart
    assert json.loads(res.text) == {"score": 83} and res.finish_reason == "stop"
    assert res.reasoning == "Minor fluency issue.\n\nHere is my judgment."
    assert res.usage.prompt_tokens == 125 and res.usage.cached_prompt_tokens == 100
    assert res.usage.completion_tokens == 30 and res.model == "claude-x"


def test_plain_text_without_a_schema():
    req = GenerateRequest(messages=(Message("user", "Say 7"),), max_tokens=10)
    with AnthropicServer(lambda b: "7") as srv:
        (res,) = run(AnthropicBackend("claude-x", srv.base_url), req)
    assert "tools" not in srv.requests[0] and "system" not in srv.requests[0]
    assert res.text == "7" and res.finish_reason == "stop" and res.reasoning is None


def test_max_tokens_stop_reason_is_a_truncated_answer():
    with AnthropicServer(lambda b: MReply('{"sco', stop_reason="max_tokens")) as srv:
        (res,) = run(AnthropicBackend("claude-x", srv.base_url), REQ)
    assert res.finish_reason == "length"


def test_a_model_refusing_a_forced_tool_gets_an_output_format_then_plain_text():
    def responder(body):
        if "tool_choice" in body:
            return MReply(status=400, error_message="Thinking may not be enabled when tool_choice forces tool use.")
        if "output_config" in body:
            return MReply(status=400, error_message="output_config.format: Extra inputs are not permitted")
        return '{"score": 12}'
    with AnthropicServer(responder) as srv:
        backend = AnthropicBackend("claude-x", srv.base_url)
        results = run(backend, REQ, REQ)
    assert [r.text for r in results] == ['{"score": 12}'] * 2
    assert ["tool_choice" in b for b in srv.requests] == [True, False, False, False]
    assert srv.requests[1]["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}
    assert backend.adaptations == {"json_schema": "not sent: the server took neither a tool nor an output format"}


def test_a_rejected_temperature_is_left_at_the_default_once():
    def responder(body):
        if "temperature" in body:
            return MReply(status=400, error_message="`temperature` is deprecated for this model.")
        return '{"score": 1}'
    with AnthropicServer(responder) as srv:
        backend = AnthropicBackend("claude-x", srv.base_url)
        run(backend, REQ, REQ)
    assert ["temperature" in b for b in srv.requests] == [True, False, False]
    assert backend.adaptations == {"temperature": "left at the model's default (the server rejected 0.3)"}


def test_reasoning_effort_goes_to_output_config_and_n_or_logprobs_are_unsupported():
    req = GenerateRequest(messages=(Message("user", "x"),), reasoning_effort="low", json_schema=SCHEMA)
    with AnthropicServer(lambda b: '{"score": 2}') as srv:
        run(AnthropicBackend("claude-x", srv.base_url, structured="json_schema"), req)
    assert srv.requests[0]["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA},
                                                "effort": "low"}
    backend = AnthropicBackend("claude-x", "http://127.0.0.1:9/v1")
    for bad, name in ((GenerateRequest(messages=req.messages, n=3), "n"),
                      (GenerateRequest(messages=req.messages, top_logprobs=5), "logprobs")):
        with pytest.raises(BackendError) as exc:
            run(backend, bad)
        assert exc.value.unsupported == name and not exc.value.retryable


@pytest.mark.parametrize("status", [429, 529, 500])
def test_rate_limits_and_overload_are_retryable_with_retry_after(status):
    with AnthropicServer(lambda b: MReply(status=status, headers={"retry-after": "13"})) as srv:
        with pytest.raises(BackendError) as exc:
            run(AnthropicBackend("claude-x", srv.base_url), REQ)
    assert exc.value.retryable and exc.value.status == status and exc.value.retry_after == 13.0
    assert not is_fatal(exc.value)


def test_without_retry_after_the_exhausted_window_says_how_long_to_wait():
    soon = (datetime.now(UTC) + timedelta(seconds=20)).strftime("%Y-%m-%dT%H:%M:%SZ")
    later = (datetime.now(UTC) + timedelta(seconds=40)).strftime("%Y-%m-%dT%H:%M:%SZ")
    headers = {"anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-requests-reset": soon,
               "anthropic-ratelimit-tokens-remaining": "5000", "anthropic-ratelimit-tokens-reset": later}
    with AnthropicServer(lambda b: MReply(status=429, headers=headers)) as srv:
        with pytest.raises(BackendError) as exc:
            run(AnthropicBackend("claude-x", srv.base_url), REQ)
    assert 15 <= exc.value.retry_after <= 20  # the requests window, the exhausted one
    assert rate_limit_wait({}) is None


@pytest.mark.parametrize("status", [401, 403, 404])
def test_auth_permission_and_unknown_model_are_fatal(status):
    with AnthropicServer(lambda b: MReply(status=status, error_message="invalid x-api-key")) as srv:
        with pytest.raises(BackendError) as exc:
            run(AnthropicBackend("claude-x", srv.base_url), REQ)
    assert not exc.value.retryable and exc.value.status == status and is_fatal(exc.value)
    assert len(srv.requests) == 1
    assert str(exc.value).startswith(f"HTTP {status}: ") and "invalid x-api-key" in str(exc.value)


def test_the_key_comes_from_anthropic_api_key_unless_another_is_chosen(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-default-000000")
    monkeypatch.setenv("MY_CLAUDE_KEY", "sk-ant-chosen-111111")
    spec = JudgeSpec("anthropic", "claude-x", "http://127.0.0.1:9/v1")
    default, _ = build_backends([spec], BackendSettings())
    chosen, _ = build_backends([spec], BackendSettings(api_key_env="MY_CLAUDE_KEY"))
    per_judge = make_backend(JudgeSpec.parse("anthropic:claude-x?key_env=MY_CLAUDE_KEY@http://127.0.0.1:9/v1"))
    assert [b.api_key_env for b in (default[0], chosen[0], per_judge)] == [
        "ANTHROPIC_API_KEY", "MY_CLAUDE_KEY", "MY_CLAUDE_KEY"]
    # a panel with an openai judge: each reads its own provider's variable by default
    openai_judge = make_backend(JudgeSpec("openai", "gpt-x"))
    assert openai_judge.api_key_env == "OPENAI_API_KEY"


def test_the_key_never_reaches_an_error_message(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123")
    message = "invalid x-api-key sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123"
    with AnthropicServer(lambda b: MReply(status=401, error_message=message)) as srv:
        with pytest.raises(BackendError) as exc:
            run(AnthropicBackend("claude-x", srv.base_url), REQ)
    assert "abcdefghijklmnop" not in str(exc.value)


def test_after_a_rate_limit_the_next_request_is_answered():
    # a 429 then an answer: the backend reports the wait, the engine's retry sends again
    answers = iter([MReply(status=429, headers={"retry-after": "0"}), MReply('{"score": 9}')])
    with AnthropicServer(lambda b: next(answers)) as srv:
        backend = AnthropicBackend("claude-x", srv.base_url)

        async def go():
            try:
                with pytest.raises(BackendError) as exc:
                    await backend.generate(REQ)
                assert exc.value.retry_after == 0.0
                return await backend.generate(REQ)
            finally:
                await backend.aclose()
        res = asyncio.run(go())
    assert res.text == '{"score": 9}'
