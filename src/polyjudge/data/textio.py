"""The one text-input layer: every reader of a user's file goes through here.

Files are UTF-8, with or without a byte-order mark, with LF or CRLF line ends.
A byte that is not UTF-8 is an :class:`InputError` naming the file, the line
and the column (1-based, in bytes of that line); a file that cannot be opened
is one too, and so is a NUL character. Lines come out without their line end, so ``"a\\r\\n"`` and
``"a\\n"`` read alike, and nothing else (no Unicode line separators inside a
field) splits a line.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from polyjudge.data.errors import InputError

BOM = codecs.BOM_UTF8
# The longest value quoted in an error message; longer ones are cut with an ellipsis.
MAX_QUOTED = 80


def short(value: object, limit: int = MAX_QUOTED) -> str:
    """``repr`` of a value for an error message, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def plain(text: object, limit: int = MAX_QUOTED) -> str:
    """Text taken from a file (a column or key name) for a message: one line, cut to ``limit``.

    Unlike :func:`short` it is not quoted, so it reads well as a field name.
    """
    flat = " ".join(str(text).splitlines())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _open_error(path: Path, exc: OSError) -> InputError:
    if isinstance(exc, FileNotFoundError):
        return InputError("file not found", path=str(path))
    if isinstance(exc, IsADirectoryError):
        return InputError("is a directory, expected a file", path=str(path))
    return InputError(f"cannot read: {exc.strerror or exc}", path=str(path))


def _decode(raw: bytes, path: Path, line: int) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8: byte 0x{raw[exc.start]:02x} at column {exc.start + 1}", path=str(path),
                         line=line) from None
    if "\x00" in text:  # no text format carries NUL; it would reach prompts, the store and TSV files
        raise InputError(f"a NUL character at column {text.index(chr(0)) + 1} (text files hold no NUL)",
                         path=str(path), line=line)
    return text


def iter_lines(path: str | Path, *, keep_ends: bool = False) -> Iterator[tuple[int, str]]:
    """(line number, text without its line end) for every line, streamed.

    A BOM at the start of the file is dropped; a trailing ``\\r`` of a CRLF line
    end is dropped. Blank lines are kept (callers decide what they mean).
    ``keep_ends``: the line end is kept as it is (a quoting reader, such as
    the csv module, then keeps a CR LF inside a quoted field).
    """
    p = Path(path)
    try:
        fh = p.open("rb")
    except OSError as exc:
        raise _open_error(p, exc) from None
    with fh:
        for n, raw in enumerate(fh, start=1):
            if n == 1 and raw.startswith(BOM):
                raw = raw[len(BOM):]
            if raw.endswith(b"\n") and not keep_ends:
                raw = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
            yield n, _decode(raw, p, n)


def read_text(path: str | Path) -> str:
    """The whole file as text with ``\\n`` line ends (BOM dropped, bad bytes located)."""
    return "".join(f"{text}\n" for _, text in iter_lines(path))


def read_lines(path: str | Path) -> list[str]:
    """Every line of the file, without line ends."""
    return [text for _, text in iter_lines(path)]


__all__ = ["BOM", "MAX_QUOTED", "iter_lines", "plain", "read_lines", "read_text", "short"]


# json.loads' own decoder (its default settings): what it reads once it has found where the value starts.
_DECODE = json.JSONDecoder().raw_decode


def whole_json_object(text: str) -> dict[str, Any] | None:
    """``json.loads(text)`` when ``text`` is one JSON object from its first character to its last; None for
    anything else (a blank before or after it too), which the caller gives to json.loads: it reads that, or
    says what is wrong. The fast path of every reader of JSON objects (a JSONL line, a server's answer, a
    judge's), without json.loads' steps for other input (tests/data/test_jsonl_lines.py)."""
    if text[:1] != "{":
        return None
    try:
        value, end = _DECODE(text)
    except (ValueError, RecursionError):
        return None
    return value if end == len(text) and type(value) is dict else None
