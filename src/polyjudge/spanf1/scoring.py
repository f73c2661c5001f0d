"""Character-level error-span precision, recall and F1 (WMT25 task 2).

The rules follow the official WMT25 task-2 scorer (wmt-conference/wmt25-mteval,
``scripts/scoring/task2/scoring_esa.py``); this is our own vectorised
implementation of them:

* Every span adds 1 to a per-character counter of its severity over
  ``hyp[start:end]`` (Python slice semantics, so spans running past the end are
  cut at the hypothesis length). ``critical`` counts as ``major``; spans whose
  start is ``"missing"`` and spans of severity ``undecided`` add nothing, and
  so do zero-length spans. Any other severity is an error.
* The hypothesis length comes from the *gold* segment.
* Per character: ``tp = min(gM, pM) + min(gm, pm) + 0.5 * min(ug, up)`` where
  ``ug``/``up`` are the gold/predicted counts left unmatched after the
  same-severity matches (partial credit for a right location, wrong severity).
* Per language pair, tp and the gold/predicted character totals are summed over
  all segments (micro): ``P = tp / pred`` (1 when nothing is predicted),
  ``R = tp / gold`` (1 when the gold is empty), ``F1 = 2PR / (P + R)`` (0 when
  both are 0). The reported averages are plain means over language pairs.
* Only language pairs present in both gold and prediction are scored, and in
  task-2 TSV files only rows with ``set_id == "official"`` (by default).
* A gold segment without a prediction (e.g. a failed judgment) is scored as a
  prediction of no errors, as the official scorer scores it (``missing="empty"``,
  the default; its gold characters count against recall); the number of such
  segments is reported per language pair. ``missing="skip"`` leaves them out,
  which flatters judges whose answers often fail, and ``"error"`` refuses them.

Deviations, on purpose: severities are matched case-insensitively (the official
script raises on ``Major``); it prints its averaged precision and recall under
swapped labels, we do not. Spans it would read wrongly without a word are input
errors naming the file, line and field: a negative start, an end before its
start, an end past the gold hypothesis, and (task-2 TSV) rows whose start, end
and type lists differ in length. On valid input the scores are the same.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from polyjudge.data.errors import InputError
from polyjudge.data.readers import iter_jsonl
from polyjudge.data.spans import (
    MISSING,
    SEVERITY_ROW,
    Span,
    SpanSegment,
    check_span,
    normalise_severity,
    read_task2_tsv,
    spans_from_annotation,
    write_task2_tsv,
)
from polyjudge.data.textio import iter_lines, short
from polyjudge.rundir import JUDGMENTS, JudgmentRecord, RunDir

PARTIAL_CREDIT = 0.5

__all__ = [
    "Span", "SpanSegment", "SpanScore", "SpanF1Result", "char_counts", "score_lp", "span_f1",
    "char_f1_reference", "read_task2_tsv", "write_task2_tsv", "read_span_jsonl",
    "segments_from_mqm", "read_run_predictions", "read_spans", "normalise_severity",
    "spans_from_annotation", "check_span", "nothing_to_score",
]



@dataclass(frozen=True, slots=True)
class SpanScore:
    precision: float
    recall: float
    f1: float
    tp: float
    gold_chars: float
    pred_chars: float
    segments: int

    def as_dict(self) -> dict[str, float | int]:
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1,
                "tp": self.tp, "gold_chars": self.gold_chars, "pred_chars": self.pred_chars,
                "segments": self.segments}


@dataclass(slots=True)
class SpanF1Result:
    per_lp: dict[str, SpanScore]
    # gold segments of a scored pair that had no prediction (scored as empty or left out: ``missing``)
    missing_predictions: dict[str, int] = field(default_factory=dict)
    unmatched_predictions: int = 0
    lps_without_predictions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    missing: str = "empty"  # the policy the missing predictions were scored with

    @property
    def total_missing(self) -> int:
        """Gold segments without a prediction, over every scored language pair."""
        return sum(self.missing_predictions.values())

    @property
    def avg_precision(self) -> float:
        return _mean([s.precision for s in self.per_lp.values()])

    @property
    def avg_recall(self) -> float:
        return _mean([s.recall for s in self.per_lp.values()])

    @property
    def avg_f1(self) -> float:
        return _mean([s.f1 for s in self.per_lp.values()])

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for lp, s in sorted(self.per_lp.items()):
            d: dict[str, Any] = s.as_dict()
            d["missing_predictions"] = self.missing_predictions.get(lp, 0)
            out[lp] = d
        out["avg_precision"] = self.avg_precision
        out["avg_recall"] = self.avg_recall
        out["avg_f1"] = self.avg_f1
        out["missing_policy"] = self.missing
        out["unmatched_predictions"] = self.unmatched_predictions
        out["lps_without_predictions"] = list(self.lps_without_predictions)
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out


def _mean(xs: list[float]) -> float:
    return float(np.mean(xs)) if xs else math.nan



# --------------------------------------------------------------------------- scoring
def char_counts(lengths: Sequence[int], spans: Sequence[Sequence[Span]]) -> np.ndarray:
    """Per-character span counts, shape ``(2, sum(lengths))`` (row 0 major, row 1 minor).

    All segments are laid end to end; each span becomes +1/-1 events at its
    clipped boundaries and one cumulative sum gives every counter at once.
    """
    lens = np.asarray(lengths, dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(lens)))
    total = int(offsets[-1])
    seg_i: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    rows: list[int] = []
    for i, seg_spans in enumerate(spans):
        for sp in seg_spans:
            if sp.start is None:
                continue
            row = SEVERITY_ROW.get(sp.severity)
            if row is None:
                if sp.severity not in SEVERITY_ROW:
                    raise InputError(f"unknown severity {sp.severity!r}", field="severity")
                continue
            seg_i.append(i)
            starts.append(sp.start)
            ends.append(sp.end if sp.end is not None else sp.start)
            rows.append(row)
    counts = np.zeros((2, total), dtype=np.int64)
    if not seg_i:
        return counts
    si = np.asarray(seg_i, dtype=np.int64)
    L = lens[si]
    s = _clip_slice_bound(np.asarray(starts, dtype=np.int64), L)
    e = _clip_slice_bound(np.asarray(ends, dtype=np.int64), L)
    keep = e > s
    r = np.asarray(rows, dtype=np.int64)[keep]
    gs = (offsets[si] + s)[keep]
    ge = (offsets[si] + e)[keep]
    for row in (0, 1):
        m = r == row
        if not m.any():
            continue
        diff = (np.bincount(gs[m], minlength=total + 1)
                - np.bincount(ge[m], minlength=total + 1))
        counts[row] = np.cumsum(diff[:total])
    return counts


def _clip_slice_bound(x: np.ndarray, length: np.ndarray) -> np.ndarray:
    """What Python's ``seq[a:b]`` does to a bound: negatives count from the end."""
    neg = np.maximum(x + length, 0)
    bound: np.ndarray = np.where(x < 0, neg, np.minimum(x, length))
    return bound


