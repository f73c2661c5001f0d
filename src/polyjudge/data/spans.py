"""Error spans: the one span type, and the WMT25 task-2 TSV layout that holds them.

A span is a range of code points in a hypothesis (end exclusive) with a
severity; an omission without a location has ``start = end = None``. Spans
are written to and read from the task-2 TSV (the layout of the WMT25
shared task files), the layout a run directory's ``spans.tsv`` uses too.
Scoring lives in :mod:`polyjudge.metaeval.spans.scoring`; the report reads the same
type.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polyjudge.data.errors import InputError
from polyjudge.data.textio import iter_lines, short

MISSING = "missing"
NO_ERROR = "no-error"
# severity -> counter row of the span scorer (0 major, 1 minor); None means "skip this span"
SEVERITY_ROW: dict[str, int | None] = {"major": 0, "critical": 0, "minor": 1, "undecided": None}
TASK2_FIELDS = ("doc_id", "segment_id", "source_lang", "target_lang", "set_id", "system_id",
                "source_segment", "hypothesis_segment", "reference_segment", "domain_name",
                "method", "start_indices", "end_indices", "error_types")


@dataclass(frozen=True, slots=True)
class Span:
    """One error span in code-point offsets of the hypothesis, end exclusive.

    ``start``/``end`` are None for an omission without a location ("missing").
    ``category`` and ``description`` are kept where the source has them (judge
    annotations, MQM files); the scorer ignores them.
    """

    start: int | None
    end: int | None
    severity: str  # "major" | "minor" | "critical" | "undecided"
    category: str = field(default="", compare=False)
    description: str = field(default="", compare=False)

    @property
    def missing(self) -> bool:
        return self.start is None


@dataclass(slots=True)
class SpanSegment:
    """The spans of one hypothesis plus the identifiers used to pair gold and prediction.

    Identifier fields left as None match anything (a run directory knows no
    language pair; the gold does).
    """

    system: str | None
    doc_id: str | None
    seg_id: str | None
    spans: tuple[Span, ...]
    lp: str | None = None  # "en-de"
    hypothesis: str | None = None
    length: int | None = None  # code points; defaults to len(hypothesis)
    set_id: str | None = None
    domain: str | None = None
    method: str | None = None
    source: str | None = None
    reference: str | None = None
    # Where the segment was read (file, 1-based line) and the field holding its span
    # bounds, so that a bad span is reported where it is written.
    origin: str | None = field(default=None, compare=False)
    line: int | None = field(default=None, compare=False)
    bounds_field: str = field(default="end", compare=False)

    @property
    def hyp_length(self) -> int | None:
        if self.length is not None:
            return self.length
        return None if self.hypothesis is None else len(self.hypothesis)


def normalise_severity(value: object, *, where: str = "") -> str:
    """Lower-cased severity; raises InputError on one the scorer does not know."""
    sev = str(value).strip().lower()
    if sev not in SEVERITY_ROW:
        raise InputError(f"unknown severity {short(value)}{where}; expected major, minor, critical "
                         "or undecided", field="severity")
    return sev


def check_span(span: Span, *, length: int | None = None, path: str | None = None, line: int | None = None,
               start_field: str = "start", end_field: str = "end") -> None:
    """Refuse a span no hypothesis can have: a negative start, an end before its start,
    or (with ``length``, the hypothesis length in code points) an end past the text.

    The official scorer would silently read such spans as Python slices (empty,
    counted from the end, or cut short); here they are input errors.
    """
    if span.start is None:
        return
    end = span.start if span.end is None else span.end
    if span.start < 0:
        raise InputError(f"span start {span.start} is negative", path=path, line=line, field=start_field)
    if end < span.start:
        raise InputError(f"span end {end} is before its start {span.start}", path=path, line=line,
                         field=end_field)
    if length is not None and end > length:
        raise InputError(f"span {span.start}-{end} ends past the hypothesis ({length} characters)",
                         path=path, line=line, field=end_field)


def _bound_int(text: str, *, path: str, line: int, name: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InputError(f"span bounds must be integers or 'missing', got {short(text)}", path=path, line=line,
                         field=name) from None


def _task2_errors(starts: str, ends: str, types: str, *, path: str, line: int,
                  warnings: list[str]) -> tuple[Span, ...]:
    """The spans of one task-2 row, read as the official scorer reads valid rows.

    Rows it would read wrongly are errors here: unequal numbers of start, end
    and type entries (it cuts them to the shortest), negative starts and ends
    before starts (it reads them as Python slices).
    """
    if types == NO_ERROR:
        return ()
    a_list, b_list, t_list = starts.split(" "), ends.split(" "), types.split(" ")
    if not len(a_list) == len(b_list) == len(t_list):
        bad = "end_indices" if len(b_list) != len(a_list) else "error_types"
        raise InputError(f"{len(a_list)} start, {len(b_list)} end and {len(t_list)} error type entries; "
                         "a row needs one of each per span", path=path, line=line, field=bad)
    out = []
    for a, b, t in zip(a_list, b_list, t_list):
        if not a or not b or not t:
            # The official scorer drops every span of such a row (with a warning).
            warnings.append(f"{path}:{line}: empty start/end/type entry; row read as having no spans")
            return ()
        if a == MISSING:
            out.append(Span(None, None, t.lower()))
            continue
        try:
            sev = normalise_severity(t)
        except InputError as exc:
            raise InputError(exc.reason, path=path, line=line, field="error_types") from None
        span = Span(_bound_int(a, path=path, line=line, name="start_indices"),
                    _bound_int(b, path=path, line=line, name="end_indices"), sev)
        check_span(span, path=path, line=line, start_field="start_indices", end_field="end_indices")
        out.append(span)
    return tuple(out)


TASK2_NEEDED = ("doc_id", "segment_id", "source_lang", "target_lang", "system_id",
                "start_indices", "end_indices", "error_types")


def read_task2_tsv(path: str | Path) -> tuple[list[SpanSegment], list[str]]:
    """Read a WMT25 task-2 TSV (gold or predictions). Returns segments and warnings.

    Read through :mod:`polyjudge.data.textio` (BOM, CRLF and bad bytes handled)
    with the quoting rules of the task's pandas-based scorer.
    """
    path = Path(path)
    name = str(path)
    csv.field_size_limit(2**31 - 1)
    warnings: list[str] = []
    segs: list[SpanSegment] = []
    # line ends kept: a CR LF inside a quoted text stays one; CRLF line ends are the csv module's own
    reader = csv.reader((text for _, text in iter_lines(path, keep_ends=True)), delimiter="\t")
    try:
        header = next(reader, None)
        if header is None:
            raise InputError("empty file: expected a header line", path=name, line=1)
        lacking = [c for c in TASK2_NEEDED if c not in header]
        if lacking:
            raise InputError(f"missing column(s) {', '.join(lacking)}", path=name, line=1)
        col = {c: header.index(c) for c in reversed(header)}  # the first of repeated names
        for cells in reader:
            line = reader.line_num
            if not cells:
                continue
            if len(cells) != len(header):
                raise InputError(f"expected {len(header)} tab-separated fields, got {len(cells)}", path=name,
                                 line=line)
            row = {c: cells[i] for c, i in col.items()}
            spans = _task2_errors(row["start_indices"], row["end_indices"], row["error_types"],
                                  path=name, line=line, warnings=warnings)
            segs.append(SpanSegment(
                system=row["system_id"], doc_id=row["doc_id"], seg_id=row["segment_id"],
                spans=spans, lp=f"{row['source_lang']}-{row['target_lang']}",
                hypothesis=row.get("hypothesis_segment"), set_id=row.get("set_id"),
                domain=row.get("domain_name"), method=row.get("method"),
                source=row.get("source_segment"), reference=row.get("reference_segment"),
                origin=name, line=line, bounds_field="end_indices"))
    except csv.Error as exc:
        raise InputError(f"malformed TSV: {exc}", path=name, line=reader.line_num or None) from None
    return segs, warnings


def write_task2_tsv(path: str | Path, segments: Iterable[SpanSegment], *,
                    set_id: str = "official", method: str = "") -> None:
    """Write segments in the task-2 layout (spans as space-separated lists).

    A segment without spans is written as ``-1 / -1 / no-error``, a span
    without location as ``missing``, as in the task's data files.
    """
    with Path(path).open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, delimiter="\t", lineterminator="\n")
        # csv quotes a field holding a tab, a quote or a LF, not one holding a lone CR, which the task's
        # pandas reader and ours take for a line end: such a row is written with every field quoted
        quoted = csv.writer(fh, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_ALL)
        w.writerow(TASK2_FIELDS)
        for s in segments:
            src_l, _, tgt_l = (s.lp or "-").partition("-")
            if s.spans:
                starts = " ".join(MISSING if x.start is None else str(x.start) for x in s.spans)
                ends = " ".join(MISSING if x.end is None else str(x.end) for x in s.spans)
                types = " ".join(x.severity for x in s.spans)
            else:
                starts, ends, types = "-1", "-1", NO_ERROR
            row = [s.doc_id or "", s.seg_id or "", src_l, tgt_l, s.set_id or set_id, s.system or "",
                   s.source or "", s.hypothesis or "", s.reference or "", s.domain or "", s.method or method,
                   starts, ends, types]
            (quoted if any("\r" in cell for cell in row) else w).writerow(row)


def _annotation_bound(value: Any, *, path: str, line: int | None, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise InputError(f"span {name} must be an integer, got {short(value)}", path=path, line=line,
                         field=name)
    try:
        return int(value)
    except ValueError:
        raise InputError(f"span {name} must be an integer, got {short(value)}", path=path, line=line,
                         field=name) from None


def spans_from_annotation(annotation: Any, where: str = "", *, line: int | None = None) -> tuple[Span, ...]:
    """Spans of a polyjudge span annotation (``{"spans": [{start, end, severity}, ...]}``).

    ``where`` (a file) and ``line`` locate the annotation in error messages.
    """
    if not isinstance(annotation, dict) or not isinstance(annotation.get("spans"), list):
        raise InputError("annotation has no 'spans' list (was this run made with a span protocol?)",
                         path=where, line=line, field="annotation")
    out = []
    for sp in annotation["spans"]:
        if not isinstance(sp, dict):
            raise InputError(f"each span must be an object, got {type(sp).__name__}", path=where, line=line,
                             field="annotation")
        s = _annotation_bound(sp.get("start"), path=where, line=line, name="start")
        e = _annotation_bound(sp.get("end"), path=where, line=line, name="end")
        try:
            sev = normalise_severity(sp.get("severity"))
        except InputError as exc:
            raise InputError(exc.reason, path=where, line=line, field="severity") from None
        if s is None:
            out.append(Span(None, None, sev))
        elif e is None:
            raise InputError(f"span starts at {s} but has no end", path=where, line=line, field="end")
        else:
            out.append(Span(s, e, sev))
    return tuple(out)
