"""The one interface every LLM backend implements: an async ``generate``.

Its request and result (and the chat messages in them) are plain data of :mod:`polyjudge.data.chat`,
which protocols build and read without importing a backend.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from polyjudge.data.chat import GenerateRequest, GenerateResult
from polyjudge.data.secrets import redact, redact_url

# A judge-info field (``backends.build``) of a free judge whose answers the shared response cache keeps:
# what they depend on besides the request (an embedded model's weights digest and settings).
ANSWERS_IDENTITY = "answers_identity"


class BackendError(RuntimeError):
    """A failed call. ``retryable`` tells the engine whether to back off and retry.

    The message is redacted here, once for every backend: it quotes servers
    (which may echo the API key) and URLs (which may hold a password), and it
    goes on to store rows, ``judgments.jsonl``, the manifest and the terminal.
    """

    def __init__(self, message: str, *, retryable: bool, status: int | None = None,
                 retry_after: float | None = None, unsupported: str | None = None, fatal: bool = False) -> None:
        super().__init__(redact(message))
        self.retryable, self.status, self.retry_after = retryable, status, retry_after
        # No request can succeed (the account cannot pay, whatever the status code): stop the run.
        self.fatal = fatal
        # Times the request was sent again before this failure (see GenerateResult.resends).
        self.resends = 0
        # The request parameter the server rejected (e.g. "n", "max_tokens", "temperature"),
        # so the caller can adapt once instead of failing every request.
        self.unsupported = unsupported


@runtime_checkable
class Backend(Protocol):
    """An LLM that answers chat requests. ``model`` names it in signatures and keys."""

    model: str

    async def generate(self, request: GenerateRequest) -> GenerateResult: ...

    async def aclose(self) -> None: ...


class PreflightError(ValueError):
    """A judge that cannot work, found before any request is sent or any model loaded (no key for an
    official endpoint, a host that does not resolve, a missing model file). One line, no secret.
    ``setting``: the judging setting that fixes it, when one does (``api_key_env``); front ends name it
    their way (the command line as its flag, Python as the keyword)."""

    def __init__(self, message: str, *, setting: str | None = None) -> None:
        super().__init__(message)
        self.setting = setting


# Seconds a preflight waits for a host name to resolve (a slow resolver is not a failure: the run tries).
RESOLVE_TIMEOUT_S = 3.0


def check_host_resolves(url: str, *, timeout: float = RESOLVE_TIMEOUT_S) -> None:
    """Raise :class:`PreflightError` naming the host when ``url``'s host does not resolve.

    Skipped when a proxy resolves names for this URL (``HTTPS_PROXY`` and friends) and when the
    resolver does not answer within ``timeout`` seconds (then the run's own requests find out).
    """
    import concurrent.futures
    import socket
    import urllib.request
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname
    if not host or parts.scheme not in ("http", "https"):
        return  # the transport says what is wrong with the URL itself
    proxies = urllib.request.getproxies()
    if (proxies.get(parts.scheme) or proxies.get("all")) and not urllib.request.proxy_bypass(host):
        return
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        pool.submit(socket.getaddrinfo, host, None, type=socket.SOCK_STREAM).result(timeout=timeout)
    except socket.gaierror as exc:
        raise PreflightError(f"host '{host}' of {redact_url(url)} does not resolve ({exc.strerror}); "
                             "check the URL or the network") from None
    except (concurrent.futures.TimeoutError, OSError, UnicodeError):
        return
    finally:
        pool.shutdown(wait=False)


def check_key(key_env: str, endpoint: str, *, official: bool) -> None:
    """Refuse an official endpoint whose key variable is unset or empty (a self-hosted server may be keyless)."""
    import os

    if official and not os.environ.get(key_env):
        # The variable's name comes first: a front end's field name (``--api-key-env``) followed by a value that is
        # no variable name reads as a key pasted in its place, which the error line would mask.
        raise PreflightError(f"{key_env} is empty or not set: {endpoint} needs an API key; set it, or name the "
                             "variable that holds the key in this setting or in the judge's key_env= option",
                             setting="api_key_env")


def check_endpoints(urls: tuple[str, ...], *, key_env: str, official_host: str, network: bool) -> None:
    """The preflight of an HTTP judge: each server's host resolves (when ``network``), and a server on
    ``official_host`` has its key in ``key_env``."""
    from urllib.parse import urlsplit

    for url in urls:
        official = (urlsplit(url).hostname or "").lower() == official_host
        check_key(key_env, redact_url(url), official=official)
        if network:
            check_host_resolves(url)


def endpoint_from_env(variable: str) -> str | None:
    """The base URL an official client reads from ``variable`` (unset or blank: None)."""
    import os

    value = os.environ.get(variable, "").strip()
    return value or None