def score_lp(lengths: Sequence[int], gold: Sequence[Sequence[Span]], pred: Sequence[Sequence[Span]],
             partial_credit: float = PARTIAL_CREDIT) -> SpanScore:
    """Micro-averaged character P/R/F1 over the segments of one language pair."""
    if not (len(lengths) == len(gold) == len(pred)):
        raise ValueError("lengths, gold and pred must have one entry per segment")
    g = char_counts(lengths, gold)
    p = char_counts(lengths, pred)
    same = np.minimum(g, p)
    tp_full = same.sum()
    un_g = (g - same).sum(axis=0)
    un_p = (p - same).sum(axis=0)
    tp = float(tp_full) + partial_credit * float(np.minimum(un_g, un_p).sum())
    gold_total, pred_total = float(g.sum()), float(p.sum())
    prec, rec, f1 = _prf(tp, gold_total, pred_total)
    return SpanScore(prec, rec, f1, tp, gold_total, pred_total, len(lengths))


def _prf(tp: float, gold: float, pred: float) -> tuple[float, float, float]:
    p = tp / pred if pred else 1.0
    r = tp / gold if gold else 1.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f1


def char_f1_reference(lengths: Sequence[int], gold: Sequence[Sequence[Span]],
                      pred: Sequence[Sequence[Span]],
                      partial_credit: float = PARTIAL_CREDIT) -> tuple[float, float, float]:
    """Straightforward per-character loop; the cross-check for :func:`score_lp`."""
    tp = gold_total = pred_total = 0.0

    def counts(spans: Sequence[Span], n: int) -> tuple[list[int], list[int]]:
        major, minor = [0] * n, [0] * n
        for sp in spans:
            if sp.start is None or sp.severity == "undecided":
                continue
            target = major if sp.severity in ("major", "critical") else minor
            for k in range(n)[sp.start:sp.end]:
                target[k] += 1
        return major, minor

    for n, gs, ps in zip(lengths, gold, pred):
        gM, gm = counts(gs, n)
        pM, pm = counts(ps, n)
        gold_total += sum(gM) + sum(gm)
        pred_total += sum(pM) + sum(pm)
        for a, b, c, d in zip(gM, pM, gm, pm):
            tp += min(a, b) + min(c, d)
            ug = max(0, a - b) + max(0, c - d)
            up = max(0, b - a) + max(0, d - c)
            tp += min(ug, up) * partial_credit
    return _prf(tp, gold_total, pred_total)


