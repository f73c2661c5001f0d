"""Any OpenAI-compatible ``/v1/chat/completions`` endpoint over HTTP (see ``backends/http.py``).

Works with OpenAI, Azure OpenAI (``azure=True``), vLLM, SGLang, Ollama and the
llama.cpp server. The API key is read from an environment variable at call
time and only ever placed in a request header.

Reasoning models (OpenAI's o-series and later) reject ``max_tokens`` (they
take ``max_completion_tokens``) and any temperature but their default. The
backend learns this from the server's documented 400 answers (``param``
``max_tokens`` with code ``unsupported_parameter``, ``param`` ``temperature``
with ``unsupported_value``), changes its requests once, resends, and keeps
the change for its lifetime; :attr:`OpenAIBackend.adaptations` says what was
changed. Models of a known reasoning family (``backends/reasoning.py``'s
table, extended by ``POLYJUDGE_REASONING_MODELS``) and the judge spec option
``?reasoning`` send reasoning-model requests from the start;
``?reasoning=false`` never adapts. While the form is unknown the judge's
requests wait while the server teaches the judge (``backends/adaptation.py``),
so a run pays one rejected request per adapted parameter.

Open reasoning models served by vLLM or llama.cpp return their thinking as
``reasoning_content`` (or ``reasoning``) or inline as ``<think>…</think>``:
both go to ``GenerateResult.reasoning`` and never to the parsed text.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping
from typing import Any, ClassVar

from polyjudge.backends.adaptation import FormGate, is_billing_error
from polyjudge.backends.base import Backend, BackendError, endpoint_from_env
from polyjudge.backends.http import (
    MAX_CONNECTIONS,
    ErrorInfo,
    HttpClients,
    HttpResponse,
    error_info,
    is_retryable_status,
    json_text,
    parse_retry_after,
)
from polyjudge.backends.reasoning import is_known_reasoning_model, join_reasoning, split_reasoning
from polyjudge.backends.registry import (
    DEFAULT_API_KEY_ENV,
    BackendSettings,
    Capabilities,
    HostedEndpoint,
    JudgeSpec,
    RegisteredBackend,
    register_backend,
)
from polyjudge.backends.reported import NOT_TEXT, as_json_text, count, message_text, reported, served_name
from polyjudge.backends.slots import ServerSlots
from polyjudge.data.chat import GenerateRequest, GenerateResult, TokenLogprob, Usage
from polyjudge.data.secrets import register_secret_env
from polyjudge.data.settings import default

DEFAULT_BASE_URL = "https://api.openai.com/v1"
OFFICIAL_HOST = "api.openai.com"
# What OpenAI's own clients read: the endpoint, and the organisation and project sent as headers.
BASE_URL_ENV = "OPENAI_BASE_URL"
ENDPOINT = HostedEndpoint(DEFAULT_BASE_URL, OFFICIAL_HOST, BASE_URL_ENV, DEFAULT_API_KEY_ENV)
ACCOUNT_HEADERS = {"OPENAI_ORG_ID": "OpenAI-Organization", "OPENAI_PROJECT_ID": "OpenAI-Project"}
STRUCTURED_MODES = ("auto", "json_schema", "none")
# Error codes OpenAI documents for a parameter a model does not take, or a value it does not allow.
_REJECTED_CODES = frozenset({"unsupported_parameter", "unsupported_value"})
# A request is adapted and resent at most this many times (each change is made once).
_MAX_ADAPTATIONS = 4


def _rejects(info: ErrorInfo, field: str) -> bool:
    """True when a 400 says the model does not take request field ``field`` (or its value)."""
    if info.param == field:
        return info.code is None or info.code in _REJECTED_CODES
    if info.param is None and info.names(field):
        lower = info.message.lower()
        return "unsupported" in lower or "not supported" in lower or "does not support" in lower
    return False


def _details(usage: dict[str, Any], name: str) -> dict[str, Any]:
    value = usage.get(name)
    return value if isinstance(value, dict) else {}


def _usage(usage: Any) -> Usage:
    """An answer's ``usage`` object read through :func:`~polyjudge.backends.reported.count` (absent: zeros)."""
    if not isinstance(usage, dict):
        return Usage(0, 0, 0, 0, None)
    cached = _details(usage, "prompt_tokens_details").get("cached_tokens") \
        if "prompt_tokens_details" in usage else None
    thought = _details(usage, "completion_tokens_details").get("reasoning_tokens") \
        if "completion_tokens_details" in usage else None
    return Usage(count(usage.get("prompt_tokens")), count(usage.get("completion_tokens")), count(cached),
                 count(thought), reported(usage))


