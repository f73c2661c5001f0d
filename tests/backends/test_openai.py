import asyncio
import time

import pytest

from polyjudge.backends.base import BackendError
from polyjudge.backends.openai import OpenAIBackend, parse_retry_after
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
