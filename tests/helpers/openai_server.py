"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests and benchmarks.

It speaks ``POST /v1/chat/completions`` over real sockets (HTTP/1.1
keep-alive, one thread per connection) and answers from a Python
``responder`` so tests can script latency, error codes, Retry-After, slow
and truncated answers and invalid JSON.

``n`` > 1 asks for several choices: choice k is the responder's answer to
the same body with seed ``seed + k`` (what k single requests would get), so
a run with samples per request can be compared with one without;
``reject_n=True`` answers such a request 400 (param ``n``) and
``ignore_n=True`` answers it with one choice, as servers that do not
support ``n`` do; ``one_choice_usage=True`` reports the completion tokens of
the first choice only (as llama.cpp's server does for ``n`` choices).

The Batch API is served too: ``POST /v1/files`` (multipart, purpose
``batch``), ``POST /v1/batches``, ``GET /v1/batches[/ID]``, ``POST
/v1/batches/ID/cancel`` and ``GET /v1/files/ID/content``. A batch stays
``in_progress`` for ``batch_delay_s`` seconds after it was created, then the
next look at it runs every line through the same responder (once) and it
ends ``completed`` with an output and an error file (``expired`` when a
line's :class:`Reply` has ``batch_error="batch_expired"``). Every line of
every created batch is kept in ``batch_lines`` and every chat request's
arrival time in ``arrivals``; with ``log_path`` both are also appended to a
file (for servers run in another process).
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Reply:
    content: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    finish_reason: str = "stop"
    # Raw body to send instead of a chat-completion JSON (e.g. broken JSON).
    raw_body: str | None = None
    # Prompt tokens reported as served from the provider's cache.
    cached_tokens: int = 0
    # In a batch: fail this line with this error code (e.g. "batch_expired") instead of answering.
    batch_error: str | None = None
    # Token log-probabilities of the answer, sent as the choice's ``logprobs.content`` when the
    # request asked for them: [(token, logprob, [(alternative, logprob), ...]), ...].
    logprobs: list[tuple[str, float, list[tuple[str, float]]]] | None = None
    # The usage object to send instead of the counted one (any JSON: negative, huge, NaN, text...).
    usage: dict[str, Any] | None = None
    # Sent as ``message.content`` instead of ``content`` when not None (an object, a number: non-text content).
    message_content: Any = None
    # The served model the answer names (default: the model asked for) and its ``system_fingerprint`` (default: none).
    model: str | None = None
    system_fingerprint: str | None = None


Responder = Callable[[dict], "str | Reply"]


def _as_reply(reply: str | Reply) -> Reply:
    return Reply(content=reply) if isinstance(reply, str) else reply


def _prompt_tokens(body: dict) -> int:
    return sum(len(m.get("content", "").split()) for m in body.get("messages", []))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: without TCP_NODELAY each answer waits for a delayed ACK (~40 ms).
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, *args: object) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        owner = self.server.owner
        path = urlsplit(self.path).path.rstrip("/")
        if path.endswith("/files"):
            self._send(*owner.upload(self.headers.get("Content-Type", ""), raw))
            return
        if path.endswith("/cancel") and "/batches/" in path:
            self._send(*owner.cancel_batch(path.split("/")[-2]))
            return
        if path.endswith("/batches"):
            try:
                body = json.loads(raw)
            except json.JSONDecodeError:
                self._send(400, {"error": {"message": "bad json"}})
                return
            self._send(*owner.create_batch(body))
            return
        if not path.endswith("/chat/completions"):
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
            owner.arrivals.append(time.monotonic())
            owner.log({"kind": "chat", "body": body})
        status, payload, headers, delay, raw_body = owner.complete(body)
        delay += owner.latency_s
        if delay:
            time.sleep(delay)
        if raw_body is not None:
            self._send_raw(status, raw_body.encode(), headers)
            return
        if status == 200:
            with owner.lock:
                owner.completed.append(body)
        self._send(status, payload, headers)

    def do_GET(self) -> None:  # noqa: N802
        owner = self.server.owner
        if owner.get_latency_s:
            time.sleep(owner.get_latency_s)
        parts = urlsplit(self.path)
        path = parts.path.rstrip("/")
        if path.endswith("/content") and "/files/" in path:
            data = owner.files.get(path.split("/")[-2])
            if data is None:
                self._send(404, {"error": {"message": "no such file"}})
            else:
                self._send_raw(200, data, {}, content_type="application/jsonl")
            return
        if path.endswith("/batches"):
            query = parse_qs(parts.query)
            self._send(*owner.list_batches(int(query.get("limit", ["20"])[0]), query.get("after", [None])[0]))
            return
        if "/batches/" in path:
            self._send(*owner.get_batch(path.split("/")[-1]))
            return
        self._send(404, {"error": {"message": "not found"}})

    def _send(self, status: int, obj: dict, headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(obj).encode(), headers or {})

    def _send_raw(self, status: int, data: bytes, headers: dict[str, str], *,
                  content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
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

    def __init__(self, responder: Responder, *, latency_s: float = 0.0, reject_n: bool = False,
                 ignore_n: bool = False, batch_delay_s: float = 0.0, log_path: str | None = None,
                 one_choice_usage: bool = False, get_latency_s: float = 0.0) -> None:
        self.responder, self.latency_s = responder, latency_s
        # Before any GET is answered (a server far away: the form hold, backends.adaptation, lasts HOLD_S).
        self.get_latency_s = get_latency_s
        self.one_choice_usage = one_choice_usage
        # Every chat request and every batch line, one JSON line each, for tests whose server is another process.
        self.log_path = log_path
        self.reject_n, self.ignore_n, self.batch_delay_s = reject_n, ignore_n, batch_delay_s
        self.requests: list[dict] = []
        self.completed: list[dict] = []
        self.headers_seen: list[dict] = []
        self.arrivals: list[float] = []
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_lines: list[dict] = []  # every line of every created batch, in order
        self.lock = threading.RLock()
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

    def log(self, record: dict) -> None:
        if self.log_path is not None:
            with open(self.log_path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(record) + "\n")

    # ------------------------------------------------------------------------ chat completions

    def replies(self, body: dict) -> list[Reply] | None:
        """The responder's reply per choice (None: the server refuses ``n``)."""
        n = int(body.get("n") or 1)
        if n > 1 and self.reject_n:
            return None
        if n > 1 and not self.ignore_n:
            single = {k: v for k, v in body.items() if k != "n"}
            return [_as_reply(self.responder({**single, "seed": int(body.get("seed") or 0) + k})) for k in range(n)]
        return [_as_reply(self.responder(body))]

    def complete(self, body: dict, replies: list[Reply] | None = None,
                 ) -> tuple[int, dict, dict[str, str], float, str | None]:
        """(status, payload, headers, delay, raw body) of one chat request; ``n`` choices as documented."""
        replies = replies if replies is not None else self.replies(body)
        if replies is None:
            return 400, {"error": {"message": "'n' is not supported by this server", "type": "invalid_request_error",
                                   "param": "n", "code": "unsupported_parameter"}}, {}, 0.0, None
        first = replies[0]
        if first.raw_body is not None:
            return first.status, {}, first.headers, first.delay_s, first.raw_body
        if first.status != 200:
            return first.status, {"error": {"message": f"scripted {first.status}"}}, first.headers, first.delay_s, None
        prompt_tokens = _prompt_tokens(body)
        completion_tokens = sum(len(r.content.split()) for r in (replies[:1] if self.one_choice_usage else replies))
        usage: dict[str, Any] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                 "total_tokens": prompt_tokens + completion_tokens}
        if first.cached_tokens:
            usage["prompt_tokens_details"] = {"cached_tokens": first.cached_tokens}
        if first.usage is not None:
            usage = first.usage
        with self.lock:
            number = len(self.requests) + len(self.batch_lines)
        payload = {
            "id": f"cmpl-{number}",
            "object": "chat.completion",
            "model": first.model or body.get("model", "test"),
            "choices": [{"index": k, "finish_reason": r.finish_reason,
                         "message": {"role": "assistant",
                                     "content": r.content if r.message_content is None else r.message_content}}
                        for k, r in enumerate(replies)],
            "usage": usage,
        }
        if first.system_fingerprint is not None:
            payload["system_fingerprint"] = first.system_fingerprint
        if body.get("logprobs"):  # as OpenAI answers: null when the reply has none to give
            for choice, r in zip(payload["choices"], replies):
                choice["logprobs"] = None if r.logprobs is None else {"content": [
                    {"token": t, "logprob": lp, "top_logprobs": [{"token": a, "logprob": alp} for a, alp in alts]}
                    for t, lp, alts in r.logprobs]}
        return 200, payload, first.headers, max(r.delay_s for r in replies), None

    # ------------------------------------------------------------------------ files and batches

    def upload(self, content_type: str, raw: bytes) -> tuple[int, dict]:
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
        fields: dict[str, bytes] = {}
        filename = "upload.jsonl"
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True) or b""
            if isinstance(name, str):
                fields[name] = payload
            if part.get_filename():
                filename = part.get_filename()
        if fields.get("purpose") != b"batch" or "file" not in fields:
            return 400, {"error": {"message": "expected a file with purpose batch"}}
        with self.lock:
            file_id = f"file-{len(self.files) + 1}"
            self.files[file_id] = fields["file"]
        return 200, {"id": file_id, "object": "file", "bytes": len(fields["file"]), "created_at": int(time.time()),
                     "filename": filename, "purpose": "batch"}

    def create_batch(self, body: dict) -> tuple[int, dict]:
        with self.lock:
            data = self.files.get(body.get("input_file_id", ""))
            if data is None:
                return 400, {"error": {"message": "no such input file"}}
            if body.get("endpoint") != "/v1/chat/completions" or body.get("completion_window") != "24h":
                return 400, {"error": {"message": "unsupported endpoint or completion window"}}
            lines = [json.loads(x) for x in data.decode("utf-8").splitlines() if x.strip()]
            self.batch_lines.extend(lines)
            for line in lines:
                self.log({"kind": "batch_line", "custom_id": line.get("custom_id"), "body": line.get("body")})
            batch_id = f"batch_{len(self.batches) + 1}"
            now = time.time()
            self.batches[batch_id] = {
                "id": batch_id, "object": "batch", "endpoint": body["endpoint"],
                "input_file_id": body["input_file_id"], "completion_window": "24h", "status": "in_progress",
                "output_file_id": None, "error_file_id": None, "created_at": int(now), "expires_at": int(now) + 86400,
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "metadata": body.get("metadata") or {}, "errors": None,
                "_lines": lines, "_created": now, "_cancelled": False}
            return 200, self._public(self.batches[batch_id])

    @staticmethod
    def _public(batch: dict) -> dict:
        return {k: v for k, v in batch.items() if not k.startswith("_")}

    def _finish(self, batch: dict) -> None:
        """Run every line through the responder (once) and write the output and error files."""
        out, errors, expired = [], [], False
        for number, line in enumerate(batch["_lines"]):
            custom_id = line.get("custom_id")
            if batch["_cancelled"]:
                errors.append({"id": f"req_{number}", "custom_id": custom_id, "response": None,
                               "error": {"code": "batch_cancelled", "message": "the batch was cancelled"}})
                continue
            replies = self.replies(line["body"])
            scripted = replies[0].batch_error if replies else None
            if scripted is not None:
                expired = expired or scripted == "batch_expired"
                errors.append({"id": f"req_{number}", "custom_id": custom_id, "response": None,
                               "error": {"code": scripted, "message": f"scripted {scripted}"}})
                continue
            status, payload, _, _, _ = self.complete(line["body"], replies)
            record = {"id": f"req_{number}", "custom_id": custom_id,
                      "response": {"status_code": status, "request_id": f"r{number}", "body": payload}, "error": None}
            (out if status == 200 else errors).append(record)
        for kind, rows in (("output_file_id", out), ("error_file_id", errors)):
            if rows:
                file_id = f"file-{len(self.files) + 1}"
                self.files[file_id] = "".join(json.dumps(r) + "\n" for r in rows).encode()
                batch[kind] = file_id
        batch["request_counts"] = {"total": len(batch["_lines"]), "completed": len(out), "failed": len(errors)}
        batch["status"] = "cancelled" if batch["_cancelled"] else "expired" if expired else "completed"

    def get_batch(self, batch_id: str) -> tuple[int, dict]:
        with self.lock:
            batch = self.batches.get(batch_id)
            if batch is None:
                return 404, {"error": {"message": "no such batch"}}
            ended = batch["status"] in ("completed", "expired", "cancelled", "failed")
            due = time.time() - batch["_created"] >= self.batch_delay_s
            if not ended and (due or batch["status"] == "cancelling"):
                self._finish(batch)
            return 200, self._public(batch)

    def list_batches(self, limit: int, after: str | None) -> tuple[int, dict]:
        with self.lock:
            newest_first = list(reversed(self.batches.values()))
            if after is not None:
                ids = [b["id"] for b in newest_first]
                newest_first = newest_first[ids.index(after) + 1:] if after in ids else []
            page = newest_first[:limit]
            return 200, {"object": "list", "data": [self._public(b) for b in page],
                         "has_more": len(newest_first) > limit,
                         "first_id": page[0]["id"] if page else None, "last_id": page[-1]["id"] if page else None}

    def cancel_batch(self, batch_id: str) -> tuple[int, dict]:
        with self.lock:
            batch = self.batches.get(batch_id)
            if batch is None:
                return 404, {"error": {"message": "no such batch"}}
            if batch["status"] in ("validating", "in_progress", "finalizing"):
                batch["status"], batch["_cancelled"] = "cancelling", True
            return 200, self._public(batch)


def serve_forever(responder: Responder, port: int, latency_s: float = 0.0, **options: Any) -> None:
    """Run a server in the foreground on a fixed port (used by the kill/resume tests)."""
    srv = ScriptedServer(responder, latency_s=latency_s, **options)
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
