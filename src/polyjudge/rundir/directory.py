"""The run directory: one writer and one reader for every file in it.

Everything that reads or writes a run directory (the engine, the report,
meta-evaluation, span F1, validation, variability) goes through
:class:`RunDir` and :func:`write_run`; no other module opens these files by
name. Files are written to a temporary name and renamed, so a reader never
sees a half-written file and an interrupted write never destroys the last one.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyjudge.data import textio
from polyjudge.data.errors import InputError
from polyjudge.data.readers import iter_jsonl, parse_json, plain
from polyjudge.data.records import CORE_FIELDS, Item
from polyjudge.data.spans import SpanSegment, read_task2_tsv, write_task2_tsv
from polyjudge.rundir.mtme import check_metric_name, missing, mtme_files, mtme_grid
from polyjudge.rundir.names import (
    AGGREGATES,
    ITEMS,
    JUDGMENTS,
    MANIFEST,
    MERGED,
    MTME_DIR,
    OPTIONAL_OUTPUTS,
    RUN_KIND,
    RUN_OUTPUTS,
    SEGMENTS,
    SPANS,
    STORE,
    STORE_FILES,
    SYSTEMS,
)
from polyjudge.rundir.ownership import WRITE_BUFFER, OwnedDir, atomic_write, claim, is_polyjudge_store, read_record
from polyjudge.rundir.records import (
    JudgmentRecord,
    Manifest,
    MergedRow,
    SegmentRow,
    SystemRow,
)
from polyjudge.rundir.render import aggregate_lines, merged_lines, segment_lines, system_lines

if TYPE_CHECKING:  # numpy is imported where it computes: writing a run's files needs none
    import numpy as np


def _atomic_write(path: Path, lines: Iterable[str]) -> None:
    atomic_write(path, lines)


def adopt_run_dir(root: Path) -> set[str] | None:
    """The polyjudge files of a run directory written before ownership was recorded (0.1.0
    included), or None when ``root`` is not one. Only the file names a run writes count, the store
    only when it has polyjudge's tables, and in ``mtme/`` only the manifest's (or 0.1.0's) names."""
    manifest = root / MANIFEST
    has_store = is_polyjudge_store(root / STORE)
    if not ((root / JUDGMENTS).is_file() or _is_run_manifest(manifest) or has_store):
        return None
    files = {n for n in RUN_OUTPUTS if (root / n).is_file() and not (root / n).is_symlink()}
    if has_store:
        files |= {n for n in STORE_FILES if (root / n).is_file()}
    mtme = root / MTME_DIR
    if mtme.is_dir() and not mtme.is_symlink():
        name = _manifest_mtme_name(manifest)
        for p in mtme.glob("*.score"):
            if (p.name.startswith(f"{name}.") if name else p.name.startswith("polyjudge-")) and not p.is_symlink():
                files.add(f"{MTME_DIR}/{p.name}")
    return files


def _is_run_manifest(path: Path) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and isinstance(data.get("signature"), str) and "protocol" in data


def _manifest_mtme_name(path: Path) -> str | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, ValueError):
        return None
    outputs = data.get("outputs") if isinstance(data, dict) else None
    name = outputs.get("mtme_name") if isinstance(outputs, dict) else None
    return name if isinstance(name, str) and name else None


# json.dumps(obj, ensure_ascii=False), without a new encoder for each of a million lines.
_ENCODE = json.JSONEncoder(ensure_ascii=False).encode
_TEXT = json.encoder.encode_basestring  # how that encoder writes a string (ensure_ascii=False)
_INF = float("inf")


def _value(v: Any) -> str:
    """``_ENCODE(v)``, with the values of most fields of a judgment (None, text, numbers) written at once."""
    if v is None:
        return "null"
    kind = type(v)
    if kind is str:
        return _TEXT(v)
    if kind is int:
        return int.__repr__(v)
    if kind is float:
        if v != v:
            return "NaN"
        if v == _INF or v == -_INF:
            return "Infinity" if v > 0 else "-Infinity"
        return float.__repr__(v)
    return _ENCODE(v)


