"""The HTTP layer the API backends share: keep-alive clients, error bodies, Retry-After.

Every HTTP backend (``openai``, ``anthropic``) posts JSON through
:class:`HttpClients` and reads failures through :func:`error_info`, so how
connections are kept, how transport failures become :class:`BackendError`
and how a server's reason is shortened and redacted is decided here once.
httpx is imported only when a backend is built, never when backends are listed.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import ssl
import time
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from polyjudge.backends.base import BackendError
from polyjudge.data.secrets import redact

if TYPE_CHECKING:
    import httpx

# Longest server reason quoted in an error (they end up in stores, manifests and terminals).
MAX_REASON_CHARS = 200


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def seconds_until(timestamp: str | None) -> float | None:
    """Seconds from now until an RFC 3339 time (``2026-01-01T00:00:30Z``); None when unreadable."""
    if not timestamp:
        return None
    try:
        when = datetime.fromisoformat(timestamp.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - time.time())


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One TLS context for all clients: building one costs ~30 ms (CA bundle)."""
    return ssl.create_default_context()


class HttpClients:
    """Keep-alive HTTP clients with one connection each, handed out from a free list.

    httpx's pool scans every connection on each request, which is quadratic
    at concurrency 64 (measured: 11 ms CPU per request); one keep-alive
    connection per client, taken from and returned to a free list, keeps
    each request O(1) (about 1.7 ms). Transport failures come back as
    retryable :class:`BackendError` (``timeout: ...``, ``connection error: ...``).
    """

    def __init__(self, timeout: float, *, max_connections: int = 256) -> None:
        import httpx  # here, not at module level: listing the backends must not load it

        self.timeout = httpx.Timeout(timeout, connect=min(timeout, 10.0))
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: list[httpx.AsyncClient] = []
        self._clients: list[httpx.AsyncClient] = []

    def _client(self) -> httpx.AsyncClient:
        if self._idle:
            return self._idle.pop()
        import httpx

        client = httpx.AsyncClient(timeout=self.timeout, verify=_ssl_context(),
                                   limits=httpx.Limits(max_connections=1, max_keepalive_connections=1))
        self._clients.append(client)
        return client

    async def post(self, url: str, body: dict[str, Any], *, headers: dict[str, str],
                   params: dict[str, str] | None = None) -> httpx.Response:
        """POST ``body`` as JSON; any answer (whatever its status) is returned, transport failures raise."""
        import httpx

        async with self._slots:
            client = self._client()
            try:
                return await client.post(url, json=body, headers=headers, params=params)
            except httpx.TimeoutException as exc:
                raise BackendError(f"timeout: {type(exc).__name__}", retryable=True) from None
            except httpx.TransportError as exc:
                raise BackendError(f"connection error: {type(exc).__name__}: {redact(str(exc))}",
                                   retryable=True) from None
            finally:
                self._idle.append(client)

    async def aclose(self) -> None:
        for client in self._clients:
            await client.aclose()
        self._clients.clear()
        self._idle.clear()


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """What a server said about a failed request, read from its error body."""

    message: str  # one line, at most MAX_REASON_CHARS, secrets masked
    type: str | None = None  # "invalid_request_error", "rate_limit_error", ...
    code: str | None = None  # "unsupported_parameter", "insufficient_quota", ...
    param: str | None = None  # the request field the error is about ("max_tokens", "temperature", ...)

    def names(self, field: str) -> bool:
        """True when the error is about request field ``field`` (by ``param`` or quoted in the message)."""
        if self.param == field:
            return True
        text = self.message
        return any(f"{q}{field}{q}" in text for q in ("'", '"', "`")) or f"supplied: {field}" in text


def _text_of(value: Any) -> str | None:
    return None if value is None else str(value)


def error_info(resp: httpx.Response) -> ErrorInfo:
    """The reason of a failed answer, in any of the error shapes servers use.

    OpenAI and llama.cpp: ``{"error": {"message", "type", "param", "code"}}``;
    Anthropic: ``{"type": "error", "error": {"type", "message"}}``; vLLM:
    ``{"object": "error", "message", "type", "param", "code"}``; anything
    else: the body's text.
    """
    err: dict[str, Any] = {}
    try:
        data = resp.json()
    except Exception:  # noqa: BLE001 - any non-JSON body
        data = None
    if isinstance(data, dict):
        inner = data.get("error")
        if isinstance(inner, dict):
            err = inner
        elif isinstance(inner, str):
            err = {"message": inner}
        elif "message" in data:
            err = data
    raw = err.get("message") if err else None
    text = str(raw) if raw is not None else resp.text
    message = (redact(" ".join(text.split())) or "")[:MAX_REASON_CHARS]
    code = err.get("code")
    return ErrorInfo(message, _text_of(err.get("type")), None if isinstance(code, int) else _text_of(code),
                     _text_of(err.get("param")))


def is_retryable_status(status: int) -> bool:
    """Statuses worth retrying: timeouts, conflicts, rate limits and server errors (incl. 529 overloaded)."""
    return status in (408, 409, 429) or status >= 500


__all__ = ["MAX_REASON_CHARS", "ErrorInfo", "HttpClients", "error_info", "is_retryable_status",
           "parse_retry_after", "seconds_until"]
