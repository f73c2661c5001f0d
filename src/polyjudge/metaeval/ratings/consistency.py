"""Cross-language consistency of a judge on parallel data (Fu & Liu, 2025).

Input is a long table of ratings, one per (judge, task, criterion, language,
item): the ``label`` is the judge's verdict as a number (1 = correct,
0 = incorrect, or the 1-5 grade; ``None`` for a failed judgment) and
``gold`` the gold verdict (1/0) when known. For every judge, task, criterion
and answer subset (``all`` plus each ``answer_kind``, e.g. ``gold``/``wrong``)
the study reports:

- per language: ratings, failures, accuracy and weighted F1 against gold
  (binary criterion) and the mean label (share judged correct, or the average grade);
- Fleiss' kappa across languages, each language acting as one rater, over
  the items that have a valid rating in every language;
- Cohen's kappa of each language against the reference language (English);
- the Spearman correlation, over the non-reference languages, between
  per-language accuracy (or mean grade) and that language's Cohen's kappa;
- and, across judges (:func:`spearman_across_judges`), the Spearman
  correlation between a judge's accuracy (average grade) and its Fleiss'
  kappa, as in Fu & Liu's Table 3;
- the factor analyses: each language's kappa against the reference next to
  its resource class, script and family (:func:`language_factors`, from the
  shipped ``languages.tsv``), Spearman's rho of resource class vs kappa
  (:func:`factor_correlations`), mean kappa per factor value
  (:func:`factor_groups`), and the Yes/No minus grade gap (:func:`grade_gap`).

Failed judgments are counted and left out, never scored.
"""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from polyjudge.aggregate.panel import EnsMinReport, Method, TieRule, aggregate_panel, ens_minus_min
from polyjudge.data.errors import InputError
from polyjudge.data.numbers import stat_text
from polyjudge.metaeval.ratings.agreement import cohen_kappa, fleiss_kappa_from_labels

BINARY_CRITERIA = ("binary",)
ALL = "all"


@dataclass(frozen=True, slots=True)
class Rating:
    """One judgment in the long table."""

    judge: str
    task: str
    criterion: str  # "binary" or "grade" (or a rubric metric name)
    language: str
    item_id: str
    label: float | None  # None = failed judgment
    gold: float | None = None  # 1 correct / 0 incorrect, when known
    answer_kind: str | None = None  # "gold" / "wrong" for parallel sets


@dataclass(slots=True)
class LanguageStats:
    n: int
    failed: int
    accuracy: float | None
    mean: float
    cohen_vs_ref: float | None
    weighted_f1: float | None = None  # verdict vs gold, support-weighted over classes


@dataclass(slots=True)
class ConsistencyRow:
    judge: str
    task: str
    criterion: str
    subset: str
    languages: list[str]
    n_items: int
    n_complete: int
    accuracy: float | None  # pooled over languages (binary criterion with gold)
    mean: float  # pooled mean label (share correct / average grade)
    fleiss_kappa: float
    spearman_acc_kappa: float  # over non-reference languages; NaN when undefined
    per_language: dict[str, LanguageStats] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = _nan_to_none(asdict(self))
        return d


def _nan_to_none(x: Any) -> Any:
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: _nan_to_none(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_nan_to_none(v) for v in x]
    return x


def _spearman(x: Sequence[float | None], y: Sequence[float | None]) -> float:
    pts = [(a, b) for a, b in zip(x, y) if a is not None and b is not None
           and not math.isnan(a) and not math.isnan(b)]
    if len(pts) < 3:
        return float("nan")
    a, b = np.array(pts).T
    if np.all(a == a[0]) or np.all(b == b[0]):
        return float("nan")
    return float(spearmanr(a, b).statistic)