class JudgmentLines:
    """The parts of a ``judgments.jsonl`` line, for a writer that has the values without a record (engine.result
    writes a million stored answers' lines): ``head + run + judge + middle + tail`` is
    ``_ENCODE(record.to_json())`` of the record holding those values, byte for byte
    (tests/rundir/test_judgment_lines.py). The few names (judges, statuses, errors, finish reasons) are
    encoded once per file."""

    def __init__(self) -> None:
        self._names: dict[str | None, str] = {None: "null"}

    # Any value of a line as the file holds it (the JSON of an annotation, an answer text, a score).
    value = staticmethod(_value)

    def name(self, v: str | None) -> str:
        """A value that repeats across lines (a text kept once encoded; anything else encoded each time)."""
        found = self._names.get(v) if type(v) is str or v is None else None
        if found is None:
            found = _value(v)
            if type(v) is str and len(self._names) < 4096:
                self._names[v] = found
        return found

    @staticmethod
    def head(item_index: Any, system: Any, doc_id: Any, seg_id: Any) -> str:
        """The item's part: the line up to the run index's value."""
        return (f'{{"item_index": {_value(item_index)}, "system": {_value(system)}, "doc_id": {_value(doc_id)}, '
                f'"seg_id": {_value(seg_id)}, "run_index": ')

    @staticmethod
    def run(run_index: Any) -> str:
        return int.__repr__(run_index) if type(run_index) is int else _value(run_index)

    def judge(self, judge: Any) -> str:
        """The judge's part, between the run index and the status."""
        return f', "judge": {self.name(judge)}, '

    def middle(self, status: Any, error: Any, text_json: str, annotation_json: str, score: Any) -> str:
        """The outcome's part: status, error, answer text and annotation (both given encoded) and score."""
        return (f'"status": {self.name(status)}, "error": {"null" if error is None else self.name(error)}, '
                f'"raw_text": {text_json}, "annotation": {annotation_json}, "score": {_value(score)}, ')

    def tail(self, prompt: Any, completion: Any, latency: Any, finish: Any, reasoning: Any) -> str:
        """The answer's usage, latency, finish reason and reasoning, to the line's end (no line break)."""
        line = (f'"usage": {{"prompt_tokens": {prompt if type(prompt) is int else _value(prompt)}, '
                f'"completion_tokens": {completion if type(completion) is int else _value(completion)}}}, '
                f'"latency_s": {_value(latency)}, "finish_reason": {"null" if finish is None else self.name(finish)}')
        if reasoning is not None:
            return f'{line}, "reasoning": {_value(reasoning)}}}'
        return line + "}"


# The keys an item line starts with; an extra key among them takes the slow path (it replaces a value in place).
_ITEM_KEYS = frozenset(("item_index", *CORE_FIELDS))


def item_lines(items: Iterable[Item]) -> Iterator[str]:
    """``items.jsonl``: ``_ENCODE({"item_index": i, **item.to_dict()})`` of each item, byte for byte
    (tests/rundir/test_item_lines.py), its core fields written through :func:`_value` at once."""
    v = _value
    for i, it in enumerate(items):
        extra = it.extra
        if type(it) is not Item or type(extra) is not dict or not _ITEM_KEYS.isdisjoint(extra):
            yield _ENCODE({"item_index": i, **it.to_dict()}) + "\n"
            continue
        line = (f'{{"item_index": {i}, "src": {v(it.src)}, "tgt": {v(it.tgt)}, "ref": {v(it.ref)}, '
                f'"src_lang": {v(it.src_lang)}, "tgt_lang": {v(it.tgt_lang)}, "doc_id": {v(it.doc_id)}, '
                f'"seg_id": {v(it.seg_id)}, "system": {v(it.system)}')
        yield f"{line}, {_ENCODE(extra)[1:]}\n" if extra else line + "}\n"


