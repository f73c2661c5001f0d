"""No 400 storm on a Ray pool: a judge whose request form is unknown pays one rejected request per
adapted parameter over the whole pool, not one per actor.

The server rejects ``max_tokens`` and then any temperature but the default (as OpenAI
documents for o-series models) and counts its 400 answers; the pool is a real local Ray
cluster of this process. Servers that hold a request until another one arrives show which
requests went out while a judge's first request was unanswered (bounded waits, so a wrong
order fails the test instead of hanging it).
"""

import asyncio
import json
import os
import signal
import sys
import threading
from collections import Counter

import pytest

from polyjudge.backends.openai import OpenAIBackend
from polyjudge.backends.registry import BackendSettings, JudgeSpec
from polyjudge.data.errors import InputError
from polyjudge.engine import run
from polyjudge.engine.plan import plan_tasks
from polyjudge.engine.ray_executor import RayExecutor, RayOptions, _Chunk, _FormHold, execute_ray
from polyjudge.engine.runner import RetryPolicy, SendControls
from polyjudge.engine.store import Store
from polyjudge.protocols import get_protocol
from tests.backends.test_adaptation import Counting
from tests.backends.test_openai_reasoning import o_series
from tests.engine.test_ray_executor import _peer, _PeerHandler, pid_of_client
from tests.helpers.openai_server import Reply
from tests.helpers.ray_tests import local_cluster, needs_ray, quiet_server, two_system_items

LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the sending actor through /proc")

FAST_RETRY = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.02)
SETTINGS = BackendSettings()
# Bound of every wait a scripted server makes for another request (reached only when the order is wrong).
WAIT_S = 20.0


@pytest.fixture(scope="module")
def cluster():
    yield from local_cluster()


items = two_system_items


serve = quiet_server


def judged(out, srv, judge, executor=None, **kw):
    """``run`` of the da protocol with ``executor`` (None: the local one); the result and its manifest."""
    out.mkdir(parents=True, exist_ok=True)
    extra = {"executor": executor} if executor is not None else {}
    result = run(items=kw.pop("items"), protocol=get_protocol("da"), backends=[OpenAIBackend(judge, srv.base_url)],
                 store_path=out / "store.sqlite", retry=FAST_RETRY, **extra, **kw)
    result.write(out)
    return result, json.loads((out / "manifest.json").read_text())


def judge_of(body):
    return body["model"]


class Holding:
    """Answers with ``answer``; the first request of judge ``first_of`` is held until ``ready(seen)``
    is true of the requests seen so far (or :data:`WAIT_S` passed), and what arrived meanwhile is kept."""

    def __init__(self, answer, first_of, ready):
        self.answer, self.first_of, self.ready = answer, first_of, ready
        self.seen: list[dict] = []
        self.during_hold: list[dict] | None = None  # the requests that arrived while the first was held
        self.released: bool | None = None  # whether ready() came true within WAIT_S
        self.cond = threading.Condition()

    def __call__(self, body):
        with self.cond:
            self.seen.append(body)
            self.cond.notify_all()
            first = self.during_hold is None and judge_of(body) == self.first_of
            if first:
                self.during_hold = []
                self.released = self.cond.wait_for(lambda: self.ready(self.seen), WAIT_S)
                self.during_hold = [b for b in self.seen if b is not body]
        return self.answer(body)


# --------------------------------------------------------------------------- without a cluster


def test_the_hold_sends_one_request_alone_and_keeps_the_rest_in_order():
    tasks = plan_tasks(items(6), get_protocol("da"), ["fixed", "learning"], runs=1, temperature=0.0, seed=0)
    chunk = _Chunk("p", [(t,) for t in tasks])
    hold = _FormHold(learning={"learning"})
    assert hold.holds(chunk) and not _FormHold().holds(chunk)
    parts = hold.split(chunk, size=2)
    assert parts[0].alone and [g[0].judge for g in parts[0].work] == ["learning"]
    assert not hold.holds(parts[0])  # the lone request is never held
    assert [g[0].key for g in parts[1].work] == [t.key for t in tasks if t.judge == "fixed"]
    assert hold.split(_Chunk("p", [(t,) for t in tasks if t.judge == "learning"][:1]), size=2) == []
    released = hold.release("learning")
    held = [t.key for t in tasks if t.judge == "learning"][1:] + [[t.key for t in tasks if t.judge == "learning"][0]]
    assert [g[0].key for c in released for g in c.work] == held
    assert all(c.size <= 2 for c in released) and not hold.learning and not hold.holds(chunk)


def test_a_bad_form_hold_is_refused():
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(InputError, match="form_hold_s"):
            RayOptions(form_hold_s=bad).check()


# --------------------------------------------------------------------------- on a cluster


