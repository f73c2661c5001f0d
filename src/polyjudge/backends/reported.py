"""What servers report (token counts, message content): data to check, never taken on trust.

Every backend reads its usage object through :func:`count`, so a count that
is not a plain non-negative integer (negative, fractional, NaN, Infinity,
text, an object) becomes :data:`UNKNOWN` instead of a number that would
lower the bill, and :func:`reported` keeps the object exactly as the server
sent it. The engine (:func:`polyjudge.engine.spend.vet_usage`) accounts
unknown and implausible counts at their upper bound and records both.

:func:`message_text` does the same for an answer's content: text (or a list
of text parts) is the answer; anything else is kept as JSON text and marked
with the finish reason :data:`NOT_TEXT`, a recorded failure, never a score.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from polyjudge.data.textio import whole_json_object

UNKNOWN = -1  # a count the server did not give as a usable number
NOT_TEXT = "content_not_text"  # the finish reason of an answer whose content is not text


def count(value: Any) -> int:
    """A reported token count as an int: absent is 0, a fractional count is rounded up,
    anything unusable is :data:`UNKNOWN`. Absurdly large integers are kept (the engine bounds them)."""
    if type(value) is int:  # the usual count, checked first (a bool is not one: its type is bool)
        return value if value >= 0 else UNKNOWN
    if value is None:
        return 0
    if isinstance(value, bool):
        return UNKNOWN
    if isinstance(value, int):
        return value if value >= 0 else UNKNOWN
    if isinstance(value, float):
        return math.ceil(value) if math.isfinite(value) and value >= 0 else UNKNOWN
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        return int(value.strip())
    return UNKNOWN


def _plain(value: Any) -> bool:
    if type(value) is int:  # the usual value, checked first (a bool is not one: its type is bool)
        return value >= 0
    if type(value) is dict or isinstance(value, Mapping):  # a parsed object is a dict: no ABC check for it
        for v in value.values():  # a loop, not all(): this runs for every answer
            if not (v >= 0 if type(v) is int else _plain(v)):
                return False
        return True
    return value is None or isinstance(value, list) \
        or (isinstance(value, int) and not isinstance(value, bool) and value >= 0)


def reported(usage: Mapping[str, Any]) -> str | None:
    """The usage object as the server sent it (JSON text), when some count in it is not a plain
    non-negative integer; None for a usual one."""
    if _plain(usage):
        return None
    return json.dumps(usage, ensure_ascii=False, default=repr)


def server_json(raw: str | bytes) -> Any:
    """A server's JSON (an answer's body, a line of a batch's results); ``ValueError`` when it is not JSON
    that can be read, including a structure nested deeper than Python's parser goes (its RecursionError
    would otherwise stop the run, and stop it again at every resume, after paying for the answer).

    An object (what answers are) is read by :func:`~polyjudge.data.textio.whole_json_object`: UTF-8, since
    no BOM nor UTF-16/32 text starts with a brace, and JSON's blanks after it dropped; anything else, and
    every error, is json.loads', which says what is wrong."""
    try:
        if raw[:1] in _BRACES and raw[1:2] not in _NUL:
            text = raw.decode("utf-8", "surrogatepass") if isinstance(raw, bytes) else raw
            found = whole_json_object(text.rstrip(" \t\n\r"))
            return found if found is not None else json.loads(text)
        return json.loads(raw)
    except RecursionError:
        raise ValueError("JSON nested too deeply to be read") from None


_BRACES = (b"{", "{")
_NUL = (b"\0", "\0")  # a NUL second byte is UTF-16 text, which json.loads tells apart


def message_text(content: Any) -> str | None:
    """The text of a message's ``content`` (a string, or a list of text parts joined);
    None when it is something else (an object, a number, an image part)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, Mapping) and p.get("type") == "text"
                                         and isinstance(p.get("text"), str) for p in content):
        return "".join(p["text"] for p in content)
    return None


def as_json_text(value: Any) -> str:
    """Any server value as text for the store (kept as sent, never a reason to fail a write)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=repr)


SERVED_CHARS = 200  # a served model name or fingerprint longer than this is cut (server data, kept per answer)


def served_name(value: Any) -> str | None:
    """A served model name or ``system_fingerprint`` as kept with an answer: text, at most
    :data:`SERVED_CHARS` characters, or None when the server sent none (or not text)."""
    if not isinstance(value, str) or not value.strip():
        return None
    return value.strip()[:SERVED_CHARS]


__all__ = ["NOT_TEXT", "SERVED_CHARS", "UNKNOWN", "as_json_text", "count", "message_text", "reported",
           "served_name", "server_json"]