class _LineWriter(JudgmentLines):
    """``_ENCODE(record.to_json())`` for one judgment record after another (:class:`JudgmentLines`' parts):
    an item's runs share its identifiers, their answer text and often their annotation (engine.result parses
    an answer text once per item), so each is encoded once while it repeats."""

    def __init__(self) -> None:
        super().__init__()
        self._annotation: tuple[Any, str] = (self, "")  # (the last annotation object, its JSON)
        self._text: tuple[str | None, str] = (None, "null")
        self._head: tuple[tuple[Any, ...], str] = ((), "")  # (item index, system, doc, segment) and their JSON

    def __call__(self, r: JudgmentRecord) -> str:
        ann = r.annotation
        if ann is not self._annotation[0]:
            self._annotation = (ann, _value(ann))
        text = r.raw_text
        if text != self._text[0] or type(text) is not type(self._text[0]):
            self._text = (text, _value(text))
        ids = (r.item_index, r.system, r.doc_id, r.seg_id)
        last = self._head[0]
        if not (last and type(ids[0]) is int and ids[0] == last[0] and ids[1] is last[1] and ids[2] is last[2]
                and ids[3] is last[3]):  # an item's runs share its identifiers' objects
            self._head = (ids, self.head(*ids))
        return (self._head[1] + self.run(r.run_index) + self.judge(r.judge)
                + self.middle(r.status, r.error, self._text[1], self._annotation[1], r.score)
                + self.tail(r.prompt_tokens, r.completion_tokens, r.latency_s, r.finish_reason, r.reasoning))


class JudgmentSpool:
    """``judgments.jsonl`` written line by line while a run is summarised, before the run
    directory is written: :func:`write_run` moves it into place instead of formatting
    every judgment again. The file is a hidden temporary one, removed if never used."""

    def __init__(self, directory: str | Path) -> None:
        Path(directory).mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=".judgments-", suffix=".tmp", dir=directory)
        os.chmod(name, 0o666 & ~_umask())  # as open() would create it (mkstemp makes it private)
        self.path = Path(name)
        self._fh: Any = os.fdopen(fd, "w", encoding="utf-8", newline="\n", buffering=WRITE_BUFFER)
        self._cleanup = weakref.finalize(self, _remove, self.path, self._fh)
        self._line = _LineWriter()
        self.count = 0

    def add(self, record: JudgmentRecord | dict[str, Any]) -> None:
        """One judgment: its record, or the record's JSON object (:meth:`JudgmentRecord.to_json`)."""
        self._fh.write((_ENCODE(record) if isinstance(record, dict) else self._line(record)) + "\n")
        self.count += 1

    def add_text(self, text: str, count: int) -> None:
        """``count`` judgments' lines, already formatted (:class:`JudgmentLines`), each ending in a line break."""
        self._fh.write(text)
        self.count += count

    @property
    def lines(self) -> JudgmentLines:
        """The parts of this file's lines, for :meth:`add_text` (one set of encoded names per file)."""
        return self._line

    @property
    def available(self) -> bool:
        """False once moved into a run directory (or discarded)."""
        return self._cleanup.alive

    def move_to(self, target: Path) -> None:
        self._fh.close()
        try:
            os.replace(self.path, target)
        except OSError:  # another file system: copy, then drop the spool
            shutil.copyfile(self.path, target.with_name(target.name + ".tmp"))
            os.replace(target.with_name(target.name + ".tmp"), target)
        self._cleanup.detach()
        _remove(self.path, self._fh)

    def discard(self) -> None:
        self._cleanup()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _remove(path: Path, fh: Any) -> None:
    try:
        fh.close()
    finally:
        path.unlink(missing_ok=True)


@dataclass(slots=True)
class RunContents:
    """Everything a judging run writes, already computed; the writer only formats."""

    manifest: Manifest
    items: Sequence[Item]
    judges: Sequence[str]
    # The judgments in file order (iterated once), or a spool already holding their lines.
    judgments: Iterable[JudgmentRecord] | JudgmentSpool
    segments: Sequence[SegmentRow]
    systems: Sequence[SystemRow]
    mtme_name: str
    merged: Sequence[MergedRow] = ()
    # judge -> aggregator -> one score per item (NaN where unscored); None: not written
    aggregates: Mapping[str, Mapping[str, np.ndarray]] | None = None
    spans: Sequence[SpanSegment] | None = None


