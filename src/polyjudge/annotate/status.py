"""How far a campaign is, how much its annotators agree, and (sampled by ``ppi``) what it estimates.

* progress: per annotator, items annotated of their queue, and versions saved
  (edits included);
* agreement on scores: Krippendorff's alpha (interval level) over the items
  with two or more annotators; scores are the 0-100 score (esa, da), the
  negated MQM error points (mqm), or the option / response set picked (nominal
  level, forced-choice and response-set);
* agreement on spans (mqm, esa): character-level span F1
  (:func:`polyjudge.metaeval.spans.scoring.span_f1`, WMT25 task 2's scorer)
  for every pair of annotators on the items both annotated, and their mean;
* for a campaign sampled with ``--by ppi``: PPI++ (:func:`polyjudge.validation.ppi.ppi_mean`)
  of the mean human score over every item of the run, from the humans' scores
  on the items annotated so far (with the judge's scores there) and the judge's
  scores on the items no human annotated, with its 90 % interval
  and the human-only interval beside it;
* agreement with the judge (campaigns made with its run): Pearson's r and
  Kendall's tau-b of each annotator's values, and of the item means, with the
  judge's scores on the same items;
* attention checks (``--attention-checks``): each annotator's pass rate
  (:mod:`polyjudge.annotate.checks`); the checks count in an annotator's
  progress and nowhere else;
* active time per item (the page's ``active_ms``, every version added up):
  mean and median seconds per item and seconds per span, per annotator and
  for everyone;
* AI pre-annotation (``--prefill``): time, span F1 between annotators and the
  spans' origins (kept, edited, deleted, added) on the items shown with the
  suggestions and on those shown without.

Span F1 compares located spans of the translation: source-side spans and
omissions (a position, no characters) are left out of it, as WMT25 task 2's
scorer has no place for them; they count in the MQM points.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any

import numpy as np

from polyjudge.annotate.checks import check_results
from polyjudge.annotate.export import mqm_points_of, unique_spans
from polyjudge.annotate.schemes import Scheme
from polyjudge.annotate.store import Annotation, CampaignStore
from polyjudge.data.errors import InputError
from polyjudge.data.numbers import undefined_to_none
from polyjudge.data.spans import Span, SpanSegment
from polyjudge.metaeval.ratings.agreement import krippendorff_alpha
from polyjudge.metaeval.results import JsonDoc
from polyjudge.metaeval.spans.scoring import span_f1
from polyjudge.validation.ppi import ppi_mean

PPI_ALPHA = 0.1


@dataclass(frozen=True, slots=True)
class AnnotatorProgress:
    """One annotator: items annotated of their queue, and versions saved (edits included)."""

    annotator: str
    done: int
    total: int
    versions: int


@dataclass(frozen=True, slots=True)
class PairF1:
    """Character-level span F1 of two annotators (``first`` as gold) on the ``items`` both annotated."""

    first: str
    second: str
    items: int
    f1: float


@dataclass(frozen=True, slots=True)
class JudgeAgreement:
    """One annotator's (or, ``humans (mean)``, the item means') agreement with the judge's scores."""

    who: str
    items: int
    pearson: float | None  # None: fewer than 3 items, or a constant side
    kendall: float | None


@dataclass(frozen=True, slots=True)
class PpiEstimate:
    """PPI++ estimate of the mean human score over every item of the judge's run, with its interval,
    the power-tuning ``lam`` (``lambda`` in the JSON) and the human-only estimate beside it."""

    estimate: float
    lower: float
    upper: float
    lam: float
    n_labelled: int
    n_judged: int
    human_only: float
    human_only_lower: float
    human_only_upper: float
    confidence: float

    def to_json(self) -> dict[str, float | int | None]:
        """The ``ppi`` object of ``annotate status --format json`` (in this key order; undefined parts null)."""
        doc: dict[str, float | int | None] = undefined_to_none({
                "estimate": self.estimate, "lower": self.lower, "upper": self.upper, "lambda": self.lam,
                "n_labelled": self.n_labelled, "n_judged": self.n_judged, "human_only": self.human_only,
                "human_only_lower": self.human_only_lower, "human_only_upper": self.human_only_upper,
                "confidence": self.confidence})
        return doc


@dataclass(frozen=True, slots=True)
class CheckRate:
    """One annotator's attention checks: passed, failed, pending (original not annotated yet) and the
    pass rate over the decided ones (None: none decided)."""

    annotator: str
    passed: int
    failed: int
    pending: int
    rate: float | None


