"""A real Anthropic-Messages-API-shaped HTTP server on 127.0.0.1 for tests.

It speaks ``POST /v1/messages`` over real sockets (HTTP/1.1 keep-alive, one
thread per connection) and answers from a Python ``responder`` the way the
Messages API does: a forced tool call comes back as a ``tool_use`` block
whose input is the scripted answer (JSON), anything else as a ``text``
block; errors use Anthropic's ``{"type": "error", "error": {...}}`` shape.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# Anthropic's error type for each status (https://docs.anthropic.com/en/api/errors).
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
               403: "permission_error", 404: "not_found_error", 413: "request_too_large",
               429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}


@dataclass
class MReply:
    """One scripted answer. ``content`` is the model's answer (JSON when a tool is forced)."""

    content: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    stop_reason: str | None = None  # default: "tool_use" for a forced tool, else "end_turn"
    thinking: str | None = None  # a thinking block before the answer
    preamble: str | None = None  # text written before a tool call
    error_message: str | None = None
    usage: dict[str, int] | None = None
    raw_body: str | None = None  # sent as is instead of a message


Responder = Callable[[dict[str, Any]], "str | MReply"]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args: object) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:  # noqa: N802
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        owner = self.server.owner
        if self.path.rstrip("/") != "/v1/messages":
            self._error(404, "not_found_error", f"no route {self.path}")
            return
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            self._error(400, "invalid_request_error", "bad json")
            return
        with owner.lock:
            owner.requests.append(body)
            owner.headers_seen.append(dict(self.headers))
        reply = owner.responder(body)
        if isinstance(reply, str):
            reply = MReply(content=reply)
        if reply.delay_s or owner.latency_s:
            time.sleep(reply.delay_s + owner.latency_s)
        if reply.raw_body is not None:
            self._send(reply.status, reply.raw_body.encode(), reply.headers)
            return
        if reply.status != 200:
            self._error(reply.status, ERROR_TYPES.get(reply.status, "api_error"),
                        reply.error_message or f"scripted {reply.status}", reply.headers)
            return
        self._send(200, json.dumps(self._message(body, reply)).encode(), reply.headers)

    def _message(self, body: dict[str, Any], reply: MReply) -> dict[str, Any]:
        owner = self.server.owner
        content: list[dict[str, Any]] = []
        if reply.thinking is not None:
            content.append({"type": "thinking", "thinking": reply.thinking, "signature": "sig"})
        choice = body.get("tool_choice") or {}
        forced = choice.get("type") == "tool"
        if forced:
            if reply.preamble:
                content.append({"type": "text", "text": reply.preamble})
            try:
                tool_input = json.loads(reply.content) if reply.content else {}
            except json.JSONDecodeError:
                tool_input = {}
            content.append({"type": "tool_use", "id": "toolu_1", "name": choice["name"], "input": tool_input})
        elif reply.content:
            content.append({"type": "text", "text": reply.content})
        prompt = " ".join([str(body.get("system", ""))] + [str(m.get("content", "")) for m in body["messages"]])
        with owner.lock:
            owner.completed.append(body)
            number = len(owner.completed)
        return {
            "id": f"msg_{number}", "type": "message", "role": "assistant", "model": body.get("model", "test"),
            "content": content,
            "stop_reason": reply.stop_reason or ("tool_use" if forced else "end_turn"),
            "stop_sequence": None,
            "usage": reply.usage or {"input_tokens": len(prompt.split()),
                                     "output_tokens": max(1, len(reply.content.split())),
                                     "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        }

    def _error(self, status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> None:
        payload = {"type": "error", "error": {"type": kind, "message": message}}
        self._send(status, json.dumps(payload).encode(), headers or {})

    def _send(self, status: int, data: bytes, headers: dict[str, str]) -> None:
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
    owner: AnthropicServer


class AnthropicServer:
    """``with AnthropicServer(responder) as srv: srv.base_url`` (``http://127.0.0.1:PORT/v1``)."""

    def __init__(self, responder: Responder, *, latency_s: float = 0.0) -> None:
        self.responder, self.latency_s = responder, latency_s
        self.requests: list[dict[str, Any]] = []
        self.completed: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        self.lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> AnthropicServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