MissingPolicy = str  # "skip" | "empty" | "error"


def span_f1(gold: Sequence[SpanSegment], pred: Sequence[SpanSegment], *,
            set_ids: Sequence[str] | None = ("official",), missing: MissingPolicy = "empty",
            partial_credit: float = PARTIAL_CREDIT) -> SpanF1Result:
    """Pair predictions with gold segments and score every language pair.

    A prediction pairs with a gold segment when system, doc_id and seg_id are
    equal and every other identifier the prediction carries (lp, set_id,
    domain, method) is equal too. Segments whose ``set_id`` is set and not in
    ``set_ids`` are left out (``None`` keeps all). A language pair is scored
    when at least one of its gold segments has a prediction; gold segments
    without one are scored as "no errors predicted" (``missing="empty"``, the
    official scorer's rule), left out (``"skip"``), or raise (``"error"``);
    either way they are counted in ``missing_predictions``.
    """
    if missing not in ("skip", "empty", "error"):
        raise ValueError(f"unknown missing-prediction policy {missing!r}")
    def keep(s: SpanSegment) -> bool:
        return set_ids is None or s.set_id is None or s.set_id in set_ids

    gold = [g for g in gold if keep(g)]
    pred = [p for p in pred if keep(p)]
    index: dict[tuple[str | None, str | None, str | None], list[int]] = defaultdict(list)
    for k, p in enumerate(pred):
        index[(p.system, p.doc_id, p.seg_id)].append(k)
    used = np.zeros(len(pred), dtype=bool)
    # per language pair: (gold, its prediction or None, hypothesis length)
    by_lp: dict[str, list[tuple[SpanSegment, SpanSegment | None, int]]] = defaultdict(list)
    seen_gold: set[tuple[str | None, ...]] = set()
    for g in gold:
        gkey = (g.lp, g.system, g.doc_id, g.seg_id, g.set_id, g.domain, g.method)
        if gkey in seen_gold:
            raise InputError(f"gold segment {gkey} appears twice", path=g.origin, line=g.line)
        seen_gold.add(gkey)
        length = g.hyp_length
        if length is None:
            raise InputError("gold segment has no hypothesis text or length", path=g.origin, line=g.line,
                             field="hypothesis")
        _check_spans(g, length)
        cands = [k for k in index.get((g.system, g.doc_id, g.seg_id), ()) if _compatible(pred[k], g)]
        if len(cands) > 1:
            raise InputError(f"{len(cands)} predictions match gold segment system={g.system!r} "
                             f"doc_id={g.doc_id!r} seg_id={g.seg_id!r}", path=pred[cands[0]].origin,
                             line=pred[cands[0]].line)
        match = pred[cands[0]] if cands else None
        if match is not None:
            used[cands[0]] = True
            _check_spans(match, length)
        by_lp[g.lp or "all"].append((g, match, length))
    result = SpanF1Result(per_lp={}, unmatched_predictions=int((~used).sum()), missing=missing)
    for lp, pairs in sorted(by_lp.items()):
        if not any(m is not None for _, m, _ in pairs):
            result.lps_without_predictions.append(lp)
            continue
        lengths: list[int] = []
        gs: list[tuple[Span, ...]] = []
        ps: list[tuple[Span, ...]] = []
        n_missing = 0
        for g, m, length in pairs:
            if m is None:
                n_missing += 1
                if missing == "error":
                    raise InputError(f"no prediction for gold segment system={g.system!r} "
                                     f"doc_id={g.doc_id!r} seg_id={g.seg_id!r} ({lp})", path=g.origin,
                                     line=g.line)
                if missing == "skip":
                    continue
            lengths.append(length)
            gs.append(g.spans)
            ps.append(m.spans if m is not None else ())
        result.per_lp[lp] = score_lp(lengths, gs, ps, partial_credit)
        result.missing_predictions[lp] = n_missing
    return result


