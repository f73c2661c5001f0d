"""Where error spans come from: JSONL (ours or WMT24 ESA), WMT MQM TSV, run directories.

Every reader returns :class:`~polyjudge.data.spans.SpanSegment` records for
:func:`polyjudge.metaeval.spans.scoring.span_f1`; task-2 TSV files are read by
:func:`polyjudge.data.spans.read_task2_tsv`. A run directory's several runs of
one item are merged by character voting (:func:`vote_merger`). Each format is
one entry of :data:`SPAN_FORMAT_REGISTRY` (:func:`register_span_format`: a reader
and the rule ``auto`` asks), listed by ``polyjudge span-formats``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from polyjudge.aggregate.spanvote import vote_spans
from polyjudge.data.errors import InputError
from polyjudge.data.formats import Detector, SourceProbe, detect_format
from polyjudge.data.readers import iter_jsonl
from polyjudge.data.spans import (
    MISSING,
    Span,
    SpanSegment,
    check_span,
    normalise_severity,
    read_task2_tsv,
    spans_from_annotation,
)
from polyjudge.data.textio import short
from polyjudge.registry import Registry
from polyjudge.rundir import JUDGMENTS, JudgmentRecord, RunDir


# --------------------------------------------------------------------------- JSONL
def _first(d: dict[str, Any], *names: str) -> Any:
    for n in names:
        if n in d and d[n] is not None:
            return d[n]
    return None


def _opt_str(x: Any) -> str | None:
    return None if x is None else str(x)


def _bound(x: Any, path: str, line: int, name: str) -> int | None:
    if x is None or x == MISSING:
        return None
    if isinstance(x, bool) or not isinstance(x, (int, str)):
        raise InputError(f"span {name} must be an integer or 'missing', got {short(x)}", path=path, line=line,
                         field=name)
    try:
        return int(x)
    except ValueError:
        raise InputError(f"span {name} must be an integer or 'missing', got {short(x)}", path=path, line=line,
                         field=name) from None


def _text(x: Any, path: str, line: int, name: str) -> str | None:
    if x is None or isinstance(x, str):
        return x
    raise InputError(f"must be a string, got {type(x).__name__}", path=path, line=line, field=name)


def _length(x: Any, path: str, line: int) -> int | None:
    if x is None:
        return None
    n: int | None = None
    if isinstance(x, int) and not isinstance(x, bool):
        n = x
    elif isinstance(x, float) and x.is_integer():
        n = int(x)
    elif isinstance(x, str) and x.strip().isdigit():
        n = int(x)
    if n is None or n < 0:
        raise InputError(f"must be a non-negative integer, got {short(x)}", path=path, line=line, field="length")
    return n


def read_span_jsonl(path: str | Path, *, lp: str | None = None, raters: str = "first") -> list[SpanSegment]:
    """Read spans from JSONL: our layout or WMT24 ESA records.

    Each line is an object with identifiers (``system``/``system_id``,
    ``doc_id``, ``seg_id``/``segment_id``/``line_id``, ``lp``/``langs`` or
    ``source_lang``+``target_lang``), optionally the hypothesis
    (``hypothesis``/``tgt``/``hypothesis_segment``) or its ``length``, and
    spans under ``spans`` (``start``, ``end``, ``severity``) or ``esa_spans``
    (``start_i``, ``end_i``, ``severity``); bounds may be ``"missing"``.
    Records naming their ``annotator`` (or ``rater``), several per segment as
    in ``annotate export --to esa-jsonl``, are one segment each after
    :func:`choose_raters` (``raters``: ``first``, ``all`` or one rater's name).
    """
    path = Path(path)
    name = str(path)
    if not path.is_file():
        raise InputError("file not found", path=name)
    out: list[SpanSegment] = []
    rater_of: list[str | None] = []
    for n, d in iter_jsonl(path):
        rater_of.append(_opt_str(_first(d, "annotator", "rater")))
        raw = _first(d, "spans", "esa_spans", "errors")
        if raw is None:
            raw = []
        if not isinstance(raw, list):
            raise InputError("spans must be a list", path=name, line=n, field="spans")
        spans = []
        for sp in raw:
            if not isinstance(sp, dict):
                raise InputError("each span must be an object", path=name, line=n, field="spans")
            sev = _first(sp, "severity")
            if sev is None:
                raise InputError("span without severity", path=name, line=n, field="severity")
            s = _bound(_first(sp, "start", "start_i"), name, n, "start")
            e = _bound(_first(sp, "end", "end_i"), name, n, "end")
            if s is None:
                spans.append(Span(None, None, str(sev).lower()))
                continue
            try:
                sev = normalise_severity(sev)
            except InputError as exc:
                raise InputError(exc.reason, path=name, line=n, field="severity") from None
            span = Span(s, e if e is not None else s, sev)
            check_span(span, path=name, line=n)
            spans.append(span)
        pair = _first(d, "lp", "langs")
        if pair is None and _first(d, "source_lang") is not None:
            pair = f"{d['source_lang']}-{_first(d, 'target_lang')}"
        out.append(SpanSegment(
            system=_opt_str(_first(d, "system", "system_id")), doc_id=_opt_str(_first(d, "doc_id")),
            seg_id=_opt_str(_first(d, "seg_id", "segment_id", "line_id")), spans=tuple(spans),
            lp=_opt_str(pair) or lp,
            hypothesis=_text(_first(d, "hypothesis", "tgt", "hypothesis_segment"), name, n, "hypothesis"),
            length=_length(_first(d, "length"), name, n), set_id=_opt_str(_first(d, "set_id")),
            domain=_opt_str(_first(d, "domain", "domain_name")), method=_opt_str(_first(d, "method")),
            source=_text(_first(d, "source", "src", "source_segment"), name, n, "source"),
            origin=name, line=n))
    if not any(r is not None for r in rater_of):
        return out
    check_rater(raters, rater_of, path=name)
    return choose_raters(out, rater_of, raters)


def check_rater(raters: str, present: Iterable[str | None], *, path: str | None = None) -> None:
    """An InputError naming the file's raters when ``raters`` is a rater's name none of its records has."""
    names = sorted({r for r in present if r is not None})
    if raters not in ("first", "all") and raters not in names:
        held = f"its raters: {', '.join(map(short, names))}" if names else "it names no rater"
        raise InputError(f"rater {short(raters)} is not in the file ({held})", path=path, field="raters")


def choose_raters(segments: list[SpanSegment], rater_of: Sequence[str | None], raters: str) -> list[SpanSegment]:
    """One segment per (system, doc_id, seg_id, lp) from several raters' records (``rater_of[i]`` rated
    ``segments[i]``): ``first`` keeps the first rater of each segment, ``all`` pools every rater's spans
    (WMT MQM's convention: each annotated error counts), a rater's name keeps that rater's segments only."""
    out: list[SpanSegment] = []
    where: dict[tuple[str | None, ...], tuple[int, str | None]] = {}  # segment -> (index in out, its rater)
    for seg, rater in zip(segments, rater_of, strict=True):
        key = (seg.system, seg.doc_id, seg.seg_id, seg.lp)
        if raters not in ("first", "all") and rater != raters:
            continue
        if key not in where or where[key][1] == rater:  # one rater twice: kept, so the scorer names it
            where.setdefault(key, (len(out), rater))
            out.append(seg)
        elif raters == "all":
            k = where[key][0]
            out[k] = replace(out[k], spans=out[k].spans + seg.spans)
    return out


# --------------------------------------------------------------------------- WMT MQM
_MQM_SEVERITY = {"major": "major", "critical": "major", "minor": "minor"}
_LP_FROM_NAME = re.compile(r"_([a-z]{2})([a-z]{2})\.tsv$")


def lp_from_filename(path: str | Path) -> str | None:
    """``mqm_ted_ende.tsv`` -> ``en-de`` (the WMT MQM file naming)."""
    m = _LP_FROM_NAME.search(Path(path).name)
    return f"{m.group(1)}-{m.group(2)}" if m else None


def segments_from_mqm(annotations: Iterable[Any], *, lp: str | None = None,
                      raters: str = "first", path: str | None = None) -> list[SpanSegment]:
    """Gold span segments from WMT MQM annotations (``read_wmt_mqm`` records).

    One segment per (system, doc, seg_id); the segment's ``doc_id`` is the
    document name, as in items made by ``wmt_mqm_items``. Major/Critical spans count as
    major, Minor as minor; Neutral and no-error rows add no span, and errors
    without a ``<v>`` span become "missing" spans (ignored by the scorer).
    ``raters="first"`` keeps the first rater seen for a segment (the TED
    files have one rater per segment); ``"all"`` pools every rater's spans;
    any other value is one rater's name, whose segments alone are kept.
    """
    segs: dict[tuple[str, str, str], SpanSegment] = {}
    rater_of: dict[tuple[str, str, str], str] = {}
    spans: dict[tuple[str, str, str], list[Span]] = defaultdict(list)
    seen: set[str] = set()
    for a in annotations:
        # The document name (``doc``) is the item doc_id in polyjudge runs of these files.
        doc = str(getattr(a, "doc", None) or a.doc_id)
        key = (a.system, doc, str(a.seg_id))
        seen.add(a.rater)
        if raters not in ("first", "all") and a.rater != raters:
            continue
        if key not in segs:
            segs[key] = SpanSegment(system=a.system, doc_id=doc, seg_id=str(a.seg_id),
                                    spans=(), lp=lp, hypothesis=a.target, source=a.source,
                                    origin=path, line=getattr(a, "line", None), bounds_field="target")
            rater_of[key] = a.rater
        elif raters == "first" and a.rater != rater_of[key]:
            continue
        for err in a.errors:
            sev = _MQM_SEVERITY.get(str(err.severity).strip().lower())
            if sev is None:
                continue
            if err.start is None:
                spans[key].append(Span(None, None, sev))
            else:
                spans[key].append(Span(int(err.start), int(err.end), sev))
    check_rater(raters, seen, path=path)
    for key, seg in segs.items():
        seg.spans = tuple(spans.get(key, ()))
    return list(segs.values())


# --------------------------------------------------------------------------- run directories
SpanMerger = Callable[[list[dict[str, Any]]], dict[str, Any] | None]


@dataclass(frozen=True, slots=True)
class SpanProtocols:
    """What span F1 needs to know of judging protocols, given by its caller (span F1 imports none).

    ``produces_spans(name)``: whether runs of protocol ``name`` hold error spans,
    or None when no protocol of that name is installed here. ``names()``: the
    protocols that produce spans, for the message refusing a run of another one.
    """

    produces_spans: Callable[[str], bool | None]
    names: Callable[[], Sequence[str]]


def _check_span_protocol(run: RunDir, protocols: SpanProtocols | None) -> None:
    """Refuse a run whose protocol writes no spans (e.g. mqm, da): it has nothing to score."""
    name = run.manifest.protocol
    if not name or protocols is None:
        return  # written by 0.1.0 (no protocol recorded), or nothing to ask: the annotations tell
    if protocols.produces_spans(name) is False:  # None: a plugin not installed here
        spans = ", ".join(protocols.names())
        raise InputError(f"the run was made with protocol '{name}', which produces no error spans; "
                         f"span-f1 needs a run of a span protocol ({spans})", path=str(run.path),
                         field="protocol")


def vote_merger(threshold: float) -> SpanMerger:
    """How several runs of one item become one prediction: characters marked by at
    least ``threshold`` of the runs (:func:`polyjudge.aggregate.spanvote.vote_spans`)."""

    def merge(annotations: list[dict[str, Any]]) -> dict[str, Any] | None:
        anns = [a for a in annotations if isinstance(a, dict) and isinstance(a.get("spans"), list)]
        if not anns:
            return None
        length = max([int(s["end"]) for a in anns for s in a["spans"] if s.get("end") is not None], default=0)
        spans, _ = vote_spans([a["spans"] for a in anns], length, threshold)
        return {"spans": spans}

    return merge


def read_run_predictions(run_dir: str | Path, *, judge: str | None = None,
                         merge: SpanMerger | None = None, run_index: int | None = None,
                         lp: str | None = None,
                         protocols: SpanProtocols | None = None) -> tuple[list[SpanSegment], dict[str, int]]:
    """Predicted spans from a run directory's judgments (or its ``judgments.jsonl``).

    Only ``ok`` judgments count; items without one get no prediction (so the
    scorer reports them instead of treating a failure as "no error"). With
    several ok runs per item, ``merge`` combines them (character voting), or
    ``run_index`` picks one; otherwise the lowest run index is used.
    A run of a protocol without spans is an input error when ``protocols`` is given.
    Returns the segments and counts of judgments by status.
    """
    given = Path(run_dir)
    run = RunDir.open(given.parent if given.is_file() and given.name == JUDGMENTS else given)
    _check_span_protocol(run, protocols)
    path = run.judgments_path
    judges: set[str] = set()
    ok_runs: dict[int, list[tuple[int, JudgmentRecord]]] = defaultdict(list)
    first: dict[int, JudgmentRecord] = {}
    status: dict[str, int] = defaultdict(int)
    for lineno, raw in run.iter_judgment_dicts():
        j = JudgmentRecord.from_json(raw, path=path, line=lineno)
        judges.add(j.judge)
        if judge is not None and j.judge != judge:
            continue
        status[j.status] += 1
        first.setdefault(j.item_index, j)
        if j.ok and (run_index is None or j.run_index == run_index):
            ok_runs[j.item_index].append((lineno, j))
    if judge is None and len(judges) > 1:
        raise InputError(f"run has several judges ({', '.join(sorted(judges))}); "
                         "choose one with --judge", path=path)
    out = []
    for idx in sorted(first):
        runs = sorted(ok_runs.get(idx, []), key=lambda lj: lj[1].run_index)
        if not runs:
            continue
        # every run's spans are checked where they are written, merged or not
        for lineno, j in runs:
            for sp in spans_from_annotation(j.annotation, path, line=lineno):
                check_span(sp, path=path, line=lineno)
        line: int | None = runs[0][0]
        if merge is not None and len(runs) > 1:
            ann = merge([j.annotation for _, j in runs])
            if ann is None:
                continue
            line = None
        else:
            ann = runs[0][1].annotation
        ids = first[idx]
        out.append(SpanSegment(system=ids.system, doc_id=ids.doc_id, seg_id=ids.seg_id,
                               spans=spans_from_annotation(ann, path, line=line), lp=lp, origin=path,
                               line=line))
    return out, dict(status)


# --------------------------------------------------------------------------- the span-format registry
SpanResult = tuple[list[SpanSegment], list[str]]


@dataclass(frozen=True, slots=True)
class SpanRequest:
    """What a caller of :func:`read_spans` asks beside the path; each format uses what applies
    (``lp`` all, ``raters`` WMT MQM, ``judge``/``merge``/``protocols`` run directories)."""

    lp: str | None = None
    raters: str = "first"
    judge: str | None = None
    merge: SpanMerger | None = None
    protocols: SpanProtocols | None = None


SpanReader = Callable[[Path, SpanRequest], SpanResult]


@dataclass(frozen=True, slots=True)
class SpanFormat:
    """A registered span format: ``--gold-format``/``--pred-format`` name, reader and detection
    (``detect``: the rule ``auto`` asks, its first docstring line listed; ``fallback``: takes any
    file no rule claimed)."""

    name: str
    summary: str
    read: SpanReader
    detect: Detector | None = None
    fallback: bool = False


SPAN_FORMAT_REGISTRY: Registry[SpanFormat] = Registry("span format", entry_point_group="polyjudge.span_formats")


def register_span_format(name: str, *, detect: Detector | None = None, fallback: bool = False,
                         summary: str | None = None) -> Callable[[SpanReader], SpanReader]:
    """Decorator: register ``read(path, request) -> (segments, warnings)`` as span format ``name``
    (summary: the first docstring line unless given; built-in rules are asked first)."""

    def deco(fn: SpanReader) -> SpanReader:
        doc = (fn.__doc__ or "").strip()
        text = summary if summary is not None else (doc.splitlines()[0] if doc else "")
        SPAN_FORMAT_REGISTRY.add(name, SpanFormat(name, text, fn, detect, fallback))
        return fn

    return deco


def _is_task2_tsv(probe: SourceProbe) -> bool:
    """a TSV whose header has start_indices"""
    return probe.is_file and not probe.is_json and "start_indices" in probe.header


def _is_mqm_tsv(probe: SourceProbe) -> bool:
    """a TSV whose header has target and severity (and no start_indices)"""
    header = probe.header if probe.is_file and not probe.is_json else ()
    return "target" in header and "severity" in header and "start_indices" not in header


def _is_span_jsonl(probe: SourceProbe) -> bool:
    """a file named *.jsonl or *.json (but not judgments.jsonl)"""
    return probe.is_file and probe.is_json and probe.name != JUDGMENTS


def _is_run(probe: SourceProbe) -> bool:
    """a directory, or a file named judgments.jsonl"""
    return probe.is_dir or probe.name == JUDGMENTS


@register_span_format("task2", detect=_is_task2_tsv)
def _read_task2(path: Path, request: SpanRequest) -> SpanResult:
    """The WMT25 task-2 TSV (start_indices, end_indices, error_types)."""
    segs, warnings = read_task2_tsv(path)
    if request.lp is not None:
        segs = [replace(s, lp=request.lp) for s in segs]
    return segs, warnings


@register_span_format("mqm", detect=_is_mqm_tsv)
def _read_mqm(path: Path, request: SpanRequest) -> SpanResult:
    """The WMT MQM annotation TSV, spans marked with <v>...</v> in the target."""
    from polyjudge.data.wmt_mqm import guess_language_pair, read_wmt_mqm
    pair = guess_language_pair(path)
    lp = request.lp or ("-".join(pair) if pair else lp_from_filename(path))
    return segments_from_mqm(read_wmt_mqm(path), lp=lp, raters=request.raters, path=str(path)), []


@register_span_format("jsonl", detect=_is_span_jsonl)
def _read_jsonl(path: Path, request: SpanRequest) -> SpanResult:
    """JSON lines: our layout or WMT24 ESA records."""
    return read_span_jsonl(path, lp=request.lp, raters=request.raters), []


@register_span_format("run", detect=_is_run)
def _read_run(path: Path, request: SpanRequest) -> SpanResult:
    """A polyjudge run directory of a span protocol (or its judgments.jsonl): ok judgments' spans."""
    segs, status = read_run_predictions(path, judge=request.judge, merge=request.merge, lp=request.lp,
                                        protocols=request.protocols)
    bad = {k: v for k, v in status.items() if k != "ok"}
    warnings = []
    if bad:
        warnings.append("judgments not ok (items left without prediction): "
                        + ", ".join(f"{k}={v}" for k, v in sorted(bad.items())))
    return segs, warnings


def span_format_names() -> tuple[str, ...]:
    """``--gold-format``/``--pred-format`` choices: ``auto`` and every registered span format."""
    return ("auto", *SPAN_FORMAT_REGISTRY.names())


def __getattr__(name: str) -> tuple[str, ...]:
    # SPAN_FORMATS is read from the registry when first asked for, so plugin formats are included.
    if name == "SPAN_FORMATS":
        return span_format_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def read_spans(path: str | Path, *, fmt: str = "auto", lp: str | None = None,
               raters: str = "first", judge: str | None = None,
               merge: SpanMerger | None = None,
               protocols: SpanProtocols | None = None) -> SpanResult:
    """Read spans from any registered source; ``fmt`` ``auto`` asks the formats' rules.

    Built-in formats: ``task2`` (WMT25 TSV), ``mqm`` (WMT MQM TSV with ``<v>`` markup),
    ``jsonl`` (ours or ESA), ``run`` (a polyjudge run directory).
    """
    p = Path(path)
    name = _detect_format(p) if fmt == "auto" else fmt
    if name not in SPAN_FORMAT_REGISTRY:
        raise InputError(f"unknown span file format {name!r}", path=str(p))
    request = SpanRequest(lp, raters, judge, merge, protocols)
    return SPAN_FORMAT_REGISTRY.get(name).read(p, request)


def _detect_format(p: Path) -> str:
    found = detect_format(p, SPAN_FORMAT_REGISTRY.items())
    if found is not None:
        return found
    if not p.is_file():
        raise InputError("file not found", path=str(p))
    raise InputError("cannot tell the format (task-2 TSV, WMT MQM TSV, JSONL or run directory); "
                     "pass --gold-format/--pred-format", path=str(p), line=1)


__all__ = ["SPAN_FORMAT_REGISTRY", "SpanFormat", "SpanMerger", "SpanProtocols", "SpanReader", "SpanRequest",
           "SpanResult", "lp_from_filename", "read_run_predictions", "read_span_jsonl", "read_spans",
           "register_span_format", "check_rater", "choose_raters", "segments_from_mqm", "span_format_names",
           "vote_merger"]
