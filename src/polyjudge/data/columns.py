"""Column mapping for table-like inputs (CSV, TSV, JSONL, parquet, Hugging Face datasets).

The field's tables name their columns in many ways (``mt`` or
``hypothesis_segment`` for the translation, ``lp`` for a language pair).
``--columns tgt=mt,ref=reference`` says which column holds which of polyjudge's
fields, so such a table is read as it is, without a converter. A column
holding a language pair (``lp`` ``en-de``, or the WMT24/25 ESA files'
``langs`` ``en-cs_CZ``) is split into source and target language when the
row has none of its own, and the ESA files' ``line_id`` becomes the segment
id when there is no ``seg_id``; both keys stay in the item's ``extra``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from polyjudge.data.errors import InputError
from polyjudge.data.records import CORE_FIELDS

FLAG = "columns"  # the API setting (the command line shows it as --columns)
# Fields a column may be mapped to: the item's own fields and a language pair to split.
MAPPABLE = (*CORE_FIELDS, "lp")
# Columns holding "SRC-TGT", in the order they are looked for.
PAIR_COLUMNS = ("lp", "langs")


@dataclass(frozen=True, slots=True)
class ColumnMap:
    """Which input column holds which field (``field -> column``), as ``--columns`` gave it."""

    pairs: tuple[tuple[str, str], ...] = ()

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(column for _, column in self.pairs)

    def check_header(self, header: Sequence[str], *, path: str, line: int | None) -> None:
        """Every mapped column exists (else an InputError naming the flag and the column)."""
        for name, column in self.pairs:
            if column not in header:
                shown = ", ".join(header[:20]) + (", ..." if len(header) > 20 else "")
                raise InputError(f"the column mapping maps {name} to column '{column}', which is not there "
                                 f"(columns: {shown})", path=path, line=line, field=FLAG, setting=True)

    def apply(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """The row with mapped columns renamed to their fields; other columns stay as they are."""
        if not self.pairs:
            return dict(row)
        mapped = set(self.columns)
        out = {k: v for k, v in row.items() if k not in mapped}
        for name, column in self.pairs:
            if column in row:
                out[name] = row[column]
        return out


def parse_columns(text: str | Sequence[str] | None) -> ColumnMap:
    """``tgt=mt,ref=reference`` (comma-separated or repeated) as a :class:`ColumnMap`."""
    if text is None:
        return ColumnMap()
    parts = [text] if isinstance(text, str) else list(text)
    pairs: dict[str, str] = {}
    for chunk in (p.strip() for part in parts for p in part.split(",")):
        if not chunk:
            continue
        name, sep, column = (s.strip() for s in chunk.partition("="))
        if not sep or not name or not column:
            raise InputError(f"expected FIELD=COLUMN, got '{chunk}'", field=FLAG, setting=True)
        if name not in MAPPABLE:
            raise InputError(f"unknown field '{name}' (fields: {', '.join(MAPPABLE)})", field=FLAG, setting=True)
        if name in pairs:
            raise InputError(f"field '{name}' is mapped twice", field=FLAG, setting=True)
        twice = next((other for other, col in pairs.items() if col == column), None)
        if twice is not None:
            raise InputError(f"column '{column}' is mapped to two fields ({twice} and {name}); a column holds one",
                             field=FLAG, setting=True)
        pairs[name] = column
    return ColumnMap(tuple(pairs.items()))


def split_pair(value: Any, *, path: str | None, line: int | None, field: str) -> tuple[str, str]:
    """``en-de`` or ``en-cs_CZ`` as (source, target); anything else is an InputError."""
    if isinstance(value, str):
        src, sep, tgt = value.strip().partition("-")
        if sep and src and tgt:
            return src, tgt
    raise InputError(f"expected a language pair like en-de, got {value!r}", path=path, line=line, field=field,
                     setting=path is None)  # without a file, the pair is a setting (lp)


def normalise_row(row: dict[str, Any], *, path: str, line: int | None) -> dict[str, Any]:
    """Languages from a pair column and the segment id from ``line_id``, when the row lacks them."""
    missing_lang = row.get("src_lang") in (None, "") and row.get("tgt_lang") in (None, "")
    if missing_lang:
        for column in PAIR_COLUMNS:
            if row.get(column) not in (None, ""):
                row["src_lang"], row["tgt_lang"] = split_pair(row[column], path=path, line=line, field=column)
                break
    if row.get("seg_id") in (None, "") and row.get("line_id") not in (None, ""):
        value = row["line_id"]
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise InputError(f"expected a number or a string, got {value!r}", path=path, line=line, field="line_id")
        row["seg_id"] = str(value)
    return row


__all__ = ["FLAG", "MAPPABLE", "ColumnMap", "normalise_row", "parse_columns", "split_pair"]