def _check_spans(seg: SpanSegment, length: int) -> None:
    """Every located span of ``seg`` lies within a hypothesis of ``length`` (the gold's) characters."""
    for sp in seg.spans:
        try:
            check_span(sp, length=length, path=seg.origin, line=seg.line, end_field=seg.bounds_field,
                       start_field=seg.bounds_field.replace("end", "start"))
        except InputError as exc:
            if seg.line is not None:
                raise
            # no line to point at (merged runs, spans built in Python): name the segment instead
            raise InputError(f"system={seg.system!r} doc_id={seg.doc_id!r} seg_id={seg.seg_id!r}: {exc.reason}",
                             path=exc.path, field=exc.field) from None


def nothing_to_score(result: SpanF1Result, n_gold: int, n_pred: int) -> str | None:
    """Why no language pair could be scored (a message), or None when one was.

    An empty result has no precision, recall or F1 at all; callers report this
    reason instead of printing NaN.
    """
    if result.per_lp:
        return None
    if n_gold == 0:
        return "no gold segments to score against"
    if n_pred == 0:
        return "no predictions to score"
    lps = ", ".join(result.lps_without_predictions) or "none"
    return (f"no prediction matches a gold segment (gold language pairs: {lps}; "
            f"{result.unmatched_predictions} of {n_pred} predictions matched none: "
            "check system, doc_id, seg_id, language pair and set_id)")


def _compatible(p: SpanSegment, g: SpanSegment) -> bool:
    for a, b in ((p.lp, g.lp), (p.set_id, g.set_id), (p.domain, g.domain), (p.method, g.method)):
        if a is not None and b is not None and a != b:
            return False
    return True


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


