"""What format detection looks at: one probe of a path, shared by every registered format's rule.

Score formats (``metaeval.readers``) and span formats (``metaeval.spans.readers``) are
registries whose entries may carry a detection rule; ``auto`` asks the rules
in registration order, with a *fallback* entry (one that takes any file no
rule claimed) asked last. The rules see a :class:`SourceProbe`, which reads the
first line at most once however many rules ask for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Protocol, TypeVar

from polyjudge.data.textio import iter_lines

JSON_SUFFIXES = (".jsonl", ".json")


class SourceProbe:
    """A path as format rules see it: kind, name, suffix and the first line's tab-separated cells."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @cached_property
    def is_dir(self) -> bool:
        return self.path.is_dir()

    @cached_property
    def is_file(self) -> bool:
        return self.path.is_file()

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def is_json(self) -> bool:
        """A ``.jsonl`` or ``.json`` name (JSON lines, whatever the content)."""
        return self.path.suffix in JSON_SUFFIXES

    @cached_property
    def header(self) -> tuple[str, ...]:
        """The first line split on tabs (empty for an empty file); a missing file is an InputError."""
        first = next(iter_lines(self.path), None)
        return tuple(first[1].split("\t")) if first is not None else ()

    @cached_property
    def columns(self) -> frozenset[str]:
        """The header's cells with surrounding blanks removed."""
        return frozenset(h.strip() for h in self.header)


Detector = Callable[[SourceProbe], bool]


class DetectedFormat(Protocol):
    """What :func:`detect_format` needs of a registry entry."""

    @property
    def detect(self) -> Detector | None: ...

    @property
    def fallback(self) -> bool: ...


F = TypeVar("F", bound=DetectedFormat)


def detect_format(path: Path, entries: Sequence[tuple[str, F]]) -> str | None:
    """The first entry whose rule takes ``path`` (fallback entries last), or None."""
    probe = SourceProbe(path)
    for name, entry in entries:
        if not entry.fallback and entry.detect is not None and entry.detect(probe):
            return name
    return next((name for name, entry in entries if entry.fallback), None)


def rule_text(detect: Detector | None, fallback: bool) -> str:
    """How ``auto`` recognises a format, for listings: the rule's first docstring line."""
    if fallback:
        return "any file no other format's rule takes"
    if detect is None:
        return "never (name it explicitly)"
    doc = (detect.__doc__ or "").strip()
    return doc.splitlines()[0] if doc else "a rule of its own"


__all__ = ["JSON_SUFFIXES", "DetectedFormat", "Detector", "SourceProbe", "detect_format", "rule_text"]
