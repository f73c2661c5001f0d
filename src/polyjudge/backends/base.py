"""The one interface every LLM backend implements: an async ``generate``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from polyjudge.data.secrets import redact, redact_url

Role = Literal["system", "user", "assistant"]

# A judge-info field (``backends.build``) of a free judge whose answers the shared response cache keeps:
# what they depend on besides the request (an embedded model's weights digest and settings).
ANSWERS_IDENTITY = "answers_identity"


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: str
    # The pieces ``content`` was joined from when a template filled its slots (template text and
    # values, a whole document among them): hashing and sizing walk them, so a document shared by
    # many prompts is encoded once. Not part of the message's identity.
    parts: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    def __reduce__(self) -> tuple[type[Message], tuple[str, str]]:
        """Pickled (to Ray actors) without ``parts``: the text once, not twice."""
        return (Message, (self.role, self.content))


@dataclass(frozen=True, slots=True)
class GenerateRequest:
    """Everything that determines a judge's answer (and so its cache key)."""

    messages: tuple[Message, ...]
    temperature: float = 0.0
    max_tokens: int = 512
    seed: int | None = None
    # A JSON schema for constrained / structured output, or None for free text.
    json_schema: dict[str, Any] | None = None
    # Samples wanted from this one prompt (OpenAI's ``n``); choice k answers run ``seed``+k.
    n: int = 1
    # Top-k token log-probabilities wanted with the answer (0 = none), for expected scores.
    top_logprobs: int = 0
    # Reasoning budget of reasoning models ("low", "medium", "high"), or None for the default.
    reasoning_effort: str | None = None

    # Fields added after 0.1.0 enter the canonical form (and so the cache key) only when set,
    # so requests that do not use them keep the keys their stores already hold.
    _OPTIONAL_DEFAULTS: ClassVar[dict[str, Any]] = {"n": 1, "top_logprobs": 0, "reasoning_effort": None}

    def canonical(self) -> dict[str, Any]:
        """The request as JSON-able data (messages as role/content objects), what its cache key hashes.
        Field values are shared, not copied (a JSON schema is copied only when it is a dataclass)."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        if any(is_dataclass(v) for v in d.values()):
            d = asdict(self)
        d["messages"] = [{"role": m.role, "content": m.content} for m in self.messages]
        for key, default in self._OPTIONAL_DEFAULTS.items():
            if d[key] == default:
                del d[key]
        return d


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Prompt tokens the provider served from its cache (billed at the cached-input price).
    cached_prompt_tokens: int = 0
    # Completion tokens spent on hidden reasoning (already included in completion_tokens).
    reasoning_tokens: int = 0
    # The server's usage object as sent (JSON text) when a count in it was not a plain
    # non-negative integer (see backends.usage); such counts are -1 (unknown) above.
    reported: str | None = None


@dataclass(frozen=True, slots=True)
class TokenLogprob:
    """One generated token with its log-probability and the top alternatives at that position."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, slots=True)
class GenerateResult:
    text: str
    # "stop" for a complete answer, "length" when cut by max_tokens, else backend-specific.
    finish_reason: str
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    model: str | None = None
    # With ``n`` > 1: every choice's text and finish reason in order (``text`` is choice 0).
    choices: tuple[str, ...] = ()
    choice_finish_reasons: tuple[str, ...] = ()
    # With ``top_logprobs`` > 0: the answer's tokens (of choice 0) with their probabilities.
    logprobs: tuple[TokenLogprob, ...] = ()
    # Hidden reasoning text some servers return beside the answer (kept, never parsed).
    reasoning: str | None = None
    # Times the request was sent again before this answer (another server of a pool, a request form the
    # server rejected, a kept connection found closed): the engine counts them as retries.
    resends: int = 0


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
    official endpoint, a host that does not resolve, a missing model file). One line, no secret."""


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
        raise PreflightError(f"{endpoint} needs an API key: set {key_env} (or name another variable with "
                             "--api-key-env or the judge's key_env= option)")


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

