"""Readers that turn user files into :class:`Item` lists.

Formats: JSONL, CSV and TSV with the same column names (``src``, ``tgt``,
optional ``ref``, ``src_lang``, ``tgt_lang``, ``doc_id``, ``seg_id``,
``system``; any other column is kept in ``Item.extra``; ``--columns`` maps
other names, :mod:`polyjudge.data.columns`), parallel plain-text files (one
segment per line, as comet-score reads them), the WMT MQM TSV, the WMT25
task-1 TSV and mt-metrics-eval test-set folders (:mod:`polyjudge.data.testsets`),
parquet and Hugging Face datasets (:mod:`polyjudge.data.tables`).
Every problem is reported with file, line and field.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from dataclasses import replace as _replace
from operator import itemgetter
from pathlib import Path
from typing import Any

from polyjudge.data import tables, testsets, textio
from polyjudge.data.columns import ColumnMap, normalise_row
from polyjudge.data.errors import InputError
from polyjudge.data.fields import bad_id, bad_text, check_id, check_text, check_value
from polyjudge.data.records import CORE_FIELDS, Item
from polyjudge.data.testsets import TestSetInfo, TestSetSelection

# plain lives beside textio.short (wmt_mqm needs it, and wmt_mqm must not import this module)
from polyjudge.data.textio import plain as plain
from polyjudge.data.textio import whole_json_object
from polyjudge.registry import Registry

REQUIRED = ("src", "tgt")
_CORE = frozenset(CORE_FIELDS)
# The fast path's view of the core fields (Item takes them in this order), and the values it lets pass.
_SYSTEM, _DOC, _SEG, _REF = (CORE_FIELDS.index(n) for n in ("system", "doc_id", "seg_id", "ref"))
_ID_VALUES = itemgetter(_SYSTEM, _DOC, _SEG)
# The fields a missing or empty value is taken from the defaults for (all but the required ones).
_DEFAULTED = tuple(k for k, name in enumerate(CORE_FIELDS) if name not in REQUIRED)
_PLAIN_NUMBERS = (int, float, bool, type(None))
WMT_MQM_HEADER = ("system", "doc", "doc_id", "seg_id", "rater", "source", "target")


def _item_from_mapping(row: dict[str, Any], path: str, line: int, defaults: dict[str, str | None]) -> Item:
    """The item of one parsed row, or the InputError naming what is wrong with it."""
    return _plain_item(row, path, line, defaults) or _checked_item(row, path, line, defaults)


def _plain_item(row: dict[str, Any], path: str, line: int, defaults: dict[str, str | None]) -> Item | None:
    """The common row, fast: every field a string, every extra value a string or a number, nothing
    any rule refuses (one search over all of it). None sends anything else to :func:`_checked_item`,
    which names what is wrong; both give the same item (tests/data/test_readers_fast_path.py)."""
    values: list[Any] = [*map(row.get, CORE_FIELDS)]
    texts = [v for v in values if v is not None]
    try:
        joined = "\x1f".join(texts)  # a value that is not a string (a number, a list) fails here
    except TypeError:
        return None
    if len(texts) != len(values) or "" in texts:  # a field missing or empty: required, refused or defaulted
        if not values[0] or not values[1] or values[_SYSTEM] == "":
            return None
        for k in _DEFAULTED:
            if not values[k]:
                values[k] = defaults.get(CORE_FIELDS[k])
        joined = "\x1f".join([v for v in values if v is not None])
    if _CORE.issuperset(row):
        extra: dict[str, Any] = {}
    else:
        extra = {k: v for k, v in row.items() if k not in _CORE}
        more = []
        for key, value in extra.items():
            if value.__class__ is str:
                more.append(value)
            elif value.__class__ not in _PLAIN_NUMBERS:
                return None
            more.append(key)
        joined = joined + "\x1f" + "\x1f".join(more)
    if bad_text(joined) or bad_id(" ".join(filter(None, _ID_VALUES(values)))) or values[_REF] == "":
        return None
    # Positional: CORE_FIELDS are the first fields of Item, in order (tests/data/test_readers_fast_path.py).
    return Item(*values, extra, f"{path}:{line}")  # type: ignore[call-arg]


def _checked_item(row: dict[str, Any], path: str, line: int, defaults: dict[str, str | None]) -> Item:
    for name in REQUIRED:
        if name not in row or row[name] is None:
            raise InputError("required field is missing", path=path, line=line, field=name)
    values: dict[str, Any] = {}
    for name in CORE_FIELDS:
        v = row.get(name)
        if v == "" and name == "system" and defaults.get(name) is None:
            check_id(v, path=path, line=line, field=name)  # an empty system name is refused
        if v is None or v == "":
            v = defaults.get(name) if name not in REQUIRED else v
        if v is not None and not isinstance(v, str):
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise InputError(f"expected a string, got {type(v).__name__}", path=path, line=line, field=name)
            v = _number_text(v, path, line, name)
        if v is not None:
            check_value(v, path=path, line=line, field=name)
        values[name] = v
    if values["ref"] == "":
        values["ref"] = None
    extra = {k: v for k, v in row.items() if k not in CORE_FIELDS}
    for key, value in extra.items():
        check_text(str(key), path=path, line=line, field="a column name")
        check_value(value, path=path, line=line, field=str(key))
    return Item(**values, extra=extra, origin=f"{path}:{line}")


def _number_text(value: int | float, path: str, line: int, name: str) -> str:
    """A number given for a text field, as text; a segment id must be a whole number (``3.0`` is 3),
    never NaN, an infinity or a fraction (a parquet column with a gap holds NaN)."""
    if name == "seg_id" and isinstance(value, float):
        if not value.is_integer():
            raise InputError(f"a segment id must be a whole number, got {value!r}", path=path, line=line,
                             field=name)
        return str(int(value))
    return str(value)


def _row_item(row: dict[str, Any], path: str, line: int, defaults: ItemDefaults) -> Item:
    """An item of a table row: mapped columns renamed, a language pair split, then checked."""
    row = normalise_row(defaults.columns.apply(row), path=path, line=line)
    return _item_from_mapping(row, path, line, _given(defaults))


def _given(defaults: ItemDefaults) -> dict[str, str | None]:
    """The values ``defaults`` gives an item that lacks them, as :func:`_item_from_mapping` takes them."""
    return {"src_lang": defaults.src_lang, "tgt_lang": defaults.tgt_lang, "system": defaults.system}


def parse_json(text: str, *, path: str, line: int | None = None) -> Any:
    """``json.loads`` whose every failure is an InputError naming the file and place.

    ``line`` is the line of a JSONL record (the column comes from the parser);
    without it ``text`` is a whole file and the parser's line is used. Nesting
    too deep for the parser and integers too long to convert are input errors too.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", path=path,
                         line=line if line is not None else exc.lineno) from None
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply", path=path, line=line) from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise InputError(f"invalid JSON: {textio.short(str(exc))}", path=path, line=line) from None


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for messages ("an array", "a string")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def iter_jsonl(path: str | Path, *, user_text: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line of a JSONL file.

    The one JSONL reader of the project, built on :func:`textio.iter_lines` (BOM,
    CRLF and bad bytes handled there): invalid JSON or a line that is not an
    object raises InputError naming the file and line. With ``user_text`` (a
    user's input, not polyjudge's own files, which keep model answers as given)
    every string follows :mod:`polyjudge.data.fields`: no lone surrogate or NUL
    (a JSON escape can make both), ids a TSV cell can carry.
    """
    name = str(path)
    for n, text in textio.iter_lines(path):
        row = whole_json_object(text)
        if row is None:  # anything but a whole object alone on its line: what json.loads says of it
            if not text.strip():
                continue
            row = parse_json(text, path=name, line=n)
        if not isinstance(row, dict):
            raise InputError(f"each line must be a JSON object, got {json_type(row)}", path=name, line=n)
        if user_text:
            for key, value in row.items():
                check_text(key, path=name, line=n, field="a key")
                check_value(value, path=name, line=n, field=key)
        yield n, row


def read_json(path: str | Path, what: str = "file") -> Any:
    """A whole JSON file; a missing file, bad bytes or invalid JSON raise InputError (with the line)."""
    if not Path(path).exists():
        raise InputError(f"{what} not found", path=str(path))
    return parse_json(textio.read_text(path), path=str(path))


def read_jsonl(path: str | Path, **defaults: str | None) -> list[Item]:
    return [_item_from_mapping(row, str(path), n, defaults) for n, row in iter_jsonl(path)]


def _mapped_rows(rows: Iterator[tuple[int, dict[str, Any]]], path: str, defaults: ItemDefaults) -> list[Item]:
    """Items of (line, row) pairs; every row must have the columns ``defaults.columns`` names."""
    items: list[Item] = []
    columns = defaults.columns
    if columns.pairs:
        for line, row in rows:
            columns.check_header(list(row), path=path, line=line)
            items.append(_row_item(row, path, line, defaults))
        return items
    # No mapping: what _row_item does, without copying each row (every reader's row is a fresh dict).
    given = _given(defaults)
    for line, row in rows:
        row = normalise_row(row, path=path, line=line)
        items.append(_plain_item(row, path, line, given) or _checked_item(row, path, line, given))
    return items


def iter_delimited(path: str | Path, delimiter: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, cells) of a TSV or CSV file read through :mod:`textio`.

    TSV is split on tabs only: MT files are rarely quoted, so quotes inside
    text stay text. CSV follows the usual quoting (a quoted field may span
    lines; the line number is then that of its last line). Cells are never
    size-limited: a long segment is data, and is reported by the caller if
    it is a problem.
    """
    if delimiter == "\t":
        for n, text in textio.iter_lines(path):
            yield n, text.split("\t")
        return
    csv.field_size_limit(2**31 - 1)
    reader = csv.reader((text + "\n" for _, text in textio.iter_lines(path)), delimiter=delimiter,
                        quoting=csv.QUOTE_MINIMAL)
    try:
        for row in reader:
            yield reader.line_num, row
    except csv.Error as exc:
        raise InputError(f"not valid CSV: {exc}", path=str(path), line=reader.line_num) from None


def read_delimited(path: str | Path, delimiter: str, **defaults: str | None) -> list[Item]:
    return read_table(path, delimiter, ItemDefaults(defaults.get("src_lang"), defaults.get("tgt_lang"),
                                                   defaults.get("system")))


def _missing_column(name: str, header: Sequence[str]) -> str:
    return (f"header has no '{name}' column (found: {textio.short(header)}); "
            f"name the column that holds it with --columns {name}=COLUMN")


def read_table(path: str | Path, delimiter: str, defaults: ItemDefaults) -> list[Item]:
    """A CSV or TSV with a header row, its columns mapped by ``defaults.columns``."""
    items = []
    rows = iter_delimited(path, delimiter)
    first = next(rows, None)
    if first is None:
        raise InputError("empty file (a header row is needed)", path=str(path), line=1)
    header = [h.strip() for h in first[1]]
    defaults.columns.check_header(header, path=str(path), line=first[0])
    fields = set(defaults.columns.apply(dict.fromkeys(header)))
    for name in REQUIRED:
        if name not in fields:
            raise InputError(_missing_column(name, header), path=str(path), line=first[0], field=name)
    for line, row in rows:
        if not row or row == [""]:
            continue
        if len(row) != len(header):
            raise InputError(f"expected {len(header)} columns, found {len(row)}", path=str(path), line=line)
        if [c.strip() for c in row] == header:
            raise InputError(f"the header row again (as on line {first[0]}; files joined together?): remove it",
                             path=str(path), line=line)
        items.append(_row_item(dict(zip(header, row)), str(path), line, defaults))
    return items


def read_parallel(src: str | Path, tgt: str | Path, ref: str | Path | None = None, *,
                  system: str | None = None, src_lang: str | None = None,
                  tgt_lang: str | None = None) -> list[Item]:
    """Line-aligned source, hypothesis and optional reference files."""
    srcs, tgts = textio.read_lines(src), textio.read_lines(tgt)
    refs = textio.read_lines(ref) if ref is not None else None
    for other, lines in ((tgt, tgts), (ref, refs)):
        if lines is not None and len(lines) != len(srcs):
            raise InputError(f"has {len(lines)} lines but the source {src} has {len(srcs)}",
                             path=str(other), line=min(len(lines), len(srcs)) + 1)
    system = system or Path(tgt).stem
    check_id(system, path=str(tgt), line=None, field="system")
    for name, lines in ((src, srcs), (tgt, tgts), (ref, refs)):
        for n, text in enumerate(lines or (), start=1):
            check_text(text, path=str(name), line=n, field="text")
    return [Item(src=s, tgt=t, ref=refs[i] if refs is not None else None, src_lang=src_lang,
                 tgt_lang=tgt_lang, seg_id=str(i + 1), system=system, origin=f"{tgt}:{i + 1}")
            for i, (s, t) in enumerate(zip(srcs, tgts))]


def is_wmt_mqm_tsv(path: str | Path) -> bool:
    """Whether the first line is the WMT MQM header (a BOM or CRLF does not hide it)."""
    _, first = next(textio.iter_lines(path), (0, ""))  # the generator (and file) closes when dropped
    return tuple(first.split("\t")[:len(WMT_MQM_HEADER)]) == WMT_MQM_HEADER


def _line_of(item: Item) -> int | None:
    """The line number in an item's ``origin`` (``file:12`` or ``line 12``), if it has one."""
    tail = (item.origin or "").replace(" ", ":").rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else None


def _check_no_system_clash(items: Sequence[Item], path: str | None) -> None:
    """Items without a system are shown as system "-": refuse a real system of that name beside them."""
    dash = next((it for it in items if it.system == "-"), None)
    if dash is not None and any(it.system is None for it in items):
        raise InputError("system name '-' stands for \"no system\", and other items have none; rename it",
                         path=path, line=_line_of(dash), field="system")


def check_unique_ids(items: Sequence[Item], path: str | None = None) -> None:
    """Refuse two items with the same (system, doc_id, seg_id).

    Scores are keyed by these ids downstream (segment tables, meta-evaluation),
    so a repeated key would silently stand for two different segments. Items
    without a ``seg_id`` are identified by their position and never clash.
    """
    first: dict[tuple[str | None, str | None, str], Item] = {}
    _check_no_system_clash(items, path)
    for it in items:
        if it.seg_id is None:
            continue
        key = (it.system, it.doc_id, it.seg_id)
        seen = first.setdefault(key, it)
        if seen is it:
            continue
        ids = ", ".join(f"{name} {textio.short(value)}" for name, value in zip(("system", "doc_id", "seg_id"), key)
                        if value is not None)
        where = _line_of(seen)
        earlier = f"line {where}" if where is not None else seen.origin or "an earlier item"
        raise InputError(f"duplicate item ({ids}): the same ids as {earlier}", path=path, line=_line_of(it),
                         field="seg_id")


@dataclass(frozen=True, slots=True)
class ItemDefaults:
    """How to read an input: values for items that lack them (``--src-lang``, ``--tgt-lang``, a
    default system), the column mapping (``--columns``) and what to take from a test set
    (``--lp``, ``--systems``, ``--exclude-systems``, ``--ref``)."""

    src_lang: str | None = None
    tgt_lang: str | None = None
    system: str | None = None
    columns: ColumnMap = ColumnMap()
    testset: TestSetSelection = TestSetSelection()


ReadFunction = Callable[[Path, ItemDefaults], list[Item]]


@dataclass(frozen=True, slots=True)
class InputReader:
    """A registered input format: its name (``--input-format``), file extensions and reader."""

    name: str
    extensions: tuple[str, ...]
    read: ReadFunction
    summary: str = ""
    # Recognises an input no extension names (a folder, an ``hf:`` name); tried after the extensions.
    detect: Callable[[Path], bool] | None = None


READERS: Registry[InputReader] = Registry("input format", entry_point_group="polyjudge.readers")


def register_reader(name: str, *, extensions: Sequence[str] = (), summary: str | None = None,
                    detect: Callable[[Path], bool] | None = None) -> Callable[[ReadFunction], ReadFunction]:
    """Decorator: register ``read(path, defaults) -> items`` as input format ``name``.

    ``extensions`` (``.jsonl``) choose it when no format is given, and so does
    ``detect(path)`` (for folders and names that are not files); the summary
    (default: the first docstring line) is its ``--help`` and listing line.
    """

    def deco(fn: ReadFunction) -> ReadFunction:
        doc = (fn.__doc__ or "").strip()
        READERS.add(name, InputReader(name, tuple(e.lower() for e in extensions), fn,
                                      summary if summary is not None else (doc.splitlines()[0] if doc else ""),
                                      detect))
        return fn

    return deco


@register_reader("jsonl", extensions=(".jsonl", ".json"))
def _read_jsonl_items(path: Path, defaults: ItemDefaults) -> list[Item]:
    """One JSON object per line (src, tgt and optional ids, languages, ref; WMT24/25 ESA's langs, line_id)."""
    if is_wmt26_jsonl(path):
        return _read_wmt26_items(path, defaults)
    return _mapped_rows(iter_jsonl(path), str(path), defaults)


def is_wmt26_jsonl(path: Path) -> bool:
    """Whether the first line is a WMT26 MT-evaluation test-set line (item_id, src, hyps)."""
    from polyjudge.data.wmt26 import looks_like_wmt26

    if not path.is_file():
        return False
    _, first = next(textio.iter_lines(path), (0, ""))
    if '"item_id"' not in first or '"hyps"' not in first:
        return False
    try:
        row = json.loads(first)
    except (ValueError, RecursionError):  # the JSONL reader names what is wrong with the line
        return False
    return isinstance(row, dict) and looks_like_wmt26(row)


@register_reader("csv", extensions=(".csv",))
def _read_csv_items(path: Path, defaults: ItemDefaults) -> list[Item]:
    """Comma-separated with a header row (src, tgt, ...)."""
    return read_table(path, ",", defaults)


@register_reader("tsv", extensions=(".tsv",))
def _read_tsv_items(path: Path, defaults: ItemDefaults) -> list[Item]:
    """Tab-separated with a header row; WMT MQM and WMT25 task-1 TSVs are detected and read as such."""
    if is_wmt25_tsv(path):
        return _read_wmt25_items(path, defaults)
    if is_wmt_mqm_tsv(path):
        from polyjudge.data.wmt_mqm import read_wmt_mqm, wmt_mqm_items, wmt_mqm_languages
        annotations = read_wmt_mqm(path)
        src_lang, tgt_lang = wmt_mqm_languages(path, defaults.src_lang, defaults.tgt_lang)
        return wmt_mqm_items(annotations, src_lang=src_lang, tgt_lang=tgt_lang)
    return read_table(path, "\t", defaults)


def is_wmt25_tsv(path: Path) -> bool:
    """Whether the first line is the WMT25 task-1 header."""
    _, first = next(textio.iter_lines(path), (0, ""))
    return tuple(c.strip() for c in first.split("\t")) == testsets.WMT25_COLUMNS


@register_reader("wmt25", extensions=())
def _read_wmt25_items(path: Path, defaults: ItemDefaults) -> list[Item]:
    """WMT25 task-1 TSV (doc_id segment_id ... domain_name method); its keys are kept for writing back."""
    if not is_wmt25_tsv(path):
        raise InputError("not a WMT25 task-1 TSV: the header must be " + " ".join(testsets.WMT25_COLUMNS),
                         path=str(path), line=1)
    own = dict(testsets.WMT25_FIELDS)
    own.update(defaults.columns.pairs)
    items = read_table(path, "\t", _replace(defaults, columns=ColumnMap(tuple(own.items()))))
    systems = tuple(dict.fromkeys(it.system or "" for it in items))
    info = TestSetInfo(format=testsets.WMT25, root=str(path.resolve()), name=path.stem, lp=None, systems=systems,
                       n_segments=len({(it.doc_id, it.seg_id) for it in items}), ref=None,
                       documents=True, domains=True).to_json()
    return [_replace(it, extra={**it.extra, testsets.TESTSET_KEY: info}) for it in items]


@register_reader("wmt26", extensions=(".gz",))
def _read_wmt26_items(path: Path, defaults: ItemDefaults) -> list[Item]:
    """WMT26 MT-evaluation test set (.jsonl or .jsonl.gz: item_id, src, ref, hyps): one item per system."""
    from polyjudge.data.wmt26 import read_wmt26

    return read_wmt26(path)


@register_reader("mtme", detect=testsets.is_mtme_dir)
def _read_mtme_items(path: Path, defaults: ItemDefaults) -> list[Item]:
    """mt-metrics-eval test-set folder (ROOT/wmt23 with --lp): every system's every segment, documents kept."""
    return testsets.read_mtme(path, defaults.testset)


@register_reader("parquet", extensions=(".parquet",), detect=tables.is_parquet_dir)
def _read_parquet_items(path: Path, defaults: ItemDefaults) -> list[Item]:
    """Parquet file or folder of parquet files (columns as in JSONL; --columns maps others)."""
    return _mapped_rows(tables.parquet_rows(path), str(path), defaults)


@register_reader("hf", detect=tables.is_hf_source)
def _read_hf_items(path: Path, defaults: ItemDefaults) -> list[Item]:
    """Hugging Face dataset: hf:NAME[:CONFIG][:SPLIT] from the local cache, or hf:PATH (save_to_disk); offline."""
    return _mapped_rows(tables.hf_rows(str(path)), str(path), defaults)


def input_reader(path: Path, fmt: str | None) -> InputReader:
    """The reader of ``fmt``, else of the file's extension, else the one that recognises ``path``."""
    if fmt is not None and fmt in READERS:
        return READERS.get(fmt)
    if fmt is None:
        suffix = path.suffix.lower()
        if path.is_file():  # folders and hf: names are recognised by what they are, not by a suffix
            for _, reader in READERS.items():
                if suffix and suffix in reader.extensions:
                    return reader
        for _, reader in READERS.items():
            if reader.detect is not None and reader.detect(path):
                return reader
    firsts = [r.extensions[0] for _, r in READERS.items() if r.extensions]
    listed = ", ".join(firsts[:-1]) + f" or {firsts[-1]}" if len(firsts) > 1 else "".join(firsts)
    raise InputError(f"unknown input format: use {listed}, an mt-metrics-eval folder, hf:NAME, or --input-format",
                     path=str(path))


def _reads_folders(path: Path, fmt: str | None) -> bool:
    """Whether the format given reads folders (it then says what is wrong with this one), or, without
    a format, whether a registered reader recognises ``path``."""
    if fmt is not None and fmt in READERS:
        return READERS.get(fmt).detect is not None
    return any(r.detect is not None and r.detect(path) for _, r in READERS.items())


def read_items(path: str | Path, *, fmt: str | None = None, src_lang: str | None = None,
               tgt_lang: str | None = None, system: str | None = None,
               how: ItemDefaults | None = None) -> list[Item]:
    """Read items from a file, folder or ``hf:`` name, choosing the reader (:data:`READERS`) from
    ``fmt``, the extension or what the path is.

    ``how`` carries the column mapping and test-set selection (its languages and
    system are overridden by the keywords given). Two items with the same
    (system, doc_id, seg_id) are refused. A WMT MQM TSV has no language columns:
    its languages are ``src_lang``/``tgt_lang``, else the pair its file name
    tells, else an InputError asks for them.
    """
    p = Path(path)
    base = how or ItemDefaults()
    defaults = _replace(base, src_lang=src_lang or base.src_lang, tgt_lang=tgt_lang or base.tgt_lang,
                        system=system or base.system)
    if not (tables.is_hf_source(path) or fmt == "hf") and not p.exists():
        raise InputError("file not found", path=str(p))
    if p.exists() and not p.is_file() and not _reads_folders(p, fmt):
        raise InputError("not a file (folders are read as mt-metrics-eval test sets or parquet datasets)", path=str(p))
    reader = input_reader(p, fmt)
    items = reader.read(p, defaults)
    if not items:
        raise InputError("no items in file", path=str(p))
    check_unique_ids(items, str(p))
    return items
