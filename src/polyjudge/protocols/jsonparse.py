"""Strict extraction of one JSON object from a model's text.

Models often wrap JSON in code fences or add a sentence around it. We accept
exactly one top-level JSON object found by bracket matching (strings and
escapes respected) and parse it with the standard library, so nothing that
is not valid JSON is ever "repaired" into an answer.

Answers are server data, so two limits keep a hostile or runaway answer a
recorded parse failure instead of a crash: ``MAX_ANSWER_CHARS`` and
``MAX_NESTING`` (in :mod:`polyjudge.protocols.answers`, checked for every
protocol before its parser runs, so the decoder's recursion is never reached).
"""

from __future__ import annotations

import json
from typing import Any

from polyjudge.data.textio import whole_json_object
from polyjudge.protocols.answers import (
    MAX_ANSWER_CHARS,
    MAX_NESTING,
    ParseFailure,
    check_answer_limits,
    outside_strings,
)


def find_json_object(text: str) -> str | None:
    """The first balanced ``{...}`` span in ``text``, or None."""
    start = text.find("{")
    if start == -1:
        return None
    depth = 0
    for i, c in outside_strings(text, start):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    return None  # unbalanced from the first "{": truncated JSON


def parse_json_object(text: str) -> dict[str, Any]:
    """Parse the single JSON object in ``text`` or raise ParseFailure with why."""
    check_answer_limits(text)
    stripped = text.strip()
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError:
        span = find_json_object(stripped)
        if span is None:
            raise ParseFailure("no complete JSON object in the answer"
                               + (" (truncated?)" if "{" in stripped else "")) from None
        try:
            value = json.loads(span)
        except json.JSONDecodeError as exc:
            raise ParseFailure(f"invalid JSON: {exc.msg}") from None
    if not isinstance(value, dict):
        raise ParseFailure(f"expected a JSON object, got {type(value).__name__}")
    return value


def json_object_in(text: str) -> dict[str, Any] | None:
    """:func:`parse_json_object` of ``text`` when :func:`find_json_object` finds an object in it, else None.

    An answer that is one JSON object as a whole (blanks around it aside), the usual one, is read
    at once without first scanning it for its brackets: its first ``{`` opens that object, so the
    scan would find it and :func:`parse_json_object` would read the same value. Anything else (and
    an answer over the limits, whose failure is :func:`parse_json_object`'s) takes the long way."""
    if len(text) <= MAX_ANSWER_CHARS and text.count("{") + text.count("[") <= MAX_NESTING:
        value = whole_json_object(text.strip())
        if value is not None:
            return value
    return parse_json_object(text) if find_json_object(text) is not None else None


__all__ = ["MAX_ANSWER_CHARS", "MAX_NESTING", "check_answer_limits", "find_json_object", "json_object_in",
           "parse_json_object"]
