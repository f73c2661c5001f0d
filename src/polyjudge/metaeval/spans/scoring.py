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
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from polyjudge.data.errors import InputError
from polyjudge.data.spans import SEVERITY_ROW, Span, SpanSegment, check_span
from polyjudge.metaeval.spans.variants import DEFAULT_MATCH, Parts, SpanVariant, VariantScore, aggregate, variant_rows

PARTIAL_CREDIT = 0.5

__all__ = ["SpanF1Result", "SpanScore", "char_counts", "char_f1_reference", "nothing_to_score", "official_parts",
           "score_lp", "score_segments", "span_f1"]



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
    per_lp: dict[str, SpanScore | VariantScore]
    # gold segments of a scored pair that had no prediction (scored as empty or left out: ``missing``)
    missing_predictions: dict[str, int] = field(default_factory=dict)
    unmatched_predictions: int = 0
    lps_without_predictions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    missing: str = "empty"  # the policy the missing predictions were scored with
    variant: SpanVariant = field(default_factory=SpanVariant)  # how the spans were scored

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
        if not self.variant.official:  # the official scorer's output is the task's, unchanged
            out["variant"] = self.variant.as_dict()
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


def official_parts(lengths: Sequence[int], gold: Sequence[Sequence[Span]],
                   pred: Sequence[Sequence[Span]], partial_credit: float = PARTIAL_CREDIT) -> list[Parts]:
    """Per segment, the official rule's true-positive, predicted and gold characters (as :class:`Parts`),
    for the macro average of the WMT25 scorer; summed, they are :func:`score_lp`'s counts."""
    g = char_counts(lengths, gold)
    p = char_counts(lengths, pred)
    same = np.minimum(g, p)
    per_char = (same.sum(axis=0) + partial_credit * np.minimum((g - same).sum(axis=0), (p - same).sum(axis=0)))
    offsets = np.concatenate(([0], np.cumsum(np.asarray(lengths, dtype=np.int64))))

    def per_segment(x: np.ndarray) -> np.ndarray:
        c = np.concatenate(([0.0], np.cumsum(x, dtype=np.float64)))
        out: np.ndarray = c[offsets[1:]] - c[offsets[:-1]]
        return out

    tp, gc, pc = per_segment(per_char), per_segment(g.sum(axis=0)), per_segment(p.sum(axis=0))
    return [Parts(float(t), float(q), float(t), float(r)) for t, q, r in zip(tp, pc, gc, strict=True)]


def score_segments(variant: SpanVariant, lengths: Sequence[int], gold: Sequence[Sequence[Span]],
                   pred: Sequence[Sequence[Span]]) -> VariantScore:
    """P, R, F1 of one language pair's segments under ``variant`` (hypothesis lengths, gold and predicted
    spans, segment by segment); the official scorer's micro average is :func:`score_lp`'s numbers."""
    rows = (official_parts(lengths, gold, pred) if variant.match == DEFAULT_MATCH
            else list(variant_rows(variant, gold, pred)))
    return aggregate(variant, rows)


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
            partial_credit: float = PARTIAL_CREDIT, variant: SpanVariant | None = None) -> SpanF1Result:
    """Pair predictions with gold segments and score every language pair.

    A prediction pairs with a gold segment when system, doc_id and seg_id are
    equal and every other identifier the prediction carries (lp, set_id,
    domain, method) is equal too. Segments whose ``set_id`` is set and not in
    ``set_ids`` are left out (``None`` keeps all). A language pair is scored
    when at least one of its gold segments has a prediction; gold segments
    without one are scored as "no errors predicted" (``missing="empty"``, the
    official scorer's rule), left out (``"skip"``), or raise (``"error"``);
    either way they are counted in ``missing_predictions``. ``variant`` chooses
    the span-F1 variant (:mod:`~polyjudge.metaeval.spans.variants`; default: the
    official WMT25 scorer, micro-averaged).
    """
    variant = variant if variant is not None else SpanVariant()
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
    result = SpanF1Result(per_lp={}, unmatched_predictions=int((~used).sum()), missing=missing, variant=variant)
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
        result.per_lp[lp] = (score_lp(lengths, gs, ps, partial_credit) if variant.official
                             else score_segments(variant, lengths, gs, ps))
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
