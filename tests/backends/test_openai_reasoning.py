"""The openai backend against servers that answer like reasoning models, vLLM and llama.cpp.

The 400 answers are the ones OpenAI documents for o-series models:
``{"error": {"message", "type": "invalid_request_error", "param", "code"}}``
with code ``unsupported_parameter`` for ``max_tokens`` and ``unsupported_value``
for a temperature other than the default.
"""

import asyncio
import json

import pytest

from polyjudge.backends import BackendSettings, JudgeSpec, make_backend
from polyjudge.backends.base import BackendError
from polyjudge.backends.openai import OpenAIBackend
from polyjudge.backends.reasoning import split_reasoning
from polyjudge.data.chat import GenerateRequest, Message
from tests.helpers.openai_server import Reply, ScriptedServer

REQ = GenerateRequest(messages=(Message("system", "be a judge"), Message("user", "rate")), temperature=0.0,
                      max_tokens=64, seed=3)

MAX_TOKENS_400 = json.dumps({"error": {
    "message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
               "Use 'max_completion_tokens' instead.",
    "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}})


def temperature_400(value):
    return json.dumps({"error": {
        "message": f"Unsupported value: 'temperature' does not support {value} with this model. "
                   "Only the default (1) value is supported.",
        "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value"}})


def completion(*choices, usage=None, model="o4-mini"):
    """A chat-completion body; each choice is a message dict, optionally with finish_reason/logprobs."""
    out = []
    for i, c in enumerate(choices):
        c = dict(c)
        finish = c.pop("finish_reason", "stop")
        logprobs = c.pop("logprobs", None)
        out.append({"index": i, "finish_reason": finish, "logprobs": logprobs,
                    "message": {"role": "assistant", **c}})
    return json.dumps({"id": "x", "object": "chat.completion", "model": model, "choices": out,
                       "usage": usage or {"prompt_tokens": 5, "completion_tokens": 3}})


def o_series(body):
    """Answers like an o-series model: rejects max_tokens and any temperature but 1."""
    if "max_tokens" in body:
        return Reply(status=400, raw_body=MAX_TOKENS_400)
    if body.get("temperature", 1) != 1:
        return Reply(status=400, raw_body=temperature_400(body["temperature"]))
    return Reply(raw_body=completion(
        {"content": '{"score": 71}'},
        usage={"prompt_tokens": 120, "completion_tokens": 400, "total_tokens": 520,
               "prompt_tokens_details": {"cached_tokens": 64},
               "completion_tokens_details": {"reasoning_tokens": 384}}))


def run(backend, *requests):
    async def go():
        try:
            return [await backend.generate(r) for r in requests]
        finally:
            await backend.aclose()
    return asyncio.run(go())


def test_o_series_400s_are_adapted_once_and_remembered():
    with ScriptedServer(o_series) as srv:
        backend = OpenAIBackend("thinker-x", srv.base_url, structured="none")
        first, second, third = run(backend, REQ, REQ, REQ)
    assert [r.text for r in (first, second, third)] == ['{"score": 71}'] * 3
    # two rejected attempts (max_tokens, then temperature), then only adapted requests
    assert len(srv.requests) == 5
    sent = srv.requests
    assert "max_tokens" in sent[0] and sent[0]["temperature"] == 0.0
    assert "max_completion_tokens" in sent[1] and sent[1]["temperature"] == 0.0
    for body in sent[2:]:
        assert body["max_completion_tokens"] == 64 and "max_tokens" not in body and "temperature" not in body
    assert backend.adaptations == {
        "max_tokens": "sent as max_completion_tokens (the server rejected max_tokens)",
        "temperature": "left at the model's default (the server rejected 0)"}
    # reasoning and cached tokens are counted
    assert first.usage.reasoning_tokens == 384 and first.usage.cached_prompt_tokens == 64
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (120, 400)


def test_concurrent_requests_sent_before_the_adaptation_are_resent_adapted():
    with ScriptedServer(o_series, latency_s=0.05) as srv:
        backend = OpenAIBackend("thinker-x", srv.base_url, structured="none")

        async def go():
            try:
                return await asyncio.gather(*(backend.generate(REQ) for _ in range(8)))
            finally:
                await backend.aclose()
        results = asyncio.run(go())
    assert all(r.text == '{"score": 71}' for r in results)
    assert all("max_tokens" not in b and "temperature" not in b for b in srv.completed)
    assert len(backend.adaptations) == 2


def test_the_reasoning_option_sends_reasoning_requests_from_the_start():
    spec = JudgeSpec.parse("openai:o4-mini?reasoning@http://127.0.0.1:9/v1")
    assert spec.model == "o4-mini" and spec.options == (("reasoning", "true"),)
    with ScriptedServer(o_series) as srv:
        backend = make_backend(JudgeSpec("openai", "o4-mini", srv.base_url, spec.options), BackendSettings())
        assert isinstance(backend, OpenAIBackend) and backend.reasoning is True
        run(backend, REQ)
    assert len(srv.requests) == 1 and "max_completion_tokens" in srv.requests[0]
    assert "temperature" not in srv.requests[0]
    assert set(backend.adaptations) == {"max_tokens", "temperature"}


def test_reasoning_false_never_adapts_and_names_the_rejected_parameter():
    with ScriptedServer(o_series) as srv:
        with pytest.raises(BackendError) as exc:
            run(OpenAIBackend("thinker-x", srv.base_url, reasoning=False), REQ)
    assert len(srv.requests) == 1
    assert exc.value.status == 400 and not exc.value.retryable and exc.value.unsupported == "max_tokens"
    assert str(exc.value).startswith("HTTP 400: Unsupported parameter: 'max_tokens'")


def test_reasoning_effort_is_sent_and_a_rejection_names_it():
    req = GenerateRequest(messages=(Message("user", "rate"),), reasoning_effort="low")
    with ScriptedServer(lambda b: '{"score": 5}') as srv:
        run(OpenAIBackend("thinker-x", srv.base_url), req)
    assert srv.requests[0]["reasoning_effort"] == "low"
    rejected = json.dumps({"error": {"message": "Unrecognized request argument supplied: reasoning_effort",
                                     "type": "invalid_request_error", "param": None, "code": None}})
    with ScriptedServer(lambda b: Reply(status=400, raw_body=rejected)) as srv:
        with pytest.raises(BackendError) as exc:
            run(OpenAIBackend("gpt-4o", srv.base_url), req)
    assert exc.value.unsupported == "reasoning_effort" and not exc.value.retryable


def test_a_budget_spent_thinking_is_a_truncated_answer():
    body = completion({"content": None, "finish_reason": "length"},
                      usage={"prompt_tokens": 10, "completion_tokens": 64,
                             "completion_tokens_details": {"reasoning_tokens": 64}})
    with ScriptedServer(lambda b: Reply(raw_body=body)) as srv:
        (res,) = run(OpenAIBackend("thinker-x", srv.base_url), REQ)
    assert res.text == "" and res.finish_reason == "length" and res.usage.reasoning_tokens == 64


@pytest.mark.parametrize("content,answer,thinking", [
    ("<think>The fluency is fine.\nMaybe 70?</think>\n\n{\"score\": 80}", '{"score": 80}',
     "The fluency is fine.\nMaybe 70?"),
    ("weighing 60 against 90</think>{\"score\": 90}", '{"score": 90}', "weighing 60 against 90"),  # opened in prompt
    ("<think>\n\n</think>\n\n{\"score\": 3}", '{"score": 3}', None),  # thinking switched off (Qwen3)
    ("<think>still thinking about 40 or", "", "still thinking about 40 or"),  # cut while thinking
    ('{"score": 50}', '{"score": 50}', None),
])
def test_think_blocks_go_to_reasoning_not_to_the_parsed_text(content, answer, thinking):
    assert split_reasoning(content) == (answer, thinking)
    with ScriptedServer(lambda b: content) as srv:
        (res,) = run(OpenAIBackend("qwen3", srv.base_url), REQ)
    assert res.text == answer and res.reasoning == thinking


def test_reasoning_content_of_vllm_and_llama_cpp_is_kept_apart():
    body = completion({"content": '{"score": 64}', "reasoning_content": "It has one minor error."})
    with ScriptedServer(lambda b: Reply(raw_body=body)) as srv:
        (res,) = run(OpenAIBackend("deepseek-r1", srv.base_url), REQ)
    assert res.text == '{"score": 64}' and res.reasoning == "It has one minor error."
    body = completion({"content": "<think>b</think>7", "reasoning": "a"})
    with ScriptedServer(lambda b: Reply(raw_body=body)) as srv:
        (res,) = run(OpenAIBackend("gpt-oss", srv.base_url), REQ)
    assert res.text == "7" and res.reasoning == "a\n\nb"


def test_n_fills_every_choice_in_order():
    req = GenerateRequest(messages=(Message("user", "rate"),), n=3, seed=7)
    body = completion({"content": "<think>x</think>10"}, {"content": "20", "finish_reason": "length"},
                      {"content": "30"})
    with ScriptedServer(lambda b: Reply(raw_body=body)) as srv:
        (res,) = run(OpenAIBackend("m", srv.base_url), req)
    assert srv.requests[0]["n"] == 3 and srv.requests[0]["seed"] == 7
    assert res.choices == ("10", "20", "30") and res.choice_finish_reasons == ("stop", "length", "stop")
    assert res.text == "10" and res.finish_reason == "stop" and res.reasoning == "x"


def test_n_ignored_by_the_server_returns_what_came_back():
    req = GenerateRequest(messages=(Message("user", "rate"),), n=4)
    with ScriptedServer(lambda b: Reply(raw_body=completion({"content": "42"}))) as srv:
        (res,) = run(OpenAIBackend("m", srv.base_url), req)
    assert srv.requests[0]["n"] == 4
    assert res.choices == ("42",) and res.choice_finish_reasons == ("stop",)


def test_n_rejected_by_the_server_is_an_unsupported_error_for_the_engine():
    rejected = json.dumps({"error": {"message": "'n' must be 1 for this model", "type": "invalid_request_error",
                                     "param": "n", "code": "unsupported_value"}})
    req = GenerateRequest(messages=(Message("user", "rate"),), n=4)
    with ScriptedServer(lambda b: Reply(status=400, raw_body=rejected)) as srv:
        with pytest.raises(BackendError) as exc:
            run(OpenAIBackend("m", srv.base_url), req)
    assert exc.value.unsupported == "n" and exc.value.retryable is False and exc.value.status == 400
    assert len(srv.requests) == 1
    # requests without n never send it (and keep their 0.1.0 bodies)
    with ScriptedServer(lambda b: "1") as srv:
        run(OpenAIBackend("m", srv.base_url), REQ)
    assert "n" not in srv.requests[0] and "logprobs" not in srv.requests[0]


def test_top_logprobs_are_parsed_per_token():
    lp = {"content": [
        {"token": "8", "logprob": -0.1, "bytes": [56],
         "top_logprobs": [{"token": "8", "logprob": -0.1}, {"token": "7", "logprob": -2.4}]},
        {"token": "0", "logprob": -0.01, "top_logprobs": [{"token": "0", "logprob": -0.01}]},
    ]}
    req = GenerateRequest(messages=(Message("user", "rate"),), top_logprobs=2)
    with ScriptedServer(lambda b: Reply(raw_body=completion({"content": "80", "logprobs": lp}))) as srv:
        (res,) = run(OpenAIBackend("m", srv.base_url), req)
    assert srv.requests[0]["logprobs"] is True and srv.requests[0]["top_logprobs"] == 2
    assert [(t.token, t.logprob) for t in res.logprobs] == [("8", -0.1), ("0", -0.01)]
    assert res.logprobs[0].top == (("8", -0.1), ("7", -2.4))


def test_a_server_that_returns_no_logprobs_or_rejects_them_says_so():
    req = GenerateRequest(messages=(Message("user", "rate"),), top_logprobs=5)
    with ScriptedServer(lambda b: "80") as srv:  # answers, but without logprobs
        with pytest.raises(BackendError) as exc:
            run(OpenAIBackend("m", srv.base_url), req)
    assert exc.value.unsupported == "logprobs" and not exc.value.retryable
    rejected = json.dumps({"error": {"message": "logprobs is not supported with this model",
                                     "type": "invalid_request_error", "param": "logprobs",
                                     "code": "unsupported_parameter"}})
    with ScriptedServer(lambda b: Reply(status=400, raw_body=rejected)) as srv:
        with pytest.raises(BackendError) as exc:
            run(OpenAIBackend("o3", srv.base_url), req)
    assert exc.value.unsupported == "logprobs"


def test_an_exhausted_quota_is_not_retried():
    body = json.dumps({"error": {"message": "You exceeded your current quota", "type": "insufficient_quota",
                                 "param": None, "code": "insufficient_quota"}})
    with ScriptedServer(lambda b: Reply(status=429, raw_body=body)) as srv:
        with pytest.raises(BackendError) as exc:
            run(OpenAIBackend("m", srv.base_url), REQ)
    assert exc.value.status == 429 and exc.value.retryable is False
    with ScriptedServer(lambda b: Reply(status=429)) as srv:  # an ordinary rate limit still is
        with pytest.raises(BackendError) as exc:
            run(OpenAIBackend("m", srv.base_url), REQ)
    assert exc.value.retryable is True
