"""Readers that turn score files into ScoreMatrix objects (higher = better).

Each format is one entry of :data:`SCORE_FORMAT_REGISTRY` (a reader and the rule
``auto`` asks, :func:`register_score_format`); ``polyjudge score-formats`` lists
them and the commands' format choices are read from it. Built-in formats:

* mt-metrics-eval layout: ``DIR/human-scores/LP.NAME.LEVEL.score`` and
  ``DIR/metric-scores/LP/NAME-REF.LEVEL.score``; lines ``system<TAB>score`` in
  item order per system, ``None`` for missing.
* polyjudge run directories, read through :class:`~polyjudge.rundir.RunDir`:
  the final segment scores (empty = unscored), or one judge's, one run
  aggregator's (stored in ``aggregates.tsv``, or computed from the single
  runs when not stored) or one run's scores.
* plain TSV / JSONL with ``system``, ``seg_id`` and ``score`` fields, ``doc_id``
  optional (the WMT ``*.avg_seg_scores.tsv`` files, whose score column is
  ``mqm_avg_score``, are accepted too).
* the WMT MQM annotation TSV, scored by ``polyjudge.aggregate.mqm``
  (error points are negated so that higher is better; its ``doc`` column,
  the document name, is the doc_id, as in runs made from these files).
* system-level-only scores (format ``sys``, :func:`read_system_scores`): an
  mt-metrics-eval ``*.sys.score`` file, a TSV with ``system`` and a score
  column but no ``seg_id`` (a ``systems.tsv``, the pairwise study's
  ``systems-bt.tsv``), or a directory that is not a run directory and holds
  one ``*.sys.score`` file (the pairwise study's output). They can only be
  compared with human *system* scores (:mod:`polyjudge.metaeval.system_level`).

Reading happens in two steps so that every file of one comparison keys its
items the same way: :func:`read_score_table` gives the rows as read
(:class:`ScoreTable`), :func:`resolve_item_key` picks one item key for all of
them (``seg``: seg_id alone; ``doc-seg``: doc_id + seg_id, needed when seg_id
restarts in every document), and :meth:`ScoreTable.matrix` builds the matrix.
Text files are read through :mod:`polyjudge.data.textio` (UTF-8 with or
without BOM, CRLF, bad bytes located).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from polyjudge.aggregate.runs import AGGREGATORS, get_aggregator
from polyjudge.analysis.runs import aggregate_rows
from polyjudge.data.columns import PAIR_COLUMNS, split_pair
from polyjudge.data.errors import InputError
from polyjudge.data.formats import Detector, SourceProbe, detect_format
from polyjudge.data.readers import iter_jsonl
from polyjudge.data.testsets import TestSet
from polyjudge.data.textio import iter_lines, short
from polyjudge.metaeval.matrices import ScoreMatrix
from polyjudge.registry import Registry, UnknownNameError
from polyjudge.rundir import AGGREGATES, SEGMENTS, RunDir

ITEM_KEYS = ("auto", "seg", "doc-seg")
# Between doc_id and seg_id in a doc-seg item key (U+241F, a symbol no id is likely to hold).
DOC_SEG_SEPARATOR = "\u241f"


def _float(text: str, *, path: Path, line: int, field_name: str) -> float | None:
    t = text.strip()
    if t == "" or t == "None" or t.lower() == "nan":
        return None
    try:
        v = float(t)
    except ValueError:
        raise InputError(f"not a number: {short(t)}", path=str(path), line=line, field=field_name) from None
    if math.isinf(v):
        raise InputError(f"infinite score {short(t)}", path=str(path), line=line, field=field_name)
    return v


def _columns(header: Sequence[str], limit: int = 20) -> str:
    """The header's column names for a message, each and the list cut short."""
    names = ", ".join(short(h, 40) for h in header[:limit])
    return names + (f", … ({len(header)} columns)" if len(header) > limit else "")


# --------------------------------------------------------------------------- score tables

Row = tuple[str, str | None, str, float | None, int | None]
"""(system, doc_id or None, seg_id, score or None, line or None) as read from a file."""