@dataclass(frozen=True, slots=True)
class TimeRow:
    """Active time (focus and input, idle time left out) one annotator spent per item: the items with a
    time, their mean and median seconds (all versions of an item added up), and seconds per span marked."""

    who: str
    items: int
    mean_s: float | None
    median_s: float | None
    per_span_s: float | None


@dataclass(frozen=True, slots=True)
class PrefillRow:
    """Items annotated with (``with``) or without (``without``) the AI's suggestions: their time, the
    annotators' span agreement (mean pairwise span F1), and where the spans came from."""

    group: str
    annotations: int
    mean_s: float | None
    per_span_s: float | None
    span_f1: float | None
    kept: int
    edited: int
    deleted: int
    added: int


@dataclass(frozen=True, slots=True)
class CampaignStatus:
    """How far a campaign is and what it says so far: what ``annotate status`` prints and the
    report's campaign section renders, computed here or read back by :func:`read_status`.

    ``ppi`` is set for a campaign sampled with ``--by ppi`` once the estimate can be made;
    otherwise ``ppi_note`` says why it is missing (None: not a ppi sample)."""

    name: str
    scheme: str
    items: int  # items shown to annotators
    progress: tuple[AnnotatorProgress, ...]
    alpha: float | None  # None: fewer than two annotations of one item yet
    alpha_level: str
    alpha_items: int
    span_f1: tuple[PairF1, ...] = ()
    ppi: PpiEstimate | None = None
    ppi_note: str | None = None
    judge: tuple[JudgeAgreement, ...] = ()  # campaigns made with the judge's run
    checks: tuple[CheckRate, ...] = ()  # campaigns with attention checks
    time: tuple[TimeRow, ...] = ()  # per annotator, then "all"
    prefill: tuple[PrefillRow, ...] = ()  # pre-annotated campaigns: with and without suggestions

    @property
    def mean_span_f1(self) -> float | None:
        return float(np.mean([p.f1 for p in self.span_f1])) if self.span_f1 else None

    def to_json(self) -> dict[str, Any]:
        """The document ``annotate status --format json`` prints (keys in this order; ``checks``, ``time``
        and ``prefill`` only when the campaign has them)."""
        doc: dict[str, Any] = {"name": self.name, "scheme": self.scheme, "items": self.items,
                "progress": [asdict(p) for p in self.progress],
                "alpha": self.alpha, "alpha_level": self.alpha_level, "alpha_items": self.alpha_items,
                "span_f1": [asdict(p) for p in self.span_f1],
                "ppi": None if self.ppi is None else self.ppi.to_json(), "ppi_note": self.ppi_note,
                "judge": [asdict(j) for j in self.judge],  # rows: their fields in order
                "mean_span_f1": self.mean_span_f1}
        for key, rows in (("checks", self.checks), ("time", self.time), ("prefill", self.prefill)):
            if rows:
                doc[key] = [asdict(r) for r in rows]
        return doc


def status_json(status: CampaignStatus) -> str:
    """The one writer of a status document: ``annotate status --format json``'s text."""
    return json.dumps(status.to_json(), indent=2, ensure_ascii=False) + "\n"


# What a status file may look like, for the message when it does not.
EXPECTED = 'the JSON of "polyjudge annotate status --format json" ({"name", "scheme", "progress": [...], ...})'


def _whole(doc: JsonDoc, v: Any, where: str) -> int:
    x = doc.whole(v, where)
    if x is None:
        raise doc.fail(where, "must be a whole number, got null")
    return x


def _real(doc: JsonDoc, v: Any, where: str) -> float:
    x = doc.number(v, where)
    if x is None:
        raise doc.fail(where, "must be a number, got null")
    return float(x)


def _maybe(doc: JsonDoc, v: Any, where: str) -> float | None:
    x = doc.number(v, where)
    return None if x is None else float(x)


def _read_ppi(doc: JsonDoc, v: Any) -> PpiEstimate | None:
    if v is None:
        return None
    d = doc.obj(v, "ppi")
    r = {k: _real(doc, d.get(k), f"ppi.{k}") for k in ("estimate", "lower", "upper", "lambda", "human_only",
                                                         "human_only_lower", "human_only_upper", "confidence")}
    return PpiEstimate(r["estimate"], r["lower"], r["upper"], r["lambda"], _whole(doc, d.get("n_labelled"),
                       "ppi.n_labelled"), _whole(doc, d.get("n_judged"), "ppi.n_judged"), r["human_only"],
                       r["human_only_lower"], r["human_only_upper"], r["confidence"])