def chat_body(model: str, request: GenerateRequest, *, structured: bool = True, reasoning: bool = False,
              send_temperature: bool | None = None, token_field: str | None = None) -> dict[str, Any]:
    """The chat-completions body of ``request``, for live requests and batch files alike (``n``,
    log-probabilities and reasoning effort only when set; a reasoning model gets
    ``max_completion_tokens`` and its default temperature unless told otherwise)."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
    }
    if (not reasoning) if send_temperature is None else send_temperature:
        body["temperature"] = request.temperature
    body[token_field or ("max_completion_tokens" if reasoning else "max_tokens")] = request.max_tokens
    if request.seed is not None:
        body["seed"] = request.seed
    if request.n > 1:
        body["n"] = request.n
    if request.top_logprobs > 0:
        body["logprobs"] = True
        body["top_logprobs"] = request.top_logprobs
    if request.reasoning_effort is not None:
        body["reasoning_effort"] = request.reasoning_effort
    if structured and request.json_schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "judgment", "schema": request.json_schema, "strict": True},
        }
    return body


def wire_body(body: dict[str, Any]) -> bytes:
    """``body`` (a :func:`chat_body`) as sent: :func:`~polyjudge.backends.http.json_text`'s bytes.

    Every request of a protocol carries the same JSON schema object, so its ``response_format`` member
    (the last one) is encoded once per schema, not once per request: the rest is encoded and the member's
    text appended, the same bytes as encoding the whole body.
    """
    member = body.get("response_format")
    if not isinstance(member, dict) or next(reversed(body)) != "response_format":
        return json_text(body).encode()
    tail = _member_text(member)
    del body["response_format"]  # put back below, last again: the body is the caller's to read after
    try:
        head = json_text(body)
    finally:
        body["response_format"] = member
    return f"{head[:-1]},{tail}}}".encode()


def _member_text(member: dict[str, Any]) -> str:
    """``"response_format":{...}`` as JSON text, kept for the schema object it carries (held, so its id
    names no other object while it is kept); a member of another form is encoded afresh."""
    inner = member.get("json_schema")
    schema = inner.get("schema") if isinstance(inner, dict) else None
    if member != {"type": "json_schema", "json_schema": {"name": "judgment", "schema": schema, "strict": True}}:
        return json_text({"response_format": member})[1:-1]
    seen = _FORMATS.get(id(schema))
    if seen is not None and seen[0] is schema:
        return seen[1]
    text = json_text({"response_format": member})[1:-1]
    if len(_FORMATS) >= _FORMATS_KEPT:
        _FORMATS.clear()
    _FORMATS[id(schema)] = (schema, text)
    return text


# The response_format member's text by the identity of its schema (a protocol's schema is one object).
_FORMATS: dict[int, tuple[object, str]] = {}
_FORMATS_KEPT = 64


@register_backend()
class OpenAIBackend(RegisteredBackend):
    """OpenAI-compatible chat completions over HTTP: openai:MODEL[?OPTIONS][@BASE_URL[,BASE_URL...]].

    ``structured``: ``"auto"`` sends the protocol's JSON schema as
    ``response_format`` and, if the server rejects that parameter, stops
    sending it (the protocol's parser then extracts strict JSON from the text);
    ``"json_schema"`` always sends it; ``"none"`` never does.

    ``reasoning``: ``None`` adapts to a reasoning model when the server says
    so (see the module docstring); ``True`` sends ``max_completion_tokens``
    and no temperature from the first request; ``False`` never adapts (a
    rejected parameter is a failure naming it).
    """

    name: ClassVar[str] = "openai"
    capabilities: ClassVar[Capabilities] = Capabilities(batch_formats=("openai",), token_probabilities=True,
                                                        samples_per_request=True)
    url_after_at = True
    default_endpoint: ClassVar[str | None] = DEFAULT_BASE_URL
    spec_options: ClassVar[dict[str, str]] = {
        "reasoning": "a reasoning model: max_completion_tokens, model-default temperature "
                     "(reasoning=false: never adapt to 400 answers)",
        "structured": "auto, json_schema or none: how the protocol's JSON schema is sent",
        "key_env": "environment variable holding this judge's API key",
        "per_server": "requests in flight per server (default: llama.cpp's total_slots when it says)",
    }

    @classmethod
    def preflight(cls, spec: JudgeSpec, settings: BackendSettings, *, network: bool = True) -> JudgeSpec:
        """The key OpenAI's own endpoint needs, each host resolves, ``OPENAI_BASE_URL`` (see HostedEndpoint)."""
        return ENDPOINT.preflight(spec, settings, network=network)

    @classmethod
    def endpoint(cls, spec: JudgeSpec) -> JudgeSpec:
        """``OPENAI_BASE_URL`` fills in the endpoint when the judge names none (batch files use it too)."""
        return ENDPOINT.filled(spec)

    @classmethod
    def from_spec(cls, spec: JudgeSpec, settings: BackendSettings) -> Backend:
        if not spec.model:
            raise ValueError("the openai backend needs --model")
        key_env = spec.option("key_env") or settings.key_env_for(DEFAULT_API_KEY_ENV)
        register_secret_env(key_env)
        base_url = spec.base_url or endpoint_from_env(BASE_URL_ENV) or DEFAULT_BASE_URL
        return cls(spec.model, base_url, api_key_env=key_env, timeout=settings.timeout,
                   structured=spec.option("structured") or "auto", reasoning=spec.flag("reasoning"),
                   reasoning_effort=settings.reasoning_effort,
                   per_server=spec.int_option("per_server") or settings.max_per_server)

    def __init__(self, model: str, base_url: str = DEFAULT_BASE_URL, *,
                 api_key_env: str = DEFAULT_API_KEY_ENV, timeout: float = default("timeout"),
                 structured: str = "auto", azure: bool = False, api_version: str | None = None,
                 reasoning: bool | None = None,
                 reasoning_effort: str | None = None, per_server: int | None = None) -> None:
        if structured not in STRUCTURED_MODES:
            raise ValueError(f"structured must be one of {', '.join(STRUCTURED_MODES)}, got '{structured}'")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.structured = structured
        self.azure = azure
        # The organisation and project OpenAI's clients send when their variables are set (not to Azure).
        self._account = {} if azure else {h: v for e, h in ACCOUNT_HEADERS.items() if (v := os.environ.get(e, ""))}
        self.reasoning = reasoning
        # Sent with requests that set no reasoning_effort of their own (BackendSettings.reasoning_effort).
        self.reasoning_effort = reasoning_effort
        self._schema_supported: bool | None = None if structured == "auto" else structured == "json_schema"
        self._params = {"api-version": api_version} if api_version else None
        # Connections: at most the server's cap when given (the engine's --concurrency caps them otherwise).
        self._http = HttpClients(timeout, max_connections=per_server or MAX_CONNECTIONS)
        self._timeout = self._http.timeout
        # How requests are written; changed at most once each, when the server rejects the default.
        known = reasoning is None and is_known_reasoning_model(model)
        as_reasoning = bool(reasoning) or known
        self._token_field = "max_completion_tokens" if as_reasoning else "max_tokens"
        self._send_temperature = not as_reasoning
        self._adaptations: dict[str, str] = {}
        if as_reasoning:
            why = "known reasoning model" if known else "reasoning model"
            self._adaptations = {"max_tokens": f"sent as max_completion_tokens ({why})",
                                 "temperature": f"left at the model's default ({why})"}
        # At most as many requests in flight as the server runs at once (given, or asked of a self-hosted one).
        hosted = azure or self.base_url == DEFAULT_BASE_URL
        self._slots = ServerSlots(self.base_url, given=per_server, ask=not hosted)
        # While a 400 could still change how requests are written, they wait for the server's lesson.
        self._gate = FormGate(settled=reasoning is not None and structured != "auto")

    # ------------------------------------------------------------------ what was changed

    @property
    def adaptations(self) -> dict[str, str]:
        """Request fields written otherwise than asked (field -> how), e.g. ``max_tokens`` sent as
        ``max_completion_tokens``: for the run's manifest and signature."""
        return dict(self._adaptations)

    @property
    def server_slots(self) -> int | None:
        """Requests the server runs at once (given or learned), or None when it is not capped."""
        return self._slots.limit

    async def learn_slots(self) -> None:
        """Ask the server how many requests it runs at once (once; a pool asks every server up front)."""
        if not self._slots.known:
            await self._slots.learn(self._http, self._headers())

    @property
    def form_settled(self) -> bool:
        """True once no answer can change how requests are written, so none of them waits
        (e.g. the Ray executor sends an unsettled judge's first request alone)."""
        return self._gate.settled

    def adopt_form(self, adaptations: Mapping[str, str]) -> None:
        """Write requests as another copy of this judge learned to (its ``adaptations``), and hold none:
        what one Ray actor's backend learned, the others adopt without paying a rejected request."""
        if self.reasoning is not False:
            if "max_tokens" in adaptations:
                self._token_field = "max_completion_tokens"
            if "temperature" in adaptations:
                self._send_temperature = False
        if "response_format" in adaptations and self.structured == "auto":
            self._schema_supported = False
        for name, how in adaptations.items():
            self._adapt(name, how)
        self._gate.settle()

    def _adapt(self, field: str, how: str) -> None:
        self._adaptations.setdefault(field, how)

    # ------------------------------------------------------------------ requests

    def _headers(self) -> dict[str, str]:
        key = os.environ.get(self.api_key_env)
        if not key:
            return dict(self._account)
        return {"api-key": key} if self.azure else {"Authorization": f"Bearer {key}"} | self._account

    def _body(self, request: GenerateRequest) -> dict[str, Any]:
        if request.reasoning_effort is None and self.reasoning_effort is not None:
            request = dataclasses.replace(request, reasoning_effort=self.reasoning_effort)
        return chat_body(self.model, request, structured=self._schema_supported is not False,
                         send_temperature=self._send_temperature, token_field=self._token_field)

    def _adapted_to(self, resp: HttpResponse, sent: dict[str, Any]) -> bool:
        """Learn from a 400 that rejects how the request was written; True when it should be resent.

        Decided on what was *sent*, so a request that left before another one
        taught the backend is resent in the new form too.
        """
        if "response_format" in sent and self._schema_supported is None and "response_format" in resp.text:
            # The server does not know structured output: fall back to plain text.
            self._schema_supported = False
            self._adapt("response_format", "not sent: the server rejected it (JSON parsed from the text)")
            return True
        if self.reasoning is False:
            return False
        info = error_info(resp)
        if "max_tokens" in sent and _rejects(info, "max_tokens"):
            self._token_field = "max_completion_tokens"
            self._adapt("max_tokens", "sent as max_completion_tokens (the server rejected max_tokens)")
            return True
        if "temperature" in sent and _rejects(info, "temperature"):
            self._send_temperature = False
            self._adapt("temperature", f"left at the model's default (the server rejected {sent['temperature']:g})")
            return True
        return False

    def _error(self, resp: HttpResponse, sent: dict[str, Any]) -> BackendError:
        info = error_info(resp)
        status = resp.status_code
        unsupported: str | None = None
        if status == 400:
            for field, name in (("n", "n"), ("logprobs", "logprobs"), ("top_logprobs", "logprobs"),
                                ("reasoning_effort", "reasoning_effort"), ("max_tokens", "max_tokens"),
                                ("temperature", "temperature")):
                if field in sent and info.names(field):
                    unsupported = name
                    break
        # An exhausted quota answers 429 but no wait will refill it; a billing error is fatal whatever its status.
        billing = is_billing_error(info.code, info.type, info.message)
        retryable = is_retryable_status(status) and not billing
        return BackendError(f"HTTP {status}: {info.message}", retryable=retryable, status=status,
                            retry_after=parse_retry_after(resp.headers.get("retry-after")), unsupported=unsupported,
                            fatal=billing)

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        if not self._slots.known:
            await self._slots.learn(self._http, self._headers())
            if self._slots.answer_s is not None:  # a rejected form comes back about as fast as that answer
                self._gate.answers_within(self._slots.answer_s)
        if self._slots.limit is None:
            if self._gate.settled or not self._may_adapt(request):  # the common case, without the gate's frame
                return await self._generate(request)
            return await self._gate.run(lambda: self._generate(request))
        async with self._slots.held():
            return await self._gate.run(lambda: self._generate(request))

    def _may_adapt(self, request: GenerateRequest) -> bool:
        """False when no 400 could change how ``request`` is written (its form is known: a reasoning model's
        request without a schema to send, say), so it waits for no other request's answer."""
        if request.json_schema is not None and self.structured == "auto" and self._schema_supported is None:
            return True  # response_format may be rejected
        return self.reasoning is not False and (self._token_field == "max_tokens" or self._send_temperature)

    async def _generate(self, request: GenerateRequest) -> GenerateResult:
        url = f"{self.base_url}/chat/completions"
        resends = 0
        for _ in range(_MAX_ADAPTATIONS + 1):
            body = self._body(request)
            start = time.perf_counter()
            try:
                resp = await self._http.post(url, wire_body(body), headers=self._headers(), params=self._params)
            except BackendError as exc:
                exc.resends += resends
                raise
            latency = time.perf_counter() - start
            resends += resp.resends
            if resp.status_code == 400 and self._adapted_to(resp, body):
                self._gate.hold()  # the requests not yet sent wait for the adapted resend's answer
                resends += 1
                continue
            if not is_retryable_status(resp.status_code):
                self._gate.settle()  # the server took the request's form (or refused it for another reason)
            if resp.status_code != 200:
                err = self._error(resp, body)
                err.resends = resends
                raise err
            if "response_format" in body and self._schema_supported is None:
                self._schema_supported = True
            result = self._result(request, resp, latency)
            return dataclasses.replace(result, resends=resends) if resends else result
        raise BackendError("HTTP 400: the server kept rejecting the request after it was adapted",
                           retryable=False, status=400)

    # ------------------------------------------------------------------ answers

    def _result(self, request: GenerateRequest, resp: HttpResponse, latency: float) -> GenerateResult:
        try:
            data = resp.json()
            raw = data["choices"]
            if len(raw) != 1:  # choices in index order (one alone needs no sorting)
                raw = sorted(raw, key=lambda c: int(c.get("index") or 0))
            else:
                int(raw[0].get("index") or 0)  # read as when sorting: an index that is no number is malformed
            texts: list[str] = []
            finishes: list[str] = []
            first_reasoning: str | None = None
            for k, choice in enumerate(raw):
                message = choice["message"]
                content = message_text(message.get("content"))
                answer, thinking = split_reasoning(content) if content is not None else \
                    (as_json_text(message.get("content")), "")
                if k == 0:
                    served = message.get("reasoning_content") or message.get("reasoning")
                    if served or thinking:  # join_reasoning of nothing is None
                        first_reasoning = join_reasoning(served if isinstance(served, str) else None, thinking)
                texts.append(answer)
                finishes.append(NOT_TEXT if content is None else as_json_text(choice.get("finish_reason") or "stop"))
            first = raw[0]
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise BackendError("malformed response body from server", retryable=True,
                               status=resp.status_code) from None
        logprobs = self._logprobs(first, texts[0]) if request.top_logprobs > 0 else ()
        several = request.n > 1
        return GenerateResult(
            text=texts[0], finish_reason=finishes[0], usage=_usage(data.get("usage")),
            latency_s=latency, model=served_name(data.get("model")) or self.model,
            system_fingerprint=served_name(data.get("system_fingerprint")),
            choices=tuple(texts) if several else (), choice_finish_reasons=tuple(finishes) if several else (),
            logprobs=logprobs, reasoning=first_reasoning,
        )

    @staticmethod
    def _logprobs(choice: dict[str, Any], text: str) -> tuple[TokenLogprob, ...]:
        """The answer's tokens with their log-probabilities; a server that sends none cannot serve
        the request (``unsupported="logprobs"``, so the caller can do without)."""
        block = choice.get("logprobs")
        content = block.get("content") if isinstance(block, dict) else None
        if not content:
            if block is None or text:
                raise BackendError("the server returned no log-probabilities", retryable=False,
                                   unsupported="logprobs")
            return ()
        try:
            return tuple(TokenLogprob(str(t["token"]), float(t["logprob"]),
                                      tuple((str(a["token"]), float(a["logprob"]))
                                            for a in t.get("top_logprobs") or ()))
                         for t in content)
        except (KeyError, TypeError, ValueError):
            raise BackendError("malformed log-probabilities from server", retryable=True) from None

    async def aclose(self) -> None:
        await self._http.aclose()


__all__ = ["DEFAULT_BASE_URL", "OpenAIBackend", "parse_retry_after"]
