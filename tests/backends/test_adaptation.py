"""No 400 storm: a judge adapting to a reasoning model pays one rejected request per adapted parameter.

The server rejects ``max_tokens`` and then any temperature but the default,
as OpenAI documents for o-series models; a whole run at ``-c 64`` is judged
against it and the 400 answers it sent are counted.
"""

import json
import threading

import pytest

from polyjudge.api import JudgeConfig, judge
from polyjudge.backends.adaptation import HOLD_S, MIN_HOLD_S, is_billing_error
from polyjudge.backends.anthropic import AnthropicBackend
from polyjudge.backends.base import BackendError
from polyjudge.backends.openai import OpenAIBackend
from polyjudge.backends.reasoning import is_known_reasoning_model
from polyjudge.engine.runner import is_fatal
from tests.backends.test_openai_reasoning import REQ, o_series
from tests.helpers.anthropic_server import AnthropicServer, MReply
from tests.helpers.openai_server import Reply, ScriptedServer


class Counting:
    """o_series() that also counts the 400 answers (the server's threads answer concurrently)."""

    def __init__(self, delay_s=0.02):
        self.rejected, self.lock, self.delay_s = 0, threading.Lock(), delay_s

    def __call__(self, body):
        reply = o_series(body)
        if isinstance(reply, Reply) and reply.status == 400:
            with self.lock:
                self.rejected += 1
        else:
            reply = Reply(raw_body=reply.raw_body, delay_s=self.delay_s)
        return reply


def _items(tmp_path, n):
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"src_lang": "en", "tgt_lang": "de",
                                        "src": f"s{i}", "tgt": f"t{i}", "seg_id": str(i)}) + "\n"
                            for i in range(n)), encoding="utf-8")
    return path


@pytest.mark.parametrize("protocol", ["tsa", "da"])
def test_an_unknown_reasoning_model_at_c64_costs_one_rejected_request_per_parameter(tmp_path, protocol):
    counting = Counting()
    with ScriptedServer(counting) as srv:
        result = judge(_items(tmp_path, 128), JudgeConfig(protocol=protocol, concurrency=64,
                                                          judges=(f"openai:my-thinker@{srv.base_url}",),
                                                          max_failure_rate=None),  # tsa: unparseable on purpose
                       out=tmp_path / "run")
        sent = len(srv.requests)
    assert counting.rejected == 2  # max_tokens once, temperature once
    assert sent == 128 + 2
    statuses = result.status_counts()  # every request answered (the scripted da answer is not a tsa one)
    assert sum(statuses.values()) == 128 and "request_failed" not in statuses
    counts = json.loads((tmp_path / "run" / "manifest.json").read_text())["counts"]
    assert counts["retries"] == 2  # the two adapted re-sends are counted as retries


def test_a_known_reasoning_model_is_sent_its_parameters_from_the_first_request(tmp_path, monkeypatch):
    counting = Counting()
    with ScriptedServer(counting) as srv:
        judge(_items(tmp_path, 40), JudgeConfig(protocol="da", judges=(f"openai:o4-mini@{srv.base_url}",),
                                                concurrency=64), out=tmp_path / "run")
        first = srv.requests[0]
    assert counting.rejected == 0
    assert "max_completion_tokens" in first and "max_tokens" not in first and "temperature" not in first
    monkeypatch.setenv("POLYJUDGE_REASONING_MODELS", "my-thinker, deep")
    assert is_known_reasoning_model("org/my-thinker-2") and is_known_reasoning_model("deep")


@pytest.mark.parametrize(("name", "known"), [
    ("o1", True), ("o1-mini", True), ("o3-pro-2025-06-10", True), ("o4-mini", True), ("gpt-5", True),
    ("gpt-5.1", True), ("gpt-5-nano", True), ("azure/o3", True), ("GPT-5-mini", True),
    ("gpt-5-chat-latest", False), ("gpt-4o", False), ("o10", False), ("omni", False), ("gpt-50", False),
    ("llama-3-8b", False)])
def test_the_table_of_reasoning_models(name, known):
    assert is_known_reasoning_model(name) is known


def test_reasoning_false_exempts_a_model_of_the_table():
    backend = OpenAIBackend("o3", reasoning=False)
    assert backend._token_field == "max_tokens" and backend.adaptations == {}


def _generate(backend):
    import asyncio

    async def go():
        try:
            return await backend.generate(REQ)
        finally:
            await backend.aclose()
    return asyncio.run(go())


