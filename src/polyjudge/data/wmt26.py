"""The WMT26 MT-evaluation task's files: the test set (JSONL) in, the submission (JSONL) out.

What was published, and where (read offline, December 2026):

- ``wmt-conference/wmt26-mteval`` holds ``data/mteval-test26.jsonl.gz`` ("Official release of Task
  1--3 test set"), ``model_card.json`` and the annotation instructions. The repository has no README
  describing the layout, and the data file itself is too large to be read here; its layout below is
  the one the task's public baseline (``Ammonsh/WMT26-QE-baselines``, ``qe_utils.py`` and README)
  reads and writes, and the model card's questions confirm the three tasks (task 1: error spans,
  task 2: scores, task 3: error-free, with a "task 2 to 3 conversion threshold").

The test set: one JSON object per line, one source segment with every system's translation::

    {"item_id": "official_###_eng_Latn_###_deu_Latn_###_social_###_116262294091035303_###_0",
     "src": "...", "ref": {"text": "...", "type": "postedit"} | null, "hyps": {"SYSTEM": "...", ...}}

``item_id`` is ``_###_``-separated: segment type (``official`` or ``challenge``), source and target
language (FLORES-200 codes for official segments, short codes for challenge segments), domain,
document id and the segment's index in its document.

:func:`read_wmt26` makes one :class:`Item` per (line, system), lines in file order and systems in the
line's order: ``doc_id`` is the ``item_id`` without its last part (so it names the document, its
language pair and domain at once, unique across the file), ``seg_id`` the segment index; ``extra``
keeps ``item_id``, ``segment_type``, ``domain`` and the reference's ``ref_type``. ``.jsonl.gz`` is
read as it is released.

The submission (:func:`submission_rows`): one JSON object per ``item_id``, in input order::

    {"item_id": "...",
     "task1_pred": {"SYSTEM": {"errors": [{"start", "end", "severity", "category"}],
                               "omission": null | "minor" | "major", "instruction_fault": null}},
     "task2_pred": {"SYSTEM": 72.0},
     "task3_pred": {"SYSTEM": true}}

``task1_pred``/``task2_pred`` are the baseline's layout (half-open character offsets into the
hypothesis, omissions without a location folded into ``omission`` at their worst severity).
``task3_pred`` (a boolean per system: error-free or not) is polyjudge's reading of task 3: no file
of that task's layout was published; a submission that needs another key renames it.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from polyjudge.data.errors import InputError
from polyjudge.data.records import Item

SEPARATOR = "_###_"
FIELDS = ("segment_type", "src_lang", "tgt_lang", "domain", "doc", "segment")
ITEM_ID_KEY = "item_id"
REF_TYPE_KEY = "ref_type"
TASK1, TASK2, TASK3 = "task1_pred", "task2_pred", "task3_pred"
SEVERITIES = ("minor", "major")


def looks_like_wmt26(row: Mapping[str, Any]) -> bool:
    """Whether a JSON object is a WMT26 test-set line (``item_id``, ``src`` and a ``hyps`` object)."""
    return isinstance(row.get(ITEM_ID_KEY), str) and "src" in row and isinstance(row.get("hyps"), dict)


def split_item_id(item_id: str, *, path: str | None = None, line: int | None = None) -> dict[str, str]:
    """The six parts of an ``item_id`` by name (InputError when there are not six, or one is empty)."""
    parts = item_id.split(SEPARATOR)
    if len(parts) != len(FIELDS) or not all(parts):
        raise InputError(f"item_id {item_id!r} is not {SEPARATOR.join(FIELDS)}", path=path, line=line,
                         field=ITEM_ID_KEY)
    return dict(zip(FIELDS, parts, strict=True))


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of a ``.jsonl`` or ``.jsonl.gz`` file, decoded strictly as UTF-8."""
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rb") as fh:
            for n, raw in enumerate(fh, start=1):
                try:
                    yield n, raw.decode("utf-8-sig" if n == 1 else "utf-8")
                except UnicodeDecodeError as exc:
                    raise InputError(f"not UTF-8 at byte {exc.start + 1}", path=str(path), line=n) from None
    except OSError as exc:  # a missing file, or a .gz that is not gzip
        raise InputError(f"cannot read: {exc.strerror or exc}", path=str(path)) from None


def _text(value: Any, what: str, path: str, line: int) -> str:
    if not isinstance(value, str):
        raise InputError(f"{what} must be a string", path=path, line=line, field=what)
    if "\x00" in value:
        raise InputError(f"{what} holds a NUL character", path=path, line=line, field=what)
    return value


