"""Any OpenAI-compatible ``/v1/chat/completions`` endpoint over httpx.

Works with OpenAI, Azure OpenAI (``azure=True``), vLLM, SGLang, Ollama and the
llama.cpp server. The API key is read from an environment variable at call
time and only ever placed in a request header.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import os
import ssl
import time
from typing import TYPE_CHECKING, Any, ClassVar

from polyjudge.backends.base import Backend, BackendError, GenerateRequest, GenerateResult, Usage
from polyjudge.backends.registry import BackendSettings, JudgeSpec, RegisteredBackend, register_backend
from polyjudge.data.secrets import redact

if TYPE_CHECKING:
    import httpx

DEFAULT_BASE_URL = "https://api.openai.com/v1"


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


@register_backend()
class OpenAIBackend(RegisteredBackend):
    """OpenAI-compatible chat completions over HTTP: openai:MODEL[@BASE_URL].

    ``structured``: ``"auto"`` sends the protocol's JSON schema as
    ``response_format`` and, if the server rejects that parameter, stops
    sending it (the protocol's parser then extracts strict JSON from the text);
    ``"json_schema"`` always sends it; ``"none"`` never does.
    """

    name: ClassVar[str] = "openai"

    @classmethod
    def parse_target(cls, rest: str) -> tuple[str | None, str | None]:
        """``MODEL@BASE_URL`` names the endpoint after the first ``@``."""
        model, base_url = super().parse_target(rest)
        if model and "@" in model:
            model, base_url = model.split("@", 1)
        return model, base_url

    @classmethod
    def from_spec(cls, spec: JudgeSpec, settings: BackendSettings) -> Backend:
        if not spec.model:
            raise ValueError("the openai backend needs --model")
        return cls(spec.model, spec.base_url or DEFAULT_BASE_URL, api_key_env=settings.api_key_env,
                   timeout=settings.timeout)

    def __init__(self, model: str, base_url: str = DEFAULT_BASE_URL, *,
                 api_key_env: str = "OPENAI_API_KEY", timeout: float = 120.0,
                 structured: str = "auto", azure: bool = False, api_version: str | None = None,
                 max_connections: int = 256) -> None:
        import httpx  # here, not at module level: listing the backends must not load it

        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.structured = structured
        self.azure = azure
        self._schema_supported: bool | None = None if structured == "auto" else structured == "json_schema"
        self._params = {"api-version": api_version} if api_version else None
        self._timeout = httpx.Timeout(timeout, connect=min(timeout, 10.0))
        # One single-connection client per concurrent request. httpx's pool scans
        # every connection on each request, which is quadratic at concurrency 64
        # (measured: 11 ms CPU per request); one keep-alive connection per client,
        # handed out from a free list, keeps each request O(1) (about 1.7 ms).
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: list[httpx.AsyncClient] = []
        self._clients: list[httpx.AsyncClient] = []

    def _client(self) -> httpx.AsyncClient:
        if self._idle:
            return self._idle.pop()
        import httpx

        client = httpx.AsyncClient(timeout=self._timeout, verify=_ssl_context(),
                                   limits=httpx.Limits(max_connections=1, max_keepalive_connections=1))
        self._clients.append(client)
        return client

    async def _post(self, url: str, body: dict[str, Any]) -> httpx.Response:
        async with self._slots:
            client = self._client()
            try:
                return await client.post(url, json=body, headers=self._headers(), params=self._params)
            finally:
                self._idle.append(client)

    def _headers(self) -> dict[str, str]:
        key = os.environ.get(self.api_key_env)
        if not key:
            return {}
        return {"api-key": key} if self.azure else {"Authorization": f"Bearer {key}"}

    def _body(self, request: GenerateRequest, with_schema: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        if with_schema and request.json_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "judgment", "schema": request.json_schema, "strict": True},
            }
        return body

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        import httpx

        with_schema = request.json_schema is not None and self._schema_supported is not False
        url = f"{self.base_url}/chat/completions"
        start = time.perf_counter()
        try:
            resp = await self._post(url, self._body(request, with_schema))
        except httpx.TimeoutException as exc:
            raise BackendError(f"timeout: {type(exc).__name__}", retryable=True) from None
        except httpx.TransportError as exc:
            raise BackendError(f"connection error: {type(exc).__name__}: {redact(str(exc))}",
                               retryable=True) from None
        latency = time.perf_counter() - start
        if resp.status_code == 400 and with_schema and self._schema_supported is None \
                and "response_format" in resp.text:
            # The server does not know structured output: fall back to plain text.
            self._schema_supported = False
            return await self.generate(request)
        if resp.status_code != 200:
            retryable = resp.status_code in (408, 409, 429) or resp.status_code >= 500
            raise BackendError(f"HTTP {resp.status_code}: {_error_message(resp)}", retryable=retryable,
                               status=resp.status_code,
                               retry_after=parse_retry_after(resp.headers.get("retry-after")))
        if with_schema and self._schema_supported is None:
            self._schema_supported = True
        try:
            data = resp.json()
            choice = data["choices"][0]
            text = choice["message"].get("content") or ""
            finish = choice.get("finish_reason") or "stop"
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise BackendError("malformed response body from server", retryable=True,
                               status=resp.status_code) from None
        usage = data.get("usage") or {}
        return GenerateResult(
            text=text, finish_reason=finish,
            usage=Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)),
            latency_s=latency, model=data.get("model") or self.model,
        )

    async def aclose(self) -> None:
        for client in self._clients:
            await client.aclose()
        self._clients.clear()
        self._idle.clear()


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One TLS context for all clients: building one costs ~30 ms (CA bundle)."""
    return ssl.create_default_context()


def _error_message(resp: httpx.Response) -> str:
    """The server's reason, short and without secrets (some servers echo the key they refused)."""
    try:
        text = str(resp.json()["error"]["message"])
    except Exception:  # noqa: BLE001 - any non-JSON body
        text = resp.text
    return (redact(" ".join(text.split())) or "")[:200]