def test_a_low_credit_error_is_fatal_whatever_its_status():
    low = "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing."
    with AnthropicServer(lambda b: MReply(status=400, error_message=low)) as srv:
        with pytest.raises(BackendError) as exc:
            _generate(AnthropicBackend("claude-x", srv.base_url))
    assert exc.value.status == 400 and exc.value.fatal and is_fatal(exc.value) and not exc.value.retryable
    billing = json.dumps({"error": {"message": "Billing hard limit has been reached", "type": "invalid_request_error",
                                    "code": "billing_hard_limit_reached"}})
    with ScriptedServer(lambda b: Reply(status=400, raw_body=billing)) as srv:
        with pytest.raises(BackendError) as exc:
            _generate(OpenAIBackend("gpt-4o", srv.base_url))
    assert exc.value.fatal and is_fatal(exc.value)
    assert not is_billing_error("Invalid 'temperature': must be between 0 and 2", None)


def test_batch_files_use_the_table_too():
    from polyjudge.backends import BackendSettings, JudgeSpec
    from polyjudge.backends.batch import BatchLimits
    from polyjudge.backends.openai_batch import OpenAIBatchClient

    def client(spec):
        return OpenAIBatchClient.from_spec(JudgeSpec.parse(spec), BackendSettings(), BatchLimits())

    assert client("openai:o3").reasoning is True
    assert client("openai:o3?reasoning=false").reasoning is False
    assert client("openai:gpt-4o").reasoning is False and client("openai:gpt-4o?reasoning").reasoning is True
    line = json.loads(client("openai:gpt-5-mini")._encode(_batch_line()))
    assert "max_completion_tokens" in line["body"] and "temperature" not in line["body"]


def _batch_line():
    from polyjudge.backends.batch import BatchLine

    return BatchLine("c1", REQ)


def test_the_gate_holds_at_most_the_hold_time_and_a_rejection_holds_again():
    import asyncio
    import time

    from polyjudge.backends.adaptation import FormGate

    async def scenario():
        gate = FormGate(settled=False, hold_s=0.2)
        started: dict[str, float] = {}
        t0 = time.monotonic()

        async def request(name, *, delay=0.0, reject=False, fail=False):
            async def attempt():
                started[name] = time.monotonic() - t0
                await asyncio.sleep(delay)
                if reject:  # what a backend does on a rejected parameter: hold, then resend
                    gate.hold()
                    await asyncio.sleep(0.3)
                if fail:
                    raise RuntimeError("connection error")
                if not fail:
                    gate.settle()
            return await gate.run(attempt)

        # a slow first answer in the default form: the others wait only for the hold
        first = asyncio.create_task(request("first", delay=0.6))
        await asyncio.sleep(0.01)
        await request("second")
        assert 0.15 < started["second"] < 0.45
        await first
        return started

    asyncio.run(scenario())

    async def rejection_after_the_hold():
        gate = FormGate(settled=False, hold_s=0.05)
        order = []

        async def attempt(name, reject):
            async def go():
                order.append(name)
                if reject:
                    await asyncio.sleep(0.1)  # rejected after the hold was over
                    gate.hold()
                    await asyncio.sleep(0.2)  # the adapted resend
                    gate.settle()
            return await gate.run(go)

        first = asyncio.create_task(attempt("first", True))
        await asyncio.sleep(0.07)
        await attempt("free", False)  # the hold is over: goes at once
        await asyncio.sleep(0.08)  # now the rejection has come back
        late = asyncio.create_task(attempt("late", False))
        await asyncio.sleep(0.05)
        assert order == ["first", "free"]  # held while the adapted resend is out
        await asyncio.gather(first, late)
        assert order == ["first", "free", "late"]

    asyncio.run(rejection_after_the_hold())

    async def leader_fails():
        gate = FormGate(settled=False, hold_s=5.0)

        async def broken():
            raise RuntimeError("connection error")

        async def fine():
            return "ok"

        leader = asyncio.create_task(gate.run(broken))
        await asyncio.sleep(0)
        follower = asyncio.create_task(gate.run(fine))
        with pytest.raises(RuntimeError):
            await leader
        assert await asyncio.wait_for(follower, 1.0) == "ok"  # released at once, not after the 5 s hold

    asyncio.run(leader_fails())


@pytest.mark.parametrize("model, structured, held", [("o3-mini", "none", False), ("gpt-4o", "none", True),
                                                      ("o3-mini", "auto", True)])