def _prefill_row(doc: JsonDoc, p: dict[str, Any], i: int) -> PrefillRow:
    real = {k: _maybe(doc, p.get(k), f"prefill[{i}].{k}") for k in ("mean_s", "per_span_s", "span_f1")}
    whole = {k: _whole(doc, p.get(k), f"prefill[{i}].{k}") for k in ("annotations", "kept", "edited", "deleted",
                                                                        "added")}
    return PrefillRow(doc.text(p.get("group"), f"prefill[{i}].group", ""), whole["annotations"], real["mean_s"],
                      real["per_span_s"], real["span_f1"], whole["kept"], whole["edited"], whole["deleted"],
                      whole["added"])


def read_status(obj: Any, path: str) -> CampaignStatus:
    """A status document (:func:`status_json`'s output) read back into the same typed rows; an
    InputError naming ``path`` and the place in the JSON when it is not one."""
    doc = JsonDoc(path, EXPECTED)
    d = doc.obj(obj, "the document")
    progress = tuple(AnnotatorProgress(doc.text(p.get("annotator"), f"progress[{i}].annotator", ""),
                                       _whole(doc, p.get("done"), f"progress[{i}].done"),
                                       _whole(doc, p.get("total"), f"progress[{i}].total"),
                                       _whole(doc, p.get("versions"), f"progress[{i}].versions"))
                     for i, p in enumerate(doc.objects(d.get("progress"), "progress", optional=False)))
    pairs = tuple(PairF1(doc.text(p.get("first"), f"span_f1[{i}].first", ""),
                         doc.text(p.get("second"), f"span_f1[{i}].second", ""),
                         _whole(doc, p.get("items"), f"span_f1[{i}].items"),
                         _real(doc, p.get("f1"), f"span_f1[{i}].f1"))
                  for i, p in enumerate(doc.objects(d.get("span_f1"), "span_f1")))
    judge = tuple(JudgeAgreement(doc.text(j.get("who"), f"judge[{i}].who", ""),
                                 _whole(doc, j.get("items"), f"judge[{i}].items"),
                                 _maybe(doc, j.get("pearson"), f"judge[{i}].pearson"),
                                 _maybe(doc, j.get("kendall"), f"judge[{i}].kendall"))
                  for i, j in enumerate(doc.objects(d.get("judge"), "judge")))
    note = d.get("ppi_note")
    checks = tuple(CheckRate(doc.text(c.get("annotator"), f"checks[{i}].annotator", ""),
                             _whole(doc, c.get("passed"), f"checks[{i}].passed"),
                             _whole(doc, c.get("failed"), f"checks[{i}].failed"),
                             _whole(doc, c.get("pending"), f"checks[{i}].pending"),
                             _maybe(doc, c.get("rate"), f"checks[{i}].rate"))
                   for i, c in enumerate(doc.objects(d.get("checks"), "checks")))
    times = tuple(TimeRow(doc.text(t.get("who"), f"time[{i}].who", ""), _whole(doc, t.get("items"), f"time[{i}].items"),
                          *(_maybe(doc, t.get(k), f"time[{i}].{k}") for k in ("mean_s", "median_s", "per_span_s")))
                  for i, t in enumerate(doc.objects(d.get("time"), "time")))
    prefill = tuple(_prefill_row(doc, p, i) for i, p in enumerate(doc.objects(d.get("prefill"), "prefill")))
    return CampaignStatus(
        doc.text(d.get("name"), "name", ""), doc.text(d.get("scheme"), "scheme", ""),
        _whole(doc, d.get("items"), "items"), progress, _maybe(doc, d.get("alpha"), "alpha"),
        doc.text(d.get("alpha_level"), "alpha_level", ""), _whole(doc, d.get("alpha_items", 0), "alpha_items"),
        pairs, _read_ppi(doc, d.get("ppi")), None if note is None else doc.text(note, "ppi_note", ""), judge,
        checks, times, prefill)


def human_value(scheme: Scheme, body: dict[str, Any], letters: tuple[str, ...]) -> float:
    """The number an annotation stands for (see the module docstring)."""
    if scheme.value == "points":
        return -mqm_points_of(body)
    if scheme.value == "score":
        return float(body["score"])
    if scheme.value == "option":
        return float(letters.index(body["choice"]))
    # response set: a code per distinct set (nominal)
    return float(sum(1 << letters.index(x) for x in body["choices"]))


