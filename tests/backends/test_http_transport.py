"""The HTTP/1.1 client of backends/http.py against real sockets: framing, keep-alive, timeouts, TLS, proxies.

The servers here are raw sockets that answer exactly as scripted (chunked
bodies, gzip, closing mid-answer, trickling bytes), so each behaviour of the
client is checked against bytes on the wire rather than another client.
"""

import asyncio
import base64
import gzip
import json
import socket
import ssl
import threading
import time

import pytest

from polyjudge.backends import http as http_mod
from polyjudge.backends.base import BackendError
from polyjudge.backends.http import Headers, HttpClients
from tests.helpers.openai_server import ScriptedServer

BODY = {"model": "m", "messages": [{"role": "user", "content": "x"}]}


class RawServer:
    """A TCP server on 127.0.0.1 calling ``handler(conn, request_bytes, number)`` for each request it reads
    (``number`` counts requests over all connections); the handler writes the answer itself."""

    def __init__(self, handler, *, tls_context=None):
        self.handler, self.tls = handler, tls_context
        self.requests: list[bytes] = []
        self.connections = 0
        self.open_now = 0
        self.most_open = 0
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self):
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}/v1/chat/completions"

    def _accept(self):
        while not self.stopped:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        with self.lock:
            self.connections += 1
            self.open_now += 1
            self.most_open = max(self.most_open, self.open_now)
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            data = b""
            while True:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, rest = data.partition(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                while len(rest) < length:
                    rest += conn.recv(65536)
                request, data = head + b"\r\n\r\n" + rest[:length], rest[length:]
                with self.lock:
                    self.requests.append(request)
                    number = len(self.requests)
                if self.handler(conn, request, number) == "close":
                    return
        except (OSError, ssl.SSLError):
            return
        finally:
            with self.lock:
                self.open_now -= 1
            conn.close()

    def close(self):
        self.stopped = True
        self.sock.close()


def answer(status=200, body=b'{"ok": true}', headers=()):
    head = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}", "Content-Type: application/json", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def post_all(clients, url, n=1, *, headers=None, concurrent=False):
    async def go():
        try:
            if concurrent:
                return await asyncio.gather(*(clients.post(url, BODY, headers=headers or {}) for _ in range(n)))
            return [await clients.post(url, BODY, headers=headers or {}) for _ in range(n)]
        finally:
            await clients.aclose()
    return asyncio.run(go())


def test_sends_one_json_post_with_its_headers_and_reads_the_answer():
    srv = RawServer(lambda c, r, n: c.sendall(answer(body=b'{"score": 7}', headers=["Retry-After: 3"])))
    try:
        (resp,) = post_all(HttpClients(5), srv.url, headers={"Authorization": "Bearer k"})
    finally:
        srv.close()
    head, _, body = srv.requests[0].partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /v1/chat/completions HTTP/1.1"
    fields = {k.lower(): v.strip() for k, v in (x.split(":", 1) for x in lines[1:])}
    assert fields["host"] == f"127.0.0.1:{srv.port}" and fields["authorization"] == "Bearer k"
    assert fields["content-type"] == "application/json" and int(fields["content-length"]) == len(body)
    assert json.loads(body) == BODY
    assert resp.status_code == 200 and resp.json() == {"score": 7}
    assert resp.headers.get("retry-after") == "3" and resp.headers["Retry-After"] == "3"


def test_keeps_connections_alive_and_caps_them():
    def slow(conn, request, number):
        time.sleep(0.05)
        conn.sendall(answer())

    srv = RawServer(slow)
    try:
        post_all(HttpClients(5), srv.url, n=20)
        assert srv.connections == 1  # one after another: one kept connection
        post_all(HttpClients(5, max_connections=3), srv.url, n=12, concurrent=True)
    finally:
        srv.close()
    assert srv.most_open <= 3 and len(srv.requests) == 32


def test_chunked_gzip_and_read_to_close_bodies():
    payload = json.dumps({"text": "é" * 3000}).encode()

    def chunked(conn, request, number):
        pieces = [payload[i:i + 1000] for i in range(0, len(payload), 1000)]
        body = b"".join(b"%x;ext=1\r\n" % len(p) + p + b"\r\n" for p in pieces) + b"0\r\nX-Trailer: t\r\n\r\n"
        conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for k in range(0, len(body), 700):  # split across reads, mid chunk-size line too
            conn.sendall(body[k:k + 700])
            time.sleep(0.002)

    def gzipped(conn, request, number):
        conn.sendall(answer(body=gzip.compress(payload), headers=["Content-Encoding: gzip"]))

    def to_close(conn, request, number):
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + payload)
        return "close"

    for handler in (chunked, gzipped, to_close):
        srv = RawServer(handler)
        try:
            resps = post_all(HttpClients(5), srv.url, n=2)
        finally:
            srv.close()
        assert [r.content for r in resps] == [payload, payload], handler.__name__
    # chunked answers keep the connection; read-to-close ones cannot
    assert srv.connections == 2


def test_a_kept_connection_the_server_dropped_is_resent_once_on_a_new_one():
    def drop_second_on_each_connection(conn, request, number):
        if number == 2:
            return "close"  # read the request, then closed without a byte of answer
        conn.sendall(answer(body=b'{"n": %d}' % number))

    srv = RawServer(drop_second_on_each_connection)
    try:
        resps = post_all(HttpClients(5), srv.url, n=2)
    finally:
        srv.close()
    assert [r.json() for r in resps] == [{"n": 1}, {"n": 3}] and srv.connections == 2


