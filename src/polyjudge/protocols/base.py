"""What a judging protocol is: prompt building + output schema + parser + scorer.

A protocol never talks to a backend and never touches the store; the engine
does that. This keeps every protocol testable on plain strings, and lets a
recorded run be re-parsed and re-scored without sending anything again.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

from polyjudge.backends.base import Message
from polyjudge.data.records import DocumentContext, Item


class ParseFailure(ValueError):
    """The judge's answer could not be turned into an annotation.

    Recorded as a failed judgment with ``reason``; never turned into a score.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(slots=True)
class ProtocolOptions:
    """User-settable knobs shared by protocols; protocol-specific ones go in ``extra``."""

    template: str | None = None  # path to a replacement prompt template
    use_context: bool = True  # document context where the protocol supports it
    extra: dict[str, Any] = field(default_factory=dict)


class JudgeProtocol(ABC):
    """Base class for protocols. Subclasses set the class attributes and implement
    :meth:`messages`, :meth:`parse` and :meth:`score`."""

    name: ClassVar[str]
    # Published defaults; the CLI's --runs / --temperature override them.
    default_runs: ClassVar[int] = 1
    default_temperature: ClassVar[float] = 0.0
    default_aggregator: ClassVar[str] = "mean"
    max_tokens: ClassVar[int] = 512
    # True when scores are higher-is-better (all built-in protocols are).
    higher_is_better: ClassVar[bool] = True

    def __init__(self, options: ProtocolOptions | None = None) -> None:
        self.options = options or ProtocolOptions()

    # -- prompt -------------------------------------------------------------
    @abstractmethod
    def messages(self, item: Item, context: DocumentContext) -> list[Message]:
        """The chat sent to the judge for one item (identical for every run)."""

    def output_schema(self, item: Item) -> dict[str, Any] | None:
        """JSON schema of the answer, for backends with structured output."""
        return None

    @property
    def template_hash(self) -> str:
        """Short hash of the prompt template(s); goes into the signature."""
        return "none"

    def signature_fields(self) -> dict[str, str]:
        """Extra protocol-specific ``key:value`` parts of the run signature."""
        return {}

    # -- answer -------------------------------------------------------------
    @abstractmethod
    def parse(self, text: str, item: Item) -> Any:
        """Turn raw model text into a JSON-serialisable annotation or raise ParseFailure."""

    @abstractmethod
    def score(self, annotation: Any, item: Item) -> float | None:
        """A segment score from one run's annotation (higher is better), or None."""

    def merge_runs(self, annotations: list[Any], item: Item) -> Any | None:
        """Optionally merge the annotations of several runs (e.g. span voting)."""
        return None
