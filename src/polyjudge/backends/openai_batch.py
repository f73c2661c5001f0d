"""The OpenAI Batch API (and servers that copy it) over the shared HTTP layer (``backends/http.py``).

A batch is a JSONL file of ``{"custom_id", "method", "url", "body"}`` lines
uploaded to ``/v1/files`` with purpose ``batch``, then a ``/v1/batches``
object (endpoint ``/v1/chat/completions``, completion window 24 h) that is
polled until it ends; its output and error files hold one
``{"custom_id", "response": {"status_code", "body"}, "error"}`` line per
request. The same line formats are what vLLM's ``run_batch`` reads and
writes, so :func:`request_line` and :func:`parse_output_line` also serve the
offline ``--batch-export`` / ``--batch-import`` path.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from polyjudge.backends.base import BackendError
from polyjudge.backends.batch import (
    FILE_DEADLINE_S,
    MAX_LIST_PAGES,
    BatchClient,
    BatchInfo,
    BatchLimits,
    BatchLine,
    BatchLineFormat,
    LineResult,
    RegisteredBatchClient,
    batch_endpoint,
    json_object,
    register_batch_client,
    register_batch_format,
)
from polyjudge.backends.http import HttpClients, HttpResponse, max_body_from_env, parse_retry_after
from polyjudge.backends.openai import chat_body
from polyjudge.backends.reasoning import is_known_reasoning_model
from polyjudge.backends.registry import DEFAULT_API_KEY_ENV, BackendSettings, JudgeSpec
from polyjudge.backends.reported import NOT_TEXT, as_json_text, count, message_text, reported, server_json
from polyjudge.data.chat import GenerateRequest, GenerateResult, Usage
from polyjudge.data.secrets import redact, redact_url
from polyjudge.data.settings import default

if TYPE_CHECKING:
    import aiohttp

OPENAI_BASE_URL = "https://api.openai.com/v1"
CHAT_ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
# The metadata key that carries our submission tag, so a batch can be found after a crash.
TAG_KEY = "polyjudge_submission"
# Line errors that a later batch may well not repeat.
RETRYABLE_LINE_ERRORS = frozenset({"batch_expired", "request_timeout", "server_error", "rate_limit_exceeded",
                                   "internal_error", "timeout"})


def request_line(model: str, custom_id: str, request: GenerateRequest, *, structured: bool = True,
                 reasoning: bool = False) -> dict[str, Any]:
    """One line of a batch input file (OpenAI's and vLLM ``run_batch``'s format)."""
    return {"custom_id": custom_id, "method": "POST", "url": CHAT_ENDPOINT,
            "body": chat_body(model, request, structured=structured, reasoning=reasoning)}


def encode_line(model: str, line: BatchLine, *, structured: bool = True, reasoning: bool = False) -> bytes:
    record = request_line(model, line.custom_id, line.request, structured=structured, reasoning=reasoning)
    return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")


def _index(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) and abs(value) < 2**31 else 0


def _text_and_finish(choice: dict[str, Any]) -> tuple[str, str]:
    """A choice's text and finish reason; content that is not text is kept as JSON and marked."""
    content = choice["message"].get("content")
    text = message_text(content)
    if text is None:
        return as_json_text(content), NOT_TEXT
    return text, as_json_text(choice.get("finish_reason") or "stop")


def parse_chat_completion(data: Any, latency_s: float = 0.0) -> GenerateResult:
    """A chat-completion body as a result (every choice, cached and reasoning tokens); ValueError if malformed."""
    try:
        choices = sorted(data["choices"], key=lambda c: _index(c.get("index")))
        answers = [_text_and_finish(c) for c in choices]
        texts = tuple(t for t, _ in answers)
        finishes = tuple(f for _, f in answers)
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"malformed chat completion ({type(exc).__name__})") from None
    if not texts:
        raise ValueError("a chat completion without choices")
    usage = json_object(data.get("usage"))
    prompt_details = json_object(usage.get("prompt_tokens_details"))
    completion_details = json_object(usage.get("completion_tokens_details"))
    model = data.get("model")
    return GenerateResult(
        text=texts[0], finish_reason=finishes[0],
        usage=Usage(count(usage.get("prompt_tokens")), count(usage.get("completion_tokens")),
                    count(prompt_details.get("cached_tokens")), count(completion_details.get("reasoning_tokens")),
                    reported=reported(usage)),
        latency_s=latency_s, model=str(model) if model is not None else None,
        choices=texts, choice_finish_reasons=finishes)


