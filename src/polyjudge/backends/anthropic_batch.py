"""Anthropic's Message Batches API (``/v1/messages/batches``) behind :class:`~polyjudge.backends.batch.BatchClient`.

A batch is one JSON body of ``{"custom_id", "params"}`` requests (``params``
is the Messages API body the anthropic backend writes), at most 100,000
requests and 256 MB. It is polled until ``processing_status`` is ``ended``;
its results are JSONL at ``/results``, one ``{"custom_id", "result"}`` per
request, the result ``succeeded`` (with the message), ``errored``,
``canceled`` or ``expired``. Answers cost half the live price.

Batches carry no metadata, so a batch whose creation answer was lost (the
process killed in between) is looked for by what the run recorded before
creating it: its number of requests and when it was recorded
(:meth:`AnthropicBatchClient.candidates`), among the batches not already
known to the run. A candidate is adopted only once its requests' custom_ids
(which carry the submission's tag) are the recorded ones, read from its
results when it has ended (:meth:`AnthropicBatchClient.request_ids`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator, Collection, Sequence
from datetime import datetime
from typing import Any, ClassVar

from polyjudge.backends.anthropic import API_KEY_ENV, API_VERSION, DEFAULT_BASE_URL, AnthropicBackend
from polyjudge.backends.base import BackendError
from polyjudge.backends.batch import (
    FILE_DEADLINE_S,
    MAX_LIST_PAGES,
    BatchClient,
    BatchInfo,
    BatchLimits,
    BatchLine,
    LineResult,
    RegisteredBatchClient,
    batch_endpoint,
    json_object,
    register_batch_client,
)
from polyjudge.backends.http import HttpClients, HttpResponse, error_info, is_retryable_status, max_body_from_env
from polyjudge.backends.registry import BackendSettings, JudgeSpec
from polyjudge.backends.reported import server_json
from polyjudge.data.chat import GenerateRequest
from polyjudge.data.secrets import redact, redact_url
from polyjudge.data.settings import default

# The provider's limits per batch (platform.claude.com, Message Batches).
ANTHROPIC_LIMITS = BatchLimits(max_requests=100_000, max_bytes=256 * 1_000_000)
# Error types of an errored request that a later attempt may well not repeat.
RETRYABLE_ERROR_TYPES = frozenset({"api_error", "overloaded_error", "rate_limit_error", "timeout_error"})
# How far the provider's clock may lag ours when a lost batch is looked for by its creation time.
CLOCK_SKEW_S = 120.0


def _seconds(stamp: Any) -> float | None:
    """An RFC 3339 time as Unix seconds (None when absent or unreadable)."""
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _count(counts: dict[str, Any], name: str) -> int:
    value = counts.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def batch_info(data: Any) -> BatchInfo:
    """A message batch object as :class:`BatchInfo`; ValueError when it is not one.

    An ended batch whose cancellation was asked for reports ``canceled`` (the
    engine leaves its unanswered requests pending); one being cancelled
    reports ``cancelling``.
    """
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        raise ValueError("not a message batch object")
    counts = json_object(data.get("request_counts"))
    status = str(data.get("processing_status") or "unknown")
    if status == "canceling":
        status = "cancelling"
    elif status == "ended" and data.get("cancel_initiated_at"):
        status = "canceled"
    failed = sum([_count(counts, k) for k in ("errored", "canceled", "expired")])
    total = failed + sum([_count(counts, k) for k in ("processing", "succeeded")])
    return BatchInfo(batch_id=data["id"], status=status, total=total, completed=_count(counts, "succeeded"),
                     failed=failed, expires_at=_seconds(data.get("expires_at")),
                     output_file=data["id"] if data.get("results_url") else None)


def _line_error(result: dict[str, Any]) -> BackendError:
    """The error of an errored, canceled or expired request."""
    kind = result.get("type")
    if kind == "expired":
        return BackendError("batch_expired: the batch ended before this request was processed", retryable=True)
    if kind == "canceled":
        return BackendError("batch_canceled: the batch was cancelled before this request was processed",
                            retryable=True)
    outer = json_object(result.get("error"))
    inner = json_object(outer.get("error")) or outer
    err_type = str(inner.get("type") or "api_error")
    message = str(inner.get("message") or "")[:300]
    return BackendError(f"{err_type}: {message}", retryable=err_type in RETRYABLE_ERROR_TYPES)


@register_batch_client()
class AnthropicBatchClient(RegisteredBatchClient):
    """Anthropic Message Batches: create, poll, read results, cancel."""

    name: ClassVar[str] = "anthropic"

    @classmethod
    def from_spec(cls, spec: JudgeSpec, settings: BackendSettings, limits: BatchLimits) -> BatchClient:
        where = batch_endpoint(spec, settings, DEFAULT_BASE_URL, API_KEY_ENV,
                               missing_model="the anthropic backend needs a model: anthropic:MODEL")
        writer = AnthropicBackend(where.model, where.base_url, api_key_env=where.key_env,
                                  structured=spec.option("structured") or "auto",
                                  version=spec.option("version") or API_VERSION,
                                  reasoning_effort=settings.reasoning_effort)
        # The engine's default limits are OpenAI's: Anthropic's own apply unless smaller ones were asked for.
        fitted = ANTHROPIC_LIMITS if limits == BatchLimits() else BatchLimits(
            min(limits.max_requests, ANTHROPIC_LIMITS.max_requests), min(limits.max_bytes, ANTHROPIC_LIMITS.max_bytes))
        return cls(writer, timeout=settings.timeout, limits=fitted)

    def __init__(self, writer: AnthropicBackend, *, timeout: float = default("timeout"),
                 limits: BatchLimits = ANTHROPIC_LIMITS) -> None:
        self._writer = writer  # writes each request's params as the live backend would (never sends)
        self.model = writer.model
        self.api_key_env = writer.api_key_env
        base = writer.base_url
        self.url = f"{base}/messages/batches" if base.endswith("/v1") else f"{base}/v1/messages/batches"
        self.endpoint = redact_url(base) or ""
        self.limits = limits
        self._timeout = timeout
        self._http = HttpClients(timeout, max_connections=4, max_body=max(max_body_from_env(), 3 * limits.max_bytes))
        # tag -> (requests, when submitted): what find() matches a batch whose creation answer was lost by
        self._submitted: dict[str, tuple[int, float]] = {}

    # ------------------------------------------------------------------ HTTP

    def _headers(self) -> dict[str, str]:
        headers = {"anthropic-version": self._writer.version, "Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["x-api-key"] = key
        return headers

    async def _call(self, method: str, url: str, *, body: bytes | None = None,
                    params: dict[str, str] | None = None, large: bool = False) -> HttpResponse:
        deadline = max(self._timeout, FILE_DEADLINE_S) if large else None
        resp = await self._http.request(method, url, headers=self._headers(), params=params, data=body,
                                        deadline=deadline)
        if resp.status_code != 200:
            info = error_info(resp)
            raise BackendError(f"HTTP {resp.status_code}: {redact(info.message) or ''}"[:400],
                               retryable=is_retryable_status(resp.status_code), status=resp.status_code,
                               retry_after=_retry_after(resp))
        return resp

    async def _info(self, method: str, url: str, **kwargs: Any) -> BatchInfo:
        resp = await self._call(method, url, **kwargs)
        try:
            return batch_info(resp.json())
        except ValueError:
            raise BackendError(f"malformed message batch object from {self.endpoint}", retryable=True,
                               status=200) from None

    # ------------------------------------------------------------------ BatchClient

    def _request(self, line: BatchLine) -> dict[str, Any]:
        request: GenerateRequest = line.request
        return {"custom_id": line.custom_id, "params": self._writer.message_body(request)}

    def line_size(self, line: BatchLine) -> int:
        return len(json.dumps(self._request(line), separators=(",", ":")).encode()) + 1

    async def submit(self, lines: Sequence[BatchLine], tag: str) -> BatchInfo:
        body = json.dumps({"requests": [self._request(x) for x in lines]}, separators=(",", ":")).encode()
        self._submitted[tag] = (len(lines), time.time())
        return await self._info("POST", self.url, body=body, large=True)

    async def find(self, tag: str) -> BatchInfo | None:
        """The batch submitted with ``tag`` by this process (None when it was never created)."""
        known = self._submitted.get(tag)
        if known is None:
            return None
        return await self.find_recorded(tag, known[0], known[1])

    async def find_recorded(self, tag: str, requests: int, since: float,
                            exclude: Collection[str] = ()) -> BatchInfo | None:
        """The first of :meth:`candidates` (None when there is none)."""
        found = await self.candidates(tag, requests, since, exclude)
        return found[0] if found else None

    async def candidates(self, tag: str, requests: int, since: float,
                         exclude: Collection[str] = ()) -> list[BatchInfo]:
        """The batches that may be a submission of ``requests`` requests recorded at ``since`` whose creation
        answer was lost, most likely first: those of that many requests created at or after ``since`` (the
        first created first), then those created up to the clock skew before it (the last first); none in
        ``exclude`` (the run's known batches). Only a match of their requests (:meth:`request_ids`) proves one."""
        candidates: list[tuple[float, BatchInfo]] = []
        async for created, info in self._recent(since - CLOCK_SKEW_S):
            if info.total == requests and info.batch_id not in exclude:
                candidates.append((created, info))
        after = sorted((c for c in candidates if c[0] >= since), key=lambda c: c[0])
        before = sorted((c for c in candidates if c[0] < since), key=lambda c: -c[0])
        return [info for _, info in after + before]

    async def request_ids(self, info: BatchInfo) -> frozenset[str] | None:
        """The custom_ids of a batch's requests, read from its results: None while it has not ended
        (Message Batches show their requests only through their results)."""
        if not info.ended or info.output_file is None:
            return None
        return frozenset(line.custom_id for line in await self.results(info))

    async def _recent(self, oldest: float) -> AsyncIterator[tuple[float, BatchInfo]]:
        """The batches created at or after ``oldest``, newest first, with their creation times."""
        after: str | None = None
        for _ in range(MAX_LIST_PAGES):
            params = {"limit": "100"} | ({"after_id": after} if after else {})
            resp = await self._call("GET", self.url, params=params)
            try:
                page = json_object(resp.json())
            except ValueError:
                raise BackendError("malformed batch list", retryable=True, status=200) from None
            data = page.get("data")
            if not isinstance(data, list) or not data:
                return
            for obj in data:
                created = _seconds(json_object(obj).get("created_at"))
                if created is None:
                    continue
                if created < oldest:
                    return
                try:
                    yield created, batch_info(obj)
                except ValueError:
                    continue
            last = json_object(data[-1]).get("id")
            if not page.get("has_more") or not isinstance(last, str):
                return
            after = last

    async def status(self, batch_id: str) -> BatchInfo:
        return await self._info("GET", f"{self.url}/{batch_id}")

    async def results(self, info: BatchInfo) -> list[LineResult]:
        if info.output_file is None:
            return []
        resp = await self._call("GET", f"{self.url}/{info.batch_id}/results", large=True)
        out: list[LineResult] = []
        for raw in resp.text.splitlines():
            parsed = self._parse_result(raw)
            if parsed is not None:
                out.append(parsed)
        return out

    def _parse_result(self, raw: str) -> LineResult | None:
        """One results line; None for a line that cannot be read (its request counts as unanswered)."""
        try:
            obj = server_json(raw)
        except ValueError:
            return None
        if not isinstance(obj, dict) or not isinstance(obj.get("custom_id"), str):
            return None
        result = json_object(obj.get("result"))
        if result.get("type") == "succeeded":
            try:
                return LineResult(obj["custom_id"], result=self._writer.message_result(result.get("message")))
            except BackendError as exc:
                return LineResult(obj["custom_id"], error=exc)
        return LineResult(obj["custom_id"], error=_line_error(result))

    async def cancel(self, batch_id: str) -> BatchInfo:
        return await self._info("POST", f"{self.url}/{batch_id}/cancel")

    async def aclose(self) -> None:
        await self._http.aclose()
        await self._writer.aclose()


def _retry_after(resp: HttpResponse) -> float | None:
    from polyjudge.backends.anthropic import rate_limit_wait

    return rate_limit_wait(resp.headers)


__all__ = ["ANTHROPIC_LIMITS", "AnthropicBatchClient", "batch_info"]
