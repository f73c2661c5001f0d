"""Claude through Anthropic's native Messages API (``POST /v1/messages``).

What differs from chat completions, and how this backend handles it:

* the system prompt is a field of its own (system messages are joined into it);
* ``max_tokens`` is required (the request's limit is always sent);
* JSON answers come through a tool: the protocol's JSON schema is the
  ``input_schema`` of one tool the model is made to call, and the tool's
  input, written as JSON, is the answer text. Models that refuse a forced
  tool (those that always think) get the schema as an output format
  (``output_config.format``) instead, and a server that takes neither gets
  plain text, which the protocol's parser reads; each change is made once
  and listed in :attr:`AnthropicBackend.adaptations`;
* ``stop_reason`` ``max_tokens`` is a truncated answer (``"length"``);
* thinking blocks (and text beside a tool call) go to ``reasoning``;
* 429 and 529 (overloaded) are retried after ``retry-after`` or, without
  it, after the reset time of the exhausted ``anthropic-ratelimit-*`` window;
  401, 403 and 404 are not retried;
* the key is read from ``ANTHROPIC_API_KEY`` (another variable with
  ``--api-key-env`` or the judge option ``key_env=``) and sent as ``x-api-key``;
* a model that rejects the temperature runs at its default (recorded);
  ``reasoning_effort`` is sent as ``output_config.effort``; there is no
  ``seed``, ``n`` or log-probabilities (asking for ``n`` > 1 or
  log-probabilities fails with ``unsupported`` set, so the caller can do without).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from typing import Any, ClassVar

from polyjudge.backends.adaptation import FormGate, is_billing_error
from polyjudge.backends.base import Backend, BackendError, endpoint_from_env
from polyjudge.backends.http import (
    HttpClients,
    HttpResponse,
    error_info,
    is_retryable_status,
    parse_retry_after,
    seconds_until,
)
from polyjudge.backends.reasoning import join_reasoning
from polyjudge.backends.registry import (
    BackendSettings,
    Capabilities,
    HostedEndpoint,
    JudgeSpec,
    RegisteredBackend,
    register_backend,
)
from polyjudge.backends.reported import NOT_TEXT, UNKNOWN, as_json_text, count, message_text, reported, served_name
from polyjudge.data.chat import GenerateRequest, GenerateResult, Usage
from polyjudge.data.secrets import register_secret_env
from polyjudge.data.settings import default

DEFAULT_BASE_URL = "https://api.anthropic.com/v1"
OFFICIAL_HOST = "api.anthropic.com"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"  # the endpoint Anthropic's own clients read
API_VERSION = "2023-06-01"
API_KEY_ENV = "ANTHROPIC_API_KEY"
ENDPOINT = HostedEndpoint(DEFAULT_BASE_URL, OFFICIAL_HOST, BASE_URL_ENV, API_KEY_ENV)
TOOL_NAME = "record_judgment"
# How the JSON schema is sent: "auto" starts with a tool and steps down (output format, then none).
STRUCTURED_MODES = ("auto", "tool", "json_schema", "none")
# stop_reason -> finish_reason; anything else is passed through as it is ("refusal", "pause_turn", ...).
_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "stop", "max_tokens": "length",
           "model_context_window_exceeded": "length"}
# Rate-limit windows whose exhaustion tells how long to wait when no retry-after is given.
_WINDOWS = ("requests", "tokens", "input-tokens", "output-tokens")
_MAX_ADAPTATIONS = 4


def rate_limit_wait(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait before retrying, from Anthropic's response headers.

    ``retry-after`` (seconds) when given; otherwise the latest reset time
    among the ``anthropic-ratelimit-*`` windows whose ``remaining`` is 0.
    """
    wait = parse_retry_after(headers.get("retry-after"))
    if wait is not None:
        return wait
    resets = [seconds_until(headers.get(f"anthropic-ratelimit-{w}-reset")) for w in _WINDOWS
              if (headers.get(f"anthropic-ratelimit-{w}-remaining") or "").strip() == "0"]
    known = [r for r in resets if r is not None]
    return max(known) if known else None


