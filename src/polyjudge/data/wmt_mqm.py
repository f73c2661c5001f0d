"""Reader for the WMT expert MQM annotation TSV (Freitag et al. 2021).

The files (google/wmt-mqm-human-evaluation) have one row per annotated error,
a header ``system doc doc_id seg_id rater source target category severity
[comment]`` and no CSV quoting: fields are split on tabs only and quote
characters are literal text. The error span is marked inline in ``target``
(or, for omissions, in ``source``) with ``<v>...</v>``. A row with severity
``No-error`` says that the rater found nothing in that segment.

Column meanings, as found in the TED files: ``doc`` names the document
(``talk.1``), ``doc_id`` is the segment's 1-based position inside that
document and ``seg_id`` is a global segment number. Items built by
:func:`wmt_mqm_items` therefore use ``doc`` as their ``doc_id`` (so document
context groups the talk) and keep the TSV's ``doc_id`` in ``extra["doc_pos"]``.

Quirks of the real files, handled here and counted in :class:`MQMReadReport`:
an unclosed ``<v>`` (span runs to the end of the text), a ``</v>`` without
opening tag (span starts at 0), several ``<v>`` pairs in one row (span covers
first opening to last closing tag), and span markup in the source instead of
the target (omissions: ``start``/``end`` are None, ``source_start``/
``source_end`` are set).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from polyjudge.data import textio
from polyjudge.data.errors import InputError
from polyjudge.data.fields import check_id
from polyjudge.data.languages import LANGUAGE_NAMES
from polyjudge.data.records import Item

REQUIRED_COLUMNS = ("system", "doc", "doc_id", "seg_id", "rater", "source", "target",
                    "category", "severity")
# Severities seen in the WMT MQM releases (compared case-insensitively).
KNOWN_SEVERITIES = ("critical", "major", "minor", "neutral", "no-error")
NO_ERROR = "no-error"

_TAG = re.compile(r"</?v>")


@dataclass(frozen=True)
class MQMError:
    """One annotated error. ``start``/``end`` are code-point offsets into the
    markup-free target (end exclusive), None when the row marks no target span."""

    category: str
    severity: str
    start: int | None
    end: int | None
    comment: str | None
    # Span marked in the markup-free source instead (omissions), else None.
    source_start: int | None = None
    source_end: int | None = None

    @property
    def is_no_error(self) -> bool:
        return self.severity.lower() == NO_ERROR


@dataclass
class MQMAnnotation:
    """Everything one rater said about one system's translation of one segment."""

    system: str
    doc: str
    doc_id: str  # the TSV's doc_id column (position of the segment in its document)
    seg_id: str
    rater: str
    source: str  # markup removed
    target: str  # markup removed
    errors: list[MQMError]
    line: int  # 1-based line of the first row of this annotation


@dataclass
class MQMReadReport:
    """How often each quirk of the files occurred (for logs and the issue notes)."""

    rows: int = 0
    no_error_rows: int = 0
    unclosed_spans: int = 0
    unopened_spans: int = 0
    multiple_spans: int = 0
    source_spans: int = 0
    rows_without_span: int = 0  # error rows with no span on either side
    # Rows whose markup-free target differs from the first row of the same
    # (system, seg_id); their target span is dropped (offsets would not fit).
    target_mismatches: int = 0
    source_mismatches: int = 0
    # Rows identical to an earlier row (same rater, system, segment and error): dropped, counted here.
    duplicate_rows: int = 0
    notes: list[str] = field(default_factory=list)


def strip_markup(text: str) -> tuple[str, tuple[int, int] | None, str | None]:
    """Remove ``<v>``/``</v>`` and return (clean text, span, quirk).

    ``quirk`` is None for zero or one well-formed pair, else one of
    ``"unclosed"``, ``"unopened"``, ``"multiple"``.
    """
    if "<v>" not in text and "</v>" not in text:
        return text, None, None
    pieces: list[str] = []
    opens: list[int] = []
    closes: list[int] = []
    pos = 0
    length = 0
    for m in _TAG.finditer(text):
        chunk = text[pos:m.start()]
        pieces.append(chunk)
        length += len(chunk)
        (closes if m.group() == "</v>" else opens).append(length)
        pos = m.end()
    pieces.append(text[pos:])
    clean = "".join(pieces)
    quirk: str | None = None
    if opens and not closes:
        start, end = opens[0], len(clean)
        quirk = "unclosed" if len(opens) == 1 else "multiple"
    elif closes and not opens:
        start, end = 0, closes[-1]
        quirk = "unopened" if len(closes) == 1 else "multiple"
    else:
        start, end = opens[0], closes[-1]
        if len(opens) > 1 or len(closes) > 1:
            quirk = "multiple"
        if end < start:  # "</v> ... <v>": take the text between, ordered
            start, end = end, start
            quirk = "multiple"
    return clean, (start, end), quirk


