"""Servers that break HTTP on purpose: every case ends in a recorded failure within its deadline.

Each server is a raw asyncio socket server on 127.0.0.1, started by the test
in the client's own event loop, that reads one request and writes exactly
the bytes scripted (broken framing, absurd sizes, trickles, stalls, cuts).
What each case asserts: the :class:`BackendError` (its first words, whether
it is retried), the deadline kept, and for the end-to-end case that nothing
was scored. Failures that must come "at once" are checked against a 5 s
deadline they must not wait for. The whole module runs in about 20 seconds.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import time
import tracemalloc
from collections.abc import Awaitable, Callable

import aiohttp  # noqa: F401 - imported here so no case's time includes loading it
import pytest

from polyjudge.backends.base import BackendError
from polyjudge.backends.http import HttpClients, HttpResponse

BODY = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
OK = b'{"ok": true}'
Script = Callable[[asyncio.StreamWriter, int], Awaitable[None]]


def head(*lines: str) -> bytes:
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def fixed(data: bytes) -> Script:
    """Answer every request with ``data`` and keep the connection open."""
    async def write(writer: asyncio.StreamWriter, number: int) -> None:
        writer.write(data)
        await writer.drain()
    return write


class Hostile:
    """A server in the running loop: ``script(writer, number)`` answers request ``number`` (from 1)."""

    def __init__(self, script: Script) -> None:
        self.script, self.requests, self.lines = script, 0, []
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> Hostile:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1/chat/completions"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request_head = await reader.readuntil(b"\r\n\r\n")
                self.lines.append(request_head.split(b"\r\n", 1)[0])
                length = next((int(v) for k, _, v in (line.partition(b":") for line in request_head.split(b"\r\n"))
                               if k.lower() == b"content-length"), 0)
                await reader.readexactly(length)
                self.requests += 1
                await self.script(writer, self.requests)
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()


def attempt(script: Script, *, timeout: float = 5.0, n: int = 1, max_body: int | None = None,
            url_suffix: str = "") -> tuple[list[HttpResponse | BackendError], float, Hostile]:
    """``n`` requests one after another against a hostile server: each answer or error, and seconds taken."""
    async def go() -> tuple[list[HttpResponse | BackendError], float, Hostile]:
        clients = HttpClients(timeout, max_body=max_body)
        out: list[HttpResponse | BackendError] = []
        async with Hostile(script) as srv:
            start = time.monotonic()
            try:
                for _ in range(n):
                    try:
                        out.append(await clients.post(srv.url + url_suffix, BODY, headers={}))
                    except BackendError as exc:
                        out.append(exc)
            finally:
                await clients.aclose()
            return out, time.monotonic() - start, srv
    return asyncio.run(go())


def failure(script: Script, **kw: object) -> tuple[BackendError, float, Hostile]:
    (got,), took, srv = attempt(script, **kw)  # type: ignore[arg-type]
    assert isinstance(got, BackendError), f"expected a failure, got an answer: {got!r}"
    return got, took, srv


# ---------------------------------------------------------------------------------------------- framing

BROKEN_FRAMING = {
    "negative chunk size": head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked") + b"-6\r\nabcdef\r\n0\r\n\r\n",
    "overflowing chunk size": head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked")
    + b"fffffffffffffffffffffffff\r\nabc\r\n0\r\n\r\n",
    "non-hex chunk size": head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked") + b"zz\r\nabc\r\n0\r\n\r\n",
    "0x chunk size": head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked") + b"0x8\r\n" + OK[:8] + b"\r\n0\r\n\r\n",
    "no CRLF after chunk data": head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked") + b"4\r\nabcdXY0\r\n\r\n",
    "conflicting Content-Length": head("HTTP/1.1 200 OK", "Content-Length: 12", "Content-Length: 5") + OK,
    "negative Content-Length": head("HTTP/1.1 200 OK", "Content-Length: -5") + OK,
    "underscored Content-Length": head("HTTP/1.1 200 OK", "Content-Length: 0_9") + OK,
    "Content-Length with chunked": head("HTTP/1.1 200 OK", "Content-Length: 12", "Transfer-Encoding: chunked")
    + b"c\r\n" + OK + b"\r\n0\r\n\r\n",
    "status 2000": head("HTTP/1.1 2000 OK", "Content-Length: 12") + OK,
    "status line without a version": head("HTTP/9 200 OK", "Content-Length: 12") + OK,
    "header without a colon": head("HTTP/1.1 200 OK", "Content-Length: 12", "no colon here") + OK,
}


@pytest.mark.parametrize("case", sorted(BROKEN_FRAMING))
def test_broken_framing_is_a_retryable_protocol_error_at_once(case):
    exc, took, srv = failure(fixed(BROKEN_FRAMING[case]))
    assert str(exc).startswith("connection error: RemoteProtocolError"), str(exc)
    assert exc.retryable and took < 2.0 and srv.requests == 1  # rejected as it arrived, not resent


def test_a_bare_lf_answer_is_read_or_refused_without_waiting():
    (got,), took, _ = attempt(fixed(b"HTTP/1.1 200 OK\nContent-Length: 12\n\n" + OK))
    assert took < 2.0
    assert isinstance(got, BackendError | HttpResponse)
    if isinstance(got, HttpResponse):  # tolerated as some servers send it, but read exactly
        assert got.status_code == 200 and got.json() == {"ok": True}
    else:
        assert str(got).startswith("connection error: RemoteProtocolError")


# ---------------------------------------------------------------------------------------------- size


def test_huge_headers_are_refused():
    junk = [f"X-Junk-{i}: {'j' * 1000}" for i in range(100)]  # 100 KiB of headers
    exc, took, _ = failure(fixed(head("HTTP/1.1 200 OK", "Content-Length: 12", *junk) + OK))
    assert str(exc).startswith("connection error: RemoteProtocolError") and took < 2.0
    exc, _, _ = failure(fixed(head("HTTP/1.1 200 OK", "Content-Length: 12", "X-Long: " + "l" * 100_000) + OK))
    assert str(exc).startswith("connection error: RemoteProtocolError")


def test_a_declared_huge_body_is_refused_before_it_is_read():
    exc, took, _ = failure(fixed(head("HTTP/1.1 200 OK", f"Content-Length: {300 * 2**20}") + b"x" * 1000),
                           max_body=2**20)
    assert str(exc).startswith("response too large: over the 1 MiB cap") and not exc.retryable and took < 2.0


def test_an_undeclared_huge_body_is_cut_at_the_cap_with_memory_bounded():
    async def endless(writer: asyncio.StreamWriter, number: int) -> None:
        writer.write(head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked"))
        piece = b"%x\r\n%s\r\n" % (65536, b"x" * 65536)
        for _ in range(20 * 16):  # 20 MiB unless the client stops reading
            writer.write(piece)
            await writer.drain()
        writer.write(b"0\r\n\r\n")

    tracemalloc.start()
    try:
        exc, took, _ = failure(endless, max_body=2**20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(exc).startswith("response too large") and not exc.retryable and took < 2.0
    assert peak < 8 * 2**20  # a small multiple of the 1 MiB cap, not the 20 MiB sent


def test_a_gzip_bomb_is_stopped_at_the_cap_of_its_inflated_size():
    bomb = gzip.compress(b"\0" * (256 * 2**20), compresslevel=9)  # ~250 KiB that inflate to 256 MiB
    tracemalloc.start()
    try:
        exc, took, _ = failure(fixed(head("HTTP/1.1 200 OK", f"Content-Length: {len(bomb)}",
                                          "Content-Encoding: gzip") + bomb), max_body=2**20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(exc).startswith("response too large") and took < 2.0
    assert peak < 16 * 2**20


# ---------------------------------------------------------------------------------------------- time


def test_slowloris_one_byte_every_half_second_is_stopped_at_the_deadline():
    async def trickle(writer: asyncio.StreamWriter, number: int) -> None:
        data = head("HTTP/1.1 200 OK", "Content-Length: 200") + b"x" * 200
        for byte in data:
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(0.5)

    exc, took, _ = failure(trickle, timeout=1.2)
    assert str(exc).startswith("timeout: ReadTimeout") and exc.retryable and 1.1 < took < 2.0


def test_a_stall_after_the_headers_is_stopped_at_the_deadline():
    exc, took, _ = failure(fixed(head("HTTP/1.1 200 OK", "Content-Length: 100") + b'{"par'), timeout=0.6)
    assert str(exc).startswith("timeout: ReadTimeout") and exc.retryable and 0.5 < took < 1.5


def test_a_connection_closed_mid_body_is_retryable_and_not_resent():
    async def cut(writer: asyncio.StreamWriter, number: int) -> None:
        writer.write(head("HTTP/1.1 200 OK", "Content-Length: 100") + b'{"partial')
        await writer.drain()
        writer.close()

    exc, took, srv = failure(cut)
    assert str(exc).startswith("connection error: RemoteProtocolError") and exc.retryable
    assert srv.requests == 1 and took < 2.0


def test_a_late_answer_after_a_timeout_never_reaches_the_next_request():
    async def late_first(writer: asyncio.StreamWriter, number: int) -> None:
        if number == 1:
            await asyncio.sleep(0.5)  # after the client gave up on it
        body = json.dumps({"n": number}).encode()
        writer.write(head("HTTP/1.1 200 OK", f"Content-Length: {len(body)}") + body)
        await writer.drain()

    got, _, _ = attempt(late_first, timeout=0.3, n=3)
    assert isinstance(got[0], BackendError) and str(got[0]).startswith("timeout")
    assert [r.json() for r in got[1:] if isinstance(r, HttpResponse)] == [{"n": 2}, {"n": 3}]


def test_urls_are_encoded():
    got, _, srv = attempt(fixed(head("HTTP/1.1 200 OK", "Content-Length: 12") + OK), url_suffix="/a b/ĳ/日本")
    assert isinstance(got[0], HttpResponse)
    assert srv.lines[0] == b"POST /v1/chat/completions/a%20b/%C4%B3/%E6%97%A5%E6%9C%AC HTTP/1.1"


# ---------------------------------------------------------------------------------------------- TLS and proxies


def test_a_self_signed_server_is_refused_and_a_custom_ca_in_ssl_cert_file_is_honoured(self_signed, monkeypatch):
    from tests.backends.test_http_transport import RawServer, answer, post_all

    cert, server_context = self_signed
    srv = RawServer(lambda c, r, n: c.sendall(answer(body=b'{"tls": true}')), tls_context=server_context)
    try:
        with pytest.raises(BackendError) as exc:
            post_all(HttpClients(2), srv.url)
        assert str(exc.value).startswith("connection error: ConnectError: TLS") and exc.value.retryable
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # a new context follows (one per certificate setting)
        (resp,) = post_all(HttpClients(2), srv.url)
    finally:
        srv.close()
    assert resp.json() == {"tls": True}


@pytest.fixture()
def no_proxies(monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


def test_all_proxy_naming_an_http_proxy_carries_the_requests(no_proxies):
    async def go() -> tuple[HttpResponse, list[bytes]]:
        async with Hostile(fixed(head("HTTP/1.1 200 OK", "Content-Length: 12") + OK)) as proxy:
            no_proxies.setenv("ALL_PROXY", proxy.url.rsplit("/v1", 1)[0])
            clients = HttpClients(2)
            try:
                resp = await clients.post("http://judge.invalid/v1/chat/completions", BODY, headers={})
            finally:
                await clients.aclose()
            return resp, proxy.lines

    resp, lines = asyncio.run(go())
    assert resp.json() == {"ok": True} and lines == [b"POST http://judge.invalid/v1/chat/completions HTTP/1.1"]


def test_a_socks_proxy_is_refused_with_a_message_and_no_proxy_exempts_a_host(no_proxies):
    no_proxies.setenv("ALL_PROXY", "socks5://user:secret@127.0.0.1:1080")
    exc, _, srv = failure(fixed(b""))
    message = str(exc)
    assert message.startswith("connection error: ProxyError: ALL_PROXY=") and "only http:// proxies" in message
    assert "secret" not in message and not exc.retryable and srv.requests == 0
    no_proxies.setenv("NO_PROXY", "127.0.0.1")
    (got,), _, _ = attempt(fixed(head("HTTP/1.1 200 OK", "Content-Length: 12") + OK))
    assert isinstance(got, HttpResponse) and got.json() == {"ok": True}


# ---------------------------------------------------------------------------------------------- a whole run


def test_a_run_against_a_hostile_server_ends_in_recorded_failures_and_scores_nothing(tmp_path):
    from polyjudge.api import JudgeConfig, judge
    from polyjudge.engine.errors import FailureRateExceeded
    from polyjudge.engine.runner import RetryPolicy
    from tests.backends.test_http_transport import RawServer

    items = tmp_path / "in.jsonl"
    items.write_text("".join(json.dumps({"src_lang": "en", "tgt_lang": "de",
                                         "src": f"s{i}", "tgt": f"t{i}", "seg_id": str(i)}) + "\n"
                             for i in range(4)), encoding="utf-8")
    negative = BROKEN_FRAMING["negative chunk size"]
    srv = RawServer(lambda c, r, n: c.sendall(negative))
    start = time.monotonic()
    try:
        with pytest.raises(FailureRateExceeded):  # exit 3 in the CLI
            judge(items, JudgeConfig(protocol="da", judges=(f"openai:m@{srv.url.rsplit('/chat', 1)[0]}",),
                                     concurrency=2, timeout=2.0,
                                     retry=RetryPolicy(max_attempts=2, base_delay_s=0.01)), out=tmp_path / "run")
    finally:
        srv.close()
    assert time.monotonic() - start < 10
    rows = [json.loads(line) for line in (tmp_path / "run" / "judgments.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and all(r["score"] is None and r["status"] == "request_failed" for r in rows)
    assert all(r["error"].startswith("connection error: RemoteProtocolError") for r in rows)