def write_manifest(path: str | Path, manifest: Manifest) -> None:
    """Rewrite only ``manifest.json`` (a resumed run whose other outputs are already current)."""
    owned = _owned_run_dir(Path(path))
    owned.check_writable(MANIFEST)
    owned.record([MANIFEST])
    _atomic_write(Path(path) / MANIFEST,
                  [json.dumps(manifest.to_json(), indent=2, ensure_ascii=False, default=str) + "\n"])


def write_settled(path: str | Path, manifest: Manifest, systems: Sequence[SystemRow]) -> None:
    """Rewrite ``systems.tsv`` and ``manifest.json`` of a run judged ``--until-settled`` (written by its last
    round) with the intervals, rank groups and the ``settled`` record; a later full run rewrites both."""
    out = Path(path)
    owned = _owned_run_dir(out)
    for target in (SYSTEMS, MANIFEST):
        owned.check_writable(target)
    owned.record([SYSTEMS, MANIFEST])
    _atomic_write(out / SYSTEMS, system_lines(systems))
    _atomic_write(out / MANIFEST, [json.dumps(manifest.to_json(), indent=2, ensure_ascii=False, default=str) + "\n"])


def _owned_run_dir(out: Path) -> OwnedDir:
    """The run directory's ownership record (claimed now if the caller did not, e.g. the Python API
    writing a fresh directory)."""
    return read_record(out) or claim(out, RUN_KIND, names=RUN_OUTPUTS, adopt=adopt_run_dir, tidy=False)


def output_sizes(path: str | Path) -> dict[str, list[int]]:
    """Size and modification time (ns) of every output file of a run directory but the manifest
    (the store and lock excluded): what a later session compares to know the outputs are still
    the ones it wrote."""
    out = Path(path)
    names = [JUDGMENTS, ITEMS, SEGMENTS, SYSTEMS, *OPTIONAL_OUTPUTS]
    files = [out / n for n in names]
    if (out / MTME_DIR).is_dir():
        files += sorted((out / MTME_DIR).glob("*.score"))
    found: dict[str, list[int]] = {}
    for p in files:
        if p.is_file():
            st = p.stat()
            found[p.relative_to(out).as_posix()] = [st.st_size, st.st_mtime_ns]
    return found


def write_run(path: str | Path, contents: RunContents) -> None:
    """Write every output file of a run directory (format: DEVELOPERS.md)."""
    out = Path(path)
    owned = _owned_run_dir(out)
    name = contents.mtme_name
    mtme_bodies, mtme_skipped = _mtme_outputs(contents)
    mtme_files = [f"{MTME_DIR}/{n}" for n in mtme_bodies]
    targets = [JUDGMENTS, ITEMS, SEGMENTS, SYSTEMS, MANIFEST, *mtme_files]
    targets += [n for n, given in ((MERGED, bool(contents.merged)), (AGGREGATES, contents.aggregates is not None),
                                   (SPANS, contents.spans is not None)) if given]
    for target in targets:  # before anything is written: a foreign file or a symlink stops the write
        owned.check_writable(target)
    owned.record(targets)
    if mtme_files:
        (out / MTME_DIR).mkdir(exist_ok=True)
    written: set[str] = set()
    judgments = contents.judgments
    if isinstance(judgments, JudgmentSpool):
        judgments.move_to(out / JUDGMENTS)
    else:
        _atomic_write(out / JUDGMENTS, (_ENCODE(j.to_json()) + "\n" for j in judgments))
    # The judged texts, so reports can show spans in context without the input file.
    _atomic_write(out / ITEMS, item_lines(contents.items))
    _atomic_write(out / SEGMENTS, segment_lines(contents.segments, contents.judges if len(contents.judges) > 1 else ()))
    if contents.merged:
        _atomic_write(out / MERGED, merged_lines(contents.merged))
        written.add(MERGED)
    if contents.aggregates is not None:
        _atomic_write(out / AGGREGATES, aggregate_lines(contents.items, contents.aggregates))
        written.add(AGGREGATES)
    if contents.spans is not None:
        _write_spans(out / SPANS, contents.spans)
        written.add(SPANS)
    stale = [n for n in OPTIONAL_OUTPUTS if n not in written]
    for optional in stale:
        owned.remove(optional)
    _atomic_write(out / SYSTEMS, system_lines(contents.systems))
    for file_name, lines in mtme_bodies.items():  # mt-metrics-eval's layout (rundir.mtme), complete or none
        _atomic_write(out / MTME_DIR / file_name, lines)
    # an earlier run's scores (another protocol, an older name, or now incomplete): polyjudge's only,
    # the user's stay
    stale += [n for n in owned.files if n.startswith(f"{MTME_DIR}/") and n not in mtme_files]
    for old in stale:
        owned.remove(old)
    owned.forget(stale)
    manifest = contents.manifest
    manifest.outputs = {"mtme_name": name, **({"mtme_skipped": mtme_skipped} if mtme_skipped else {})}
    _atomic_write(out / MANIFEST, [json.dumps(manifest.to_json(), indent=2, ensure_ascii=False, default=str) + "\n"])


