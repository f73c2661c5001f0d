"""A real Anthropic-Messages-API-shaped HTTP server on 127.0.0.1 for tests.

It speaks ``POST /v1/messages`` over real sockets (HTTP/1.1 keep-alive, one
thread per connection) and answers from a Python ``responder`` the way the
Messages API does: a forced tool call comes back as a ``tool_use`` block
whose input is the scripted answer (JSON), anything else as a ``text``
block; errors use Anthropic's ``{"type": "error", "error": {...}}`` shape.

It also speaks the Message Batches API: ``POST /v1/messages/batches``
(``{"requests": [{"custom_id", "params"}]}``), ``GET /v1/messages/batches``
(newest first, ``limit`` and ``after_id``), ``GET
/v1/messages/batches/ID``, ``POST /v1/messages/batches/ID/cancel`` and ``GET
/v1/messages/batches/ID/results`` (JSONL, once the batch has ended). A batch
stays ``in_progress`` for ``batch_delay_s`` seconds, then every request is
answered by the responder: ``succeeded`` with a message, or what its
:class:`MReply` scripts (``batch_result="expired"``/``"canceled"``, or a
status other than 200: ``errored`` with that status's error type). Every
request of every created batch is kept in ``batch_lines`` (and logged to
``log_path``, one JSON line each, for tests whose server is another process).
"""

from __future__ import annotations

import json
import re
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
    batch_result: str | None = None  # in a batch: "expired" or "canceled" instead of an answer
    model: str | None = None  # the served model the answer names (default: the model asked for)


Responder = Callable[[dict[str, Any]], "str | MReply"]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args: object) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:  # noqa: N802
        owner = self.server.owner
        path, _, query = self.path.partition("?")
        params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
        if path.rstrip("/") == "/v1/messages/batches":
            self._reply(*owner.list_batches(int(params.get("limit", "20")), params.get("after_id")))
        elif path.endswith("/results") and path.startswith("/v1/messages/batches/"):
            status, text = owner.batch_results(path.split("/")[-2])
            self._send(status, text.encode(), {"Content-Type": "application/x-jsonl"})
        elif path.startswith("/v1/messages/batches/"):
            self._reply(*owner.get_batch(path.split("/")[-1]))
        else:
            self._error(404, "not_found_error", f"no route {self.path}")

    def _reply(self, status: int, payload: dict[str, Any]) -> None:
        if status != 200:
            self._error(status, ERROR_TYPES.get(status, "api_error"), str(payload.get("message")))
        else:
            self._send(200, json.dumps(payload).encode(), {})

    def do_POST(self) -> None:  # noqa: N802
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        owner = self.server.owner
        if self.path.startswith("/v1/messages/batches"):
            self._batch_post(raw)
            return
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
        owner.log({"kind": "chat"})
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

    def _batch_post(self, raw: bytes) -> None:
        owner = self.server.owner
        with owner.lock:
            owner.headers_seen.append(dict(self.headers))
        if self.path.endswith("/cancel"):
            self._reply(*owner.cancel_batch(self.path.split("/")[-2]))
            return
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            self._error(400, "invalid_request_error", "bad json")
            return
        self._reply(*owner.create_batch(body))

    def _message(self, body: dict[str, Any], reply: MReply) -> dict[str, Any]:
        return self.server.owner.message(body, reply)


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


CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
BATCH_MAX_REQUESTS = 100_000