def read_span_jsonl(path: str | Path, *, lp: str | None = None) -> list[SpanSegment]:
    """Read spans from JSONL: our layout or WMT24 ESA records.

    Each line is an object with identifiers (``system``/``system_id``,
    ``doc_id``, ``seg_id``/``segment_id``/``line_id``, ``lp``/``langs`` or
    ``source_lang``+``target_lang``), optionally the hypothesis
    (``hypothesis``/``tgt``/``hypothesis_segment``) or its ``length``, and
    spans under ``spans`` (``start``, ``end``, ``severity``) or ``esa_spans``
    (``start_i``, ``end_i``, ``severity``); bounds may be ``"missing"``.
    """
    path = Path(path)
    name = str(path)
    if not path.is_file():
        raise InputError("file not found", path=name)
    out: list[SpanSegment] = []
    for n, d in iter_jsonl(path):
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
    files have one rater per segment); ``"all"`` pools every rater's spans.
    """
    if raters not in ("first", "all"):
        raise ValueError("raters must be 'first' or 'all'")
    segs: dict[tuple[str, str, str], SpanSegment] = {}
    rater_of: dict[tuple[str, str, str], str] = {}
    spans: dict[tuple[str, str, str], list[Span]] = defaultdict(list)
    for a in annotations:
        # The document name (``doc``) is the item doc_id in polyjudge runs of these files.
        doc = str(getattr(a, "doc", None) or a.doc_id)
        key = (a.system, doc, str(a.seg_id))
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
    for key, seg in segs.items():
        seg.spans = tuple(spans.get(key, ()))
    return list(segs.values())


# --------------------------------------------------------------------------- run directories
SpanMerger = Callable[[list[dict[str, Any]]], dict[str, Any] | None]


def _check_span_protocol(run: RunDir) -> None:
    """Refuse a run whose protocol writes no spans (e.g. mqm, da): it has nothing to score."""
    name = run.manifest.protocol
    if not name:
        return  # written by 0.1.0: no protocol recorded; the annotations tell
    from polyjudge.protocols import PROTOCOLS, UnknownNameError

    try:
        protocol = PROTOCOLS.get(name)
    except UnknownNameError:
        return  # a plugin not installed here: the annotations tell
    if not protocol.produces_spans:
        spans = ", ".join(n for n, p in PROTOCOLS.items() if p.produces_spans)
        raise InputError(f"the run was made with protocol '{name}', which produces no error spans; "
                         f"span-f1 needs a run of a span protocol ({spans})", path=str(run.path),
                         field="protocol")


def read_run_predictions(run_dir: str | Path, *, judge: str | None = None,
                         merge: SpanMerger | None = None, run_index: int | None = None,
                         lp: str | None = None) -> tuple[list[SpanSegment], dict[str, int]]:
    """Predicted spans from a run directory's judgments (or its ``judgments.jsonl``).

    Only ``ok`` judgments count; items without one get no prediction (so the
    scorer reports them instead of treating a failure as "no error"). With
    several ok runs per item, ``merge`` combines them (character voting), or
    ``run_index`` picks one; otherwise the lowest run index is used.
    A run of a protocol without spans is an input error.
    Returns the segments and counts of judgments by status.
    """
    given = Path(run_dir)
    run = RunDir.open(given.parent if given.is_file() and given.name == JUDGMENTS else given)
    _check_span_protocol(run)
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


def read_spans(path: str | Path, *, fmt: str = "auto", lp: str | None = None,
               raters: str = "first", judge: str | None = None,
               merge: SpanMerger | None = None) -> tuple[list[SpanSegment], list[str]]:
    """Read spans from any supported source; ``fmt`` is auto-detected from the path.

    Formats: ``task2`` (WMT25 TSV), ``mqm`` (WMT MQM TSV with ``<v>`` markup),
    ``jsonl`` (ours or ESA), ``run`` (a polyjudge run directory).
    """
    p = Path(path)
    if fmt == "auto":
        fmt = _detect_format(p)
    warnings: list[str] = []
    if fmt == "task2":
        segs, warnings = read_task2_tsv(p)
        if lp is not None:
            segs = [replace(s, lp=lp) for s in segs]
        return segs, warnings
    if fmt == "mqm":
        from polyjudge.data.wmt_mqm import guess_language_pair, read_wmt_mqm
        pair = guess_language_pair(p)
        lp = lp or ("-".join(pair) if pair else lp_from_filename(p))
        return segments_from_mqm(read_wmt_mqm(p), lp=lp, raters=raters, path=str(p)), warnings
    if fmt == "jsonl":
        return read_span_jsonl(p, lp=lp), warnings
    if fmt == "run":
        segs, status = read_run_predictions(p, judge=judge, merge=merge, lp=lp)
        bad = {k: v for k, v in status.items() if k != "ok"}
        if bad:
            warnings.append("judgments not ok (items left without prediction): "
                            + ", ".join(f"{k}={v}" for k, v in sorted(bad.items())))
        return segs, warnings
    raise InputError(f"unknown span file format {fmt!r}", path=str(p))


def _detect_format(p: Path) -> str:
    if p.is_dir() or p.name == JUDGMENTS:
        return "run"
    if not p.is_file():
        raise InputError("file not found", path=str(p))
    if p.suffix in (".jsonl", ".json"):
        return "jsonl"
    first = next(iter_lines(p), None)
    header = first[1].split("\t") if first is not None else []
    if "start_indices" in header:
        return "task2"
    if "target" in header and "severity" in header:
        return "mqm"
    raise InputError("cannot tell the format (task-2 TSV, WMT MQM TSV, JSONL or run directory); "
                     "pass --gold-format/--pred-format", path=str(p), line=1)