@dataclass(frozen=True)
class ScoreTable:
    """The scores of one file as read, before items are keyed.

    ``has_doc_id``: at least one row names a document. mt-metrics-eval files,
    whose items are positions, never do; they come as a ready ``positional``
    matrix instead of rows.
    """

    source: str
    rows: tuple[Row, ...]
    has_doc_id: bool
    positional: ScoreMatrix | None = None
    # each row's language pair ("en-de"; None where the row names none), () when no row names one
    lps: tuple[str | None, ...] = ()

    def pairs(self) -> tuple[str, ...]:
        """The language pairs the rows name, sorted (none for a file without pair columns)."""
        return tuple(sorted({lp for lp in self.lps if lp}))

    def only(self, lps: Collection[str], *, tag: bool = False) -> ScoreTable:
        """The rows of the pairs ``lps``; a table that names no pair is returned whole (its items are
        matched by their ids). ``tag`` puts each row's pair in front of its seg_id, so that pooled
        pairs whose ids repeat stay apart. A row without a pair, in a table whose others name one,
        is an input error: it belongs to no selection."""
        if not self.pairs():
            return self
        lost = next((row for row, lp in zip(self.rows, self.lps, strict=True) if not lp), None)
        if lost is not None:
            raise InputError("this row names no language pair, while others do (lp, or src_lang and tgt_lang)",
                             path=self.source, line=lost[4], field="lp")
        keep = [(self._tagged(row, lp) if tag else row, lp) for row, lp in zip(self.rows, self.lps, strict=True)
                if lp in lps]
        return replace(self, rows=tuple(r for r, _ in keep), lps=tuple(lp for _, lp in keep))

    @staticmethod
    def _tagged(row: Row, lp: str | None) -> Row:
        system, doc, seg, score, line = row
        return system, doc, f"{lp}{DOC_SEG_SEPARATOR}{seg}", score, line

    def seg_ids_repeat_across_docs(self) -> bool:
        """True when one seg_id is found in two documents (ids restart per document)."""
        doc_of: dict[str, str] = {}
        for _, doc, seg, _, _ in self.rows:
            if doc is not None and doc_of.setdefault(seg, doc) != doc:
                return True
        return False

    def matrix(self, item_key: str = "seg") -> ScoreMatrix:
        """Systems x items, items keyed by ``seg`` (seg_id) or ``doc-seg`` (doc_id + seg_id).

        A repeated (system, item) is an input error naming both lines.
        """
        if item_key not in ("seg", "doc-seg"):
            raise ValueError(f"item_key must be 'seg' or 'doc-seg', not {item_key!r}")
        if item_key == "doc-seg" and not self.has_doc_id:
            raise InputError("items are keyed by doc_id + seg_id, but this file has no doc_id",
                             path=self.source, field="doc_id")
        if self.positional is not None:
            return self.positional
        seen: dict[tuple[str, str], int | None] = {}
        triples: list[tuple[str, str, float | None]] = []
        for system, doc, seg, score, line in self.rows:
            item = seg if item_key == "seg" else f"{doc or ''}{DOC_SEG_SEPARATOR}{seg}"
            if (system, item) in seen:
                first = seen[(system, item)]
                where = f" (first at line {first})" if first is not None else ""
                hint = ("; seg_id repeats across documents: key items by doc_id + seg_id "
                        "(--item-key doc-seg)" if item_key == "seg" and self.seg_ids_repeat_across_docs() else "")
                label = seg if item_key == "seg" else f"{doc or ''}/{seg}"
                raise InputError(f"duplicate score for system {short(system)}, item {short(label)}{where}{hint}",
                                 path=self.source, line=line)
            seen[(system, item)] = line
            triples.append((system, item, score))
        return ScoreMatrix.from_rows(triples, source=self.source)


def resolve_item_key(tables: Sequence[ScoreTable], requested: str = "auto") -> str:
    """The one item key every table of a comparison uses: ``seg`` or ``doc-seg``.

    ``auto`` keys by doc_id + seg_id when some file has doc ids and its seg_ids
    repeat across documents, else by seg_id. With ``doc-seg`` every file needs a
    doc_id; the first one without is an input error naming it.
    """
    if requested not in ITEM_KEYS:
        raise InputError(f"unknown item key {requested!r} (choose from {', '.join(ITEM_KEYS)})",
                         field="item-key")
    if requested == "seg":
        return "seg"
    reason = "--item-key doc-seg"
    if requested == "auto":
        repeating = [t for t in tables if t.has_doc_id and t.seg_ids_repeat_across_docs()]
        if not repeating:
            return "seg"
        reason = f"seg_id repeats across documents in {short(repeating[0].source, 200)}"
    for t in tables:
        if not t.has_doc_id:
            raise InputError(f"items must be keyed by doc_id + seg_id ({reason}), but this file has no "
                             "doc_id; give every file a doc_id, or key by seg_id (--item-key seg)",
                             path=t.source, field="doc_id")
    return "doc-seg"


# --------------------------------------------------------------------------- language pairs

POOLED = "pooled: "
"""How a table names pairs pooled on purpose: ``pooled: en-de+zh-en``."""
LP_COLUMNS = ("src_lang", "tgt_lang", *PAIR_COLUMNS)


def pooled_name(lps: Sequence[str]) -> str:
    """The name of a table over several pairs pooled on purpose (``pool_lps``)."""
    return POOLED + "+".join(lps)


def row_lp(row: Mapping[str, Any], *, path: str | Path, line: int | None) -> str | None:
    """A row's language pair: its ``src_lang`` and ``tgt_lang``, else its pair column (``lp``, ``langs``)."""
    src, tgt = row.get("src_lang"), row.get("tgt_lang")
    if src not in (None, "") and tgt not in (None, ""):
        return f"{str(src).strip()}-{str(tgt).strip()}"
    for column in PAIR_COLUMNS:
        if row.get(column) not in (None, ""):
            a, b = split_pair(row[column], path=str(path), line=line, field=column)
            return f"{a}-{b}"
    return None