def test_an_answer_cut_midway_is_a_retryable_error_and_not_resent():
    def cut(conn, request, number):
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"partial")
        return "close"

    srv = RawServer(cut)
    try:
        with pytest.raises(BackendError) as exc:
            post_all(HttpClients(5), srv.url)
    finally:
        srv.close()
    assert exc.value.retryable and str(exc.value).startswith("connection error: RemoteProtocolError")
    assert len(srv.requests) == 1


def test_the_timeout_is_the_deadline_of_the_whole_answer_not_of_silence():
    def silent(conn, request, number):
        time.sleep(3)

    def trickle(conn, request, number):
        body = b'{"slow": "' + b"x" * 8 + b'"}'
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body))
        for b in body:  # 0.7 s in all, never 0.4 s without a byte
            conn.sendall(bytes([b]))
            time.sleep(0.05)

    for handler in (silent, trickle):
        srv = RawServer(handler)
        try:
            start = time.monotonic()
            with pytest.raises(BackendError) as exc:
                post_all(HttpClients(0.4), srv.url)
            assert str(exc.value).startswith("timeout: ReadTimeout") and exc.value.retryable
            assert time.monotonic() - start < 1.5, handler.__name__
        finally:
            srv.close()
    srv = RawServer(trickle)
    try:
        (resp,) = post_all(HttpClients(2), srv.url)
    finally:
        srv.close()
    assert resp.json() == {"slow": "x" * 8}


def test_refused_connections_bad_urls_and_header_injection():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(BackendError) as exc:
        post_all(HttpClients(5), f"http://127.0.0.1:{port}/v1/x")
    assert exc.value.retryable and str(exc.value).startswith("connection error: ConnectError")
    with pytest.raises(BackendError) as exc:
        post_all(HttpClients(5), "ftp://127.0.0.1/v1/x")
    assert not exc.value.retryable and "UnsupportedProtocol" in str(exc.value)
    srv = RawServer(lambda c, r, n: c.sendall(answer()))
    try:
        with pytest.raises(BackendError, match="line break") as exc:
            post_all(HttpClients(5), srv.url, headers={"Authorization": "Bearer k\r\nX-Evil: 1"})
    finally:
        srv.close()
    assert not exc.value.retryable and srv.requests == []


def test_tls_verifies_the_server_and_keeps_the_connection(self_signed, monkeypatch):
    cert, server_context = self_signed
    srv = RawServer(lambda c, r, n: c.sendall(answer(body=b'{"tls": true}')), tls_context=server_context)
    try:
        with pytest.raises(BackendError) as exc:  # the default context does not trust a self-signed certificate
            post_all(HttpClients(5), srv.url)
        assert exc.value.retryable and str(exc.value).startswith("connection error: ConnectError: TLS")
        trusting = ssl.create_default_context(cafile=str(cert))
        monkeypatch.setattr(http_mod, "_ssl_context", lambda: trusting)
        resps = post_all(HttpClients(5), srv.url, n=3)
    finally:
        srv.close()
    assert [r.json() for r in resps] == [{"tls": True}] * 3
    assert srv.connections == 2 and len(srv.requests) == 3  # the refused handshake, then one kept connection


def test_a_proxy_named_by_the_environment_carries_the_requests(monkeypatch):
    # A plain HTTP proxy receives the absolute URL; the scripted server answers whatever path it gets.
    with ScriptedServer(lambda body: '{"via": "proxy"}') as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.base_url.rsplit("/v1", 1)[0])
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        (resp,) = post_all(HttpClients(5), "http://judge.invalid/v1/chat/completions")
    assert resp.status_code == 200 and resp.json()["choices"][0]["message"]["content"] == '{"via": "proxy"}'
    assert proxy.requests == [BODY]


def test_headers_are_case_insensitive():
    h = Headers({"retry-after": "2"})
    assert h.get("Retry-After") == "2" and "RETRY-AFTER" in h and h.get("x", "d") == "d"


def test_credentials_in_the_url_are_sent_as_basic_auth_and_never_on_the_request_line():
    srv = RawServer(lambda c, r, n: c.sendall(answer()))
    try:
        url = srv.url.replace("http://", "http://us%40er:p%3Ass@")
        post_all(HttpClients(5), url, headers={"Authorization": "Bearer from-env"})
    finally:
        srv.close()
    head = srv.requests[0].split(b"\r\n\r\n")[0].decode()
    assert "Authorization: Basic " + base64.b64encode(b"us@er:p:ss").decode() in head.split("\r\n")
    assert "Bearer" not in head and "p%3Ass" not in head and head.count("Authorization") == 1


def test_the_answer_size_cap_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(http_mod.MAX_BODY_ENV, raising=False)
    assert http_mod.max_body_from_env() == 64 * 2**20 == HttpClients(5).max_body
    monkeypatch.setenv(http_mod.MAX_BODY_ENV, "0.5")
    assert HttpClients(5).max_body == 2**19
    for bad in ("lots", "-1", "0"):
        monkeypatch.setenv(http_mod.MAX_BODY_ENV, bad)
        with pytest.raises(ValueError, match=http_mod.MAX_BODY_ENV):
            HttpClients(5)


def test_one_tls_context_per_process_until_the_trusted_certificates_change(monkeypatch, tmp_path):
    from polyjudge.backends import http

    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    first = http._ssl_context()
    assert http._ssl_context() is first  # built once: a context costs tens of milliseconds of CPU
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path))
    assert http._ssl_context() is not first  # another set of trusted certificates: another context
