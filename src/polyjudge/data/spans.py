"""Error spans: the one span type, and the WMT25 task-2 TSV layout that holds them.

A span is a range of code points in a hypothesis (end exclusive) with a
severity; an omission without a location has ``start = end = None``. Spans
are written to and read from the task-2 TSV (the layout of the WMT25
shared task files), the layout a run directory's ``spans.tsv`` uses too.
Scoring lives in :mod:`polyjudge.metaeval.spans`; the report reads the same
type.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polyjudge.data.errors import InputError

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
    origin: str | None = field(default=None, compare=False)

    @property
    def hyp_length(self) -> int | None:
        if self.length is not None:
            return self.length
        return None if self.hypothesis is None else len(self.hypothesis)



def normalise_severity(value: object, *, where: str = "") -> str:
    """Lower-cased severity; raises InputError on one the scorer does not know."""
    sev = str(value).strip().lower()
    if sev not in SEVERITY_ROW:
        raise InputError(f"unknown severity {value!r}{where}; expected major, minor, critical "
                         "or undecided", field="severity")
    return sev



def _task2_errors(starts: str, ends: str, types: str, where: str,
                  warnings: list[str]) -> tuple[Span, ...]:
    """The spans of one task-2 row, read as the official scorer reads them."""
    if types == NO_ERROR:
        return ()
    out = []
    for a, b, t in zip(starts.split(" "), ends.split(" "), types.split(" ")):
        if not a or not b or not t:
            # The official scorer drops every span of such a row (with a warning).
            warnings.append(f"{where}: empty start/end/type entry; row read as having no spans")
            return ()
        if a == MISSING:
            out.append(Span(None, None, t.lower()))
            continue
        sev = normalise_severity(t, where=f" at {where}")
        try:
            out.append(Span(int(a), int(b), sev))
        except ValueError:
            raise InputError(f"span bounds must be integers or 'missing', got {a!r}/{b!r}",
                             path=where, field="start_indices") from None
    return tuple(out)


def read_task2_tsv(path: str | Path) -> tuple[list[SpanSegment], list[str]]:
    """Read a WMT25 task-2 TSV (gold or predictions). Returns segments and warnings."""
    path = Path(path)
    if not path.is_file():
        raise InputError("file not found", path=str(path))
    csv.field_size_limit(2**31 - 1)
    warnings: list[str] = []
    segs: list[SpanSegment] = []
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh, delimiter="\t")
        header = reader.fieldnames or []
        need = ("doc_id", "segment_id", "source_lang", "target_lang", "system_id",
                "start_indices", "end_indices", "error_types")
        lacking = [c for c in need if c not in header]
        if lacking:
            raise InputError(f"missing column(s) {', '.join(lacking)}", path=str(path), line=1)
        for row in reader:
            line = reader.line_num
            where = f"{path}:{line}"
            if None in row or any(v is None for v in row.values()):
                raise InputError("wrong number of fields", path=str(path), line=line)
            spans = _task2_errors(row["start_indices"], row["end_indices"], row["error_types"],
                                  where, warnings)
            segs.append(SpanSegment(
                system=row["system_id"], doc_id=row["doc_id"], seg_id=row["segment_id"],
                spans=spans, lp=f"{row['source_lang']}-{row['target_lang']}",
                hypothesis=row.get("hypothesis_segment"), set_id=row.get("set_id"),
                domain=row.get("domain_name"), method=row.get("method"),
                source=row.get("source_segment"), reference=row.get("reference_segment"),
                origin=where))
    return segs, warnings


def write_task2_tsv(path: str | Path, segments: Iterable[SpanSegment], *,
                    set_id: str = "official", method: str = "") -> None:
    """Write segments in the task-2 layout (spans as space-separated lists).

    A segment without spans is written as ``-1 / -1 / no-error``, a span
    without location as ``missing``, as in the task's data files.
    """
    with Path(path).open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, delimiter="\t", lineterminator="\n")
        w.writerow(TASK2_FIELDS)
        for s in segments:
            src_l, _, tgt_l = (s.lp or "-").partition("-")
            if s.spans:
                starts = " ".join(MISSING if x.start is None else str(x.start) for x in s.spans)
                ends = " ".join(MISSING if x.end is None else str(x.end) for x in s.spans)
                types = " ".join(x.severity for x in s.spans)
            else:
                starts, ends, types = "-1", "-1", NO_ERROR
            w.writerow([s.doc_id or "", s.seg_id or "", src_l, tgt_l, s.set_id or set_id,
                        s.system or "", s.source or "", s.hypothesis or "", s.reference or "",
                        s.domain or "", s.method or method, starts, ends, types])


def spans_from_annotation(annotation: Any, where: str = "") -> tuple[Span, ...]:
    """Spans of a polyjudge span annotation (``{"spans": [{start, end, severity}, ...]}``)."""
    if not isinstance(annotation, dict) or not isinstance(annotation.get("spans"), list):
        raise InputError("annotation has no 'spans' list (was this run made with a span protocol?)",
                         path=where, field="annotation")
    out = []
    for sp in annotation["spans"]:
        s, e = sp.get("start"), sp.get("end")
        sev = normalise_severity(sp.get("severity"), where=f" at {where}")
        out.append(Span(None, None, sev) if s is None else Span(int(s), int(e), sev))
    return tuple(out)


