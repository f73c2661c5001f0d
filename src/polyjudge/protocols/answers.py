"""What a judge's answer may be before any parser reads it, and the failure a bad one is.

Kept apart from :mod:`polyjudge.protocols.base` so that the parts a protocol is built
from (:mod:`~polyjudge.protocols.expected`, :mod:`~polyjudge.protocols.jsonparse`) can
raise :class:`ParseFailure` without importing the base class that composes them.
"""

from __future__ import annotations

from collections.abc import Iterator

# No protocol's answer comes near these: a judge writes a score, a few error lists, a verdict.
MAX_ANSWER_CHARS = 200_000
MAX_NESTING = 64


# Marks a judge may wrap a one-word answer in: quotes, backticks, markdown emphasis.
_WRAP = "\"'`*"


def bare_answer(text: str) -> str:
    """A short answer (a label, a verdict) without the full stop and wrapping marks judges add to it."""
    t = text.strip()
    if t.endswith("."):
        t = t[:-1].rstrip()
    while len(t) >= 2 and t[0] == t[-1] and t[0] in _WRAP:
        t = t[1:-1].strip()
    return t


def check_answer_limits(text: str) -> None:
    """ParseFailure when ``text`` is longer than :data:`MAX_ANSWER_CHARS` or nests brackets
    (outside JSON strings) deeper than :data:`MAX_NESTING`."""
    if len(text) > MAX_ANSWER_CHARS:
        raise ParseFailure(f"answer of {len(text):,} characters is longer than the {MAX_ANSWER_CHARS:,} "
                           "a judgment may have")
    brackets = text.count("{") + text.count("[")  # at C speed: a usual answer needs no scan
    if brackets > MAX_NESTING and (depth := nesting_depth(text)) > MAX_NESTING:
        raise ParseFailure(f"answer nests brackets {depth:,} levels deep (at most {MAX_NESTING} are read)")


def outside_strings(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(index, character)`` of ``text`` from ``start``, skipping double-quoted JSON strings
    (escapes respected) and their quotes: the characters that give a JSON text its structure."""
    in_str = esc = False
    for i in range(start, len(text)):
        c = text[i]
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        else:
            yield i, c


def nesting_depth(text: str) -> int:
    """The deepest nesting of ``{``/``[`` in ``text``, not counting brackets inside double-quoted strings."""
    depth = deepest = 0
    for _, c in outside_strings(text):
        if c in "{[":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "}]":
            depth = max(0, depth - 1)
    return deepest


class ParseFailure(ValueError):
    """The judge's answer could not be turned into an annotation.

    Recorded as a failed judgment with ``reason``; never turned into a score.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


__all__ = ["MAX_ANSWER_CHARS", "MAX_NESTING", "ParseFailure", "bare_answer", "check_answer_limits", "nesting_depth",
           "outside_strings"]