def lend_pairs(tables: Sequence[ScoreTable]) -> list[ScoreTable]:
    """Tables that name no pair, with each row's pair taken from the tables that do: the pair of the
    same system and doc_id + seg_id, else of the same system and seg_id (when that is one pair).
    When the tables that name pairs name one pair only, a table naming none is of that pair, every row
    (a WMT MQM file of the run's pair scores systems and segments the run may not hold). Otherwise a row
    found in no such table, or in several pairs, belongs to no selection and is left out of the borrowing
    table (it has no cell to compare with; a file naming its own pairs keeps its rows)."""
    donors = [t for t in tables if t.pairs()]
    if not donors or all(t.pairs() or not t.rows for t in tables):
        return list(tables)
    full: dict[tuple[str, str, str], set[str]] = {}
    bare: dict[tuple[str, str], set[str]] = {}
    for t in donors:
        for (system, doc, seg, _, _), lp in zip(t.rows, t.lps, strict=True):
            if lp:
                full.setdefault((system, doc or "", seg), set()).add(lp)
                bare.setdefault((system, seg), set()).add(lp)

    def pair(system: str, doc: str | None, seg: str) -> str | None:
        found = full.get((system, doc or "", seg), set())
        if len(found) != 1:
            found = bare.get((system, seg), set())
        return next(iter(found)) if len(found) == 1 else None

    named = {lp for t in donors for lp in t.pairs()}
    only = next(iter(named)) if len(named) == 1 else None
    out = []
    for t in tables:
        if t.pairs():
            lps = t.lps
        elif only is not None:  # the inputs hold one pair: a file naming none is of that pair, all its rows
            lps = (only,) * len(t.rows)
        else:
            lps = tuple(pair(system, doc, seg) for system, doc, seg, _, _ in t.rows)
        if lps is t.lps or not any(lps):
            out.append(t)
            continue
        kept = [(row, lp) for row, lp in zip(t.rows, lps, strict=True) if lp]
        out.append(replace(t, rows=tuple(r for r, _ in kept), lps=tuple(lp for _, lp in kept)))
    return out


def select_pairs(tables: Sequence[ScoreTable], lps: Sequence[str] = (), *,
                 pool: bool = False) -> list[tuple[str | None, list[ScoreTable]]]:
    """The language pairs of a comparison and each one's tables: ``(pair, tables)`` per pair.

    The pairs are those the first table's rows name (the human scores: a run's items, a file's ``lp`` or
    ``src_lang``/``tgt_lang`` columns; the others' when it names none); a table that names none takes
    its items' pairs from those that do (:func:`lend_pairs`). ``lps`` selects some of them, in its order
    (default: all, sorted), and a pair that is not there is an input error naming those that are.
    With ``pool`` the selected pairs are one comparison, named ``pooled: A+B``. When no table names a
    pair, the one comparison is named ``lps[0]`` (None: unnamed), the pair of items that carry none.
    """
    tables = lend_pairs(tables)
    present = list(tables[0].pairs()) if tables and tables[0].pairs() else sorted(
        {lp for t in tables for lp in t.pairs()})
    if not present:
        if len(lps) > 1:
            raise InputError(f"{len(lps)} language pairs given, but no input names the pairs of its items "
                             "(an lp column, src_lang and tgt_lang, or a run's items)", field="lp")
        return [(lps[0] if lps else None, list(tables))]
    missing = [lp for lp in dict.fromkeys(lps) if lp not in present]
    if missing:
        raise InputError(f"language pair {', '.join(short(m) for m in missing)} is not in the inputs "
                         f"(they hold {', '.join(present)})", field="lp")
    chosen = list(dict.fromkeys(lps)) or present
    if pool and len(chosen) > 1:
        tag = all(t.pairs() for t in tables)  # seg_ids may repeat across pairs: keep them apart
        return [(pooled_name(chosen), [t.only(chosen, tag=tag) for t in tables])]
    return [(lp, [t.only((lp,)) for t in tables]) for lp in chosen]


# --------------------------------------------------------------------------- mt-metrics-eval

def read_mtme_score_file(path: str | Path) -> dict[str, list[float | None]]:
    """``system score`` lines -> system -> scores in item order."""
    p = Path(path)
    out: dict[str, list[float | None]] = {}
    for n, line in iter_lines(p):
        if not line.strip():
            continue
        parts = line.split("\t") if "\t" in line else line.split()
        if len(parts) != 2:
            raise InputError(f"expected 'system<TAB>score', got {len(parts)} field(s)", path=str(p), line=n)
        out.setdefault(parts[0].strip(), []).append(
            _float(parts[1], path=p, line=n, field_name="score"))
    return out


def read_mtme_matrix(path: str | Path) -> ScoreMatrix:
    p = Path(path)
    return ScoreMatrix.from_lists(read_mtme_score_file(p), source=str(p))


def read_mtme_table(path: str | Path) -> ScoreTable:
    """An mt-metrics-eval score file as a table: items are positions ("0", "1", ...), no doc_id."""
    return ScoreTable(str(path), (), has_doc_id=False, positional=read_mtme_matrix(path))


@dataclass
class MtmeSet:
    """One language pair of an mt-metrics-eval style directory."""

    lp: str
    human: dict[str, dict[str, Path]] = field(default_factory=dict)  # name -> level -> file
    metrics: dict[str, dict[str, Path]] = field(default_factory=dict)  # "NAME-REF" -> level -> file


def scan_mtme(root: str | Path, lp: str, *, require_metrics: bool = True) -> MtmeSet:
    """Find human and metric score files for ``lp`` under ``root`` (``require_metrics``: having none
    is an input error, as when the stored metrics are all there is to compare)."""
    r = Path(root)
    if not r.is_dir():
        raise InputError("not a directory", path=str(r))
    testset = TestSet(r, lp)
    found = MtmeSet(lp, testset.human_score_files(), testset.metric_score_files())
    if not found.human:
        held = ", ".join(TestSet.scored_pairs(r)) or "none"
        raise InputError(f"no human scores for {lp} (expected human-scores/{lp}.NAME.seg.score; pairs with "
                         f"human scores: {held})", path=str(r), field="lp")
    if require_metrics and not found.metrics:
        raise InputError(f"no metric scores for {lp} (expected metric-scores/{lp}/NAME-REF.seg.score)",
                         path=str(r))
    return found


