"""The HTTP layer the API backends share: one aiohttp session per backend, bounds, error bodies, Retry-After.

Every HTTP backend (``openai``, ``anthropic``, the Batch API client) sends
through :class:`HttpClients` and reads failures through :func:`error_info`,
so how connections are kept, which bounds every request has, how transport
failures become :class:`BackendError` and how a server's reason is shortened
and redacted is decided here once.

The wire is aiohttp's: this project frames and parses no HTTP itself
(``tests/architecture/test_no_http_parsing.py``). aiohttp is imported when the
first request is sent, never when backends are listed.

Bounds of every request (the arguments of :class:`HttpClients`):

* ``timeout``: the deadline of one attempt, from opening (or taking a kept)
  connection to the last byte of the answer (a trickling server cannot hold
  a request);
  ``connect``: the deadline of opening a connection (TCP and TLS);
* ``max_body``: the most bytes of an answer kept, after decompression
  (``POLYJUDGE_MAX_RESPONSE_MB``, default 64 MiB); aiohttp inflates in
  bounded steps, so a compression bomb is stopped at the cap;
* answer headers: at most 64 fields of at most 8 KiB each;
* idle kept connections expire after ``keepalive`` seconds, so one the
  server dropped silently is not reused and waited on.
"""

from __future__ import annotations

import asyncio
import email.utils
import errno
import functools
import json
import os
import ssl
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from polyjudge.backends.base import BackendError
from polyjudge.backends.reported import server_json
from polyjudge.data.secrets import redact, redact_url

if TYPE_CHECKING:
    import aiohttp

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


def _ssl_context() -> ssl.SSLContext:
    """One TLS context for all connections: building one costs ~30-60 ms of CPU (CA bundle). Built
    again only when SSL_CERT_FILE or SSL_CERT_DIR changed (they say which certificates to trust)."""
    where = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    if _TLS.get(where) is None:
        _TLS.clear()
        _TLS[where] = ssl.create_default_context()
    return _TLS[where]


_TLS: dict[tuple[str | None, str | None], ssl.SSLContext] = {}


MIB = 1024 * 1024
# The largest answer kept (after decompression) unless POLYJUDGE_MAX_RESPONSE_MB says otherwise: a chat
# answer of even 100k tokens is under 1 MiB, a Batch API output file of 50,000 lines under 64 MiB... mostly.
DEFAULT_MAX_BODY = 64 * MIB
MAX_BODY_ENV = "POLYJUDGE_MAX_RESPONSE_MB"
# Requests in flight (and connections) per backend unless told otherwise: above any sensible --concurrency,
# which is what caps them.
MAX_CONNECTIONS = 1024
# Idle kept connections are closed after this many seconds (below the 60-75 s most servers keep them).
KEEPALIVE_S = 15.0
# The longest wait for a new connection (TCP and TLS), whatever --timeout says.
MAX_CONNECT_S = 10.0
_READ_STEP = 256 * 1024
# Answer headers: at most this many, each at most 8 KiB (aiohttp's line limit), so at most 512 KiB in all.
MAX_HEADERS = 64