def read_wmt_mqm_report(path: str | Path) -> tuple[list[MQMAnnotation], MQMReadReport]:
    """Read a WMT MQM TSV into annotations, plus counts of the quirks met."""
    path = Path(path)
    # Only \n separates rows: a stray \r or U+2028 inside a field is text.
    lines = textio.read_lines(path)
    reader = _MQMReader(str(path), _header(lines, str(path)))
    for lineno, line in enumerate(lines[1:], start=2):
        if line.strip():
            reader.add_row(lineno, line)
    if not reader.groups:
        raise InputError("no annotation rows (the file has only a header)", path=str(path))
    return list(reader.groups.values()), reader.report


def _header(lines: list[str], name: str) -> list[str]:
    """The header's columns; an empty file or a missing required column is an InputError."""
    if not lines or not lines[0].strip():
        raise InputError("empty file: expected a header line", path=name, line=1)
    header = lines[0].split("\t")
    for col in REQUIRED_COLUMNS:
        if col not in header:
            raise InputError(f"missing column '{col}' in header (have: {textio.short(header)})",
                             path=name, line=1, field=col)
    return header


_Key = tuple[str, str, str, str, str]  # (system, doc, doc_id, seg_id, rater): one annotation


class _MQMReader:
    """The state of one file's reading: annotations so far, the first texts seen, the quirk counts.

    Rows of one segment are compared with its first row (offsets only fit the same text), so
    the reading is row by row with what came before; each step is one method."""

    def __init__(self, name: str, header: list[str]) -> None:
        self.name, self.header = name, header
        self.idx = {c: header.index(c) for c in header}
        self.has_comment = "comment" in self.idx
        self.report = MQMReadReport()
        self.groups: dict[_Key, MQMAnnotation] = {}
        self.first_target: dict[tuple[str, str, str], str] = {}
        self.first_source: dict[tuple[str, str], str] = {}
        self.no_error_keys: set[_Key] = set()
        self.seen_rows: set[tuple[str, ...]] = set()

    def add_row(self, lineno: int, line: str) -> None:
        """One non-blank data row: checked, counted, and added to its annotation."""
        parts = self._fields(lineno, line)
        if tuple(parts) in self.seen_rows:  # the same rater's same error copied twice counts once
            self.report.duplicate_rows += 1
            return
        self.seen_rows.add(tuple(parts))
        get = {c: parts[i] for c, i in self.idx.items()}
        severity = self._check(lineno, get)
        self.report.rows += 1
        target, tspan, source, sspan = self._texts(lineno, get)
        # the document is part of the key: files whose seg_id restarts in every document (polyjudge's
        # campaign exports, WMT's doc-level files) never merge two segments of one rater
        key = (get["system"], get["doc"], get["doc_id"], get["seg_id"], get["rater"])
        ann = self.groups.get(key)
        if ann is None:
            ann = self.groups[key] = MQMAnnotation(system=key[0], doc=key[1], doc_id=key[2], seg_id=key[3],
                                                   rater=key[4], source=source, target=target, errors=[],
                                                   line=lineno)
        if severity.lower() == NO_ERROR:
            self._no_error(lineno, key, ann)
            return
        if key in self.no_error_keys:
            raise InputError("error row for a segment this rater marked No-error",
                             path=self.name, line=lineno, field="severity")
        ann.errors.append(self._error(get, severity, tspan, sspan))

    def _fields(self, lineno: int, line: str) -> list[str]:
        """The row's fields (a missing trailing comment column is tolerated as an empty comment)."""
        parts = line.split("\t")
        width = len(self.header)
        if len(parts) == width:
            return parts
        if self.has_comment and len(parts) == width - 1 and self.idx["comment"] == width - 1:
            return [*parts, ""]
        raise InputError(f"expected {width} tab-separated fields, found {len(parts)}",
                         path=self.name, line=lineno, field=textio.plain(self.header[min(len(parts), width - 1)]))

    def _check(self, lineno: int, get: dict[str, str]) -> str:
        """The row's severity, after the required values and ids are checked."""
        for col in ("system", "seg_id", "rater", "severity"):
            if not get[col].strip():
                raise InputError("empty value", path=self.name, line=lineno, field=col)
        for col in ("system", "doc_id", "seg_id"):
            if col in get:
                check_id(get[col], path=self.name, line=lineno, field=col)
        severity = get["severity"].strip()
        if severity.lower() not in KNOWN_SEVERITIES:
            raise InputError(f"unknown severity {textio.short(severity)} (known: Critical, Major, Minor, "
                             "Neutral, No-error)", path=self.name, line=lineno, field="severity")
        return severity

    def _texts(self, lineno: int, get: dict[str, str],
               ) -> tuple[str, tuple[int, int] | None, str, tuple[int, int] | None]:
        """(target of the segment's first row, target span, source, source span) of one row; a
        span is dropped when its row's text differs from the first row's."""
        target, tspan, tquirk = strip_markup(get["target"])
        source, sspan, squirk = strip_markup(get["source"])
        for quirk in (tquirk, squirk):
            self._count_quirk(lineno, quirk)
        system, doc, seg_id = get["system"], get["doc"], get["seg_id"]
        first = self.first_target.setdefault((system, doc, seg_id), target)
        if first != target:
            self.report.target_mismatches += 1
            self.report.notes.append(f"{self.name}:{lineno}: target differs from the first row of "
                                     f"system {system} document {doc} segment {seg_id}")
            tspan = None  # offsets refer to a different string
        if self.first_source.setdefault((doc, seg_id), source) != source:
            self.report.source_mismatches += 1
            sspan = None
        return first, tspan, source, sspan

    def _count_quirk(self, lineno: int, quirk: str | None) -> None:
        if quirk == "unclosed":
            self.report.unclosed_spans += 1
        elif quirk == "unopened":
            self.report.unopened_spans += 1
        elif quirk == "multiple":
            self.report.multiple_spans += 1
        if quirk:
            self.report.notes.append(f"{self.name}:{lineno}: {quirk} <v> markup")

    def _no_error(self, lineno: int, key: _Key, ann: MQMAnnotation) -> None:
        """A No-error row: only for a segment the rater gave no error."""
        self.report.no_error_rows += 1
        if ann.errors:
            raise InputError("No-error row for a segment that already has errors from "
                             "the same rater", path=self.name, line=lineno, field="severity")
        self.no_error_keys.add(key)

    def _error(self, get: dict[str, str], severity: str, tspan: tuple[int, int] | None,
               sspan: tuple[int, int] | None) -> MQMError:
        if tspan is None and sspan is None:
            self.report.rows_without_span += 1
        if tspan is None and sspan is not None:
            self.report.source_spans += 1
        comment = get["comment"] if self.has_comment else None
        return MQMError(category=get["category"].strip(), severity=severity,
                        start=tspan[0] if tspan else None, end=tspan[1] if tspan else None,
                        comment=comment if comment else None,
                        source_start=sspan[0] if sspan else None, source_end=sspan[1] if sspan else None)