@register_backend()
class AnthropicBackend(RegisteredBackend):
    """Anthropic Messages API (Claude) over HTTP: anthropic:MODEL[?OPTIONS][@BASE_URL[,BASE_URL...]].

    ``structured``: ``"auto"`` (a forced tool, then an output format, then
    plain text, each step taken once when the server rejects the one before),
    ``"tool"``, ``"json_schema"`` (``output_config.format``) or ``"none"``.
    """

    name: ClassVar[str] = "anthropic"
    # The Messages API answers one choice per request and gives no token probabilities.
    capabilities: ClassVar[Capabilities] = Capabilities(seedless=True)  # the Messages API takes no seed
    url_after_at = True
    default_endpoint: ClassVar[str | None] = DEFAULT_BASE_URL
    spec_options: ClassVar[dict[str, str]] = {
        "structured": "auto, tool, json_schema or none: how the protocol's JSON schema is sent",
        "key_env": f"environment variable holding this judge's API key (default {API_KEY_ENV})",
        "version": f"the anthropic-version header (default {API_VERSION})",
        "per_server": "requests in flight per server when several are given",
    }

    @classmethod
    def preflight(cls, spec: JudgeSpec, settings: BackendSettings, *, network: bool = True) -> JudgeSpec:
        """The key Anthropic's own endpoint needs, each host resolves, ``ANTHROPIC_BASE_URL`` (see HostedEndpoint)."""
        return ENDPOINT.preflight(spec, settings, network=network)

    @classmethod
    def endpoint(cls, spec: JudgeSpec) -> JudgeSpec:
        """``ANTHROPIC_BASE_URL`` fills in the endpoint when the judge names none (batch files use it too)."""
        return ENDPOINT.filled(spec)

    @classmethod
    def from_spec(cls, spec: JudgeSpec, settings: BackendSettings) -> Backend:
        if not spec.model:
            raise ValueError("the anthropic backend needs a model: anthropic:MODEL")
        key_env = spec.option("key_env") or settings.key_env_for(API_KEY_ENV)
        register_secret_env(key_env)
        base_url = spec.base_url or endpoint_from_env(BASE_URL_ENV) or DEFAULT_BASE_URL
        return cls(spec.model, base_url, api_key_env=key_env, timeout=settings.timeout,
                   structured=spec.option("structured") or "auto", version=spec.option("version") or API_VERSION,
                   reasoning_effort=settings.reasoning_effort)

    def __init__(self, model: str, base_url: str = DEFAULT_BASE_URL, *, api_key_env: str = API_KEY_ENV,
                 timeout: float = default("timeout"), structured: str = "auto", version: str = API_VERSION,
                 reasoning_effort: str | None = None) -> None:
        if structured not in STRUCTURED_MODES:
            raise ValueError(f"structured must be one of {', '.join(STRUCTURED_MODES)}, got '{structured}'")
        self.model = model
        self.base_url = base_url.rstrip("/")
        # Both spellings of the endpoint work: ".../v1" (as for openai) and the bare host (as Anthropic's SDKs).
        self.url = f"{self.base_url}/messages" if self.base_url.endswith("/v1") else f"{self.base_url}/v1/messages"
        self.api_key_env = api_key_env
        self.structured = structured
        self.version = version
        # Sent with requests that set no reasoning_effort of their own (BackendSettings.reasoning_effort).
        self.reasoning_effort = reasoning_effort
        self._http = HttpClients(timeout)
        self._timeout = self._http.timeout
        self._mode = "tool" if structured == "auto" else structured  # how the schema is sent now
        self._send_temperature = True
        self._adaptations: dict[str, str] = {}
        # While a 400 could still change how requests are written, they wait for the server's lesson.
        self._gate = FormGate(settled=False)

    @property
    def adaptations(self) -> dict[str, str]:
        """Request fields written otherwise than asked (field -> how), for the manifest and signature."""
        return dict(self._adaptations)

    @property
    def form_settled(self) -> bool:
        """True once no answer can change how requests are written, so none of them waits."""
        return self._gate.settled

    def adopt_form(self, adaptations: Mapping[str, str]) -> None:
        """Write requests as another copy of this judge learned to (its ``adaptations``), and hold none."""
        if "temperature" in adaptations:
            self._send_temperature = False
        how = adaptations.get("json_schema")
        if how is not None and self.structured == "auto":  # the two texts _adapted_to writes
            self._mode = "none" if how.startswith("not sent") else "json_schema"
        for name, text in adaptations.items():
            self._adaptations.setdefault(name, text)
        self._gate.settle()

    # ------------------------------------------------------------------ requests

    def _headers(self) -> dict[str, str]:
        headers = {"anthropic-version": self.version}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["x-api-key"] = key
        return headers

    def message_body(self, request: GenerateRequest) -> dict[str, Any]:
        """The Messages API body of ``request`` as this backend writes it now (also a batch request's params)."""
        return self._body(request)

    def _body(self, request: GenerateRequest) -> dict[str, Any]:
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages if m.role != "system"],
        }
        if system:
            body["system"] = system
        if self._send_temperature:
            body["temperature"] = request.temperature
        output_config: dict[str, Any] = {}
        schema = request.json_schema
        if schema is not None:
            if self._mode == "tool" and schema.get("type") == "object":
                body["tools"] = [{"name": TOOL_NAME, "description": "Record the judgment, as the instructions ask.",
                                  "input_schema": schema}]
                body["tool_choice"] = {"type": "tool", "name": TOOL_NAME}
            elif self._mode in ("tool", "json_schema"):
                output_config["format"] = {"type": "json_schema", "schema": schema}
        effort = request.reasoning_effort if request.reasoning_effort is not None else self.reasoning_effort
        if effort is not None:
            output_config["effort"] = effort
        if output_config:
            body["output_config"] = output_config
        return body

    def _adapted_to(self, resp: HttpResponse, sent: dict[str, Any]) -> bool:
        """Learn from a 400 that rejects how the request was written; True when it should be resent."""
        info = error_info(resp)
        text = info.message.lower()
        if "temperature" in sent and "temperature" in text:
            self._send_temperature = False
            self._adaptations.setdefault(
                "temperature", f"left at the model's default (the server rejected {sent['temperature']:g})")
            return True
        if self.structured != "auto":
            return False
        if "tool_choice" in sent and ("tool_choice" in text or ("tool" in text and "forc" in text)):
            self._mode = "json_schema"
            self._adaptations.setdefault("json_schema", "sent as an output format (the server refused a forced tool)")
            return True
        if "format" in sent.get("output_config", {}) and any(
                w in text for w in ("output_config", "output_format", "json_schema")):
            self._mode = "none"
            self._adaptations["json_schema"] = "not sent: the server took neither a tool nor an output format"
            return True
        return False

    def _error(self, resp: HttpResponse, sent: dict[str, Any]) -> BackendError:
        info = error_info(resp)
        status = resp.status_code
        unsupported = "reasoning_effort" if status == 400 and "effort" in info.message.lower() \
            and "effort" in sent.get("output_config", {}) else None
        kind = f"{info.type}: " if info.type and info.type != "error" else ""
        # "Your credit balance is too low" comes as a 400: no request can succeed, whatever the status.
        billing = status == 402 or is_billing_error(info.type, info.message)
        return BackendError(f"HTTP {status}: {kind}{info.message}",
                            retryable=is_retryable_status(status) and not billing, status=status,
                            retry_after=rate_limit_wait(resp.headers), unsupported=unsupported, fatal=billing)

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        if request.n > 1:
            raise BackendError("the Messages API answers one choice per request", retryable=False,
                               unsupported="n")
        if request.top_logprobs > 0:
            raise BackendError("the Messages API returns no log-probabilities", retryable=False,
                               unsupported="logprobs")
        return await self._gate.run(lambda: self._generate(request))

    async def _generate(self, request: GenerateRequest) -> GenerateResult:
        for _ in range(_MAX_ADAPTATIONS + 1):
            body = self._body(request)
            start = time.perf_counter()
            resp = await self._http.post(self.url, body, headers=self._headers())
            latency = time.perf_counter() - start
            if resp.status_code == 400 and self._adapted_to(resp, body):
                self._gate.hold()  # the requests not yet sent wait for the adapted resend's answer
                continue
            if not is_retryable_status(resp.status_code):
                self._gate.settle()  # the server took the request's form (or refused it for another reason)
            if resp.status_code != 200:
                raise self._error(resp, body)
            return self._result(resp, latency)
        raise BackendError("HTTP 400: the server kept rejecting the request after it was adapted",
                           retryable=False, status=400)

    # ------------------------------------------------------------------ answers

    def _result(self, resp: HttpResponse, latency: float) -> GenerateResult:
        try:
            data = resp.json()
        except ValueError:
            raise BackendError("malformed response body from server", retryable=True,
                               status=resp.status_code) from None
        return self.message_result(data, latency, status=resp.status_code)

    def message_result(self, data: Any, latency: float = 0.0, *, status: int = 200) -> GenerateResult:
        """A Messages API message (a live answer or a batch's succeeded result) as a :class:`GenerateResult`."""
        try:
            blocks = data["content"]
            texts: list[str] = []
            thinking: list[str] = []
            tool_input: Any = None
            not_text = False
            for block in blocks:
                kind = block.get("type")
                if kind == "text":
                    text_part = message_text(block.get("text"))
                    if text_part is None:
                        not_text = True
                    texts.append(as_json_text(block.get("text")) if text_part is None else text_part)
                elif kind == "thinking":
                    thinking.append(str(block.get("thinking") or ""))
                elif kind == "tool_use" and block.get("name") == TOOL_NAME:
                    tool_input = block.get("input")
            stop_reason = data.get("stop_reason")
        except (ValueError, KeyError, TypeError, AttributeError):
            raise BackendError("malformed response body from server", retryable=True, status=status) from None
        if tool_input is not None:
            # The tool's input is the answer; what the model wrote beside it is kept as reasoning.
            text = json.dumps(tool_input, ensure_ascii=False)
            reasoning = join_reasoning(*thinking, *texts)
        else:
            text = "".join(texts)
            reasoning = join_reasoning(*thinking)
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        cache_read = count(usage.get("cache_read_input_tokens"))
        # input_tokens excludes what was read from or written to the prompt cache; the prompt is all three.
        parts = (count(usage.get("input_tokens")), cache_read, count(usage.get("cache_creation_input_tokens")))
        prompt = UNKNOWN if UNKNOWN in parts else sum(parts)
        finish = as_json_text(_FINISH.get(stop_reason, stop_reason)) if stop_reason else "stop"
        return GenerateResult(
            text=text, finish_reason=NOT_TEXT if not_text else finish,
            usage=Usage(prompt, count(usage.get("output_tokens")), cached_prompt_tokens=max(0, cache_read),
                        reported=reported(usage)),
            latency_s=latency, model=served_name(data.get("model")) or self.model, reasoning=reasoning,
        )

    async def aclose(self) -> None:
        await self._http.aclose()


__all__ = ["API_KEY_ENV", "API_VERSION", "DEFAULT_BASE_URL", "TOOL_NAME", "AnthropicBackend", "rate_limit_wait"]
