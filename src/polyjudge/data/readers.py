"""Readers that turn user files into :class:`Item` lists.

Formats: JSONL, CSV and TSV with the same column names (``src``, ``tgt``,
optional ``ref``, ``src_lang``, ``tgt_lang``, ``doc_id``, ``seg_id``,
``system``; any other column is kept in ``Item.extra``), parallel plain-text
files (one segment per line, as comet-score reads them) and the WMT MQM TSV.
Every problem is reported with file, line and field.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from polyjudge.data.errors import InputError
from polyjudge.data.records import CORE_FIELDS, Item

REQUIRED = ("src", "tgt")
WMT_MQM_HEADER = ("system", "doc", "doc_id", "seg_id", "rater", "source", "target")


def _item_from_mapping(row: dict[str, Any], path: str, line: int, defaults: dict[str, str | None]) -> Item:
    for name in REQUIRED:
        if name not in row or row[name] is None:
            raise InputError("required field is missing", path=path, line=line, field=name)
    values: dict[str, Any] = {}
    for name in CORE_FIELDS:
        v = row.get(name)
        if v is None or v == "":
            v = defaults.get(name) if name not in REQUIRED else v
        if v is not None and not isinstance(v, str):
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise InputError(f"expected a string, got {type(v).__name__}", path=path, line=line, field=name)
            v = str(v)
        values[name] = v
    if values["ref"] == "":
        values["ref"] = None
    extra = {k: v for k, v in row.items() if k not in CORE_FIELDS}
    return Item(**values, extra=extra, origin=f"{path}:{line}")


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line of a JSONL file.

    The one JSONL reader of the project: invalid JSON or a line that is not an
    object raises InputError naming the file and line.
    """
    try:
        fh = open(path, encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", path=str(path)) from None
    with fh:
        for n, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", path=str(path), line=n) from None
            if not isinstance(row, dict):
                raise InputError("each line must be a JSON object", path=str(path), line=n)
            yield n, row


def read_json(path: str | Path, what: str = "file") -> Any:
    """A whole JSON file; a missing file or invalid JSON raises InputError (with the line)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{what} not found", path=str(path)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", path=str(path), line=exc.lineno) from None


def read_jsonl(path: str | Path, **defaults: str | None) -> list[Item]:
    return [_item_from_mapping(row, str(path), n, defaults) for n, row in iter_jsonl(path)]


def read_delimited(path: str | Path, delimiter: str, **defaults: str | None) -> list[Item]:
    items = []
    with open(path, encoding="utf-8", newline="") as fh:
        # TSV files in MT are rarely quoted; quotes inside text must stay text.
        reader = (csv.reader(fh, delimiter=delimiter, quoting=csv.QUOTE_NONE) if delimiter == "\t"
                  else csv.reader(fh, delimiter=delimiter, quoting=csv.QUOTE_MINIMAL))
        try:
            header = next(reader)
        except StopIteration:
            raise InputError("empty file (a header row is needed)", path=str(path), line=1) from None
        header = [h.strip().lstrip("\ufeff") for h in header]
        for name in REQUIRED:
            if name not in header:
                raise InputError(f"header has no '{name}' column (found: {', '.join(header)})",
                                 path=str(path), line=1, field=name)
        for row in reader:
            line = reader.line_num
            if not row or row == [""]:
                continue
            if len(row) != len(header):
                raise InputError(f"expected {len(header)} columns, found {len(row)}", path=str(path), line=line)
            items.append(_item_from_mapping(dict(zip(header, row)), str(path), line, defaults))
    return items


def _read_lines(path: str | Path) -> list[str]:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().split("\n")[:-1] if Path(path).stat().st_size else []
    except FileNotFoundError:
        raise InputError("file not found", path=str(path)) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", path=str(path)) from None


def read_parallel(src: str | Path, tgt: str | Path, ref: str | Path | None = None, *,
                  system: str | None = None, src_lang: str | None = None,
                  tgt_lang: str | None = None) -> list[Item]:
    """Line-aligned source, hypothesis and optional reference files."""
    srcs, tgts = _read_lines(src), _read_lines(tgt)
    refs = _read_lines(ref) if ref is not None else None
    for other, lines in ((tgt, tgts), (ref, refs)):
        if lines is not None and len(lines) != len(srcs):
            raise InputError(f"has {len(lines)} lines but the source {src} has {len(srcs)}",
                             path=str(other), line=min(len(lines), len(srcs)) + 1)
    system = system or Path(tgt).stem
    return [Item(src=s, tgt=t, ref=refs[i] if refs is not None else None, src_lang=src_lang,
                 tgt_lang=tgt_lang, seg_id=str(i + 1), system=system, origin=f"{tgt}:{i + 1}")
            for i, (s, t) in enumerate(zip(srcs, tgts))]


def is_wmt_mqm_tsv(path: str | Path) -> bool:
    with open(path, encoding="utf-8") as fh:
        first = fh.readline().rstrip("\n").split("\t")
    return tuple(first[:len(WMT_MQM_HEADER)]) == WMT_MQM_HEADER


def read_items(path: str | Path, *, fmt: str | None = None, src_lang: str | None = None,
               tgt_lang: str | None = None, system: str | None = None) -> list[Item]:
    """Read items from a file, choosing the format from ``fmt`` or the extension."""
    p = Path(path)
    if not p.is_file():
        raise InputError("file not found", path=str(p))
    fmt = fmt or {".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv", ".tsv": "tsv"}.get(p.suffix.lower())
    defaults = {"src_lang": src_lang, "tgt_lang": tgt_lang, "system": system}
    try:
        if fmt == "jsonl":
            items = read_jsonl(p, **defaults)
        elif fmt == "csv":
            items = read_delimited(p, ",", **defaults)
        elif fmt == "tsv" and is_wmt_mqm_tsv(p):
            from polyjudge.data.wmt_mqm import read_wmt_mqm, wmt_mqm_items
            items = wmt_mqm_items(read_wmt_mqm(p), src_lang=src_lang, tgt_lang=tgt_lang)
        elif fmt == "tsv":
            items = read_delimited(p, "\t", **defaults)
        else:
            raise InputError("unknown input format: use .jsonl, .csv or .tsv, or --format", path=str(p))
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", path=str(p)) from None
    if not items:
        raise InputError("no items in file", path=str(p))
    return items