def metric_refs(name: str) -> tuple[str, set[str]]:
    """'COMET-refA' -> ('COMET', {'refA'}); 'Kiwi-src' -> ('Kiwi', set()) (reference-free)."""
    if "-" not in name:
        return name, set()
    base, refs = name.rsplit("-", 1)
    return base, set() if refs == "src" else set(refs.split("."))


# --------------------------------------------------------------------------- tables

def _score_column(fields: Sequence[str], path: Path, line: int = 1) -> str:
    if "score" in fields:
        return "score"
    cands = [f for f in fields if f.endswith("score")]
    if len(cands) == 1:
        return cands[0]
    raise InputError(f"no 'score' column (columns: {_columns(fields)})", path=str(path), line=line)


def _json_id(value: Any, *, path: Path, line: int, name: str) -> str:
    """An identifier from JSON: a string or a number (as text)."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise InputError(f"must be a string or a number, got {type(value).__name__}", path=str(path), line=line,
                     field=name)


def _json_score(value: Any, *, path: Path, line: int, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(f"not a number: {value!r}", path=str(path), line=line, field=name)
    if isinstance(value, int | float):
        if math.isinf(value):
            raise InputError(f"infinite score {value!r}", path=str(path), line=line, field=name)
        return None if math.isnan(value) else float(value)
    if isinstance(value, str):
        return _float(value, path=path, line=line, field_name=name)
    raise InputError(f"not a number: {type(value).__name__}", path=str(path), line=line, field=name)


def _jsonl_table(p: Path) -> ScoreTable:
    rows: list[Row] = []
    raters: list[str | None] = []
    lps: list[str | None] = []
    has_doc = False
    for n, rec in iter_jsonl(p, user_text=True):
        for f in ("system", "seg_id"):
            if f not in rec:
                raise InputError("missing field", path=str(p), line=n, field=f)
        col = _score_column(list(rec), p, n)
        doc = rec.get("doc_id")
        doc_id = None if doc is None else _json_id(doc, path=p, line=n, name="doc_id")
        has_doc = has_doc or bool(doc_id)
        rows.append((_json_id(rec["system"], path=p, line=n, name="system"), doc_id,
                     _json_id(rec["seg_id"], path=p, line=n, name="seg_id"),
                     _json_score(rec.get(col), path=p, line=n, name=col), n))
        raters.append(_json_rater(rec, path=p, line=n))
        lps.append(row_lp(rec, path=p, line=n))
    merged = rater_means(rows, raters, str(p))
    if len(merged) < len(rows):  # a segment's raters share its row's pair: the first row's, by line
        lp_of_line = {row[4]: lp for row, lp in zip(rows, lps, strict=True)}
        lps = [lp_of_line[row[4]] for row in merged]
    return ScoreTable(str(p), merged, has_doc, lps=tuple(lps) if any(lps) else ())


def _json_rater(rec: dict[str, Any], *, path: Path, line: int) -> str | None:
    value = rec.get("annotator", rec.get("rater"))
    return None if value is None else _json_id(value, path=path, line=line, name="annotator")


def rater_means(rows: list[Row], raters: Sequence[str | None], source: str) -> tuple[Row, ...]:
    """Rows of several raters (``annotate export --to esa-jsonl``: one line per annotator and segment)
    as one row per (system, doc_id, seg_id): the mean of its raters' scores (as WMT and mt-metrics-eval
    score a segment rated by several people; a rater without a score is left out, all without: None).
    Rows without a rater pass as they are; one rater's two rows of a segment are an InputError."""
    if all(r is None for r in raters):
        return tuple(rows)
    groups: dict[tuple[str, str | None, str], list[tuple[Row, str | None]]] = {}
    for row, rater in zip(rows, raters, strict=True):
        group = groups.setdefault((row[0], row[1], row[2]), [])
        twice = next((r for r, who in group if who == rater), None)
        if twice is not None:
            raise InputError(f"duplicate score of rater {short(rater)} for system {short(row[0])}, segment "
                             f"{short(row[2])} (first at line {twice[4]})", path=source, line=row[4])
        group.append((row, rater))
    out: list[Row] = []
    for (system, doc, seg), group in groups.items():
        scores = [r[3] for r, _ in group if r[3] is not None]
        out.append((system, doc, seg, sum(scores) / len(scores) if scores else None, group[0][0][4]))
    return tuple(out)


def _tsv_table(p: Path) -> ScoreTable:
    """Tab-separated (whitespace when a line has no tab), with a header row."""
    def split(line: str, width: int) -> list[str]:
        parts = line.split("\t")
        return line.split() if len(parts) < width else parts

    return _delimited_table(p, "TSV", split, lambda head: head.split("\t") if "\t" in head else head.split())


def _csv_table(p: Path) -> ScoreTable:
    """Comma-separated with a header row (RFC 4180 quoting)."""
    import csv

    def split(line: str, width: int) -> list[str]:
        return next(csv.reader([line]), [])

    return _delimited_table(p, "CSV", split, lambda head: split(head, 0))


