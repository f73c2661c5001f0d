"""A backend adopting the request form another copy of its judge learned (what each Ray actor does
with the lesson of the one request that went alone): its first request is already in that form.

Servers are the scripted ones of ``tests/helpers`` over real HTTP; every 400 they send is counted.
"""

import asyncio

import pytest

from polyjudge.backends import BackendSettings, JudgeSpec, build_backends
from polyjudge.backends.anthropic import AnthropicBackend
from polyjudge.backends.build import adopt_form_of, form_settled_of
from polyjudge.backends.openai import OpenAIBackend
from polyjudge.backends.replay import RecordingBackend
from tests.backends.test_adaptation import Counting
from tests.backends.test_anthropic import REQ as MESSAGES_REQ
from tests.backends.test_openai_reasoning import REQ
from tests.helpers.anthropic_server import AnthropicServer, MReply
from tests.helpers.openai_server import ScriptedServer


def generate(backend, request, times=1):
    async def go():
        try:
            return [await backend.generate(request) for _ in range(times)]
        finally:
            await backend.aclose()
    return asyncio.run(go())


def test_an_openai_judge_adopts_what_another_copy_learned_and_pays_no_rejection():
    counting = Counting(delay_s=0.0)
    with ScriptedServer(counting) as srv:
        teacher = OpenAIBackend("thinker-x", srv.base_url, structured="none")
        assert not teacher.form_settled
        generate(teacher, REQ)
        assert teacher.form_settled and counting.rejected == 2
        learner = OpenAIBackend("thinker-x", srv.base_url, structured="none")
        learner.adopt_form(teacher.adaptations)
        assert learner.form_settled
        before = len(srv.requests)
        results = generate(learner, REQ, times=2)
        sent = srv.requests[before:]
    assert counting.rejected == 2  # none more for the learner
    assert [r.text for r in results] == ['{"score": 71}'] * 2 and len(sent) == 2
    assert all("max_completion_tokens" in b and "max_tokens" not in b and "temperature" not in b for b in sent)
    assert learner.adaptations == teacher.adaptations


def test_adopting_no_adaptation_settles_the_form_as_asked():
    with ScriptedServer(lambda body: '{"score": 5}') as srv:
        backend = OpenAIBackend("plain", srv.base_url)
        backend.adopt_form({})
        assert backend.form_settled
        generate(backend, REQ)
    assert "max_tokens" in srv.requests[0] and srv.requests[0]["temperature"] == 0.0
    assert backend.adaptations == {}


def test_a_judge_told_it_is_no_reasoning_model_does_not_adopt_reasoning_parameters():
    backend = OpenAIBackend("plain", "http://127.0.0.1:9/v1", reasoning=False, structured="none")
    assert backend.form_settled  # never adapts: nothing to wait for
    backend.adopt_form({"max_tokens": "sent as max_completion_tokens"})
    assert "max_tokens" in backend._body(REQ) and "temperature" in backend._body(REQ)


@pytest.mark.parametrize("refused", ["temperature", "tool_choice"])
def test_an_anthropic_judge_adopts_what_another_copy_learned(refused):
    rejected = []

    def responder(body):
        if refused == "temperature" and "temperature" in body:
            rejected.append(body)
            return MReply(status=400, error_message="`temperature` is deprecated for this model.")
        if refused == "tool_choice" and "tool_choice" in body:
            rejected.append(body)
            return MReply(status=400, error_message="Thinking may not be enabled when tool_choice forces tool use.")
        return '{"score": 3}'

    with AnthropicServer(responder) as srv:
        teacher = AnthropicBackend("claude-x", srv.base_url)
        generate(teacher, MESSAGES_REQ)
        learner = AnthropicBackend("claude-x", srv.base_url)
        assert not learner.form_settled
        learner.adopt_form(teacher.adaptations)
        assert learner.form_settled
        before = len(srv.requests)
        generate(learner, MESSAGES_REQ, times=2)
        sent = srv.requests[before:]
    assert len(rejected) == 1 and len(sent) == 2
    assert all(refused not in b for b in sent) and learner.adaptations == teacher.adaptations


def test_the_helpers_look_through_a_recording_and_into_every_server_of_a_pool(tmp_path):
    urls = "http://127.0.0.1:9/v1,http://127.0.0.1:10/v1"
    (pool,), _ = build_backends([JudgeSpec.parse(f"openai:thinker-x?structured=none@{urls}")], BackendSettings())
    recorded = RecordingBackend(pool, tmp_path / "rec.jsonl")
    assert not form_settled_of(recorded)
    pool.members[1].adopt_form({})  # one server learned the form: the pool's is known (one model)
    assert form_settled_of(recorded) and not pool.members[0].form_settled
    adopt_form_of(recorded, {"temperature": "left at the model's default"})
    assert form_settled_of(recorded)
    assert all(m.form_settled and "temperature" not in m._body(REQ) for m in pool.members)
    assert recorded.adaptations == {"temperature": "left at the model's default"}
    plain = object()
    assert form_settled_of(plain)  # a backend that never adapts never waits
    adopt_form_of(plain, {"temperature": "x"})  # and has nothing to adopt
    asyncio.run(recorded.aclose())