def test_a_request_whose_form_is_known_waits_for_no_answer(model, structured, held):
    """A known reasoning model sends max_completion_tokens and no temperature from the start; with no schema to
    send (structured=none) nothing a 400 teaches could change its requests, so none of them waits for the first
    one's answer (at 1 s / 256 the hold cost a run up to 0.5 s). A model that may still adapt is held."""
    import asyncio
    import dataclasses

    async def scenario(srv):
        backend = OpenAIBackend(model, srv.base_url, structured=structured)
        request = dataclasses.replace(REQ, json_schema={"type": "object"})  # a protocol's schema
        try:
            await asyncio.gather(*(backend.generate(request) for _ in range(6)))
        finally:
            await backend.aclose()

    # A server that answers the slots question in 60 ms: the hold is the whole HOLD_S (ten such answers).
    with ScriptedServer(lambda body: json.dumps({"score": 1}), latency_s=0.4, get_latency_s=0.06) as srv:
        asyncio.run(scenario(srv))
        arrivals = sorted(srv.arrivals)
    assert len(arrivals) == 6
    assert (arrivals[-1] - arrivals[0] > 0.3) == held, arrivals


@pytest.mark.parametrize("get_latency_s, near", [(0.0, True), (0.2, False)])
def test_the_hold_lasts_as_long_as_a_rejection_from_this_server_would_take(get_latency_s, near):
    """Issue 46: a self-hosted server is asked for its slots (GET /props) before the first request; a
    rejected form comes back about as fast as that answer, so the first request holds the others for
    ROUND_TRIPS of it (at least MIN_HOLD_S, at most HOLD_S), not for its whole answer (a first run at
    1 s / 256 lost 0.5 s of its 15)."""

    with ScriptedServer(lambda body: json.dumps({"score": 1}), latency_s=2.0, get_latency_s=get_latency_s) as srv:
        used = _hold_of_a_first_run(srv, 6)
        arrivals = sorted(srv.arrivals)
    assert len(arrivals) == 6
    if near:  # answered at once: a few milliseconds times ROUND_TRIPS, never under MIN_HOLD_S
        assert MIN_HOLD_S <= used < HOLD_S / 2
    else:  # 0.2 s an answer: the hold given
        assert used == HOLD_S
    # the first went alone; the others after the hold, well before the first answer (2 s: a loaded CI machine
    # once released them 0.35 s late, past an answer at 0.6 s)
    assert used - 0.01 < arrivals[1] - arrivals[0] < used + 0.75 < 2.0, arrivals


def test_a_hosted_judge_keeps_the_whole_hold():
    """OpenAI's own endpoint is not asked for slots: nothing is measured, the hold stays HOLD_S."""
    backend = OpenAIBackend("m")
    assert backend._gate.hold_s == HOLD_S and backend._slots.known


def test_the_time_a_first_run_takes_to_start_its_client_is_not_the_servers(monkeypatch):
    """Issue 46: in a fresh process the slots question is the first request, and making the HTTP session
    imports aiohttp (about 0.1 s). Timed with it, a server on this machine looked 0.1 s slow, so the first
    request held the others for the whole HOLD_S (in fact until its own answer: 0.1 s of a 4.7 s run at
    0.1 s / 64). The session is made before the question is timed."""
    import time as _time

    from polyjudge.backends.http import HttpClients

    made = HttpClients._session_for_loop
    slow = {"first": True}

    def slow_start(self):  # what importing aiohttp costs a fresh process, once
        if slow.pop("first", False):
            _time.sleep(0.1)
        return made(self)

    monkeypatch.setattr(HttpClients, "_session_for_loop", slow_start)

    with ScriptedServer(lambda body: json.dumps({"score": 1}), latency_s=0.6, get_latency_s=0.0) as srv:
        used = _hold_of_a_first_run(srv, 4)
    assert MIN_HOLD_S <= used < HOLD_S / 2


def _hold_of_a_first_run(srv, requests: int) -> float:
    """The hold a fresh backend's gate used for ``requests`` sent at once with a schema (the form unsettled)."""
    import asyncio
    import dataclasses

    async def scenario():
        backend = OpenAIBackend("m", srv.base_url)
        request = dataclasses.replace(REQ, json_schema={"type": "object"})
        try:
            await asyncio.gather(*(backend.generate(request) for _ in range(requests)))
            return backend._gate.hold_s
        finally:
            await backend.aclose()

    return asyncio.run(scenario())