def _delimited_table(p: Path, kind: str, split: Callable[[str, int], list[str]],
                     split_header: Callable[[str], list[str]]) -> ScoreTable:
    """A table with system, seg_id and a score column (doc_id optional); messages say it was read as ``kind``
    (a comma-separated file read as TSV would otherwise only report a missing column)."""
    lines = iter_lines(p)
    first = next(lines, None)
    if first is None:
        raise InputError(f"empty file (read as {kind})", path=str(p))
    _, head = first
    header = [h.strip() for h in split_header(head)]
    for f in ("system", "seg_id"):
        if f not in header:
            raise InputError(f"missing column (read as {kind}; columns: {_columns(header)}); give "
                             f"--human-format/--metric-format if it is another format", path=str(p), line=1,
                             field=f)
    col = _score_column(header, p)
    ix = {h: k for k, h in enumerate(header)}
    rows: list[Row] = []
    lps: list[str | None] = []
    lp_columns = [c for c in LP_COLUMNS if c in ix]
    has_doc = False
    for n, line in lines:
        if not line.strip():
            continue
        parts = split(line, len(header))
        if len(parts) < len(header):
            raise InputError(f"expected {len(header)} fields, got {len(parts)} (read as {kind})", path=str(p),
                             line=n)
        doc = parts[ix["doc_id"]] if "doc_id" in ix else None
        has_doc = has_doc or bool(doc)
        rows.append((parts[ix["system"]], doc, parts[ix["seg_id"]],
                     _float(parts[ix[col]], path=p, line=n, field_name=col), n))
        if lp_columns:
            lps.append(row_lp({c: parts[ix[c]].strip() for c in lp_columns}, path=p, line=n))
    return ScoreTable(str(p), tuple(rows), has_doc, lps=tuple(lps) if any(lps) else ())


def read_table(path: str | Path, *, use_doc_id: bool = False) -> ScoreMatrix:
    """TSV (header row) or JSONL with system, seg_id, score (doc_id optional).

    Items are keyed by ``seg_id`` (by ``doc_id``+``seg_id`` with ``use_doc_id``).
    """
    p = Path(path)
    if p.is_dir():
        return read_run_dir(p)
    table = (_jsonl_table(p) if p.suffix in (".jsonl", ".json") else _csv_table(p) if p.suffix.lower() == ".csv"
             else _tsv_table(p))
    return table.matrix("doc-seg" if use_doc_id else "seg")


RunDirs = dict[str, RunDir]
"""Run directories already opened, by path: several metrics read from one run parse it once."""


def open_run_dir(path: str | Path, opened: RunDirs | None = None) -> RunDir:
    """``RunDir.open(path)``, reusing the one in ``opened`` (and keeping it there) when given."""
    if opened is None:
        return RunDir.open(path)
    key = str(Path(path).resolve())
    if key not in opened:
        opened[key] = RunDir.open(path)
    return opened[key]


def _run_table(path: str | Path, *, judge: str | None = None, aggregator: str | None = None,
               run: int | None = None, opened: RunDirs | None = None) -> ScoreTable:
    rd = open_run_dir(path, opened)
    rows = rd.segment_rows
    if not rows:
        raise InputError(f"no segment scores in the run directory ({SEGMENTS} missing or empty)",
                         path=str(rd.path))
    if aggregator is not None and run is not None:
        raise InputError("choose an aggregator or a run index, not both", path=str(rd.path))
    if aggregator is not None:
        values, source = _aggregator_values(rd, _one_judge(rd, judge), aggregator)
    elif run is not None:
        values = _single_run(rd, _one_judge(rd, judge), run)
        source = rd.judgments_path
    else:
        values = rd.final_scores(judge)
        source = str(rd.path / SEGMENTS)
    if len(values) != len(rows):
        raise InputError(f"{len(values)} scores for {len(rows)} segments in {SEGMENTS}", path=source)
    # segments.tsv lines (header = line 1) name a duplicate; other sources hold no ids of their own
    lines: list[int | None] = (list(range(2, len(rows) + 2)) if source == str(rd.path / SEGMENTS)
                               else [None] * len(rows))
    table = tuple((r.system or "", r.doc_id, r.seg_id or "", None if math.isnan(v) else float(v), line)
                  for r, v, line in zip(rows, values, lines))
    lps = tuple(f"{r.src_lang}-{r.tgt_lang}" if r.src_lang and r.tgt_lang else None for r in rows)
    return ScoreTable(source, table, any(r.doc_id for r in rows), lps=lps if any(lps) else ())


def read_run_dir(path: str | Path, *, judge: str | None = None, aggregator: str | None = None,
                 run: int | None = None, item_key: str = "auto") -> ScoreMatrix:
    """Segment scores of a polyjudge run directory, keyed like its ``segments.tsv``.

    By default the run's final score (the panel's, over every judge). ``judge``
    picks one judge's own final score; ``aggregator`` a run aggregator (the
    column stored in ``aggregates.tsv``, or, for a registered aggregator that
    was not stored, computed from the single runs with the run's ``min_runs``),
    and ``run`` the scores of a single run index (0-based), so that
    aggregators and single runs can be compared with the final score.
    ``aggregator`` and ``run`` need a judge when the run has several.
    ``item_key`` as in :func:`resolve_item_key`.
    """
    table = _run_table(path, judge=judge, aggregator=aggregator, run=run)
    return table.matrix(resolve_item_key([table], item_key))


