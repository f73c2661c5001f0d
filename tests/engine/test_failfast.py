"""Runs that cannot succeed stop early; runs with too many failed requests say so (exit 3 in the CLI)."""

import dataclasses
import json
import time

import pytest

from polyjudge.api import JudgeConfig, judge
from polyjudge.backends.base import BackendError
from polyjudge.engine.errors import EndpointFailed, FailureRateExceeded
from polyjudge.engine.runner import RetryPolicy, is_fatal
from tests.engine.test_kill_resume import free_port
from tests.helpers.openai_server import Reply, ScriptedServer

FAST = RetryPolicy(max_attempts=4, base_delay_s=0.01, max_delay_s=0.02, give_up_after_s=0.2)


def items_file(tmp_path, n=20):
    p = tmp_path / "in.jsonl"
    p.write_text("".join(json.dumps({"src_lang": "en", "tgt_lang": "de",
                                     "src": f"s{i}", "tgt": f"t{i}", "seg_id": str(i), "system": "X"}) + "\n"
                         for i in range(n)), encoding="utf-8")
    return p


def config(url, **kw):
    kw.setdefault("retry", FAST)
    kw.setdefault("concurrency", 4)
    return JudgeConfig(judges=(f"openai:m@{url}",), **kw)


@pytest.mark.parametrize("reply", [
    Reply(status=401), Reply(status=403), Reply(status=404),
    Reply(status=400, raw_body=json.dumps({"error": {"message": "The model `m` does not exist"}})),
], ids=["401", "403", "404", "400-model-does-not-exist"])
def test_rejected_requests_stop_the_run_at_once(tmp_path, reply):
    with ScriptedServer(lambda b: reply) as srv:
        with pytest.raises(EndpointFailed) as exc:
            judge(items_file(tmp_path), config(srv.base_url), out=tmp_path / "run")
        sent = len(srv.requests)
    assert sent <= 4  # never retried; at most the requests already in flight
    assert str(exc.value).startswith("the endpoint rejected the request: HTTP")
    assert "kept in" in str(exc.value) and "re-run the same command" in str(exc.value)
    lines = (tmp_path / "run" / "judgments.jsonl").read_text().splitlines()
    assert len(lines) == 20  # the outputs are written, unsent judgments marked pending
    assert 1 <= exc.value.result.answered_count() <= sent  # the others in flight were cancelled


def test_is_fatal_only_for_answers_no_retry_can_change():
    assert is_fatal(BackendError("HTTP 401: bad key", retryable=False, status=401))
    assert is_fatal(BackendError("HTTP 404: model 'x' not found", retryable=False, status=404))
    assert is_fatal(BackendError("HTTP 400: The model `x` does not exist", retryable=False, status=400))
    assert not is_fatal(BackendError("HTTP 400: prompt too long", retryable=False, status=400))
    assert not is_fatal(BackendError("HTTP 503: overloaded", retryable=True, status=503))
    # text from a backend without an HTTP status is not read as a verdict on the endpoint
    assert not is_fatal(BackendError("llama.cpp error: model not found in text", retryable=False))


def test_server_down_stops_after_a_streak_of_failures(tmp_path, monkeypatch):
    import polyjudge.backends.registry as registry

    # The server was up for the preflight's port check and is down when the run sends.
    monkeypatch.setattr(registry, "check_port_open", lambda url, **kw: None)
    port = free_port()  # nobody listens: connection refused
    start = time.perf_counter()
    with pytest.raises(EndpointFailed) as exc:
        # No minimum time: a refused connection fails in microseconds, so with the policy's 0.2 s floor how many
        # tasks are tried first depends on the machine; the streak itself is what this test pins.
        judge(items_file(tmp_path, 200), config(f"http://127.0.0.1:{port}/v1",
                                                retry=dataclasses.replace(FAST, give_up_after_s=0.0)),
              out=tmp_path / "run")
    elapsed = time.perf_counter() - start
    assert str(exc.value).startswith("the endpoint is unreachable: connection error")
    assert "attempts in a row failed" in str(exc.value)
    result = exc.value.result
    assert result.stop_kind == "unreachable" and result.answered_count() < 20  # most were never tried
    assert elapsed < 5


def test_every_request_timing_out_stops_the_run(tmp_path):
    with ScriptedServer(lambda b: json.dumps({"score": 1}), latency_s=0.5) as srv:
        start = time.perf_counter()
        with pytest.raises(EndpointFailed) as exc:
            judge(items_file(tmp_path, 50), config(srv.base_url, timeout=0.05, concurrency=2), out=tmp_path / "run")
        elapsed = time.perf_counter() - start
    assert str(exc.value).startswith("the endpoint is too slow: timeout")
    assert elapsed < 5


def test_a_streak_is_broken_by_any_success(tmp_path):
    calls = []

    def flaky(body):
        calls.append(1)
        return Reply(status=503) if len(calls) % 3 else json.dumps({"score": 70})  # 2 of 3 attempts fail

    with ScriptedServer(flaky) as srv:
        run = judge(items_file(tmp_path, 6), config(srv.base_url, concurrency=1,
                                                     retry=RetryPolicy(max_attempts=6, base_delay_s=0.01,
                                                                       give_up_failures=3, give_up_after_s=0)),
                    out=tmp_path / "run")
    assert run.stop_kind is None and run.status_counts() == {"ok": 6}


def test_failure_rate_over_the_limit_raises_after_writing(tmp_path):
    def responder(body):
        user = body["messages"][-1]["content"]
        if "t1\n" in user or "t2\n" in user or user.rstrip().endswith(("t1", "t2")):
            return Reply(status=500)
        if "t3" in user:
            return "no score here"  # a parse failure: it counts too (nothing was computed from it)
        return json.dumps({"score": 70})

    with ScriptedServer(responder) as srv:
        with pytest.raises(FailureRateExceeded) as exc:
            judge(items_file(tmp_path, 10), config(srv.base_url), out=tmp_path / "run")
        assert (exc.value.failed, exc.value.total, exc.value.limit) == (3, 10, 0.1)
        assert exc.value.kinds == {"request": 2, "refused": 0, "parse": 1, "truncated": 0}
        assert str(exc.value).startswith("3 of 10 judgments failed (30.0%: request 2, refused 0, parse 1, "
                                         "truncated 0), more than the allowed share 0.1 (--max-failure-rate)")
        assert exc.value.result.status_counts() == {"ok": 7, "request_failed": 2, "parse_failed": 1}
        assert json.loads((tmp_path / "run" / "manifest.json").read_text())["counts"]["status_request_failed"] == 2
        # within a looser limit the same run is fine (and nothing is sent for what is answered)
        n = len(srv.requests)
        run = judge(items_file(tmp_path, 10), config(srv.base_url, max_failure_rate=0.3), out=tmp_path / "run")
        assert run.request_failed_count() == 2 and len(srv.requests) - n == 2 * FAST.max_attempts
        run = judge(items_file(tmp_path, 10), config(srv.base_url, max_failure_rate=None), out=tmp_path / "run")
        assert run.request_failed_count() == 2


def test_max_failure_rate_is_checked(tmp_path):
    from polyjudge.data.errors import InputError

    with pytest.raises(InputError, match="between 0 and 1"):
        judge(items_file(tmp_path, 1), JudgeConfig(judges=("openai:m@http://127.0.0.1:9/v1",), max_failure_rate=2))
