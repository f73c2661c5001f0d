"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests and benchmarks.

It speaks ``POST /v1/chat/completions`` over real sockets (HTTP/1.1
keep-alive, one thread per connection) and answers from a Python
``responder`` so tests can script latency, error codes, Retry-After, slow
and truncated answers and invalid JSON.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    content: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    finish_reason: str = "stop"
    # Raw body to send instead of a chat-completion JSON (e.g. broken JSON).
    raw_body: str | None = None


Responder = Callable[[dict], "str | Reply"]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args: object) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        owner = self.server.owner
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": "not found"}})
            return
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "bad json"}})
            return
        with owner.lock:
            owner.requests.append(body)
            owner.headers_seen.append(dict(self.headers))
        reply = owner.responder(body)
        if isinstance(reply, str):
            reply = Reply(content=reply)
        delay = reply.delay_s + owner.latency_s
        if delay:
            time.sleep(delay)
        if reply.raw_body is not None:
            self._send_raw(reply.status, reply.raw_body.encode(), reply.headers)
            return
        if reply.status != 200:
            self._send(reply.status, {"error": {"message": f"scripted {reply.status}"}}, reply.headers)
            return
        with owner.lock:
            owner.completed.append(body)
        prompt_tokens = sum(len(m.get("content", "").split()) for m in body.get("messages", []))
        self._send(200, {
            "id": f"cmpl-{len(owner.requests)}",
            "object": "chat.completion",
            "model": body.get("model", "test"),
            "choices": [{"index": 0, "finish_reason": reply.finish_reason,
                         "message": {"role": "assistant", "content": reply.content}}],
            "usage": {"prompt_tokens": prompt_tokens,
                      "completion_tokens": len(reply.content.split()),
                      "total_tokens": prompt_tokens + len(reply.content.split())},
        }, reply.headers)

    def _send(self, status: int, obj: dict, headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(obj).encode(), headers or {})

    def _send_raw(self, status: int, data: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    owner: ScriptedServer


class ScriptedServer:
    """``with ScriptedServer(responder, latency_s=0.1) as srv: srv.base_url``"""

    def __init__(self, responder: Responder, *, latency_s: float = 0.0) -> None:
        self.responder, self.latency_s = responder, latency_s
        self.requests: list[dict] = []
        self.completed: list[dict] = []
        self.headers_seen: list[dict] = []
        self.lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def serve_forever(responder: Responder, port: int, latency_s: float = 0.0) -> None:
    """Run a server in the foreground on a fixed port (used by the kill/resume test)."""
    srv = ScriptedServer(responder, latency_s=latency_s)
    srv._httpd.server_close()
    srv._httpd = _Server(("127.0.0.1", port), _Handler)
    srv._httpd.owner = srv
    srv._httpd.serve_forever()


def serve_fast(content: str, port: int, latency_s: float = 0.0) -> None:
    """A minimal asyncio HTTP/1.1 server answering every chat request with ``content``.

    For throughput benchmarks: it costs a fraction of the threaded server's CPU
    per request, so the measurement is of the client, not of the server.
    """
    import asyncio

    payload = json.dumps({
        "id": "bench", "object": "chat.completion", "model": "bench",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
    }).encode()
    response = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                + str(len(payload)).encode() + b"\r\n\r\n" + payload)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                await reader.readexactly(length)
                if latency_s:
                    await asyncio.sleep(latency_s)
                writer.write(response)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
        async with server:
            await server.serve_forever()

    asyncio.run(main())