def _one_judge(rd: RunDir, judge: str | None) -> str:
    """The judge whose aggregated or single-run scores are read: the given one, or the only one."""
    judges = rd.judges
    if judge is not None:
        if judge not in judges:
            raise InputError(f"no judge '{judge}' in the run (judges: {', '.join(judges) or 'none'})",
                             path=str(rd.path), field="judge")
        return judge
    if len(judges) != 1:
        raise InputError(f"the run has {len(judges)} judges ({', '.join(judges) or 'none'}); choose one",
                         path=str(rd.path), field="judge")
    return judges[0]


def _aggregator_values(rd: RunDir, judge: str, name: str) -> tuple[np.ndarray, str]:
    """One judge's per-item scores under aggregator ``name`` and where they come from.

    The stored column when there is one (under this name or another name of the
    same aggregator, e.g. ``mean`` for ``mean-2s``): exactly what the run
    wrote. Otherwise a registered aggregator is applied to the single runs in
    ``judgments.jsonl`` (items with fewer ok runs than the run's ``min_runs``
    stay unscored, as at judge time).
    """
    stored = rd.aggregate_names()
    if name in stored:
        return rd.aggregate_scores(judge, name), str(rd.path / AGGREGATES)
    try:
        fn = get_aggregator(name)
    except UnknownNameError:
        listed = ", ".join(stored) or "none"
        raise InputError(f"unknown aggregator '{short(name)}': not in {AGGREGATES} (stored: {listed}) and not "
                         f"registered (available: {', '.join(AGGREGATORS.names())})", path=str(rd.path),
                         field="aggregator") from None
    for other in stored:
        try:
            same = get_aggregator(other) is fn
        except (KeyError, ImportError):  # stored by a plugin that is not installed here
            same = False
        if same:
            return rd.aggregate_scores(judge, other), str(rd.path / AGGREGATES)
    runs = rd.run_scores(judge).scores
    values = aggregate_rows(runs, name, min_runs=max(1, rd.manifest.config.min_runs))
    return values, rd.judgments_path


def _single_run(rd: RunDir, judge: str, run: int) -> np.ndarray:
    """One run index's scores of one judge (NaN where that run failed or gave no score)."""
    n = rd.n_runs
    if isinstance(run, bool) or not isinstance(run, int) or not 0 <= run < n:
        raise InputError(f"run index must be one of 0..{n - 1} (the run has {n} runs), got {run!r}",
                         path=str(rd.path), field="run")
    column: np.ndarray = rd.run_scores(judge).scores[:, run]
    return column


def _mqm_table(path: str | Path) -> ScoreTable:
    try:
        from polyjudge.aggregate.mqm import human_mqm_scores
    except ImportError as exc:  # pragma: no cover - depends on the tree
        raise InputError(f"the WMT MQM scorer (polyjudge.aggregate.mqm) is unavailable: {exc}",
                         path=str(path)) from None
    scores = human_mqm_scores(path)
    rows = tuple((s.system, s.doc or None, str(s.seg_id), -float(s.points), None) for s in scores.segments)
    return ScoreTable(str(path), rows, any(s.doc for s in scores.segments))


def read_wmt_mqm(path: str | Path) -> ScoreMatrix:
    """Human MQM from a WMT annotation TSV, negated (higher = better)."""
    table = _mqm_table(path)
    return table.matrix(resolve_item_key([table]))


# --------------------------------------------------------------------------- the score-format registry

@dataclass(frozen=True, slots=True)
class RunChoice:
    """Which scores of a run directory to read (see :func:`read_run_dir`); formats that are not
    run directories refuse a choice. ``opened`` shares opened run directories between reads."""

    judge: str | None = None
    aggregator: str | None = None
    run: int | None = None
    opened: RunDirs | None = None

    @property
    def chooses(self) -> bool:
        return self.judge is not None or self.aggregator is not None or self.run is not None


TableReader = Callable[[Path, RunChoice], ScoreTable]


@dataclass(frozen=True, slots=True)
class ScoreFormat:
    """A registered score format: ``--human-format``/``--metric-format`` name, reader and detection.

    ``read`` gives segment scores as a :class:`ScoreTable`; None marks a format of system
    scores only (``sys``). ``detect`` is the rule ``auto`` asks (its first docstring line is
    listed); a ``fallback`` format takes any file no rule claimed. ``run_choice``: the format
    reads a judge's, an aggregator's or a single run's scores (run directories).
    """

    name: str
    summary: str
    read: TableReader | None
    detect: Detector | None = None
    fallback: bool = False
    run_choice: bool = False

    @property
    def levels(self) -> tuple[str, ...]:
        return ("seg",) if self.read is not None else ("sys",)


SCORE_FORMAT_REGISTRY: Registry[ScoreFormat] = Registry("score format", entry_point_group="polyjudge.score_formats")


def register_score_format(name: str, *, detect: Detector | None = None, fallback: bool = False,
                          run_choice: bool = False,
                          summary: str | None = None) -> Callable[[TableReader], TableReader]:
    """Decorator: register ``read(path, choice) -> ScoreTable`` as score format ``name``.

    The summary (default: the first docstring line) is its listing line; ``detect`` lets
    ``auto`` choose it (built-in rules are asked first, in registration order).
    """

    def deco(fn: TableReader) -> TableReader:
        doc = (fn.__doc__ or "").strip()
        text = summary if summary is not None else (doc.splitlines()[0] if doc else "")
        SCORE_FORMAT_REGISTRY.add(name, ScoreFormat(name, text, fn, detect, fallback, run_choice))
        return fn

    return deco


def _is_sys_dir(probe: SourceProbe) -> bool:
    return probe.is_dir and not RunDir.is_run_dir(probe.path) and bool(_sys_score_files(probe.path))


