import asyncio
import json
import time

import pytest

from polyjudge.backends.base import BackendError
from polyjudge.backends.openai import OpenAIBackend, chat_body, parse_retry_after, wire_body
from polyjudge.data.chat import GenerateRequest, Message
from tests.helpers.openai_server import Reply, ScriptedServer

REQ = GenerateRequest(messages=(Message("system", "be a judge"), Message("user", "rate")), temperature=0.4,
                      max_tokens=50, seed=3,
                      json_schema={"type": "object", "properties": {"score": {"type": "integer"}}})


def gen(backend, request=REQ):
    async def go():
        try:
            return await backend.generate(request)
        finally:
            await backend.aclose()
    return asyncio.run(go())


def test_sends_schema_seed_and_reads_usage(monkeypatch):
    monkeypatch.setenv("PJ_TEST_KEY", "sk-secret")
    with ScriptedServer(lambda body: '{"score": 90}') as srv:
        res = gen(OpenAIBackend("m1", srv.base_url, api_key_env="PJ_TEST_KEY"))
    body = srv.requests[0]
    assert body["model"] == "m1" and body["seed"] == 3 and body["temperature"] == 0.4 and body["max_tokens"] == 50
    assert body["response_format"]["json_schema"]["schema"] == REQ.json_schema
    assert body["messages"][0] == {"role": "system", "content": "be a judge"}
    assert srv.headers_seen[0]["Authorization"] == "Bearer sk-secret"
    assert res.text == '{"score": 90}' and res.finish_reason == "stop" and res.usage.completion_tokens == 2


def test_falls_back_when_server_rejects_response_format():
    def responder(body):
        if "response_format" in body:
            return Reply(status=400, raw_body='{"error": {"message": "unknown field response_format"}}')
        return "score: 80"
    with ScriptedServer(responder) as srv:
        backend = OpenAIBackend("m", srv.base_url)

        async def go():
            a = await backend.generate(REQ)
            b = await backend.generate(REQ)
            await backend.aclose()
            return a, b
        a, b = asyncio.run(go())
    assert a.text == b.text == "score: 80"
    # one rejected attempt, then plain requests only
    assert ["response_format" in r for r in srv.requests] == [True, False, False]


@pytest.mark.parametrize("status,retryable", [(429, True), (500, True), (503, True), (400, False), (401, False)])
def test_error_statuses(status, retryable):
    with ScriptedServer(lambda b: Reply(status=status, headers={"Retry-After": "7"})) as srv:
        with pytest.raises(BackendError) as exc:
            gen(OpenAIBackend("m", srv.base_url, structured="none"))
    assert exc.value.retryable is retryable and exc.value.status == status
    assert exc.value.retry_after == 7.0


def test_malformed_body_and_timeout_are_retryable():
    with ScriptedServer(lambda b: Reply(raw_body="{not json")) as srv:
        with pytest.raises(BackendError) as exc:
            gen(OpenAIBackend("m", srv.base_url))
    assert exc.value.retryable
    with ScriptedServer(lambda b: Reply(content="late", delay_s=1.0)) as srv:
        with pytest.raises(BackendError) as exc:
            gen(OpenAIBackend("m", srv.base_url, timeout=0.2))
    assert exc.value.retryable and "timeout" in str(exc.value)