def _is_retryable_status(status: int) -> bool:
    return status in (408, 409, 429) or status >= 500


def _body_message(body: Any) -> str:
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message") is not None:
            return str(err["message"])
        if isinstance(err, str):
            return err
        if body.get("message") is not None:
            return str(body["message"])
    return json.dumps(body)[:200] if body is not None else "no body"


def _short(text: str) -> str:
    return (redact(" ".join(text.split())) or "")[:200]


def parse_output_line(obj: Any) -> LineResult:
    """One line of a batch output or error file; ValueError when it is not one."""
    if not isinstance(obj, dict) or not isinstance(obj.get("custom_id"), str):
        raise ValueError("not a batch output line (no custom_id)")
    custom_id = obj["custom_id"]
    response, error = obj.get("response"), obj.get("error")
    if isinstance(response, dict) and response.get("body") is not None:
        status = _index(response.get("status_code")) or 200
        body = response["body"]
        if status == 200:
            try:
                return LineResult(custom_id, result=parse_chat_completion(body))
            except ValueError as exc:
                return LineResult(custom_id, error=BackendError(f"malformed response body: {exc}", retryable=True,
                                                                status=status))
        return LineResult(custom_id, error=BackendError(f"HTTP {status}: {_short(_body_message(body))}",
                                                        retryable=_is_retryable_status(status), status=status))
    if isinstance(error, dict):
        code = str(error.get("code") or "error")
        message = _short(str(error.get("message") or ""))
        return LineResult(custom_id, error=BackendError(f"batch {code}: {message}".rstrip(": "),
                                                        retryable=code in RETRYABLE_LINE_ERRORS))
    return LineResult(custom_id, error=BackendError("no answer in the batch output line", retryable=True))


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def batch_info(data: Any) -> BatchInfo:
    """A batch object as :class:`BatchInfo`; ValueError when it is not one."""
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        raise ValueError("not a batch object")
    counts = json_object(data.get("request_counts"))
    errors: list[str] = []
    errs = data.get("errors")
    if isinstance(errs, dict) and isinstance(errs.get("data"), list):
        for e in errs["data"]:
            if isinstance(e, dict):
                where = f" (line {e['line']})" if e.get("line") is not None else ""
                errors.append(_short(f"{e.get('code') or 'error'}: {e.get('message') or ''}{where}"))
    metadata = json_object(data.get("metadata"))
    tag = metadata.get(TAG_KEY)
    return BatchInfo(
        batch_id=data["id"], status=str(data.get("status") or "unknown"), total=_index(counts.get("total")),
        completed=_index(counts.get("completed")), failed=_index(counts.get("failed")),
        expires_at=_float(data.get("expires_at")),
        output_file=data.get("output_file_id") if isinstance(data.get("output_file_id"), str) else None,
        error_file=data.get("error_file_id") if isinstance(data.get("error_file_id"), str) else None,
        errors=tuple(errors), tag=tag if isinstance(tag, str) else None,
        input_file=data.get("input_file_id") if isinstance(data.get("input_file_id"), str) else None)


@register_batch_format()
class OpenAIBatchLines(BatchLineFormat):
    """OpenAI's batch lines (``/v1/chat/completions`` bodies), also vLLM ``run_batch``'s."""

    name: ClassVar[str] = "openai"

    @classmethod
    def request_line(cls, model: str, custom_id: str, request: GenerateRequest) -> dict[str, Any]:
        return request_line(model, custom_id, request)

    @classmethod
    def parse_output_line(cls, obj: Any) -> LineResult:
        return parse_output_line(obj)