def _reference(row: Mapping[str, Any], path: str, line: int) -> tuple[str | None, str | None]:
    ref = row.get("ref")
    if ref is None or ref == {}:
        return None, None
    if not isinstance(ref, dict):
        raise InputError("'ref' must be an object {text, type} or null", path=path, line=line, field="ref")
    text = ref.get("text")
    kind = ref.get("type")
    return (None if text is None else _text(text, "ref.text", path, line),
            None if kind is None else _text(kind, "ref.type", path, line))


def line_items(row: Mapping[str, Any], path: str, line: int) -> list[Item]:
    """The items of one test-set line: one per system, in the line's order."""
    item_id = _text(row.get(ITEM_ID_KEY), ITEM_ID_KEY, path, line)
    parts = split_item_id(item_id, path=path, line=line)
    src = _text(row.get("src"), "src", path, line)
    ref, ref_type = _reference(row, path, line)
    hyps = row.get("hyps")
    if not isinstance(hyps, dict):
        raise InputError("'hyps' must be an object {system: translation}", path=path, line=line, field="hyps")
    extra: dict[str, Any] = {ITEM_ID_KEY: item_id, "segment_type": parts["segment_type"], "domain": parts["domain"]}
    if ref_type is not None:
        extra[REF_TYPE_KEY] = ref_type
    doc_id = item_id.rsplit(SEPARATOR, 1)[0]
    return [Item(src=src, tgt=_text(tgt, f"hyps[{system!r}]", path, line), ref=ref, src_lang=parts["src_lang"],
                 tgt_lang=parts["tgt_lang"], doc_id=doc_id, seg_id=parts["segment"], system=system,
                 extra=dict(extra), origin=f"{path}:{line}")
            for system, tgt in hyps.items()]


def read_wmt26(path: str | Path) -> list[Item]:
    """Every item of a WMT26 test-set file (``.jsonl`` or ``.jsonl.gz``), see the module's text."""
    p = Path(path)
    items: list[Item] = []
    seen: set[str] = set()
    for n, text in _lines(p):
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON: {exc.msg} at column {exc.colno}", path=str(p), line=n) from None
        if not isinstance(row, dict) or not looks_like_wmt26(row):
            raise InputError("not a WMT26 test-set line: an object with item_id, src and hyps is expected",
                             path=str(p), line=n)
        if row[ITEM_ID_KEY] in seen:
            raise InputError(f"item_id {row[ITEM_ID_KEY]!r} appears twice", path=str(p), line=n, field=ITEM_ID_KEY)
        seen.add(row[ITEM_ID_KEY])
        items.extend(line_items(row, str(p), n))
    if not items:
        raise InputError("no WMT26 test-set lines", path=str(p))
    return items


def item_id_of(item: Item) -> str:
    """The ``item_id`` an item was read with, else the one its fields make (``official``, domain ``general``)."""
    given = item.extra.get(ITEM_ID_KEY)
    if isinstance(given, str) and given:
        return given
    domain = item.extra.get("domain") or "general"
    return SEPARATOR.join(["official", item.src_lang or "", item.tgt_lang or "", str(domain),
                           item.doc_id or "", item.seg_id or ""])


def task1_entry(spans: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One system's task-1 prediction from located spans (``start``/``end`` None: an omission)."""
    errors, omissions = [], []
    for s in spans:
        severity = "major" if str(s.get("severity")) in ("major", "critical") else "minor"
        if s.get("start") is None or s.get("end") is None:
            omissions.append(severity)
            continue
        errors.append({"start": int(s["start"]), "end": int(s["end"]), "severity": severity,
                       "category": str(s.get("category") or "")})
    omission = "major" if "major" in omissions else ("minor" if omissions else None)
    return {"errors": errors, "omission": omission, "instruction_fault": None}


def submission_rows(entries: Sequence[tuple[Item, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """The submission's lines: ``entries`` are (item, {task key: that system's prediction}), grouped
    by ``item_id`` in first-seen order, systems in input order."""
    rows: dict[str, dict[str, Any]] = {}
    for item, preds in entries:
        row = rows.setdefault(item_id_of(item), {ITEM_ID_KEY: item_id_of(item)})
        for task, value in preds.items():
            row.setdefault(task, {})[item.system or "-"] = value
    return list(rows.values())


__all__ = ["FIELDS", "ITEM_ID_KEY", "SEPARATOR", "TASK1", "TASK2", "TASK3", "item_id_of", "line_items",
           "looks_like_wmt26", "read_wmt26", "split_item_id", "submission_rows", "task1_entry"]