def max_body_from_env() -> int:
    """The answer-size cap in bytes: ``POLYJUDGE_MAX_RESPONSE_MB`` when set, else 64 MiB."""
    raw = os.environ.get(MAX_BODY_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_BODY
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{MAX_BODY_ENV} must be a number of MiB, got {raw!r}") from None
    if value <= 0:
        raise ValueError(f"{MAX_BODY_ENV} must be positive, got {raw!r}")
    return int(value * MIB)


@dataclass(frozen=True, slots=True)
class Timeout:
    """Seconds: ``read`` is the deadline of one whole attempt (``--timeout``), ``connect`` of a new connection."""

    read: float
    connect: float


class Headers(dict[str, str]):
    """Response headers built by hand (tests, replays); names are looked up case-insensitively."""

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return super().__contains__(key.lower() if isinstance(key, str) else key)


class HttpResponse:
    """An answer read in full (within the size cap): status, headers and body bytes."""

    __slots__ = ("content", "headers", "resends", "status_code")

    def __init__(self, status_code: int, headers: Mapping[str, str], content: bytes, resends: int = 0) -> None:
        self.status_code, self.headers, self.content = status_code, headers, content
        self.resends = resends  # 1 when a kept connection was found closed and the request sent again

    def json(self) -> Any:
        """The body parsed as JSON (``ValueError`` when it is not JSON, or nested too deeply to be read)."""
        return server_json(self.content)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")


# A request body as JSON (compact, UTF-8 as is, no NaN): one encoder for every request, since json.dumps
# with options builds a new one per call.
_encode_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def json_text(value: Any) -> str:
    """``value`` as a request body writes it: compact JSON, UTF-8 as is, no NaN (``ValueError``)."""
    return _encode_json(value)


@functools.cache
def _user_agent() -> str:
    from polyjudge._version import __version__

    return f"polyjudge/{__version__}"


_SUPPORTED_PROXY_SCHEMES = ("http", "https")


def _proxy_for(scheme: str, host: str) -> str | None:
    """The proxy the environment names for ``scheme://host`` (None: direct), as httpx read it.

    ``HTTP_PROXY``/``HTTPS_PROXY`` (either case), then ``ALL_PROXY``; ``NO_PROXY``
    exempts hosts. aiohttp speaks to HTTP proxies only: a SOCKS proxy is
    refused with a message instead of being silently bypassed.
    """
    proxies = urllib.request.getproxies()
    url = proxies.get(scheme) or proxies.get("all")
    if not url or urllib.request.proxy_bypass(host):
        return None
    kind = urlsplit(url).scheme.lower()
    if kind not in _SUPPORTED_PROXY_SCHEMES:
        which = f"{scheme.upper()}_PROXY" if proxies.get(scheme) else "ALL_PROXY"
        raise BackendError(f"connection error: ProxyError: {which}={redact_url(url)} is a {kind or 'schemeless'} "
                           "proxy; only http:// proxies are supported (unset it or name an HTTP proxy)",
                           retryable=False)
    return url


@dataclass(frozen=True, slots=True)
class _Send:
    """One request as it is (re)sent."""

    method: str
    target: _Target
    headers: dict[str, str]
    params: dict[str, str] | None
    data: Any
    deadline: float | None


@dataclass(frozen=True, slots=True)
class _Target:
    """A URL checked once: its proxy, and whether it carries its own credentials."""

    url: Any  # a yarl.URL, parsed and encoded once (aiohttp would parse the text on every request)
    proxy: str | None
    basic_auth: bool
    origin: tuple[str, int | None]  # (host, port)


def _target(url: str) -> _Target:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise BackendError(f"connection error: UnsupportedProtocol: '{scheme}' URLs are not supported "
                           "(use http:// or https://)", retryable=False)
    try:
        host, _ = parts.hostname, parts.port
    except ValueError:
        raise BackendError("connection error: InvalidURL: bad port in the URL", retryable=False) from None
    if not host:
        raise BackendError("connection error: InvalidURL: no host in the URL", retryable=False)
    basic_auth = parts.username is not None or parts.password is not None
    from yarl import URL  # aiohttp's URL type (imported with it)

    parsed = URL(url)
    return _Target(parsed, _proxy_for(scheme, host), basic_auth, (parsed.host or "", parsed.port))


def _transport_error(kind: str, exc: BaseException | str) -> BackendError:
    detail = " ".join(str(exc).split())
    return BackendError(f"connection error: {kind}: {detail}" if detail else f"connection error: {kind}",
                        retryable=True)


class ResponseTooLarge(BackendError):
    """An answer above the size cap: recorded as a failure, never retried (it would be paid again)."""


def _classify(exc: BaseException, timeout: Timeout) -> BackendError:
    """The BackendError of an aiohttp failure (the message's first word is what the engine counts by)."""
    import aiohttp

    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return BackendError("timeout: ConnectTimeout", retryable=True)
    if isinstance(exc, (TimeoutError, aiohttp.ServerTimeoutError)):
        return BackendError(f"timeout: ReadTimeout (no complete answer within {timeout.read:g}s)", retryable=True)
    if isinstance(exc, (aiohttp.ClientConnectorCertificateError, aiohttp.ClientSSLError)):
        return _transport_error("ConnectError", f"TLS: {exc}")
    if isinstance(exc, aiohttp.ClientProxyConnectionError):
        return _transport_error("ProxyError", exc)
    if isinstance(exc, aiohttp.ClientConnectorError):
        if _is_dns_failure(exc):
            # A name that does not resolve is not a dropped connection: no retry can change it (fatal), though
            # another server of a pool may still answer the request (retryable, so a pool sends it there).
            return BackendError(f"connection error: DNS: host '{exc.host}' does not resolve "
                                f"({' '.join(str(exc.os_error).split())})", retryable=True, fatal=True)
        if _is_refused(exc):
            return BackendError(f"connection error: ConnectError: nothing answers at {exc.host}:{exc.port} "
                                f"({' '.join(str(exc.os_error).split())})", retryable=True)
        return _transport_error("ConnectError", exc)
    if isinstance(exc, (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, aiohttp.ClientResponseError)):
        return _transport_error("RemoteProtocolError", exc)
    if isinstance(exc, aiohttp.InvalidURL):
        return BackendError(f"connection error: InvalidURL: {exc}", retryable=False)
    return _transport_error(type(exc).__name__, exc)


def _is_dns_failure(exc: BaseException) -> bool:
    """True for a host name that does not resolve (aiohttp's ClientConnectorDNSError, or a gaierror inside)."""
    import socket

    import aiohttp

    dns_error = getattr(aiohttp, "ClientConnectorDNSError", None)  # aiohttp >= 3.10
    if dns_error is not None and isinstance(exc, dns_error):
        return True
    return isinstance(getattr(exc, "os_error", None), socket.gaierror)


def _is_refused(exc: BaseException) -> bool:
    """True for a connection no server took: refused (nothing listens on the port) or no route to the host."""
    os_error = getattr(exc, "os_error", None)
    return isinstance(os_error, OSError) and os_error.errno in _REFUSED_ERRNOS


_REFUSED_ERRNOS = frozenset({errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH})


class HttpClients:
    """One aiohttp session per backend and event loop, at most ``max_connections`` requests at once.

    Measured side by side (``benchmarks/engine_throughput.py``, README):
    this layer alone reaches 0.93-0.97 of the ideal rate at 0.33-0.40 ms of
    CPU per request, about 0.1-0.2 ms more than the hand-written HTTP/1.1
    client it replaced; what that buys is a parser hardened by the field
    (llhttp) and the bounds above.

    Requests wait here for one of ``max_connections`` slots *before* their
    deadline starts, so time queued behind the concurrency cap is never
    counted as a slow server. A kept connection the server closed before
    sending a byte of the answer is retried once on a fresh one (servers
    close idle connections so; the resend is counted, see ``resends``); an
    answer cut midway is not.
    """

    def __init__(self, timeout: float, *, max_connections: int = MAX_CONNECTIONS, max_body: int | None = None,
                 connect_timeout: float | None = None, keepalive: float = KEEPALIVE_S) -> None:
        self.timeout = Timeout(read=timeout, connect=connect_timeout or min(timeout, MAX_CONNECT_S))
        self.max_connections = max_connections
        self.max_body = max_body if max_body is not None else max_body_from_env()
        self.keepalive = keepalive
        self._targets: dict[str, _Target] = {}
        self._answered: set[tuple[str, int | None]] = set()  # (host, port) of every server that answered
        self._slots: asyncio.Semaphore | None = None
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # ------------------------------------------------------------------ the session of this event loop

    def open_session(self) -> None:
        """This event loop's session, made now (the first one imports aiohttp, ~0.1 s of CPU): a request
        timed after it measures the server, not the client's start."""
        self._session_for_loop()

    def _session_for_loop(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is not None and self._loop is loop:
            return self._session
        import aiohttp

        self._forget_session()
        timeout = aiohttp.ClientTimeout(total=self.timeout.read, sock_connect=self.timeout.connect)
        # No TLS context here: an https request brings _ssl_context() itself (_send), so a run against a
        # plain-http server (a self-hosted one) never builds one (~30-60 ms of CPU).
        connector = aiohttp.TCPConnector(limit=self.max_connections, keepalive_timeout=self.keepalive,
                                         ttl_dns_cache=300)
        # trust_env is off on purpose: proxies are resolved by _proxy_for (ALL_PROXY and SOCKS handled there)
        # and credentials come from the backend, never from ~/.netrc.
        self._session = aiohttp.ClientSession(connector=connector, timeout=timeout, auto_decompress=True,
                                              headers={"User-Agent": _user_agent()},
                                              skip_auto_headers=("Accept-Encoding",),
                                              json_serialize=json.dumps, raise_for_status=False,
                                              max_headers=MAX_HEADERS, max_field_size=8190, max_line_size=8190)
        self._slots, self._loop = asyncio.Semaphore(self.max_connections), loop
        return self._session

    def _forget_session(self) -> None:
        """Drop a session of an event loop that has ended (it cannot be closed from another loop)."""
        old, self._session = self._session, None
        if old is not None and old.connector is not None:
            old.connector._close()  # noqa: SLF001 - closes its sockets without the dead loop
            old._connector = None  # noqa: SLF001 - so it does not warn about being left open

    def _target(self, url: str) -> _Target:
        found = self._targets.get(url)
        if found is None:
            found = self._targets[url] = _target(url)
        return found

    # ------------------------------------------------------------------ requests

    async def post(self, url: str, body: dict[str, Any] | bytes, *, headers: dict[str, str],
                   params: dict[str, str] | None = None) -> HttpResponse:
        """POST ``body`` as JSON (bytes: already encoded, by :func:`json_text`); any answer (whatever its
        status) is returned, transport failures raise."""
        data = body if isinstance(body, bytes) else _encode_json(body).encode()
        return await self.request("POST", url, headers={"Content-Type": "application/json", **headers},
                                  params=params, data=data)

    async def request(self, method: str, url: str, *, headers: dict[str, str], params: dict[str, str] | None = None,
                      data: Any = None, deadline: float | None = None) -> HttpResponse:
        """Send one request within the bounds; the answer (any status) is read whole, failures raise.

        ``data`` is bytes or a function making the body afresh (a multipart form is spent once sent);
        ``deadline`` replaces ``--timeout`` for this request (large file transfers).
        """
        target = self._target(url)
        headers = _checked(headers, target)
        session = self._session_for_loop()
        assert self._slots is not None
        send = _Send(method, target, headers, params, data, deadline)
        async with self._slots:
            try:
                return self._answered_by(target, await self._send(session, send))
            except BackendError:
                raise
            except Exception as exc:
                if not _never_answered(exc):
                    raise self._failure(exc, target) from None
            try:  # a kept connection the server had closed: once more on a fresh one
                resp = await self._send(session, send)
            except BackendError as exc:
                exc.resends += 1
                raise
            except Exception as exc:
                err = self._failure(exc, target)
                err.resends += 1
                raise err from None
            resp.resends += 1
            return self._answered_by(target, resp)

    def _answered_by(self, target: _Target, resp: HttpResponse) -> HttpResponse:
        self._answered.add(target.origin)
        return resp

    def _failure(self, exc: BaseException, target: _Target) -> BackendError:
        """The error of a failed attempt. A server that refused the connection and never answered in this
        run is not there (nothing listens, or no route): no retry can reach it, so the error is fatal (it
        stays retryable: another server of a pool may take the request). One that answered before may be
        restarting: its refusals are ordinary retryable failures."""
        err = _classify(exc, self.timeout)
        if _is_refused(exc) and target.origin not in self._answered:
            err.fatal = True
        return err

    async def _send(self, session: aiohttp.ClientSession, send: _Send) -> HttpResponse:
        kwargs: dict[str, Any] = {}
        if send.deadline is not None:
            import aiohttp

            kwargs["timeout"] = aiohttp.ClientTimeout(total=send.deadline, sock_connect=self.timeout.connect)
        if send.target.url.scheme == "https":
            kwargs["ssl"] = _ssl_context()
        data = send.data() if callable(send.data) else send.data
        async with session.request(send.method, send.target.url, headers=send.headers, params=send.params,
                                   data=data, proxy=send.target.proxy, allow_redirects=False, **kwargs) as resp:
            declared = resp.content_length
            if declared is not None and declared > self.max_body:
                raise self._too_large(f"it declares {declared} bytes")
            if declared is not None and "Content-Encoding" not in resp.headers:
                content = await resp.read()  # framed to the declared size, which is within the cap
            else:
                content = await self._read_capped(resp)  # inflated or unframed: counted as it comes
            return HttpResponse(resp.status, resp.headers, content)

    async def _read_capped(self, resp: aiohttp.ClientResponse) -> bytes:
        """The body, decompressed, refused as soon as it passes the cap (nothing more is held)."""
        parts: list[bytes] = []
        size = 0
        while True:
            part = await resp.content.read(_READ_STEP)
            if not part:
                return b"".join(parts)
            size += len(part)
            if size > self.max_body:
                resp.close()
                raise self._too_large("it went on past that")
            parts.append(part)

    def _too_large(self, detail: str) -> ResponseTooLarge:
        cap = f"{self.max_body / MIB:g} MiB"
        return ResponseTooLarge(f"response too large: over the {cap} cap ({detail}; {MAX_BODY_ENV} sets the cap)",
                                retryable=False)

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is None:
            return
        if self._loop is asyncio.get_running_loop():
            await session.close()
        else:
            self._session = session
            self._forget_session()


def _never_answered(exc: BaseException) -> bool:
    """True for a connection closed before a byte of the answer came (a stale kept connection)."""
    import aiohttp

    return isinstance(exc, aiohttp.ServerDisconnectedError)


def _checked(headers: dict[str, str], target: _Target) -> dict[str, str]:
    """The request's headers, refused when one holds a line break; a URL's own credentials replace
    any Authorization header (aiohttp sends them as basic authentication)."""
    for name, value in headers.items():
        if "\r" in value or "\n" in value or "\r" in name or "\n" in name:
            raise BackendError("a request header holds a line break", retryable=False)
    if target.basic_auth:
        return {k: v for k, v in headers.items() if k.lower() != "authorization"}
    return headers


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


def error_info(resp: HttpResponse) -> ErrorInfo:
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


__all__ = ["DEFAULT_MAX_BODY", "MAX_BODY_ENV", "MAX_CONNECTIONS", "MAX_REASON_CHARS", "ErrorInfo", "Headers",
           "HttpClients", "HttpResponse", "ResponseTooLarge", "Timeout", "error_info", "is_retryable_status",
           "json_text", "max_body_from_env", "parse_retry_after", "seconds_until"]