def _mtme_outputs(contents: RunContents) -> tuple[dict[str, list[str]], str | None]:
    """The run's mt-metrics-eval files (file name -> lines), or none and the reason: mt-metrics-eval
    refuses a metric file with a missing score, so an incomplete run writes none (``export --to mtme``
    says the same, exit 2)."""
    name = contents.mtme_name
    scores = [seg.score for seg in contents.segments]
    try:
        check_metric_name(name)
        grid = mtme_grid(contents.items, scores)
    except InputError as exc:
        return {}, str(exc)
    problems = missing(grid, name)
    if problems:
        return {}, "; ".join(problems[:5])
    return mtme_files(grid, name), None


def _write_spans(target: Path, spans: Sequence[SpanSegment]) -> None:
    """``spans.tsv`` through a fresh temporary file (never a symlink), renamed into place."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}-", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        write_task2_tsv(tmp, spans)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)


# --------------------------------------------------------------------------- reading

@dataclass(slots=True)
class RunScores:
    """One judge's scores on a run's items: ``scores[i, r]`` is run ``r`` of item ``i``
    (NaN where the run failed, gave no score or is missing)."""

    judge: str
    systems: list[str]
    doc_ids: list[str]
    seg_ids: list[str]
    scores: np.ndarray


def _read_tsv(path: Path) -> list[tuple[int, dict[str, str]]]:
    """(line, column -> cell) of a run's TSV file; tabs only split cells (no quoting).

    Read through :mod:`textio`, so a damaged byte is an InputError with its line
    and column; a row with more or fewer cells than the header is one too.
    """
    rows: list[tuple[int, dict[str, str]]] = []
    header: list[str] | None = None
    for n, text in textio.iter_lines(path):
        if header is None:
            header = text.split("\t")
            continue
        if not text:
            continue
        cells = text.split("\t")
        if len(cells) != len(header):
            raise InputError(f"expected {len(header)} fields, found {len(cells)}", path=str(path), line=n)
        rows.append((n, dict(zip(header, cells))))
    return rows


def _read_json(path: Path) -> Any:
    return parse_json(textio.read_text(path), path=str(path))


@dataclass
class RunDir:
    """A run directory opened for reading (any format version, 0.1.0 included).

    Files are read when first asked for and kept; a broken line raises
    :class:`InputError` with the file, line and field, never skipped silently.
    """

    path: Path
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, path: str | Path) -> RunDir:
        root = Path(path)
        if not root.is_dir():
            raise InputError("not a run directory", path=str(root))
        if not (root / JUDGMENTS).is_file():
            raise InputError(f"not a polyjudge run directory (no {JUDGMENTS})", path=str(root))
        return cls(root)

    @staticmethod
    def is_run_dir(path: str | Path) -> bool:
        p = Path(path)
        return p.is_dir() and (p / JUDGMENTS).is_file()

    @property
    def name(self) -> str:
        return self.path.resolve().name

    # -- manifest ------------------------------------------------------------------
    @cached_property
    def manifest(self) -> Manifest:
        """The manifest; an empty one (format 0 defaults) when the file is absent."""
        p = self.path / MANIFEST
        if not p.exists():
            return Manifest(format_version=0)
        return Manifest.from_json(_read_json(p), path=str(p))

    @property
    def has_manifest(self) -> bool:
        return (self.path / MANIFEST).exists()

    @property
    def format_version(self) -> int:
        return self.manifest.format_version

    def extra_json(self, name: str) -> Any | None:
        """A study output another command placed in the run directory (e.g. ``metaeval.json``)."""
        p = self.path / name
        if not p.is_file():
            return None
        return _read_json(p)

    # -- judgments -----------------------------------------------------------------
    def iter_judgments(self) -> Iterator[JudgmentRecord]:
        """Every judgment, in file order (read again on each call; nothing is kept)."""
        p = self.path / JUDGMENTS
        for lineno, rec in iter_jsonl(p):
            yield JudgmentRecord.from_json(rec, path=str(p), line=lineno)

    def iter_judgment_dicts(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """The raw JSON objects of ``judgments.jsonl`` with line numbers, for readers that
        keep fields this version does not type (e.g. texts older writers stored inline)."""
        return iter_jsonl(self.path / JUDGMENTS)

    @property
    def judgments_path(self) -> str:
        """For error messages only; read through :meth:`iter_judgments`."""
        return str(self.path / JUDGMENTS)

    @cached_property
    def judgments(self) -> list[JudgmentRecord]:
        return list(self.iter_judgments())

    @property
    def judges(self) -> list[str]:
        """Judges named in the manifest, then any others seen in the judgments, first-seen order."""
        names = self.manifest.judge_names
        for j in self.judgments:
            if j.judge not in names:
                names.append(j.judge)
        return names

    @property
    def n_runs(self) -> int:
        judgments = self.judgments
        top = max((j.run_index for j in judgments), default=-1)
        # Every run index below the highest was recorded for some item (failures included),
        # so an index beyond the number of judgments can only come from a damaged file.
        if top >= len(judgments):
            raise InputError(f"run_index {top} but only {len(judgments)} judgments: the file is damaged",
                             path=self.judgments_path, field="run_index")
        return top + 1

    # -- items and segments --------------------------------------------------------
    @cached_property
    def items(self) -> list[Item]:
        """The judged items in input order: ``items.jsonl`` where present, else rebuilt
        from the identifiers in ``judgments.jsonl`` and ``segments.tsv`` (texts unknown)."""
        p = self.path / ITEMS
        if p.exists():
            out: list[Item] = []
            for lineno, rec in iter_jsonl(p):
                core = {k: (None if rec.get(k) is None else str(rec[k])) for k in CORE_FIELDS}
                extra = {k: v for k, v in rec.items() if k not in CORE_FIELDS and k != "item_index"}
                out.append(Item(src=core.pop("src") or "", tgt=core.pop("tgt") or "", **core, extra=extra,
                                origin=f"{p}:{lineno}"))
            return out
        ids: dict[int, JudgmentRecord] = {}
        for jr in self.judgments:
            ids.setdefault(jr.item_index, jr)
        rows = self.segment_rows
        top = max(ids, default=-1)
        if top >= max(len(rows), len(self.judgments)):  # every item has a row or a judgment
            raise InputError(f"item_index {top} but only {len(self.judgments)} judgments and {len(rows)} "
                             f"segment rows: the file is damaged", path=self.judgments_path, field="item_index")
        n = max(len(rows), top + 1)
        items = []
        for i in range(n):
            j: JudgmentRecord | None = ids.get(i)
            r = rows[i] if i < len(rows) else None
            items.append(Item(src="", tgt="", system=(j.system if j else None) or (r.system if r else None),
                              doc_id=(j.doc_id if j else None) or (r.doc_id if r else None),
                              seg_id=(j.seg_id if j else None) or (r.seg_id if r else None)))
        return items

    @property
    def has_items_file(self) -> bool:
        return (self.path / ITEMS).exists()

    @cached_property
    def segment_rows(self) -> list[SegmentRow]:
        """``segments.tsv`` (empty when absent): final score per item, input order."""
        p = self.path / SEGMENTS
        if not p.exists():
            return []
        rows = _read_tsv(p)
        if rows and "score" not in rows[0][1]:
            raise InputError("missing column", path=str(p), field="score")
        return [_segment_row(r, path=str(p), line=line) for line, r in rows]

    def segment_table(self) -> list[dict[str, str]]:
        """``segments.tsv`` as raw string rows (every column, including ones older writers added)."""
        p = self.path / SEGMENTS
        return [r for _, r in _read_tsv(p)] if p.exists() else []

    def system_rows(self) -> list[SystemRow]:
        p = self.path / SYSTEMS
        if not p.exists():
            return []
        rows = _read_tsv(p)
        if rows and "system" not in rows[0][1]:
            raise InputError("missing column", path=str(p), field="system")
        return [SystemRow(r["system"], _float_cell(r.get("score")),
                          _count_cell(r.get("n_segments"), path=str(p), line=line, column="n_segments"),
                          _count_cell(r.get("n_unscored"), path=str(p), line=line, column="n_unscored"),
                          _float_cell(r.get("low")), _float_cell(r.get("high")),
                          _count_cell(r["group"], path=str(p), line=line, column="group") if r.get("group") else None)
                for line, r in rows]

    # -- scores --------------------------------------------------------------------
    def run_scores(self, judge: str) -> RunScores:
        """Items x runs matrix of one judge's single-run scores (NaN where not ok)."""
        n_items = len(self.items)
        n_runs = max(self.n_runs, 1)
        import numpy as np

        m = np.full((n_items, n_runs), np.nan)
        for j in self.judgments:
            if j.judge == judge and j.ok and j.score is not None and j.item_index < n_items:
                m[j.item_index, j.run_index] = j.score
        its = self.items
        return RunScores(judge, [it.system or "" for it in its], [it.doc_id or "" for it in its],
                         [it.seg_id if it.seg_id is not None else str(i) for i, it in enumerate(its)], m)

    def run_score_matrices(self) -> dict[str, RunScores]:
        return {j: self.run_scores(j) for j in self.judges}

    def final_scores(self, judge: str | None = None) -> np.ndarray:
        """Per-item final score from ``segments.tsv``: the panel's (``judge=None``) or one
        judge's column (NaN where unscored; all NaN when the file is absent)."""
        import numpy as np

        rows = self.segment_rows
        if not rows:
            return np.full(len(self.items), np.nan)
        if judge is None or (len(self.judges) == 1 and judge == self.judges[0]):
            vals = [r.score for r in rows]
        else:
            if judge not in rows[0].judge_scores:
                raise InputError(f"no scores of judge '{plain(judge)}' (judges: {plain(', '.join(self.judges), 300)})",
                                 path=str(self.path / SEGMENTS), field=plain(f"score:{judge}"))
            vals = [r.judge_scores.get(judge) for r in rows]
        return np.array([np.nan if v is None else v for v in vals], dtype=float)

    @cached_property
    def _aggregates(self) -> dict[str, dict[str, np.ndarray]]:
        import numpy as np

        p = self.path / AGGREGATES
        if not p.exists():
            return {}
        rows = _read_tsv(p)
        if not rows:
            return {}
        if "judge" not in rows[0][1]:
            raise InputError("missing column", path=str(p), field="judge")
        names = [c for c in rows[0][1] if c not in ("judge", "system", "doc_id", "seg_id")]
        out: dict[str, dict[str, list[float]]] = {}
        for _, r in rows:
            table = out.setdefault(r["judge"], {n: [] for n in names})
            for n in names:
                v = _float_cell(r.get(n))
                table[n].append(np.nan if v is None else v)
        return {j: {n: np.asarray(v, dtype=float) for n, v in t.items()} for j, t in out.items()}

    def aggregate_tables(self) -> dict[str, dict[str, np.ndarray]]:
        """``aggregates.tsv``: judge -> aggregator -> one score per item (NaN where unscored); empty when absent."""
        return self._aggregates

    def aggregate_names(self) -> list[str]:
        """Aggregators stored side by side in ``aggregates.tsv`` (empty for single-run runs)."""
        tables = self._aggregates
        return list(next(iter(tables.values()))) if tables else []

    def aggregate_scores(self, judge: str, aggregator: str) -> np.ndarray:
        """One judge's per-item score under one aggregator, as written at judge time."""
        table = self._aggregates.get(judge)
        if table is None or aggregator not in table:
            stored = plain(", ".join(self.aggregate_names()) or "none", 300)
            raise InputError(f"no '{plain(aggregator)}' scores of judge '{plain(judge)}' in {AGGREGATES} "
                             f"(stored: {stored})",
                             path=str(self.path), field=plain(aggregator))
        return table[aggregator]

    # -- spans and merged annotations ----------------------------------------------
    def merged_rows(self) -> list[MergedRow]:
        p = self.path / MERGED
        if not p.exists():
            return []
        out = []
        for lineno, d in iter_jsonl(p):
            if not isinstance(d.get("item_index"), int):
                raise InputError("must be an integer", path=str(p), line=lineno, field="item_index")
            out.append(MergedRow(d["item_index"], str(d.get("judge")), d.get("system"), d.get("seg_id"),
                                 d.get("annotation")))
        return out

    def span_segments(self) -> tuple[list[SpanSegment], list[str]]:
        """``spans.tsv`` (merged spans of a span protocol, WMT25 task-2 layout) and warnings."""
        p = self.path / SPANS
        if not p.exists():
            raise InputError(f"no {SPANS} (was the run made with a span protocol?)", path=str(self.path))
        return read_task2_tsv(p)

    # -- the resume store ------------------------------------------------------------
    @property
    def store_path(self) -> Path:
        return self.path / STORE


