"""One judge served by several servers: routing, caps, failing servers, and the engine on top."""

import asyncio
import json
import socket
import threading

import pytest

from polyjudge.api import JudgeConfig, judge
from polyjudge.backends import (
    BackendSettings,
    JudgeSpec,
    PoolBackend,
    build_backends,
    make_backend,
    server_counts_of,
)
from polyjudge.backends.base import BackendError
from polyjudge.backends.openai import OpenAIBackend
from polyjudge.data.chat import GenerateRequest, GenerateResult, Message
from polyjudge.engine.errors import EndpointFailed
from polyjudge.engine.runner import RetryPolicy, is_fatal
from tests.helpers.openai_server import Reply, ScriptedServer

REQ = GenerateRequest(messages=(Message("user", "rate"),), max_tokens=10)
FAST = RetryPolicy(max_attempts=4, base_delay_s=0.01, max_delay_s=0.02, give_up_after_s=0.2)


def dead_url():
    """An endpoint nobody listens on: connection refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def many(backend, n, request=REQ):
    async def go():
        try:
            return await asyncio.gather(*(backend.generate(request) for _ in range(n)))
        finally:
            await backend.aclose()
    return asyncio.run(go())


def sequential(backend, n, request=REQ):
    async def go():
        try:
            return [await backend.generate(request) for _ in range(n)]
        finally:
            await backend.aclose()
    return asyncio.run(go())


def test_a_spec_with_several_servers_builds_a_pool():
    spec = JudgeSpec.parse("openai:m?per_server=3@http://a:1/v1, http://u:secret99@b:2/v1")
    assert spec.servers == ("http://a:1/v1", "http://u:secret99@b:2/v1")
    backends, info = build_backends([spec], BackendSettings())
    pool = backends[0]
    assert isinstance(pool, PoolBackend) and pool.model == "m" and pool.max_per_server == 3
    assert all(isinstance(m, OpenAIBackend) for m in pool.members)
    assert [m.base_url for m in pool.members] == ["http://a:1/v1", "http://u:secret99@b:2/v1"]
    # every server is listed, credentials masked, in describe(), the manifest entry and repr
    assert pool.servers == ["http://a:1/v1", "http://[REDACTED]@b:2/v1"]
    assert pool.describe() == {"model": "m", "servers": pool.servers, "max_per_server": 3}
    assert info[0]["servers"] == pool.servers and "secret99" not in json.dumps(info) + repr(spec)
    assert info[0]["options"] == {"per_server": "3"}
    # a single server stays a plain backend with the manifest entry it always had
    single, info = build_backends([JudgeSpec.parse("openai:m@http://a:1/v1")], BackendSettings())
    assert isinstance(single[0], OpenAIBackend) and list(info[0]) == ["backend", "model", "base_url"]


@pytest.mark.parametrize("text,message", [
    ("openai:m@http://a/v1,,http://b/v1", "empty server"),
    ("openai:m@http://a/v1,http://a/v1", "named twice"),
    ("openai:m?per_server=0@http://a/v1,http://b/v1", "positive integer"),
])
def test_bad_pools_are_refused(text, message):
    with pytest.raises(ValueError, match=message):
        make_backend(JudgeSpec.parse(text))


def test_a_pool_with_one_dead_server_completes_everything_on_the_live_one():
    with ScriptedServer(lambda b: '{"score": 5}') as live:
        dead = dead_url()
        pool = make_backend(JudgeSpec.parse(f"openai:m@{dead},{live.base_url}"))
        assert isinstance(pool, PoolBackend)
        results = many(pool, 20)
        later = sequential(pool, 10)  # the dead server is cooling down: nothing more is sent to it
    assert all(r.text == '{"score": 5}' for r in results + later)
    counts = pool.server_counts()
    assert len(live.completed) == 30 and counts[live.base_url] == 30
    assert 1 <= counts[dead] <= 20
    dead_stats = pool.server_stats()[0]
    assert dead_stats.answered == 0 and dead_stats.cooldowns >= 1 and dead_stats.failed == counts[dead]
    assert server_counts_of(pool) == counts


def test_requests_go_to_the_least_loaded_server_within_the_cap():
    lock = threading.Lock()
    in_flight = {"a": 0, "b": 0}
    peak = {"a": 0, "b": 0}

    def responder(name):
        def answer(body):
            with lock:
                in_flight[name] += 1
                peak[name] = max(peak[name], in_flight[name])
            threading.Event().wait(0.05)
            with lock:
                in_flight[name] -= 1
            return "1"
        return answer

    with ScriptedServer(responder("a")) as a, ScriptedServer(responder("b")) as b:
        pool = make_backend(JudgeSpec.parse(f"openai:m?per_server=2@{a.base_url},{b.base_url}"))
        many(pool, 12)
        one_at_a_time = make_backend(JudgeSpec.parse(f"openai:m@{a.base_url},{b.base_url}"))
        sequential(one_at_a_time, 10)
    assert peak["a"] <= 2 and peak["b"] <= 2
    # spread evenly (each member holds its requests behind its first until the request form is settled,
    # so the first answers of the two servers may come at different times: within 2 of each other)
    counts = pool.server_counts()
    assert sum(counts.values()) == 12 and abs(counts[a.base_url] - counts[b.base_url]) <= 2
    # idle servers take turns (fewest sent first)
    assert one_at_a_time.server_counts() == {a.base_url: 5, b.base_url: 5}


def test_a_server_failing_repeatedly_is_taken_out_and_its_requests_retried_elsewhere():
    with ScriptedServer(lambda b: Reply(status=502)) as bad, ScriptedServer(lambda b: "ok") as good:
        pool = PoolBackend([OpenAIBackend("m", bad.base_url), OpenAIBackend("m", good.base_url)],
                           [bad.base_url, good.base_url], failures_to_cool=3)
        results = sequential(pool, 12)
    assert all(r.text == "ok" for r in results)
    stats = {s.url: s for s in pool.server_stats()}
    # least-loaded alternation sends the bad server every other request until it is taken out
    assert stats[bad.base_url].sent == 3 and stats[bad.base_url].cooldowns == 1
    assert stats[good.base_url].answered == 12


def test_a_rate_limited_server_rests_for_its_retry_after_without_counting_a_failure():
    with ScriptedServer(lambda b: Reply(status=429, headers={"Retry-After": "30"})) as busy, \
            ScriptedServer(lambda b: "ok") as idle:
        pool = PoolBackend([OpenAIBackend("m", busy.base_url), OpenAIBackend("m", idle.base_url)],
                           [busy.base_url, idle.base_url])
        sequential(pool, 6)
    assert len(busy.requests) == 1 and len(idle.completed) == 6
    assert pool.server_stats()[0].cooldowns == 0 and pool.server_stats()[0].down_until > 0


def test_answers_no_server_would_change_are_raised_naming_the_server():
    with ScriptedServer(lambda b: Reply(status=401)) as srv, ScriptedServer(lambda b: "ok") as other:
        pool = PoolBackend([OpenAIBackend("m", srv.base_url), OpenAIBackend("m", other.base_url)],
                           [srv.base_url, other.base_url])
        with pytest.raises(BackendError) as exc:
            sequential(pool, 1)
    assert exc.value.status == 401 and is_fatal(exc.value) and not other.requests
    assert str(exc.value).startswith("HTTP 401: ") and str(exc.value).endswith(f"(server {srv.base_url})")


def test_a_dead_pool_fails_like_a_dead_server():
    pool = make_backend(JudgeSpec.parse(f"openai:m@{dead_url()},{dead_url()}"))
    with pytest.raises(BackendError) as exc:
        sequential(pool, 1)
    assert exc.value.retryable and str(exc.value).startswith("connection error")
    # both servers cooling down: the next request fails at once, without a connection attempt
    before = sum(pool.server_counts().values())
    with pytest.raises(BackendError) as exc:
        sequential(pool, 1)
    assert sum(pool.server_counts().values()) == before
    assert str(exc.value).startswith("connection error") and "cooling down" in str(exc.value)


def test_servers_of_one_judge_must_serve_one_model():
    class Fake:
        def __init__(self, model):
            self.model = model

        async def generate(self, request):
            return GenerateResult("x", "stop")

        async def aclose(self):
            return None
    with pytest.raises(ValueError, match="one model"):
        PoolBackend([Fake("a"), Fake("b")], ["http://a", "http://b"])


def test_the_engine_runs_a_judge_on_a_pool_with_a_dead_server(tmp_path):
    items = [{"src": f"s{i}", "tgt": f"t{i}", "seg_id": str(i), "system": "X"} for i in range(12)]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    with ScriptedServer(lambda b: '{"score": 60}') as live:
        dead = dead_url()
        result = judge(path, JudgeConfig(judges=(f"openai:m@{dead},{live.base_url}",), concurrency=4, retry=FAST,
                                         src_lang="en", tgt_lang="de"), out=tmp_path / "run")
    assert result.status_counts() == {"ok": 12}
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["judges"][0]["servers"] == [dead, live.base_url]


def test_the_engine_gives_up_on_a_pool_whose_servers_are_all_dead(tmp_path, monkeypatch):
    import polyjudge.backends.registry as registry

    # The servers were up for the preflight's port check (which refuses a pool with none up) and are gone
    # when the run sends: what the engine does then.
    monkeypatch.setattr(registry, "check_port_open", lambda url, **kw: None)
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"src_lang": "en", "tgt_lang": "de",
                                        "src": f"s{i}", "tgt": f"t{i}"}) + "\n" for i in range(30)),
                    encoding="utf-8")
    with pytest.raises(EndpointFailed) as exc:
        judge(path, JudgeConfig(judges=(f"openai:m@{dead_url()},{dead_url()}",), concurrency=2, retry=FAST),
              out=tmp_path / "run")
    assert "unreachable" in str(exc.value)
