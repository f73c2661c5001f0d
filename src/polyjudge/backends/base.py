"""The one interface every LLM backend implements: an async ``generate``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from polyjudge.data.secrets import redact

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True, slots=True)
class GenerateRequest:
    """Everything that determines a judge's answer (and so its cache key)."""

    messages: tuple[Message, ...]
    temperature: float = 0.0
    max_tokens: int = 512
    seed: int | None = None
    # A JSON schema for constrained / structured output, or None for free text.
    json_schema: dict[str, Any] | None = None

    def canonical(self) -> dict[str, Any]:
        d = asdict(self)
        d["messages"] = [asdict(m) for m in self.messages]
        return d


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True, slots=True)
class GenerateResult:
    text: str
    # "stop" for a complete answer, "length" when cut by max_tokens, else backend-specific.
    finish_reason: str
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    model: str | None = None


class BackendError(RuntimeError):
    """A failed call. ``retryable`` tells the engine whether to back off and retry.

    The message is redacted here, once for every backend: it quotes servers
    (which may echo the API key) and URLs (which may hold a password), and it
    goes on to store rows, ``judgments.jsonl``, the manifest and the terminal.
    """

    def __init__(self, message: str, *, retryable: bool, status: int | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(redact(message))
        self.retryable, self.status, self.retry_after = retryable, status, retry_after


@runtime_checkable
class Backend(Protocol):
    """An LLM that answers chat requests. ``model`` names it in signatures and keys."""

    model: str

    async def generate(self, request: GenerateRequest) -> GenerateResult: ...

    async def aclose(self) -> None: ...
