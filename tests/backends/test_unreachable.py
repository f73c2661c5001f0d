"""A server that never took a connection in this run is unreachable at once (issue 33, item 2).

Before: nothing listening on the judge's port went through the engine's streak rule, every request retried
with back-off: 15.2 s and 6 attempts per request for 2 items, 8.1 s for 200 (`polyjudge judge`, exit 3).
Now the preflight finds a self-hosted port that takes no connection before anything is written (exit 2,
"unreachable: HOST:PORT"; tests/backends/test_preflight.py), and a server that stops listening after the
preflight, before it ever answered, stops the run at its first refused connection (exit 3, one line naming
host and port): the tests below reach that engine rule with the port preflight switched off. A server that
answered before and then refuses (restarting, died mid-run) stays on the streak rule, and a pool still
moves the work of a dead server to the others (tests/backends/test_pool.py).
"""

import asyncio
import json
import socket
import subprocess
import sys
import time

import pytest

from polyjudge.api import JudgeConfig, judge
from polyjudge.backends import JudgeSpec, PoolBackend, make_backend
from polyjudge.backends.base import BackendError
from polyjudge.data.chat import GenerateRequest, Message
from polyjudge.engine.errors import EndpointFailed
from polyjudge.engine.runner import is_fatal
from tests.helpers.openai_server import Reply, ScriptedServer

REQ = GenerateRequest(messages=(Message("user", "rate"),), max_tokens=10)


def dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def items_file(tmp_path, n):
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"src_lang": "en", "tgt_lang": "de", "src": f"s{i}", "tgt": f"t{i}",
                                        "seg_id": str(i), "system": "X"}) + "\n" for i in range(n)),
                    encoding="utf-8")
    return path


@pytest.fixture
def gone_after_preflight(monkeypatch):
    """The server was there for the preflight's connection and is gone when the run sends (the port check
    passes): what the engine does with a server that never answered."""
    import polyjudge.backends.registry as registry

    monkeypatch.setattr(registry, "check_port_open", lambda url, **kw: None)


def test_a_server_that_never_listened_stops_the_run_at_once_with_the_default_retries(tmp_path,
                                                                                     gone_after_preflight):
    port = dead_port()
    start = time.perf_counter()
    with pytest.raises(EndpointFailed) as exc:
        judge(items_file(tmp_path, 2), JudgeConfig(judges=(f"openai:m@http://127.0.0.1:{port}/v1",)),
              out=tmp_path / "run")
    elapsed = time.perf_counter() - start
    message = str(exc.value)
    assert message.startswith("the endpoint is unreachable: connection error")
    assert f"nothing answers at 127.0.0.1:{port}" in message and "\n" not in message
    assert exc.value.result.stop_kind == "unreachable"
    assert elapsed < 3  # was 15 s: six attempts per request with back-off


def test_the_cli_exits_2_with_one_line_before_sending(tmp_path):
    """The command line's preflight finds the closed port (exit 3 from the engine before the preflight checked
    ports; the engine's own message is tested above)."""
    port = dead_port()
    proc = subprocess.run([sys.executable, "-m", "polyjudge.cli.main", "judge", str(items_file(tmp_path, 3)),
                           "--judge", f"openai:m@http://127.0.0.1:{port}/v1", "-o", str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("polyjudge: error:")]
    assert len(errors) == 1 and f"unreachable: 127.0.0.1:{port}" in errors[0] and "Traceback" not in proc.stderr
    assert not (tmp_path / "run").exists()


def test_a_refusal_is_fatal_only_before_the_server_ever_answered():
    backend = make_backend(JudgeSpec.parse(f"openai:m@http://127.0.0.1:{dead_port()}/v1"))

    async def never_there():
        try:
            await backend.generate(REQ)
        finally:
            await backend.aclose()
    with pytest.raises(BackendError) as exc:
        asyncio.run(never_there())
    assert exc.value.retryable and is_fatal(exc.value)  # retryable: another server of a pool may answer

    srv = ScriptedServer(lambda b: '{"score": 5}')
    backend = make_backend(JudgeSpec.parse(f"openai:m@{srv.base_url}"))

    async def dies_mid_run():
        try:
            with srv:
                first = await backend.generate(REQ)
            await backend.aclose()  # its kept connection is gone with it: the next request connects anew
            with pytest.raises(BackendError) as later:
                await backend.generate(REQ)
            return first, later.value
        finally:
            await backend.aclose()
    first, err = asyncio.run(dies_mid_run())
    assert first.text == '{"score": 5}'
    assert str(err).startswith("connection error") and err.retryable
    assert not is_fatal(err)  # it answered before: restarting, perhaps; the engine's streak rule decides


def test_every_server_of_a_pool_that_never_listened_stops_the_run_at_once(tmp_path, gone_after_preflight):
    dead = [f"http://127.0.0.1:{dead_port()}/v1" for _ in range(2)]
    start = time.perf_counter()
    with pytest.raises(EndpointFailed) as exc:
        judge(items_file(tmp_path, 4), JudgeConfig(judges=(f"openai:m@{dead[0]},{dead[1]}",)),
              out=tmp_path / "run")
    assert "unreachable" in str(exc.value) and time.perf_counter() - start < 3


def test_a_pool_whose_live_server_is_cooling_down_is_not_reported_unreachable():
    """Every server cooling down, the dead one's refusal the freshest: the live one answered and will be back,
    so the request's error must not stop the run (it did not reach any server)."""
    calls = []

    def flaky(body):
        calls.append(1)
        return '{"score": 1}' if len(calls) == 1 else Reply(status=503)
    now = [0.0]
    with ScriptedServer(flaky) as live:
        dead = f"http://127.0.0.1:{dead_port()}/v1"
        members = [make_backend(JudgeSpec.parse(f"openai:m@{url}")) for url in (dead, live.base_url)]
        pool = PoolBackend(members, [dead, live.base_url], failures_to_cool=1, clock=lambda: now[0])

        async def go():
            try:
                await pool.generate(REQ)  # the dead server refuses (cooling 5 s), the live one answers
                now[0] = 6.0
                with pytest.raises(BackendError):  # dead refuses again (cooling 10 s), live answers 503 (5 s)
                    await pool.generate(REQ)
                now[0] = 7.0
                with pytest.raises(BackendError) as exc:
                    await pool.generate(REQ)
                return exc.value
            finally:
                await pool.aclose()
        err = asyncio.run(go())
    assert "cooling down" in str(err) and dead in str(err)
    assert err.retryable and not is_fatal(err)