def weighted_f1(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """F1 per class averaged with the classes' support in ``y_true`` (as
    Hada et al. report; matches ``sklearn.metrics.f1_score(average="weighted")``).
    A class never predicted and never true contributes nothing; F1 of a class
    with no correct prediction is 0."""
    t, p = np.asarray(y_true), np.asarray(y_pred)
    if t.size == 0:
        return float("nan")
    classes = np.unique(np.concatenate([t, p]))
    tp = ((t[:, None] == classes) & (p[:, None] == classes)).sum(0).astype(float)
    support = (t[:, None] == classes).sum(0).astype(float)
    predicted = (p[:, None] == classes).sum(0).astype(float)
    denom = support + predicted
    f1 = np.divide(2 * tp, denom, out=np.zeros_like(tp), where=denom > 0)
    return float((f1 * support).sum() / support.sum())


def language_matrix(ratings: Sequence[Rating],
                    languages: Sequence[str]) -> tuple[list[tuple[str, str | None]], np.ndarray, np.ndarray]:
    """``(keys, labels, gold)``: labels is ``items x languages`` (NaN = missing or
    failed), items keyed by ``(item_id, answer_kind)`` in first-seen order."""
    keys: dict[tuple[str, str | None], int] = {}
    for r in ratings:
        keys.setdefault((r.item_id, r.answer_kind), len(keys))
    col = {lang: j for j, lang in enumerate(languages)}
    lab = np.full((len(keys), len(languages)), np.nan)
    gold = np.full(len(keys), np.nan)
    seen = np.zeros_like(lab, dtype=bool)
    for r in ratings:
        i, j = keys[(r.item_id, r.answer_kind)], col[r.language]
        if seen[i, j]:
            raise InputError(f"two ratings for item {r.item_id} ({r.answer_kind}) in {r.language} "
                             f"by judge {r.judge}, criterion {r.criterion}")
        seen[i, j] = True
        if r.label is not None:
            lab[i, j] = r.label
        if r.gold is not None:
            gold[i] = r.gold
    return list(keys), lab, gold


def consistency_row(ratings: Sequence[Rating], *, reference: str = "en",
                    subset: str = ALL) -> ConsistencyRow:
    """Statistics for one judge x task x criterion x subset."""
    r0 = ratings[0]
    langs = list(dict.fromkeys(r.language for r in ratings))
    if reference in langs:
        langs.remove(reference)
        langs.insert(0, reference)
    _, lab, gold = language_matrix(ratings, langs)
    valid = ~np.isnan(lab)
    binary = r0.criterion in BINARY_CRITERIA
    has_gold = binary and not np.isnan(gold).all()

    per: dict[str, LanguageStats] = {}
    for j, lang in enumerate(langs):
        v = valid[:, j]
        n_rated = int(sum(1 for r in ratings if r.language == lang))
        acc = wf1 = None
        if has_gold:
            g = v & ~np.isnan(gold)
            acc = float(np.mean(lab[g, j] == gold[g])) if g.any() else float("nan")
            wf1 = weighted_f1(gold[g], lab[g, j])
        mean = float(lab[v, j].mean()) if v.any() else float("nan")
        ck = None
        if reference in langs and lang != reference:
            both = v & valid[:, 0]
            ck = cohen_kappa(lab[both, 0], lab[both, j]) if both.any() else float("nan")
        per[lang] = LanguageStats(int(v.sum()), n_rated - int(v.sum()), acc, mean, ck, wf1)

    complete = valid.all(1)
    fk = float("nan")
    if complete.any() and len(langs) >= 2:
        fk = fleiss_kappa_from_labels(lab[complete])
    acc_all = None
    if has_gold:
        g = valid & ~np.isnan(gold)[:, None]
        acc_all = float(np.mean((lab == gold[:, None])[g])) if g.any() else float("nan")
    mean_all = float(lab[valid].mean()) if valid.any() else float("nan")
    others = [lang for lang in langs if lang != reference]
    x = [(per[lang].accuracy if has_gold else per[lang].mean) for lang in others]
    y = [per[lang].cohen_vs_ref for lang in others]
    return ConsistencyRow(r0.judge, r0.task, r0.criterion, subset, langs, lab.shape[0],
                          int(complete.sum()), acc_all, mean_all, fk, _spearman(x, y), per)


def consistency_table(ratings: Iterable[Rating], *, reference: str = "en",
                      subsets: bool = True) -> list[ConsistencyRow]:
    """One row per judge x task x criterion x subset (``all``, then each answer kind)."""
    groups: dict[tuple[str, str, str], list[Rating]] = defaultdict(list)
    for r in ratings:
        groups[(r.judge, r.task, r.criterion)].append(r)
    rows = []
    for rs in groups.values():
        rows.append(consistency_row(rs, reference=reference, subset=ALL))
        kinds = list(dict.fromkeys(r.answer_kind for r in rs if r.answer_kind is not None))
        if subsets and len(kinds) > 1:
            for kind in kinds:
                rows.append(consistency_row([r for r in rs if r.answer_kind == kind],
                                            reference=reference, subset=kind))
    return rows


def spearman_across_judges(rows: Sequence[ConsistencyRow]) -> list[dict[str, Any]]:
    """Spearman between accuracy (binary) or average grade and Fleiss' kappa,
    over judges, per task x criterion x subset (Fu & Liu, Table 3)."""
    groups: dict[tuple[str, str, str], list[ConsistencyRow]] = defaultdict(list)
    for r in rows:
        groups[(r.task, r.criterion, r.subset)].append(r)
    out = []
    for (task, crit, subset), rs in groups.items():
        x = [r.accuracy if r.accuracy is not None else r.mean for r in rs]
        out.append({"task": task, "criterion": crit, "subset": subset, "n_judges": len(rs),
                    "spearman": _nan_to_none(_spearman(x, [r.fleiss_kappa for r in rs]))})
    return out


PanelKey = tuple[str, str, str, str, str | None]
"""(task, criterion, language, item_id, answer_kind)"""


def panel_votes(ratings: Iterable[Rating]) -> tuple[list[PanelKey], dict[PanelKey, Rating], list[str], np.ndarray]:
    """``(keys, example, judges, votes)``: an ``items x judges`` vote matrix
    (NaN = failed or missing) keyed by (task, criterion, language, item, kind)."""
    groups: dict[PanelKey, dict[str, Rating]] = defaultdict(dict)
    judges: list[str] = []
    for r in ratings:
        groups[(r.task, r.criterion, r.language, r.item_id, r.answer_kind)][r.judge] = r
        if r.judge not in judges:
            judges.append(r.judge)
    keys = list(groups)
    votes = np.array([[np.nan if (g := groups[k].get(j)) is None or g.label is None else g.label
                       for j in judges] for k in keys], dtype=float).reshape(len(keys), len(judges))
    example = {k: next(iter(groups[k].values())) for k in keys}
    return keys, example, judges, votes


def panel_ratings(ratings: Iterable[Rating], *, name: str = "ensemble", method: Method = "majority",
                  tie: TieRule = "low") -> list[Rating]:
    """Combine several judges into one panel judge per (task, criterion,
    language, item) with :func:`polyjudge.aggregate.panel.aggregate_panel`."""
    keys, example, _, votes = panel_votes(ratings)
    res = aggregate_panel(votes, method, tie)
    out = []
    for k, value in zip(keys, res.value):
        r = example[k]
        out.append(Rating(name, r.task, r.criterion, r.language, r.item_id,
                          None if np.isnan(value) else float(value), r.gold, r.answer_kind))
    return out


def panel_agreement(ratings: Iterable[Rating], *, method: Method = "majority",
                    tie: TieRule = "low") -> list[dict[str, Any]]:
    """How much the panel agreed, per task x criterion x language: mean share of
    votes on the modal label, share of unanimous items, share of ties, items
    with no valid vote."""
    keys, example, judges, votes = panel_votes(ratings)
    res = aggregate_panel(votes, method, tie)
    groups: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for i, k in enumerate(keys):
        groups[(example[k].task, example[k].criterion, example[k].language)].append(i)
    out = []
    for (task, crit, lang), idx in groups.items():
        ix = np.array(idx)
        voted = res.n_votes[ix] > 0
        out.append({"task": task, "criterion": crit, "language": lang, "n_items": len(idx),
                    "n_judges": len(judges), "no_vote": int((~voted).sum()),
                    "mean_agreement": _nan_to_none(float(res.agreement[ix][voted].mean()))
                    if voted.any() else None,
                    "unanimous": float(res.unanimous[ix][voted].mean()) if voted.any() else None,
                    "ties": float(res.tie[ix][voted].mean()) if voted.any() else None})
    return out


def ensemble_report(rows: Sequence[ConsistencyRow], ensemble: str = "ensemble",
                    statistic: str = "fleiss_kappa") -> list[dict[str, Any]]:
    """Ens - Min per task x criterion x subset for ``statistic`` (a row attribute)."""
    groups: dict[tuple[str, str, str], list[ConsistencyRow]] = defaultdict(list)
    for r in rows:
        groups[(r.task, r.criterion, r.subset)].append(r)
    out = []
    for (task, crit, subset), rs in groups.items():
        ens = [r for r in rs if r.judge == ensemble]
        single = {r.judge: getattr(r, statistic) for r in rs if r.judge != ensemble}
        if not ens or not single:
            continue
        rep: EnsMinReport = ens_minus_min(single, getattr(ens[0], statistic), statistic)
        out.append({"task": task, "criterion": crit, "subset": subset,
                    **_nan_to_none(rep.to_dict())})
    return out


# -- factors (Fu & Liu, sections 4.2 and 5.1) ----------------------------------

FACTORS = ("resource_class", "script", "family")


@dataclass(frozen=True, slots=True)
class LanguageFactorRow:
    """One language's consistency with the reference language next to its factors."""

    judge: str
    task: str
    criterion: str
    subset: str
    language: str
    n: int  # valid ratings in this language
    kappa: float  # Cohen's kappa against the reference language
    resource_class: int | None  # Joshi et al. class, None when unknown
    script: str | None
    family: str | None
    branch: str | None


@dataclass(frozen=True, slots=True)
class FactorCorrelation:
    """Spearman correlation between an ordinal factor and per-language kappa."""

    judge: str
    task: str
    criterion: str
    subset: str
    factor: str
    n_languages: int  # languages with a known factor value and a kappa
    spearman: float  # NaN with fewer than 3 languages or a constant side
    p_value: float


@dataclass(frozen=True, slots=True)
class FactorGroup:
    """Mean per-language kappa of the languages sharing one value of a factor."""

    judge: str
    task: str
    criterion: str
    subset: str
    factor: str
    group: str
    n_languages: int
    mean_kappa: float
    languages: str  # comma-separated


@dataclass(frozen=True, slots=True)
class GradeGapRow:
    """Consistency of Yes/No verdicts minus consistency of 1-5 grades (Fu & Liu's
    Delta = Kappa_YesNo - Kappa_Grade): per language with Cohen's kappa against the
    reference, and over all languages (``language='all'``) with Fleiss' kappa."""

    judge: str
    task: str
    subset: str
    language: str
    statistic: str  # cohen_vs_ref | fleiss_kappa
    kappa_binary: float
    kappa_grade: float
    delta: float


def _f(x: float | None) -> float:
    return float("nan") if x is None else float(x)


def language_factors(rows: Sequence[ConsistencyRow]) -> list[LanguageFactorRow]:
    """Every non-reference language of every row, its kappa against the reference
    and its factors from the shipped language table (None when not listed)."""
    from polyjudge.data.languages import language_info

    out = []
    for r in rows:
        for lang, s in r.per_language.items():
            if s.cohen_vs_ref is None:  # the reference language itself
                continue
            info = language_info(lang)
            out.append(LanguageFactorRow(r.judge, r.task, r.criterion, r.subset, lang, s.n, _f(s.cohen_vs_ref),
                                         info.resource_class if info else None, info.script if info else None,
                                         info.family if info else None, info.branch if info else None))
    return out


def _by_condition(rows: Iterable[LanguageFactorRow]) -> dict[tuple[str, str, str, str], list[LanguageFactorRow]]:
    groups: dict[tuple[str, str, str, str], list[LanguageFactorRow]] = defaultdict(list)
    for r in rows:
        groups[(r.judge, r.task, r.criterion, r.subset)].append(r)
    return groups


def factor_correlations(rows: Sequence[LanguageFactorRow]) -> list[FactorCorrelation]:
    """Spearman's rho between resource class and kappa over the languages of each
    judge x task x criterion x subset (languages with an unknown class or an
    undefined kappa are left out)."""
    out = []
    for key, rs in _by_condition(rows).items():
        pts = [(float(r.resource_class), r.kappa) for r in rs
               if r.resource_class is not None and not math.isnan(r.kappa)]
        rho = p = float("nan")
        if len(pts) >= 3:
            a, b = np.array(pts).T
            if not (np.all(a == a[0]) or np.all(b == b[0])):
                res = spearmanr(a, b)
                rho, p = float(res.statistic), float(res.pvalue)
        out.append(FactorCorrelation(*key, "resource_class", len(pts), rho, p))
    return out


def factor_groups(rows: Sequence[LanguageFactorRow], factors: Sequence[str] = FACTORS) -> list[FactorGroup]:
    """Mean kappa per value of each factor (``resource_class``, ``script``,
    ``family``); languages without a value or a kappa are left out."""
    out = []
    for key, rs in _by_condition(rows).items():
        for factor in factors:
            groups: dict[str, list[LanguageFactorRow]] = defaultdict(list)
            for r in rs:
                v = getattr(r, factor)
                if v is not None and not math.isnan(r.kappa):
                    groups[str(v)].append(r)
            for value in sorted(groups, key=lambda g: (factor != "resource_class", -int(g) if g.isdigit() else 0, g)):
                g = groups[value]
                out.append(FactorGroup(*key, factor, value, len(g), float(np.mean([r.kappa for r in g])),
                                       ",".join(r.language for r in g)))
    return out


def grade_gap(rows: Sequence[ConsistencyRow], binary: str = "binary", grade: str = "grade") -> list[GradeGapRow]:
    """Delta = kappa(Yes/No) - kappa(grade) per judge x task x subset: first over
    all languages (Fleiss' kappa), then per language (Cohen's kappa against the
    reference). Empty unless both criteria were judged."""
    index = {(r.judge, r.task, r.criterion, r.subset): r for r in rows}
    out = []
    for (judge, task, crit, subset), rb in index.items():
        if crit != binary or (judge, task, grade, subset) not in index:
            continue
        rg = index[(judge, task, grade, subset)]
        out.append(GradeGapRow(judge, task, subset, "all", "fleiss_kappa", rb.fleiss_kappa, rg.fleiss_kappa,
                               rb.fleiss_kappa - rg.fleiss_kappa))
        for lang, sb in rb.per_language.items():
            sg = rg.per_language.get(lang)
            if sb.cohen_vs_ref is None or sg is None or sg.cohen_vs_ref is None:
                continue
            kb, kg = _f(sb.cohen_vs_ref), _f(sg.cohen_vs_ref)
            out.append(GradeGapRow(judge, task, subset, lang, "cohen_vs_ref", kb, kg, kb - kg))
    return out


def records_tsv(records: Sequence[Any]) -> str:
    """TSV of frozen dataclass rows (header = field names; NaN/None n/a; floats to 4 places)."""
    if not records:
        return ""
    cols = [f for f in records[0].__dataclass_fields__]
    buf = io.StringIO()
    w = csv.writer(buf, delimiter="\t", lineterminator="\n")
    w.writerow(cols)
    for r in records:
        w.writerow([_fmt(getattr(r, c)) for c in cols])
    return buf.getvalue()


# -- tables -------------------------------------------------------------------

def _fmt(x: Any) -> str:
    """A cell of the consistency tables: a statistic to 4 places, ``n/a`` when undefined (NaN, None)."""
    if x is None or isinstance(x, float):
        return stat_text(x)
    return str(x)


def summary_tsv(rows: Sequence[ConsistencyRow]) -> str:
    """One line per row: judge task criterion subset n_items n_complete
    accuracy mean fleiss_kappa spearman_acc_kappa languages."""
    buf = io.StringIO()
    w = csv.writer(buf, delimiter="\t", lineterminator="\n")
    w.writerow(["judge", "task", "criterion", "subset", "n_items", "n_complete", "accuracy",
                "mean", "fleiss_kappa", "spearman_acc_kappa", "languages"])
    for r in rows:
        w.writerow([r.judge, r.task, r.criterion, r.subset, r.n_items, r.n_complete,
                    _fmt(r.accuracy), _fmt(r.mean), _fmt(r.fleiss_kappa),
                    _fmt(r.spearman_acc_kappa), ",".join(r.languages)])
    return buf.getvalue()


def languages_tsv(rows: Sequence[ConsistencyRow]) -> str:
    """One line per row and language: n failed accuracy weighted_f1 mean cohen_vs_ref."""
    buf = io.StringIO()
    w = csv.writer(buf, delimiter="\t", lineterminator="\n")
    w.writerow(["judge", "task", "criterion", "subset", "language", "n", "failed", "accuracy",
                "weighted_f1", "mean", "cohen_vs_ref"])
    for r in rows:
        for lang, s in r.per_language.items():
            w.writerow([r.judge, r.task, r.criterion, r.subset, lang, s.n, s.failed,
                        _fmt(s.accuracy), _fmt(s.weighted_f1), _fmt(s.mean), _fmt(s.cohen_vs_ref)])
    return buf.getvalue()


def dicts_tsv(records: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, delimiter="\t", lineterminator="\n")
    w.writerow(columns)
    for d in records:
        w.writerow([_fmt(d.get(c)) for c in columns])
    return buf.getvalue()