def _segment_row(r: dict[str, str], *, path: str, line: int) -> SegmentRow:
    """One ``segments.tsv`` row, strictly: a damaged number names its line and column."""

    def count(col: str) -> int:
        return _count_cell(r.get(col), path=path, line=line, column=col)

    judge_scores = {k[len("score:"):]: _score_cell(v, path=path, line=line, column=plain(k))
                    for k, v in r.items() if k.startswith("score:")}
    return SegmentRow(
        system=r.get("system") or None, doc_id=r.get("doc_id") or None, seg_id=r.get("seg_id") or None,
        src_lang=r.get("src_lang") or None, tgt_lang=r.get("tgt_lang") or None,
        score=_score_cell(r.get("score"), path=path, line=line, column="score"),
        runs_ok=count("runs_ok"), runs_failed=count("runs_failed"), judge_scores=judge_scores)


def _score_cell(v: str | None, *, path: str, line: int, column: str) -> float | None:
    """A score cell of a run's TSV: empty (or None/nan) is unscored; anything else must be a finite number."""
    if v is None or v in ("", "None") or v.lower() == "nan":
        return None
    try:
        f = float(v)
    except ValueError:
        raise InputError(f"not a number: {textio.short(v)}", path=path, line=line, field=column) from None
    if math.isinf(f):
        raise InputError(f"infinite score {textio.short(v)}", path=path, line=line, field=column)
    return f


def _count_cell(v: str | None, *, path: str, line: int, column: str) -> int:
    """A count cell (empty is 0); anything but ASCII digits is a damaged file."""
    v = v or "0"
    if not (v.isascii() and v.isdigit()) or len(v) > 18:
        raise InputError(f"not a count: {textio.short(v)}", path=path, line=line, field=column)
    return int(v)


def _float_cell(v: str | None) -> float | None:
    if v is None or v == "" or v == "None":
        return None
    try:
        f = float(v)
    except ValueError:
        return None
    return None if math.isnan(f) else f


__all__ = ["AGGREGATES", "ITEMS", "JUDGMENTS", "MANIFEST", "MERGED", "SEGMENTS", "SPANS", "STORE", "SYSTEMS",
           "JudgmentSpool", "RunContents", "RunDir", "RunScores", "output_sizes", "write_manifest", "write_run",
           "write_settled"]