def _matrix(store: CampaignStore, latest: dict[tuple[str, int], Annotation]) -> tuple[np.ndarray, int]:
    names = [n for n, _ in store.annotators()]
    shown = [it.id for it in store.results]
    col = {item: k for k, item in enumerate(shown)}
    m = np.full((len(names), len(shown)), np.nan)
    row = {n: k for k, n in enumerate(names)}
    letters = store.info.task.letters if store.info.task else ()
    for (name, item), ann in latest.items():
        m[row[name], col[item]] = human_value(store.info.scheme, ann.body, letters)
    paired = int(((~np.isnan(m)).sum(0) >= 2).sum())
    return m, paired


def _segments(store: CampaignStore, anns: dict[int, Annotation], items: list[int]) -> list[SpanSegment]:
    out = []
    for i in items:
        it = store.items[i]
        spans = tuple(Span(s["start"], s["end"], s["severity"] if s["severity"] != "critical" else "major")
                      for s in anns[i].body.get("spans") or []
                      if s.get("side", "target") == "target" and s["end"] > s["start"])  # located target spans
        out.append(SpanSegment(system=it.system, doc_id=it.doc_id, seg_id=it.seg_id, spans=spans, lp="all",
                               hypothesis=it.tgt))
    return out


def pairwise_span_f1(store: CampaignStore, latest: dict[tuple[str, int], Annotation]) -> list[PairF1]:
    """Span F1 of every pair of annotators (the first as gold) on the items both annotated."""
    by: dict[str, dict[int, Annotation]] = {}
    for (name, item), ann in latest.items():
        by.setdefault(name, {})[item] = ann
    names = [n for n, _ in store.annotators() if n in by]
    out = []
    for a, b in combinations(names, 2):
        shared = sorted(set(by[a]) & set(by[b]))
        if not shared:
            continue
        result = span_f1(_segments(store, by[a], shared), _segments(store, by[b], shared), set_ids=None)
        out.append(PairF1(a, b, len(shared), float(result.avg_f1)))
    return out


def _ppi(store: CampaignStore, latest: dict[tuple[str, int], Annotation]) -> tuple[PpiEstimate | None, str | None]:
    if store.info.sampling.get("by") != "ppi":
        return None, None
    if store.info.scheme.rating:
        return None, "PPI needs a score per item (a campaign of error spans or scores)"
    per_item: dict[int, list[float]] = {}
    for (_, item), ann in latest.items():
        per_item.setdefault(item, []).append(human_value(store.info.scheme, ann.body, ()))
    labelled = [i for i in sorted(per_item) if store.items[i].judge_score is not None]
    unlabelled = [it.judge_score for it in store.items if it.judge_score is not None and it.id not in per_item]
    try:
        r = ppi_mean(np.array([np.mean(per_item[i]) for i in labelled]),
                     np.array([store.items[i].judge_score for i in labelled], dtype=float),
                     np.array(unlabelled, dtype=float), alpha=PPI_ALPHA)
    except InputError as exc:
        return None, f"not yet: {exc.reason}"
    return PpiEstimate(r.estimate, r.lower, r.upper, r.lam, r.n_labelled, r.n_unlabelled, r.classical,
                       r.classical_lower, r.classical_upper, 1 - PPI_ALPHA), None


def _correlations(who: str, pairs: list[tuple[float, float]]) -> JudgeAgreement:
    from scipy.stats import kendalltau

    x, y = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    if len(pairs) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return JudgeAgreement(who, len(pairs), None, None)
    return JudgeAgreement(who, len(pairs), float(np.corrcoef(x, y)[0, 1]), float(kendalltau(x, y).statistic))


def judge_agreement(store: CampaignStore, latest: dict[tuple[str, int], Annotation]) -> list[JudgeAgreement]:
    """Pearson and Kendall's tau-b of each annotator's values, and of the item means, with the judge's
    scores (campaigns made with ``--run``; nothing for rating schemes, whose values are categories)."""
    if store.info.scheme.rating or all(it.judge_score is None for it in store.items):
        return []
    by: dict[str, list[tuple[float, float]]] = {}
    per_item: dict[int, list[float]] = {}
    for (name, item), ann in latest.items():
        judge = store.items[item].judge_score
        if judge is not None:
            value = human_value(store.info.scheme, ann.body, ())
            by.setdefault(name, []).append((value, judge))
            per_item.setdefault(item, []).append(value)
    rows = [_correlations(n, by[n]) for n, _ in store.annotators() if n in by]
    means = [(float(np.mean(v)), float(store.items[i].judge_score or 0.0)) for i, v in sorted(per_item.items())]
    return [*rows, _correlations("humans (mean)", means)] if means else rows