@register_batch_client()
class OpenAIBatchClient(RegisteredBatchClient):
    """The OpenAI Batch API (files, batches, output and error files)."""

    name: ClassVar[str] = "openai"

    @classmethod
    def from_spec(cls, spec: JudgeSpec, settings: BackendSettings, limits: BatchLimits) -> BatchClient:
        where = batch_endpoint(spec, settings, OPENAI_BASE_URL, DEFAULT_API_KEY_ENV,
                               missing_model="the openai backend needs --model")
        structured = spec.option("structured") or "auto"
        if structured not in ("auto", "json_schema", "none"):
            raise ValueError(f"structured must be auto, json_schema or none, got '{structured}'")
        return cls(where.model, where.base_url, api_key_env=where.key_env, timeout=settings.timeout, limits=limits,
                   structured=structured != "none", reasoning=_reasoning(spec))

    def __init__(self, model: str, base_url: str = OPENAI_BASE_URL, *, api_key_env: str = DEFAULT_API_KEY_ENV,
                 timeout: float = default("timeout"), limits: BatchLimits = BatchLimits(), structured: bool = True,
                 reasoning: bool = False) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.endpoint = redact_url(self.base_url) or ""
        self.api_key_env = api_key_env
        self.limits = limits
        # As the openai backend writes requests: the JSON schema as response_format unless the judge
        # says structured=none, and reasoning models (?reasoning) with max_completion_tokens.
        self.structured, self.reasoning = structured, reasoning
        self._timeout = timeout
        # Output files can be as large as the batches: the size cap grows with them.
        self._http = HttpClients(timeout, max_connections=8,
                                 max_body=max(max_body_from_env(), 3 * limits.max_bytes))

    # ------------------------------------------------------------------------------ HTTP

    def _headers(self) -> dict[str, str]:
        key = os.environ.get(self.api_key_env)
        return {"Authorization": f"Bearer {key}"} if key else {}

    async def _call(self, method: str, path: str, *, params: dict[str, str] | None = None, data: Any = None,
                    json_body: Any = None, files: bool = False) -> HttpResponse:
        """One request; a failed status raises. File transfers get FILE_DEADLINE_S (or --timeout if longer)."""
        deadline = max(self._timeout, FILE_DEADLINE_S) if files else None
        headers = self._headers()
        if json_body is not None:
            data = json.dumps(json_body, separators=(",", ":")).encode()
            headers["Content-Type"] = "application/json"
        resp = await self._http.request(method, f"{self.base_url}{path}", headers=headers, params=params,
                                        data=data, deadline=deadline)
        if resp.status_code != 200:
            try:
                message = _body_message(resp.json())
            except ValueError:
                message = resp.text
            raise BackendError(f"HTTP {resp.status_code}: {_short(message)}",
                               retryable=_is_retryable_status(resp.status_code), status=resp.status_code,
                               retry_after=parse_retry_after(resp.headers.get("retry-after")))
        return resp

    async def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        resp = await self._call(method, path, **kwargs)
        try:
            return resp.json()
        except ValueError:
            raise BackendError(f"malformed response body from {path}", retryable=True, status=200) from None

    async def _info(self, method: str, path: str, **kwargs: Any) -> BatchInfo:
        data = await self._json(method, path, **kwargs)
        try:
            return batch_info(data)
        except ValueError:
            raise BackendError(f"malformed batch object from {path}", retryable=True, status=200) from None

    # ------------------------------------------------------------------------------ BatchClient

    def _encode(self, line: BatchLine) -> bytes:
        return encode_line(self.model, line, structured=self.structured, reasoning=self.reasoning)

    def line_size(self, line: BatchLine) -> int:
        return len(self._encode(line))

    async def submit(self, lines: Sequence[BatchLine], tag: str) -> BatchInfo:
        payload = b"".join(self._encode(line) for line in lines)
        uploaded = await self._json("POST", "/files", data=lambda: _upload_form(payload, tag), files=True)
        file_id = uploaded.get("id") if isinstance(uploaded, dict) else None
        if not isinstance(file_id, str):
            raise BackendError("the file upload answered without a file id", retryable=True, status=200)
        return await self._info("POST", "/batches", json_body={
            "input_file_id": file_id, "endpoint": CHAT_ENDPOINT, "completion_window": COMPLETION_WINDOW,
            "metadata": {TAG_KEY: tag}})

    async def find(self, tag: str) -> BatchInfo | None:
        after: str | None = None
        for _ in range(MAX_LIST_PAGES):  # newest first; a batch of ours is among the latest
            params = {"limit": "100"} | ({"after": after} if after else {})
            page = await self._json("GET", "/batches", params=params)
            data = page.get("data") if isinstance(page, dict) else None
            if not isinstance(data, list) or not data:
                return None
            for obj in data:
                try:
                    info = batch_info(obj)
                except ValueError:
                    continue
                if info.tag == tag:
                    return info
            if not page.get("has_more"):
                return None
            last = data[-1].get("id") if isinstance(data[-1], dict) else None
            if not isinstance(last, str):
                return None
            after = last
        return None

    async def status(self, batch_id: str) -> BatchInfo:
        return await self._info("GET", f"/batches/{batch_id}")

    async def results(self, info: BatchInfo) -> list[LineResult]:
        out: list[LineResult] = []
        for file_id in (info.output_file, info.error_file):
            if not file_id:
                continue
            resp = await self._call("GET", f"/files/{file_id}/content", files=True)
            for raw in resp.text.splitlines():
                if not raw.strip():
                    continue
                try:
                    out.append(parse_output_line(server_json(raw)))
                except ValueError:
                    continue  # a line we cannot read counts as unanswered (retried)
        return out

    async def cancel(self, batch_id: str) -> BatchInfo:
        return await self._info("POST", f"/batches/{batch_id}/cancel")

    async def candidates(self, tag: str) -> list[BatchInfo]:
        """The batch that carries ``tag`` in its metadata, if any: to be proven by :meth:`request_ids`."""
        found = await self.find(tag)
        return [found] if found is not None else []

    async def request_ids(self, info: BatchInfo) -> frozenset[str] | None:
        """The custom_ids of a batch's requests, read from its input file (None when it names none)."""
        if not info.input_file:
            return None
        resp = await self._call("GET", f"/files/{info.input_file}/content", files=True)
        ids: set[str] = set()
        for raw in resp.text.splitlines():
            try:
                obj = server_json(raw) if raw.strip() else None
            except ValueError:
                continue
            if isinstance(obj, dict) and isinstance(obj.get("custom_id"), str):
                ids.add(obj["custom_id"])
        return frozenset(ids)

    async def aclose(self) -> None:
        await self._http.aclose()


def _reasoning(spec: JudgeSpec) -> bool:
    """Batch lines are written for a reasoning model when the judge says so or its name is in the table."""
    flag = spec.flag("reasoning")
    return flag if flag is not None else is_known_reasoning_model(spec.model or "")


def _upload_form(payload: bytes, tag: str) -> aiohttp.FormData:
    """The multipart form of a batch file upload (made afresh for each send: a form is spent once sent)."""
    import aiohttp

    form = aiohttp.FormData()
    form.add_field("purpose", "batch")
    form.add_field("file", payload, filename=f"{tag}.jsonl", content_type="application/jsonl")
    return form


__all__ = ["CHAT_ENDPOINT", "OPENAI_BASE_URL", "OpenAIBatchClient", "OpenAIBatchLines", "batch_info", "chat_body",
           "encode_line",
           "parse_chat_completion", "parse_output_line", "request_line"]