def test_no_key_no_auth_header(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ScriptedServer(lambda b: "x") as srv:
        gen(OpenAIBackend("m", srv.base_url))
    assert "Authorization" not in srv.headers_seen[0]


def test_retry_after_http_date():
    from email.utils import formatdate
    assert 8 <= parse_retry_after(formatdate(time.time() + 10, usegmt=True)) <= 10
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


@pytest.mark.parametrize("status", [401, 403, 404])
def test_auth_and_not_found_are_not_retried(status):
    with ScriptedServer(lambda b: Reply(status=status)) as srv:
        with pytest.raises(BackendError) as exc:
            gen(OpenAIBackend("m", srv.base_url, structured="none"))
    assert exc.value.retryable is False and exc.value.status == status and len(srv.requests) == 1


def test_error_text_from_the_server_is_short_and_without_secrets(monkeypatch):
    monkeypatch.setenv("PJ_TEST_KEY", "sk-proj-abcdefghijklmnopqrstuvwx")
    body = '{"error": {"message": "Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwx.\\n' + "x" * 500 + '"}}'
    with ScriptedServer(lambda b: Reply(status=401, raw_body=body)) as srv:
        with pytest.raises(BackendError) as exc:
            gen(OpenAIBackend("m", srv.base_url, api_key_env="PJ_TEST_KEY"))
    text = str(exc.value)
    assert "abcdefghijklmnop" not in text and "\n" not in text and len(text) <= 220
    assert text.startswith("HTTP 401: Incorrect API key provided: ")


def test_connection_refused_is_a_retryable_connection_error():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(BackendError) as exc:
        gen(OpenAIBackend("m", f"http://127.0.0.1:{port}/v1"))
    assert exc.value.retryable and str(exc.value).startswith("connection error: ConnectError")


def _reference_bytes(body):
    """What the request body's bytes have always been: compact JSON, UTF-8 as is, no NaN."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


@pytest.mark.parametrize("request_", [
    REQ,
    GenerateRequest(messages=(Message("user", "Übersetze: «naïve» \u2028 \"quoted\" \\ ✓ 😀"),), max_tokens=7,
                    json_schema={"type": "object", "properties": {"é": {"type": "string"}}}, n=3, top_logprobs=2,
                    reasoning_effort="low"),
    GenerateRequest(messages=(Message("user", "no schema"),), temperature=1.0),
])
@pytest.mark.parametrize("reasoning", [False, True])
def test_wire_body_is_the_whole_body_encoded_at_once(request_, reasoning):
    for structured in (True, False):
        body = chat_body("m", request_, structured=structured, reasoning=reasoning)
        keys = list(body)
        for _ in range(2):  # the second time the response_format member's text is the one kept
            assert wire_body(body) == _reference_bytes(body)
        assert list(body) == keys  # the caller reads the body it sent afterwards, in its order


def test_wire_body_encodes_a_schema_once_and_a_new_schema_afresh(monkeypatch):
    import polyjudge.backends.openai as openai_module

    encoded = []
    real = openai_module.json_text
    monkeypatch.setattr(openai_module, "json_text",
                        lambda value: encoded.append("response_format" in value) or real(value))
    schema = {"type": "object", "properties": {"score": {"type": "integer", "minimum": 0}}}
    requests = [GenerateRequest(messages=(Message("user", f"item {i}"),), json_schema=schema) for i in range(3)]
    sent = [wire_body(chat_body("m", r)) for r in requests]
    assert encoded == [True, False, False, False]  # the member once, the rest of each body each time
    assert [json.loads(b)["messages"][0]["content"] for b in sent] == ["item 0", "item 1", "item 2"]
    other = {"type": "object", "properties": {"label": {"type": "string"}}}
    body = chat_body("m", GenerateRequest(messages=(Message("user", "x"),), json_schema=other))
    assert json.loads(wire_body(body))["response_format"]["json_schema"]["schema"] == other
    # A response_format that is not the one chat_body writes is encoded as it is, never taken from the kept text.
    odd = chat_body("m", requests[0])
    odd["response_format"] = {"type": "json_object"}
    assert wire_body(odd) == _reference_bytes(odd)
    odd = chat_body("m", requests[0])
    odd["response_format"]["json_schema"]["strict"] = False
    assert wire_body(odd) == _reference_bytes(odd)


def test_wire_body_refuses_nan_as_before():
    body = chat_body("m", GenerateRequest(messages=(Message("user", "x"),), temperature=float("nan"),
                                          json_schema={"type": "object"}))
    with pytest.raises(ValueError):
        wire_body(body)
    assert "response_format" in body and next(reversed(body)) == "response_format"