def check_rates(store: CampaignStore, latest: dict[tuple[str, int], Annotation]) -> list[CheckRate]:
    """Each annotator's attention-check pass rate (campaigns with checks)."""
    if not any(it.check for it in store.items):
        return []
    letters = store.info.task.letters if store.info.task else ()
    results = check_results(store.items, store.info.scheme, letters, latest)
    out = []
    for name, _ in store.annotators():
        mine = [r.passed for r in results if r.annotator == name]
        passed, failed = mine.count(True), mine.count(False)
        out.append(CheckRate(name, passed, failed, mine.count(None),
                             passed / (passed + failed) if passed + failed else None))
    return out


def _time_row(who: str, keys: list[tuple[str, int]], seconds: dict[tuple[str, int], float],
              latest: dict[tuple[str, int], Annotation]) -> TimeRow:
    timed = [k for k in keys if k in seconds]
    if not timed:
        return TimeRow(who, 0, None, None, None)
    secs = [seconds[k] for k in timed]
    spans = sum(len(unique_spans(latest[k].body)) for k in timed)
    return TimeRow(who, len(timed), float(np.mean(secs)), float(np.median(secs)), sum(secs) / spans if spans else None)


def time_rows(store: CampaignStore, latest: dict[tuple[str, int], Annotation]) -> list[TimeRow]:
    """Active time per item of each annotator and of everyone (results only; none recorded: no rows)."""
    seconds = store.active_seconds()
    if not seconds:
        return []
    rows = [_time_row(n, [k for k in latest if k[0] == n], seconds, latest) for n, _ in store.annotators()]
    return [*rows, _time_row("all", list(latest), seconds, latest)]


def _origins(latest: dict[tuple[str, int], Annotation]) -> dict[str, int]:
    counts = {"kept": 0, "edited": 0, "deleted": 0, "added": 0}
    for ann in latest.values():
        for sp in unique_spans(ann.body):
            counts[str(sp.get("origin") or "added")] += 1
        counts["deleted"] += len(ann.body.get("deleted") or [])
    return counts


def prefill_rows(store: CampaignStore, latest: dict[tuple[str, int], Annotation]) -> list[PrefillRow]:
    """Time, agreement and span origins on the items shown with the AI's suggestions and without."""
    if store.info.prefill is None:
        return []
    seconds = store.active_seconds()
    out = []
    for group, with_ai in (("with", True), ("without", False)):
        part = {k: a for k, a in latest.items() if (store.items[k[1]].prefill is not None) == with_ai}
        t = _time_row(group, list(part), seconds, part)
        pairs = pairwise_span_f1(store, part)
        counts = _origins(part)
        out.append(PrefillRow(group, len(part), t.mean_s, t.per_span_s,
                              float(np.mean([p.f1 for p in pairs])) if pairs else None, counts["kept"],
                              counts["edited"], counts["deleted"], counts["added"]))
    return out


def campaign_status(store: CampaignStore) -> CampaignStatus:
    everything = store.latest()
    latest = {k: a for k, a in everything.items() if not store.items[k[1]].check}  # results: checks left out
    queues = store.queues()
    counts: dict[str, int] = {}
    for (name,) in store.db.execute("SELECT annotator FROM annotations"):
        counts[name] = counts.get(name, 0) + 1
    progress = tuple(AnnotatorProgress(n, sum(1 for i in q if (n, i) in everything), len(q), counts.get(n, 0))
                     for n, q in queues.items())
    scheme = store.info.scheme
    m, paired = _matrix(store, latest)
    level = scheme.level
    alpha = krippendorff_alpha(m, level=level) if paired else None  # type: ignore[arg-type]
    ppi, note = _ppi(store, latest)
    return CampaignStatus(store.info.name, scheme.name, len(store.results), progress,
                          None if alpha is None or math.isnan(alpha) else alpha, level, paired,
                          tuple(pairwise_span_f1(store, latest)) if scheme.spans else (), ppi, note,
                          tuple(judge_agreement(store, latest)), tuple(check_rates(store, everything)),
                          tuple(time_rows(store, latest)), tuple(prefill_rows(store, latest)))


__all__ = ["AnnotatorProgress", "CampaignStatus", "CheckRate", "PrefillRow", "TimeRow", "check_rates",
           "prefill_rows", "time_rows", "JudgeAgreement", "PairF1", "PpiEstimate", "campaign_status",
           "human_value", "judge_agreement", "pairwise_span_f1", "read_status", "status_json"]
