"""What a judge is asked and what it answers: chat messages, a request, its result and token usage.

These are plain data: protocols build :class:`Message` lists and read :class:`TokenLogprob`, backends
send a :class:`GenerateRequest` and return a :class:`GenerateResult`, the engine keys, stores and
prices them. They live below all three, so protocols and backends are siblings (neither imports the other).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import Any, ClassVar, Literal

Role = Literal["system", "user", "assistant"]


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
    # What the server said about itself, when it said it: OpenAI's ``system_fingerprint`` (the backend
    # configuration that answered). ``model`` above is the served model (a dated snapshot where the API
    # names one, e.g. ``gpt-4o-2024-08-06`` for ``gpt-4o``).
    system_fingerprint: str | None = None


__all__ = ["GenerateRequest", "GenerateResult", "Message", "Role", "TokenLogprob", "Usage"]