class Senders:
    """Wraps a responder and keeps the process that sent each request (one /proc look-up per connection)."""

    def __init__(self, responder):
        self.responder, self.pids, self.by_port = responder, Counter(), {}

    def __call__(self, body):
        port = _peer.port
        if port not in self.by_port:
            self.by_port[port] = pid_of_client(port)
        self.pids[self.by_port[port]] += 1
        return self.responder(body)


@needs_ray
@LINUX_ONLY
def test_an_unknown_reasoning_model_costs_two_rejected_requests_over_the_whole_pool(cluster, tmp_path):
    """64 items at -c 64 on 4 actors (half a CPU each): max_tokens rejected once, the temperature once, for
    the whole pool. Each actor learning on its own, the two actors the 64 requests fill cost 4."""
    batch = items(64)
    local_count, remote_count = Counting(), Counting()
    with serve(local_count) as srv:
        _, local = judged(tmp_path / "local", srv, "thinker-x", items=batch, concurrency=64)
    senders = Senders(remote_count)
    with serve(senders) as srv:
        srv._httpd.RequestHandlerClass = _PeerHandler
        executor = RayExecutor([JudgeSpec("openai", "thinker-x", srv.base_url)], SETTINGS, RayOptions(ray_actors=4,
                                                                                              ray_cpus_per_actor=0.5))
        result, remote = judged(tmp_path / "ray", srv, "thinker-x", executor=executor, items=batch, concurrency=64)
        sent = list(srv.requests)
    assert len(senders.pids) >= 2 and None not in senders.pids  # the work was spread over several actors
    assert remote_count.rejected == 2 and local_count.rejected == 2
    assert len(sent) == 64 + 2
    assert "max_tokens" in sent[0] and "temperature" in sent[0]  # the one request that taught the pool
    assert all("max_tokens" not in b and "temperature" not in b for b in sent[2:])
    assert result.status_counts() == {"ok": 64}
    # the adaptations reach the manifest and the signature as a local run's do
    assert remote["judges"] == local["judges"]
    assert remote["judges"][0]["adaptations"].keys() == {"max_tokens", "temperature"}
    assert remote["signature"] == local["signature"] and "adapted:thinker-x=max_tokens,temperature" in \
        remote["signature"]
    assert remote["counts"]["ray_actors"] == 4


@needs_ray
def test_a_settled_judge_does_not_wait_for_another_judges_lesson(cluster, tmp_path):
    """A panel: ``fixed`` is told it is a reasoning model (settled), ``thinker-x`` is not. The server
    holds thinker-x's first request until 8 of fixed's have arrived: they come while it is held, and
    no other request of thinker-x does."""
    def ready(seen):
        return sum(1 for b in seen if judge_of(b) == "fixed") >= 8

    counting = Counting(delay_s=0.0)
    holding = Holding(lambda body: o_series(body) if judge_of(body) == "thinker-x" else counting(body),
                      "thinker-x", ready)
    tasks = plan_tasks(items(32), get_protocol("da"), ["fixed", "thinker-x"], runs=1, temperature=0.0, seed=0)
    with serve(holding) as srv:
        specs = [JudgeSpec.parse(f"openai:fixed?reasoning,structured=none@{srv.base_url}"),
                 JudgeSpec("openai", "thinker-x", srv.base_url)]
        store = Store(tmp_path / "store.sqlite")
        try:
            stats = asyncio.run(execute_ray(tasks, specs, SETTINGS, store, SendControls(concurrency=16,
                                                                                        retry=FAST_RETRY),
                                            options=RayOptions(ray_actors=2, form_hold_s=WAIT_S)))
            assert store.completed_keys() == {t.key for t in tasks}
        finally:
            store.close()
        sent = list(srv.requests)
    assert holding.released  # fixed's requests came while thinker-x's first was unanswered
    assert [judge_of(b) for b in holding.during_hold].count("thinker-x") == 0
    assert stats.done == 64 and stats.failed == 0
    assert counting.rejected == 0  # fixed was never rejected
    rejected = [b for b in sent if judge_of(b) == "thinker-x" and ("max_tokens" in b or "temperature" in b)]
    assert len(rejected) == 2