def read_wmt_mqm(path: str | Path) -> list[MQMAnnotation]:
    """One :class:`MQMAnnotation` per (system, doc, doc_id, seg_id, rater), file order
    (a row repeated word for word counts once)."""
    return read_wmt_mqm_report(path)[0]


_PAIR = re.compile(r"([a-z]{2,3})-([a-z]{2,3})|([a-z]{2})([a-z]{2})")


def guess_language_pair(path: str | Path) -> tuple[str, str] | None:
    """Language codes from a WMT file name such as ``mqm_ted_ende.tsv`` or
    ``mqm_newstest2020_en-de.tsv``; None when the name does not tell.

    Only known language codes count, two different ones, and a pair written
    without a hyphen must include English (as WMT's do): ``data.tsv`` would
    otherwise read as Danish to Tamil.
    """
    stem = Path(path).name.lower()
    for part in reversed(re.split(r"[_.]", stem)):
        m = _PAIR.fullmatch(part)
        if not m:
            continue
        src, tgt = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        if src == tgt or src not in LANGUAGE_NAMES or tgt not in LANGUAGE_NAMES:
            continue
        if m.group(1) or "en" in (src, tgt):
            return src, tgt
    return None


def wmt_mqm_languages(path: str | Path, src_lang: str | None = None,
                      tgt_lang: str | None = None) -> tuple[str, str]:
    """Source and target language of a WMT MQM TSV, which has no language columns.

    Given codes win; a missing one comes from the file name; when neither
    tells, an InputError asks for them, since a prompt without its languages
    would silently judge a different task.
    """
    guess = guess_language_pair(path)
    if guess is not None:
        src_lang, tgt_lang = src_lang or guess[0], tgt_lang or guess[1]
    if not src_lang or not tgt_lang:
        raise InputError("a WMT MQM TSV has no language columns and this file name does not name the pair "
                         "(e.g. mqm_ted_ende.tsv): give the pair (lp, e.g. en-de) or src_lang and tgt_lang",
                         path=str(path), field="lp", setting=True)
    return src_lang, tgt_lang


def wmt_mqm_items(annotations: list[MQMAnnotation], src_lang: str | None = None,
                  tgt_lang: str | None = None) -> list[Item]:
    """One :class:`Item` per (system, document, segment), in first-appearance order.

    ``doc_id`` of the item is the document name (``doc`` column) so that
    document context covers the whole talk; the TSV's ``doc_id`` (position in
    the document) is kept as ``extra["doc_pos"]``.
    """
    items: list[Item] = []
    seen: set[tuple[str, str, str]] = set()
    for ann in annotations:
        key = (ann.system, ann.doc, ann.seg_id)
        if key in seen:
            continue
        seen.add(key)
        items.append(Item(src=ann.source, tgt=ann.target, src_lang=src_lang, tgt_lang=tgt_lang,
                          doc_id=ann.doc, seg_id=ann.seg_id, system=ann.system,
                          extra={"doc_pos": ann.doc_id}, origin=f"line {ann.line}"))
    return items


__all__ = ["MQMAnnotation", "MQMError", "MQMReadReport", "guess_language_pair", "read_wmt_mqm",
           "read_wmt_mqm_report", "strip_markup", "wmt_mqm_items", "wmt_mqm_languages"]
