"""Rows given in code (a list of dicts, a DataFrame's records, a dataset's rows) as :class:`Item` objects.

The keys are COMET's: ``src`` (the source), ``mt`` (the translation; polyjudge's own ``tgt`` is taken too)
and an optional ``ref``; the languages come from ``lp`` (``en-de``) or ``src_lang``/``tgt_lang`` in the row,
else from the call; ``system``, ``doc_id`` and ``seg_id`` are optional. Other keys are kept in the item's
``extra``. A row that lacks a text, or holds something else than text in one, is an
:class:`~polyjudge.data.errors.InputError` naming the row (counted from 0, as pandas and datasets count) and
the key. A missing value may be ``None`` or a float NaN (what pandas holds in an empty cell).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from polyjudge.data.columns import ColumnMap, split_pair
from polyjudge.data.errors import InputError
from polyjudge.data.records import Item

# What a row's keys mean: the item's field each fills (COMET's names first, polyjudge's own too).
TEXT_KEYS = {"src": "src", "mt": "tgt", "tgt": "tgt", "ref": "ref"}
ID_KEYS = ("system", "doc_id", "seg_id")
LANG_KEYS = ("src_lang", "tgt_lang")


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _text(row: Mapping[str, Any], key: str, where: str) -> str | None:
    value = row.get(key)
    if _missing(value):
        return None
    if not isinstance(value, str):
        raise InputError(f"expected text, got {type(value).__name__} {value!r:.40}", path=where, field=key)
    return value


def _ident(value: Any, key: str, where: str) -> str | None:
    """An id as text: numbers (pandas reads ids as numbers) are written without a fraction."""
    if _missing(value):
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InputError(f"expected a string or a number, got {value!r:.40}", path=where, field=key)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


Pair = tuple[str | None, str | None]


def _languages(row: Mapping[str, Any], where: str, given: Pair) -> Pair:
    src, tgt = (_text(row, k, where) for k in LANG_KEYS)
    if (src is None or tgt is None) and not _missing(row.get("lp")):
        pair = split_pair(row["lp"], path=where, line=None, field="lp")
        src, tgt = src or pair[0], tgt or pair[1]
    return src or given[0], tgt or given[1]


def item_of(row: Mapping[str, Any], index: int, lp: Pair = (None, None)) -> Item:
    """Row ``index`` as an :class:`Item` (see the module's text); ``lp``: the languages of rows without theirs."""
    if not isinstance(row, Mapping):
        raise InputError(f"expected a mapping of keys (src, mt, ...), got {type(row).__name__}", path=f"row {index}")
    where = f"row {index}"
    if not _missing(row.get("mt")) and not _missing(row.get("tgt")):
        raise InputError("has both 'mt' and 'tgt'; give the translation once", path=where, field="mt")
    src, tgt = _text(row, "src", where), _text(row, "mt", where) or _text(row, "tgt", where)
    if src is None:
        raise InputError("has no 'src' (the source text)", path=where, field="src")
    if tgt is None:
        raise InputError("has no 'mt' (the translation to judge)", path=where, field="mt")
    src_lang, tgt_lang = _languages(row, where, lp)
    ids = {k: _ident(row.get(k), k, where) for k in ID_KEYS}
    known = {*TEXT_KEYS, *ID_KEYS, *LANG_KEYS}
    extra = {k: v for k, v in row.items() if k not in known and not _missing(v)}
    return Item(src=src, tgt=tgt, ref=_text(row, "ref", where), src_lang=src_lang, tgt_lang=tgt_lang,
                extra=extra, origin=where, **ids)


def items_from_rows(rows: Iterable[Any], *, lp: str | None = None, src_lang: str | None = None,
                    tgt_lang: str | None = None, columns: ColumnMap | None = None) -> list[Item]:
    """Every row as an :class:`Item`, in order; :class:`Item` objects are taken as they are. ``lp``
    (``en-de``) names the languages of rows that name none, ``src_lang``/``tgt_lang`` win over it; ``columns``
    renames a row's keys first (the ``columns`` setting: ``tgt=hypothesis``)."""
    split = (None, None) if lp is None else split_pair(lp, path=None, line=None, field="lp")
    pair = (src_lang or split[0], tgt_lang or split[1])
    out: list[Item] = []
    for index, row in enumerate(rows):
        if isinstance(row, Item):
            out.append(row)
            continue
        if columns is not None and isinstance(row, Mapping):
            row = columns.apply(row)
        out.append(item_of(row, index, pair))
    return out


__all__ = ["ID_KEYS", "LANG_KEYS", "TEXT_KEYS", "item_of", "items_from_rows"]