@needs_ray
def test_a_failure_that_teaches_nothing_lets_the_others_go(cluster, tmp_path, da_responder):
    """The first request fails with a 503; its retry is held by the server until another request of
    the judge arrives, which happens only if the failure let the held requests go (the hold itself
    lasts longer than the test waits)."""
    tasks = plan_tasks(items(8), get_protocol("da"), ["judge-1"], runs=1, temperature=0.0, seed=0)
    first_prompt: list[str] = []
    arrived, cond = Counter(), threading.Condition()

    def responder(body):
        prompt = body["messages"][-1]["content"]
        with cond:
            arrived[prompt] += 1
            cond.notify_all()
            if not first_prompt:
                first_prompt.append(prompt)
                return Reply(status=503)
            if prompt == first_prompt[0]:  # its retry
                assert cond.wait_for(lambda: len(arrived) > 1, WAIT_S), "no other request was let go"
        return da_responder(body)

    with serve(responder) as srv:
        store = Store(tmp_path / "store.sqlite")
        try:
            stats = asyncio.run(execute_ray(tasks, [JudgeSpec("openai", "judge-1", srv.base_url)], SETTINGS, store,
                                            SendControls(concurrency=4, retry=FAST_RETRY),
                                            options=RayOptions(ray_actors=2, form_hold_s=WAIT_S)))
            assert store.completed_keys() == {t.key for t in tasks}
        finally:
            store.close()
    assert stats.done == 8 and stats.failed == 0
    assert sorted(arrived.values()) == [1] * 7 + [2]  # the failed request sent twice, every other once


@needs_ray
def test_a_slow_first_answer_lets_the_others_go_after_the_hold(cluster, tmp_path, da_responder):
    """No rejection within the hold: the judge's other requests go before its first is answered."""
    def ready(seen):
        return len({b["messages"][-1]["content"] for b in seen}) > 1

    holding = Holding(da_responder, "judge-1", ready)
    tasks = plan_tasks(items(8), get_protocol("da"), ["judge-1"], runs=1, temperature=0.0, seed=0)
    with serve(holding) as srv:
        store = Store(tmp_path / "store.sqlite")
        try:
            stats = asyncio.run(execute_ray(tasks, [JudgeSpec("openai", "judge-1", srv.base_url)], SETTINGS, store,
                                            SendControls(concurrency=4, retry=FAST_RETRY),
                                            options=RayOptions(ray_actors=2, form_hold_s=0.2)))
        finally:
            store.close()
    assert holding.released and holding.during_hold
    assert stats.done == 8 and stats.failed == 0 and len(srv.requests) == 8


@needs_ray
@LINUX_ONLY
def test_the_lone_request_lost_with_its_actor_goes_alone_again(cluster, tmp_path):
    """The actor sending the judge's first request is killed (SIGKILL) as the request arrives: the request
    goes out alone again, from the restarted or the other actor, and still only 2 requests are rejected."""
    counting, killed = Counting(delay_s=0.0), []

    def responder(body):
        if not killed:
            pid = pid_of_client(_peer.port)
            assert pid is not None and pid != os.getpid()
            killed.append(pid)
            os.kill(pid, signal.SIGKILL)
            return Reply(status=503)  # never seen by its actor
        return counting(body)

    tasks = plan_tasks(items(16), get_protocol("da"), ["thinker-x"], runs=1, temperature=0.0, seed=0)
    srv = serve(responder)
    srv._httpd.RequestHandlerClass = _PeerHandler
    store = Store(tmp_path / "store.sqlite")
    try:
        with srv:
            stats = asyncio.run(execute_ray(tasks, [JudgeSpec("openai", "thinker-x", srv.base_url)], SETTINGS,
                                            store, SendControls(concurrency=4, retry=FAST_RETRY),
                                            options=RayOptions(ray_actors=2)))
        assert store.completed_keys() == {t.key for t in tasks}
    finally:
        store.close()
    sent = srv.requests
    prompt = sent[0]["messages"][-1]["content"]
    assert killed and stats.done == 16 and stats.failed == 0 and stats.retries >= 1
    assert [b["messages"][-1]["content"] for b in sent[:4]] == [prompt] * 4  # killed, 400, 400, answered
    assert counting.rejected == 2 and len(sent) == 16 + 1 + 2


@needs_ray
def test_a_judge_served_by_two_servers_learns_once_for_both_and_every_actor(cluster, tmp_path):
    """A pool of two o-series servers on 2 actors: 2 rejected requests over both servers and the pool."""
    one, two = Counting(delay_s=0.01), Counting(delay_s=0.01)
    tasks = plan_tasks(items(64), get_protocol("da"), ["thinker-x"], runs=1, temperature=0.0, seed=0)
    with serve(one) as a, serve(two) as b:
        spec = JudgeSpec.parse(f"openai:thinker-x@{a.base_url},{b.base_url}")
        store = Store(tmp_path / "store.sqlite")
        try:
            stats = asyncio.run(execute_ray(tasks, [spec], SETTINGS, store, SendControls(concurrency=64,
                                                                                         retry=FAST_RETRY),
                                            options=RayOptions(ray_actors=4, ray_cpus_per_actor=0.5)))
            assert store.completed_keys() == {t.key for t in tasks}
        finally:
            store.close()
        answered = (len(a.requests), len(b.requests))
    assert stats.done == 64 and one.rejected + two.rejected == 2
    assert sum(answered) == 64 + 2 and min(answered) > 0  # both servers took part
