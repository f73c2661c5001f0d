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
  judge's scores on the same items.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from polyjudge.annotate.export import mqm_points_of
from polyjudge.annotate.schemes import Scheme
from polyjudge.annotate.store import Annotation, CampaignStore
from polyjudge.data.errors import InputError
from polyjudge.data.spans import Span, SpanSegment
from polyjudge.metaeval.ratings.agreement import krippendorff_alpha
from polyjudge.metaeval.spans.scoring import span_f1
from polyjudge.validation.ppi import ppi_mean

PPI_ALPHA = 0.1


@dataclass(frozen=True)
class AnnotatorProgress:
    annotator: str
    done: int
    total: int
    versions: int


@dataclass(frozen=True)
class PairF1:
    first: str
    second: str
    items: int
    f1: float


@dataclass(frozen=True)
class JudgeAgreement:
    """One annotator's (or, ``humans (mean)``, the item means') agreement with the judge's scores."""

    who: str
    items: int
    pearson: float | None  # None: fewer than 3 items, or a constant side
    kendall: float | None


@dataclass
class CampaignStatus:
    name: str
    scheme: str
    items: int  # items shown to annotators
    progress: list[AnnotatorProgress]
    alpha: float | None  # None: fewer than two annotations of one item yet
    alpha_level: str
    alpha_items: int
    span_f1: list[PairF1] = field(default_factory=list)
    ppi: dict[str, float | int] | None = None
    ppi_note: str | None = None
    judge: list[JudgeAgreement] = field(default_factory=list)  # campaigns made with the judge's run

    @property
    def mean_span_f1(self) -> float | None:
        return float(np.mean([p.f1 for p in self.span_f1])) if self.span_f1 else None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["mean_span_f1"] = self.mean_span_f1
        return out


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
    shown = [it.id for it in store.items if it.sampled]
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
                      for s in anns[i].body.get("spans") or [])
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


def _ppi(store: CampaignStore, latest: dict[tuple[str, int], Annotation]) -> tuple[dict[str, float | int] | None,
                                                                                   str | None]:
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
    return {"estimate": r.estimate, "lower": r.lower, "upper": r.upper, "lambda": r.lam,
            "n_labelled": r.n_labelled, "n_judged": r.n_unlabelled, "human_only": r.classical,
            "human_only_lower": r.classical_lower, "human_only_upper": r.classical_upper,
            "confidence": 1 - PPI_ALPHA}, None


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


def campaign_status(store: CampaignStore) -> CampaignStatus:
    latest = store.latest()
    queues = store.queues()
    counts: dict[str, int] = {}
    for (name,) in store.db.execute("SELECT annotator FROM annotations"):
        counts[name] = counts.get(name, 0) + 1
    progress = [AnnotatorProgress(n, sum(1 for i in q if (n, i) in latest), len(q), counts.get(n, 0))
                for n, q in queues.items()]
    scheme = store.info.scheme
    m, paired = _matrix(store, latest)
    level = scheme.level
    alpha = krippendorff_alpha(m, level=level) if paired else None  # type: ignore[arg-type]
    status = CampaignStatus(store.info.name, scheme.name, sum(1 for it in store.items if it.sampled), progress,
                            None if alpha is None or math.isnan(alpha) else alpha, level, paired)
    if scheme.spans:
        status.span_f1 = pairwise_span_f1(store, latest)
    status.ppi, status.ppi_note = _ppi(store, latest)
    status.judge = judge_agreement(store, latest)
    return status


__all__ = ["AnnotatorProgress", "CampaignStatus", "JudgeAgreement", "PairF1", "campaign_status", "human_value",
           "judge_agreement", "pairwise_span_f1"]