def _stamp(seconds: float) -> str:
    """RFC 3339 in UTC, as the API writes times."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{int(seconds % 1 * 1e6):06d}Z"


class AnthropicServer:
    """``with AnthropicServer(responder) as srv: srv.base_url`` (``http://127.0.0.1:PORT/v1``)."""

    def __init__(self, responder: Responder, *, latency_s: float = 0.0, batch_delay_s: float = 0.0,
                 log_path: str | None = None) -> None:
        self.responder, self.latency_s = responder, latency_s
        self.batch_delay_s, self.log_path = batch_delay_s, log_path
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_lines: list[dict[str, Any]] = []  # every request of every created batch, in order
        self.requests: list[dict[str, Any]] = []
        self.completed: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        self.lock = threading.RLock()  # a batch's answers are made while its lock is held
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def message(self, body: dict[str, Any], reply: MReply) -> dict[str, Any]:
        return _message_of(self, body, reply)

    def log(self, record: dict[str, Any]) -> None:
        if self.log_path is not None:
            with open(self.log_path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(record) + "\n")

    # ------------------------------------------------------------------ Message Batches

    def create_batch(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        requests = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(requests, list) or not requests or len(requests) > BATCH_MAX_REQUESTS:
            return 400, {"message": "requests must be a list of 1 to 100,000 requests"}
        ids = [r.get("custom_id") for r in requests if isinstance(r, dict)]
        if len(ids) != len(requests) or not all(isinstance(i, str) and CUSTOM_ID.match(i) for i in ids):
            return 400, {"message": "every request needs a custom_id of 1 to 64 letters, digits, - or _"}
        if len(set(ids)) != len(ids):
            return 400, {"message": "custom_id values must be unique within a batch"}
        with self.lock:
            batch_id = f"msgbatch_{len(self.batches) + 1:04d}"
            now = time.time()
            self.batch_lines.extend(requests)
            for r in requests:
                self.log({"kind": "batch_line", "batch_id": batch_id, "custom_id": r["custom_id"]})
            self.batches[batch_id] = {"id": batch_id, "type": "message_batch", "created": now,
                                      "requests": requests, "cancelled": None, "results": None}
            return 200, self._public(self.batches[batch_id])

    def _counts(self, batch: dict[str, Any]) -> dict[str, int]:
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if batch["results"] is None:
            counts["processing"] = len(batch["requests"])
        else:
            for line in batch["results"]:
                counts[line["result"]["type"]] += 1
        return counts

    def _settle(self, batch: dict[str, Any]) -> None:
        """Answer every request of a batch whose time has come (or that was cancelled)."""
        if batch["results"] is not None:
            return
        if batch["cancelled"] is None and time.time() < batch["created"] + self.batch_delay_s:
            return
        results = []
        for r in batch["requests"]:
            if batch["cancelled"] is not None:
                results.append({"custom_id": r["custom_id"], "result": {"type": "canceled"}})
                continue
            reply = self.responder(r["params"])
            reply = MReply(content=reply) if isinstance(reply, str) else reply
            results.append({"custom_id": r["custom_id"], "result": self._result(r["params"], reply)})
        batch["results"] = results
        batch["ended"] = time.time()

    def _result(self, params: dict[str, Any], reply: MReply) -> dict[str, Any]:
        if reply.batch_result is not None:
            return {"type": reply.batch_result}
        if reply.status != 200:
            kind = ERROR_TYPES.get(reply.status, "api_error")
            return {"type": "errored", "error": {"type": "error", "error": {
                "type": kind, "message": reply.error_message or f"scripted {reply.status}"}}}
        return {"type": "succeeded", "message": self.message(params, reply)}

    def _public(self, batch: dict[str, Any]) -> dict[str, Any]:
        self._settle(batch)
        ended = batch["results"] is not None
        status = "ended" if ended else ("canceling" if batch["cancelled"] is not None else "in_progress")
        return {"id": batch["id"], "type": "message_batch", "processing_status": status,
                "request_counts": self._counts(batch), "created_at": _stamp(batch["created"]),
                "expires_at": _stamp(batch["created"] + 86_400),
                "ended_at": _stamp(batch["ended"]) if ended else None, "archived_at": None,
                "cancel_initiated_at": None if batch["cancelled"] is None else _stamp(batch["cancelled"]),
                "results_url": f"/v1/messages/batches/{batch['id']}/results" if ended else None}

    def get_batch(self, batch_id: str) -> tuple[int, dict[str, Any]]:
        with self.lock:
            batch = self.batches.get(batch_id)
            return (200, self._public(batch)) if batch else (404, {"message": f"no batch {batch_id}"})

    def list_batches(self, limit: int, after_id: str | None) -> tuple[int, dict[str, Any]]:
        with self.lock:
            ids = sorted(self.batches, reverse=True)  # newest first
            if after_id in ids:
                ids = ids[ids.index(after_id) + 1:]
            page = [self._public(self.batches[i]) for i in ids[:limit]]
            return 200, {"data": page, "has_more": len(ids) > limit,
                         "first_id": page[0]["id"] if page else None, "last_id": page[-1]["id"] if page else None}

    def cancel_batch(self, batch_id: str) -> tuple[int, dict[str, Any]]:
        with self.lock:
            batch = self.batches.get(batch_id)
            if batch is None:
                return 404, {"message": f"no batch {batch_id}"}
            if batch["results"] is None and batch["cancelled"] is None:
                batch["cancelled"] = time.time()
            return 200, self._public(batch)

    def batch_results(self, batch_id: str) -> tuple[int, str]:
        with self.lock:
            batch = self.batches.get(batch_id)
            if batch is None:
                return 404, json.dumps({"type": "error", "error": {"type": "not_found_error", "message": "no batch"}})
            self._settle(batch)
            if batch["results"] is None:
                return 400, json.dumps({"type": "error", "error": {
                    "type": "invalid_request_error", "message": "the batch has not ended yet"}})
            return 200, "".join(json.dumps(line) + "\n" for line in batch["results"])

    def __enter__(self) -> AnthropicServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def serve_forever(responder: Responder, port: int, **options: Any) -> None:
    """Run a server in the foreground on a fixed port (used by the kill/resume tests)."""
    srv = AnthropicServer(responder, **options)
    srv._httpd.server_close()
    srv._httpd = _Server(("127.0.0.1", port), _Handler)
    srv._httpd.owner = srv
    srv._httpd.serve_forever()


def _message_of(owner: AnthropicServer, body: dict[str, Any], reply: MReply) -> dict[str, Any]:
    """The Messages API's answer to ``body`` as ``reply`` scripts it."""
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
        "id": f"msg_{number}", "type": "message", "role": "assistant",
        "model": reply.model or body.get("model", "test"),
        "content": content,
        "stop_reason": reply.stop_reason or ("tool_use" if forced else "end_turn"),
        "stop_sequence": None,
        "usage": reply.usage or {"input_tokens": len(prompt.split()),
                                 "output_tokens": max(1, len(reply.content.split())),
                                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
    }