def _is_run_source(probe: SourceProbe) -> bool:
    """a directory (a run directory, or any folder without *.sys.score files)"""
    return probe.is_dir and not _is_sys_dir(probe)


def _is_mtme_file(probe: SourceProbe) -> bool:
    """a file named *.score (but not *.sys.score)"""
    return not probe.is_dir and probe.name.endswith(".score") and not probe.name.endswith(".sys.score")


def _is_tab_file(probe: SourceProbe) -> bool:
    """A file that is neither mt-metrics-eval's nor JSON by name: its header tells."""
    return not probe.is_dir and not probe.name.endswith(".score") and not probe.is_json


def _is_mqm_tsv(probe: SourceProbe) -> bool:
    """a TSV whose header has system, seg_id, rater and severity"""
    return _is_tab_file(probe) and {"system", "seg_id", "rater", "severity"} <= probe.columns


def _is_jsonl_file(probe: SourceProbe) -> bool:
    """a file named *.jsonl or *.json"""
    return not probe.is_dir and probe.is_json


def _is_system_source(probe: SourceProbe) -> bool:
    """a *.sys.score file, a folder of one, or a TSV with system and *score columns but no seg_id"""
    if _is_sys_dir(probe) or (not probe.is_dir and probe.name.endswith(".sys.score")):
        return True
    cols = probe.columns if _is_tab_file(probe) else frozenset()
    return "system" in cols and "seg_id" not in cols and any(c.endswith("score") for c in cols)


@register_score_format("run", detect=_is_run_source, run_choice=True)
def _read_run_format(path: Path, choice: RunChoice) -> ScoreTable:
    """A polyjudge run directory: final, one judge's, one aggregator's or one run's segment scores."""
    return _run_table(path, judge=choice.judge, aggregator=choice.aggregator, run=choice.run,
                      opened=choice.opened)


@register_score_format("mtme", detect=_is_mtme_file)
def _read_mtme_format(path: Path, choice: RunChoice) -> ScoreTable:
    """An mt-metrics-eval *.seg.score file (system<TAB>score lines; items are positions)."""
    return read_mtme_table(path)


@register_score_format("mqm", detect=_is_mqm_tsv)
def _read_mqm_format(path: Path, choice: RunChoice) -> ScoreTable:
    """The WMT MQM annotation TSV, scored and negated (higher = better)."""
    return _mqm_table(path)


@register_score_format("tsv", fallback=True)
def _read_tsv_format(path: Path, choice: RunChoice) -> ScoreTable:
    """A TSV with system, seg_id and a score column (doc_id optional)."""
    if path.is_dir():
        return _run_table(path)
    return _jsonl_table(path) if path.suffix in (".jsonl", ".json") else _tsv_table(path)


def _is_csv_file(probe: SourceProbe) -> bool:
    """a file named *.csv"""
    return not probe.is_dir and probe.name.lower().endswith(".csv")


@register_score_format("csv", detect=_is_csv_file)
def _read_csv_format(path: Path, choice: RunChoice) -> ScoreTable:
    """Comma-separated values with system, seg_id and a score column (doc_id optional)."""
    return _csv_table(path)


@register_score_format("jsonl", detect=_is_jsonl_file)
def _read_jsonl_format(path: Path, choice: RunChoice) -> ScoreTable:
    """JSON lines with system, seg_id and a score field (doc_id optional)."""
    return _run_table(path) if path.is_dir() else _jsonl_table(path)


SCORE_FORMAT_REGISTRY.add("sys", ScoreFormat(
    "sys", "System scores only: a *.sys.score file, a systems TSV, or a folder of one *.sys.score file.",
    None, _is_system_source))


def score_format_names() -> tuple[str, ...]:
    """``--human-format``/``--metric-format`` choices: ``auto`` and every registered format."""
    return ("auto", *SCORE_FORMAT_REGISTRY.names())


def segment_format_names() -> tuple[str, ...]:
    """The choices that read segment scores (``auto`` and every format but the system-only ones)."""
    return ("auto", *(name for name, fmt in SCORE_FORMAT_REGISTRY.items() if fmt.read is not None))


def __getattr__(name: str) -> tuple[str, ...]:
    # FORMATS and SEGMENT_FORMATS are read from the registry when first asked for, so plugin
    # formats (whose modules may import this one) are included.
    if name == "FORMATS":
        return score_format_names()
    if name == "SEGMENT_FORMATS":
        return segment_format_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def sniff_format(path: str | Path) -> str:
    """The format ``auto`` takes ``path`` for: the first registered rule that matches (tsv last)."""
    found = detect_format(Path(path), SCORE_FORMAT_REGISTRY.items())
    if found is None:  # only when a plugin replaced every fallback: no built-in leaves this
        raise InputError("cannot tell the score format; name it (--human-format/--metric-format)", path=str(path))
    return found


# --------------------------------------------------------------------------- system-level only

def _sys_score_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.sys.score"))


def is_system_level(path: str | Path, fmt: str = "auto") -> bool:
    """Whether a score source holds system scores only (format ``sys``)."""
    if fmt == "auto":
        if not Path(path).exists():
            return False
        fmt = sniff_format(path)
    return fmt in SCORE_FORMAT_REGISTRY and SCORE_FORMAT_REGISTRY.get(fmt).read is None


