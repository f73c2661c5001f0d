"""The protocol group of a judging's specification: which protocol, with which options and prompt.

Import-light: the command line builds it before any protocol is loaded; the protocol's
name is checked once, when the engine resolves it (``engine.session.build_protocol``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from polyjudge.data.errors import InputError
from polyjudge.data.settings import default
from polyjudge.data.shapes import normalise_fields


@dataclass(frozen=True, slots=True)
class ProtocolSpec:
    """``name`` (a registered protocol), its ``options`` (checked against its typed options when
    resolved), a replacement ``prompt_template`` (a Jinja2 file) and whether items are judged
    with their document context (``use_context``)."""

    name: str = default("protocol")
    options: Mapping[str, Any] = field(default_factory=dict)
    prompt_template: str | None = default("prompt_template")
    use_context: bool = default("use_context")

    def __post_init__(self) -> None:
        normalise_fields(self)
        if not isinstance(self.name, str) or not self.name.strip():
            raise InputError(f"must name a protocol, got {self.name!r}", field="protocol", setting=True)

    @property
    def with_reference(self) -> bool:
        """Whether the judge is shown each item's reference (the ``with_reference`` option)."""
        return self.options.get("with_reference", False) in (True, "true", "yes", "on", 1)


__all__ = ["ProtocolSpec"]
