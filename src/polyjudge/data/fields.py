"""What an input string may hold, checked once where it is read.

Two rules, used by every reader:

* No text field holds a lone surrogate (``\\ud800``, which a JSON escape can
  produce but UTF-8 cannot encode) or a NUL character: neither survives the
  prompt, the store or a TSV file, so both are refused where they are read.
* Identifiers (system names, document and segment ids) are written as cells of
  TSV files (``segments.tsv``, ``systems.tsv``, the mt-metrics-eval files),
  which cannot carry a tab or a line break. Rather than change them on the way
  out (two names could then collide), such ids are refused, and so is an empty
  system name, which would otherwise stand for "no system".

Every refusal is an :class:`InputError` naming the file, line and field.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from polyjudge.data.errors import InputError

_NOT_TEXT = re.compile("[\x00\ud800-\udfff]")
# Tab, NUL and every character str.splitlines() breaks a line at.
_NOT_IN_ID = re.compile("[\t\x00\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\ud800-\udfff]")
ID_FIELDS = ("system", "doc_id", "seg_id")


def _describe(char: str) -> str:
    if char == "\x00":
        return "a NUL character"
    if "\ud800" <= char <= "\udfff":
        return f"a lone surrogate U+{ord(char):04X} (not a character; e.g. from a JSON escape)"
    return f"the character U+{ord(char):04X}, which a TSV cell cannot hold"


def bad_text(value: str) -> bool:
    """Whether ``value`` holds anything :func:`check_text` refuses (one search, for fast paths; ASCII
    text, which holds no surrogate, is looked at for a NUL only)."""
    if value.isascii():
        return "\x00" in value
    return _NOT_TEXT.search(value) is not None


def bad_id(value: str) -> bool:
    """Whether ``value`` holds anything :func:`check_id` refuses besides emptiness (one search; every
    character refused is one ``str.isprintable`` refuses too: control, line and paragraph separators,
    surrogates, so printable text needs no search)."""
    return not value.isprintable() and _NOT_IN_ID.search(value) is not None


def check_text(value: str, *, path: str | None, line: int | None, field: str) -> None:
    """Refuse a lone surrogate or NUL in a text field."""
    found = _NOT_TEXT.search(value)
    if found is not None:
        raise InputError(f"contains {_describe(found.group())} at character {found.start() + 1}",
                         path=path, line=line, field=field)


def check_id(value: str, *, path: str | None, line: int | None, field: str) -> None:
    """Refuse an identifier a TSV cell cannot carry (tab, line break, NUL, surrogate), or an empty system."""
    if field == "system" and value == "":
        raise InputError("empty system name (leave the field out, or name the system)", path=path, line=line,
                         field=field)
    found = _NOT_IN_ID.search(value)
    if found is not None:
        raise InputError(f"contains {_describe(found.group())} at character {found.start() + 1}; ids may not "
                         "hold tabs, line breaks or NUL", path=path, line=line, field=field)


def check_value(value: Any, *, path: str | None, line: int | None, field: str) -> None:
    """Every string inside a parsed JSON value (keys included) is text; ids follow :func:`check_id`.

    Walked with a stack, not recursion: any nesting the JSON parser accepted is checked.
    """
    if isinstance(value, str):  # the common case, without the walk
        if field in ID_FIELDS:
            check_id(value, path=path, line=line, field=field)
        elif _NOT_TEXT.search(value) is not None:
            check_text(value, path=path, line=line, field=field)
        return
    stack: list[tuple[Any, str]] = [(value, field)]
    while stack:
        current, name = stack.pop()
        if isinstance(current, str):
            (check_id if name in ID_FIELDS else check_text)(current, path=path, line=line, field=name)
        elif isinstance(current, dict):
            for key, inner in current.items():
                check_text(str(key), path=path, line=line, field=f"{name} (a key)")
                stack.append((inner, f"{name}.{key}"))
        elif isinstance(current, list):
            stack.extend((inner, f"{name}[{k}]") for k, inner in enumerate(current))


def check_item_fields(index: int, fields: dict[str, Any], origin: str | None) -> None:
    """An item built in code (not read from a file) follows the same rules; ``origin`` or its index names it."""
    where = origin or f"item {index + 1}"
    ids = [fields.get(name) for name in ID_FIELDS]
    texts = [v for v in fields.values() if isinstance(v, str)]
    if fields.get("system") != "" and _NOT_TEXT.search("".join(texts)) is None \
            and _NOT_IN_ID.search("".join(v for v in ids if isinstance(v, str))) is None:
        return  # one search over all fields; the slow walk below only names the field at fault
    for name, value in fields.items():
        if value is not None:
            check_value(value, path=where, line=None, field=name)


def check_items(items: Sequence[Any], names: Sequence[str]) -> None:
    """:func:`check_item_fields` of every item (fields ``names``), a block at a time: one search over a
    block's strings, and the item-by-item walk only in a block where something is found."""
    block_size = 4096
    for start in range(0, len(items), block_size):
        block = items[start:start + block_size]
        texts = "\x1f".join([v for it in block for name in names if isinstance(v := getattr(it, name), str)])
        ids = " ".join([v for it in block for name in ID_FIELDS if isinstance(v := getattr(it, name), str)])
        if not bad_text(texts) and not bad_id(ids) and all(it.system != "" for it in block):
            continue
        for k, it in enumerate(block):
            check_item_fields(start + k, {name: getattr(it, name) for name in names}, it.origin)


__all__ = ["ID_FIELDS", "bad_id", "bad_text", "check_id", "check_item_fields", "check_items", "check_text",
           "check_value"]