def read_system_scores(path: str | Path) -> dict[str, float]:
    """System -> score from a system-level-only source (see the module docstring); systems
    whose score is empty or ``None`` are left out. Higher = better is the caller's contract."""
    p = Path(path)
    if p.is_dir():
        files = _sys_score_files(p)
        if len(files) != 1:
            raise InputError(f"expected one *.sys.score file in the directory, found {len(files)}", path=str(p))
        p = files[0]
    if p.name.endswith(".score"):
        out: dict[str, float] = {}
        for system, values in read_mtme_score_file(p).items():
            if len(values) != 1:
                raise InputError(f"system {short(system)} has {len(values)} scores; a .sys.score file holds one "
                                 "per system", path=str(p), field="score")
            if values[0] is not None:
                out[system] = values[0]
        return out
    lines = iter_lines(p)
    first = next(lines, None)
    if first is None:
        raise InputError("empty file", path=str(p))
    header = [h.strip() for h in first[1].split("\t")]
    if "system" not in header:
        raise InputError(f"missing column (columns: {_columns(header)})", path=str(p), line=1, field="system")
    col = _score_column(header, p)
    ix = {h: k for k, h in enumerate(header)}
    scores: dict[str, float] = {}
    seen: dict[str, int] = {}
    for n, line in lines:
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) < len(header):
            raise InputError(f"expected {len(header)} fields, got {len(parts)}", path=str(p), line=n)
        system = parts[ix["system"]].strip()
        if system in seen:
            raise InputError(f"system {short(system)} listed twice (first at line {seen[system]})", path=str(p),
                             line=n, field="system")
        seen[system] = n
        value = _float(parts[ix[col]], path=p, line=n, field_name=col)
        if value is not None:
            scores[system] = value
    return scores


def read_score_table(path: str | Path, fmt: str = "auto", *, judge: str | None = None,
                     aggregator: str | None = None, run: int | None = None,
                     opened: RunDirs | None = None) -> ScoreTable:
    """Any supported source as a :class:`ScoreTable` (items not keyed yet).

    ``judge``, ``aggregator`` and ``run`` choose which scores of a run
    directory are read (see :func:`read_run_dir`); other formats hold one
    score per segment and refuse them. ``opened`` shares opened run
    directories between calls.
    """
    name = sniff_format(path) if fmt == "auto" else fmt
    entry = SCORE_FORMAT_REGISTRY.get(name) if name in SCORE_FORMAT_REGISTRY else None
    choice = RunChoice(judge, aggregator, run, opened)
    if choice.chooses and (entry is None or not entry.run_choice):
        raise InputError(f"judge, aggregator and run choose scores of a run directory, not of a {name} file",
                         path=str(path))
    if entry is None:
        raise InputError(f"unknown score format {name!r} ({', '.join(score_format_names())})", path=str(path))
    if entry.read is None:
        raise InputError("holds system scores only; it can be compared with human system scores "
                         "(meta-eval does so), not read as segment scores", path=str(path))
    return entry.read(Path(path), choice)


def read_scores(path: str | Path, fmt: str = "auto", *, judge: str | None = None,
                aggregator: str | None = None, run: int | None = None, item_key: str = "auto") -> ScoreMatrix:
    """Any supported source -> ScoreMatrix (higher = better is the caller's contract).

    Items are keyed as :func:`resolve_item_key` decides for this file alone;
    to compare files, read them with :func:`read_score_tables` instead.
    """
    table = read_score_table(path, fmt, judge=judge, aggregator=aggregator, run=run)
    return table.matrix(resolve_item_key([table], item_key))


@dataclass(frozen=True, slots=True)
class ScoreSource:
    """Where one metric's scores are: a file or run directory in ``fmt``, and for a run
    directory which scores (see :func:`read_run_dir`; ``run`` is 0-based)."""

    path: str | Path
    fmt: str = "auto"
    judge: str | None = None
    aggregator: str | None = None
    run: int | None = None

    def table(self, opened: RunDirs | None = None) -> ScoreTable:
        return read_score_table(self.path, self.fmt, judge=self.judge, aggregator=self.aggregator, run=self.run,
                                opened=opened)


def read_score_tables(sources: Iterable[tuple[str | Path, str] | ScoreSource],
                      item_key: str = "auto", *, opened: RunDirs | None = None) -> list[ScoreMatrix]:
    """Several sources ((path, format) pairs or :class:`ScoreSource`) keyed alike: one matrix
    per source, in order. Each run directory is read once (``opened``: a cache to share)."""
    opened = {} if opened is None else opened
    tables = [src.table(opened) if isinstance(src, ScoreSource) else read_score_table(*src, opened=opened)
              for src in sources]
    key = resolve_item_key(tables, item_key)
    return [t.matrix(key) for t in tables]


__all__ = ["DOC_SEG_SEPARATOR", "ITEM_KEYS", "POOLED", "SCORE_FORMAT_REGISTRY", "lend_pairs", "pooled_name",
           "row_lp", "select_pairs", "MtmeSet", "RunChoice", "RunDirs", "ScoreFormat",
           "ScoreSource", "ScoreTable", "TableReader", "register_score_format", "score_format_names",
           "segment_format_names",
           "is_system_level", "metric_refs", "open_run_dir", "read_system_scores", "read_mtme_matrix",
           "read_mtme_score_file", "read_mtme_table", "read_run_dir", "read_score_table", "read_score_tables",
           "read_scores", "read_table", "read_wmt_mqm", "resolve_item_key", "scan_mtme", "sniff_format"]
