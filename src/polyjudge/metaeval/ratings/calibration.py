"""Calibration of LLM judges against human ratings (Hada et al., 2024).

Input is a long table of ratings, one per (item, rater): every item has one or
more human ratings and one or more judge ratings. For each language, task,
metric and judge we report

* percentage agreement of the judge with the human majority, and among humans
  (share of items on which all humans agree, and mean pairwise agreement);
* weighted F1 of the judge against the human majority (and mean pairwise
  weighted F1 among humans);
* Cohen's kappa (unweighted and quadratic-weighted) judge vs human majority;
* Fleiss' kappa among humans;
* Krippendorff's alpha (nominal, ordinal, interval) among humans and between
  the judge and the human majority;
* the class distribution: items grouped by human agreement (full / partial /
  none) x human score x judge score, the analysis that shows judges giving the
  top score where humans disagree.

File format (JSONL objects or a TSV/CSV with a header), one rating per line::

    item_id  language  task  metric  rater  kind   rating
    q1       de        qa    LA      ann1   human  2
    q1       de        qa    LA      gpt4   judge  2

``language``, ``task`` and ``metric`` may be omitted (empty). ``kind`` is
``human`` or ``judge``. Ratings are numbers (ordinal/interval statistics need
numbers) or category labels (only nominal statistics are then computed). An
empty rating is a missing rating and is skipped (a judge's parse failure).

The human majority of an item is the label given by more than half of its
human raters; items without such a majority (ties, no agreement) are left out
of the judge-vs-majority statistics and counted in ``n_no_majority``.
"""

from __future__ import annotations

import csv
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from polyjudge.data import textio
from polyjudge.data.errors import InputError
from polyjudge.data.numbers import stat_text
from polyjudge.data.readers import iter_jsonl
from polyjudge.data.records import Item
from polyjudge.metaeval.ratings.agreement import (
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha,
    labels_to_counts,
    percent_agreement,
)
from polyjudge.metaeval.ratings.consistency import weighted_f1

__all__ = ["RatingRow", "CalibrationRow", "Bins", "JudgeSource", "item_key", "human_groups", "judge_ratings",
           "run_dir_ratings", "read_ratings", "human_majority", "agreement_class",
           "calibrate", "class_distribution", "weighted_f1", "rows_tsv", "rows_text",
           "distribution_tsv"]

COLUMNS = ("item_id", "language", "task", "metric", "rater", "kind", "rating")


@dataclass(frozen=True)
class RatingRow:
    item_id: str
    language: str
    task: str
    metric: str
    rater: str
    kind: str  # "human" | "judge"
    rating: Any  # float or str


def _value(raw: Any, path: str, line: int) -> Any:
    """Numbers stay numbers (as float); anything else is a category label.

    A number must be finite: an infinite rating (or one too large for a float)
    would turn every statistic of its group into NaN without saying why.
    """
    if isinstance(raw, bool | int | float):
        try:
            value = float(raw)
        except OverflowError:
            value = math.inf
    else:
        text = str(raw).strip()
        try:
            value = float(text)
        except ValueError:
            return text
    if math.isinf(value):
        raise InputError(f"not a finite rating: {textio.short(raw)}", path=path, line=line, field="rating")
    return value


def _row(d: dict[str, Any], path: str, line: int) -> RatingRow | None:
    for key in ("item_id", "rater", "kind"):
        if d.get(key) in (None, ""):
            raise InputError(f"missing field {key!r}", path=path, line=line, field=key)
    if "rating" not in d:
        raise InputError("missing field 'rating'", path=path, line=line, field="rating")
    kind = str(d["kind"]).strip().lower()
    if kind not in ("human", "judge"):
        raise InputError(f"kind must be 'human' or 'judge', got {textio.short(d['kind'])}", path=path, line=line,
                         field="kind")
    raw = d["rating"]
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    value = _value(raw, path, line)
    if isinstance(value, float) and math.isnan(value):
        return None
    return RatingRow(str(d["item_id"]), str(d.get("language") or ""), str(d.get("task") or ""),
                     str(d.get("metric") or ""), str(d["rater"]), kind, value)


def read_ratings(path: str | Path, fmt: str | None = None) -> list[RatingRow]:
    """Read the long ratings table (JSONL, TSV or CSV by extension or ``fmt``)."""
    p = Path(path)
    fmt = fmt or {".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv"}.get(p.suffix.lower(), "tsv")
    out: list[RatingRow] = []
    if fmt == "jsonl":
        for i, d in iter_jsonl(p):
            r = _row(d, str(p), i)
            if r is not None:
                out.append(r)
    else:
        csv.field_size_limit(2**31 - 1)
        lines = (text + "\n" for _, text in textio.iter_lines(p))
        reader = csv.DictReader(lines, delimiter="," if fmt == "csv" else "\t")
        try:
            missing = {"item_id", "rater", "kind", "rating"} - set(reader.fieldnames or [])
            if missing:
                raise InputError(f"header lacks column(s) {sorted(missing)}", path=str(p), line=1)
            for d in reader:
                r = _row(d, str(p), reader.line_num)
                if r is not None:
                    out.append(r)
        except csv.Error as exc:
            raise InputError(f"not a valid {fmt.upper()} row: {exc}", path=str(p),
                             line=reader.reader.line_num) from None
    if not out:
        raise InputError("no ratings found", path=str(p))
    seen: set[tuple[str, str, str, str, str]] = set()
    for r in out:
        key = (r.item_id, r.language, r.task, r.metric, r.rater)
        if key in seen:
            raise InputError(f"rater {textio.short(r.rater)} rates item {textio.short(r.item_id)} twice "
                             f"(language {textio.short(r.language)}, task {textio.short(r.task)}, "
                             f"metric {textio.short(r.metric)})", path=str(p))
        seen.add(key)
    return out


@dataclass(frozen=True)
class Bins:
    """How continuous judge scores become categories on the human scale.

    A score below ``edges[0]`` gets ``labels[0]``, one in ``[edges[i-1], edges[i])``
    gets ``labels[i]``, one at or above the last edge the last label; labels
    default to ``0, 1, ..., len(edges)`` (the 0-based classes Hada et al. use).
    """

    edges: tuple[float, ...]
    labels: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if not self.edges:
            raise InputError("bins need at least one edge", field="bins")
        if any(b <= a for a, b in zip(self.edges, self.edges[1:])):
            raise InputError(f"bin edges must increase: {', '.join(f'{e:g}' for e in self.edges)}", field="bins")
        if self.labels and len(self.labels) != len(self.edges) + 1:
            raise InputError(f"{len(self.edges)} bin edges need {len(self.edges) + 1} labels, got "
                             f"{len(self.labels)}", field="bin-labels")

    @property
    def classes(self) -> tuple[float, ...]:
        return self.labels or tuple(float(k) for k in range(len(self.edges) + 1))

    def label(self, score: float) -> float:
        return self.classes[int(np.searchsorted(np.asarray(self.edges), score, side="right"))]


@dataclass(frozen=True)
class JudgeSource:
    """How one judge's scores were matched with the human ratings."""

    source: str  # the run directory (or condition) the scores come from
    judge: str
    rater: str  # the name the judge has in the agreement table
    n_items: int  # judged items
    matched: int  # items with human ratings
    unscored: int  # matched items whose judgment failed (left out)
    bucketed: bool  # scores were put into bins


def item_key(item: Item, index: int) -> str:
    """How a judged item is matched with ``item_id`` in the ratings file: its own
    ``item_id`` field when the input had one, else its ``seg_id``, else its position."""
    key = item.extra.get("item_id")
    if key not in (None, ""):
        return str(key)
    return item.seg_id if item.seg_id not in (None, "") else str(index)


def human_groups(rows: Iterable[RatingRow], metric: str | None = None) -> dict[str, tuple[str, str, str]]:
    """``item_id -> (language, task, metric)`` of the human ratings (one group per
    item: an item rated on several metrics needs ``metric`` to say which one)."""
    groups: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
    metrics: set[str] = set()
    for r in rows:
        if r.kind == "human":
            metrics.add(r.metric)
            if metric is None or r.metric == metric:
                groups[r.item_id].add((r.language, r.task, r.metric))
    if metric is not None and metric not in metrics:
        raise InputError(f"no human rating has metric {textio.short(metric)} (metrics: "
                         f"{textio.short(', '.join(sorted(metrics)))})", field="metric")
    out: dict[str, tuple[str, str, str]] = {}
    for item, g in groups.items():
        if len(g) > 1:
            raise InputError(f"item {textio.short(item)} has human ratings in {len(g)} groups "
                             f"(metrics {textio.short(', '.join(sorted({m for _, _, m in g})))}); say which "
                             "metric the judge rated (--metric)", field="metric")
        out[item] = next(iter(g))
    return out


def human_labels(rows: Iterable[RatingRow]) -> dict[tuple[str, str, str], set[Any]]:
    """The labels humans used, per (language, task, metric)."""
    out: dict[tuple[str, str, str], set[Any]] = defaultdict(set)
    for r in rows:
        if r.kind == "human":
            out[(r.language, r.task, r.metric)].add(r.rating)
    return out


def judge_ratings(keys: Sequence[str], scores: Sequence[float | None], *, rater: str, source: str,
                  judge: str, humans: Sequence[RatingRow], metric: str | None = None,
                  bins: Bins | None = None) -> tuple[list[RatingRow], JudgeSource]:
    """One judge's scores as judge rows of the ratings table, matched to the humans by item key.

    Without ``bins`` every score must be one of the labels the humans used in
    that group (Hada et al. compare categories on the same 0/1 or 0-2 scale);
    a score off that scale raises InputError asking for bins.
    """
    if len(keys) != len(scores):
        raise InputError(f"{len(keys)} item keys for {len(scores)} scores")
    seen: dict[str, int] = {}
    for i, k in enumerate(keys):
        if k in seen:
            raise InputError(f"two judged items have the key {textio.short(k)} (items {seen[k] + 1} and {i + 1}); "
                             "give each item an item_id field matching the ratings file", path=source,
                             field="item_id")
        seen[k] = i
    groups = human_groups(humans, metric)
    labels = human_labels(humans)
    out: list[RatingRow] = []
    matched = unscored = 0
    for k, v in zip(keys, scores):
        g = groups.get(k)
        if g is None:
            continue
        matched += 1
        if v is None or math.isnan(v):
            unscored += 1
            continue
        value = float(v)
        if bins is not None:
            value = bins.label(value)
        elif value not in labels[g]:
            scale = ", ".join(_label(x) for x in sorted(labels[g], key=str))
            raise InputError(f"judge {textio.short(judge)} scored item {textio.short(k)} {value:g}, which is not on "
                             f"the human scale ({textio.short(scale)}); give bin edges (--bins) to put the scores "
                             "into the human categories", path=source, field="score")
        out.append(RatingRow(k, g[0], g[1], g[2], rater, "judge", value))
    if not matched:
        raise InputError(f"none of the {len(keys)} judged items has a human rating (items are matched by their "
                         "item_id field, else seg_id)", path=source, field="item_id")
    return out, JudgeSource(source, judge, rater, len(keys), matched, unscored, bins is not None)


def run_dir_ratings(runs: Sequence[str | Path], humans: Sequence[RatingRow], *, metric: str | None = None,
                    bins: Bins | None = None) -> tuple[list[RatingRow], list[JudgeSource]]:
    """Every judge of every run directory as judge rows (its final per-item score,
    read through :class:`polyjudge.rundir.RunDir`), matched with the humans.

    A judge is named by its model; when two run directories hold the same judge
    (e.g. one run per temperature), each is named ``RUN_DIR_NAME:JUDGE``.
    """
    from polyjudge.rundir import RunDir

    dirs = [RunDir.open(r) for r in runs]
    judges = [(d, j) for d in dirs for j in d.judges]
    if not judges:
        raise InputError("no judgments in the run directories", path=str(runs[0]) if runs else None)
    counts = Counter(j for _, j in judges)
    names = [f"{d.name}:{j}" if counts[j] > 1 else j for d, j in judges]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise InputError(f"two run directories are both named {textio.short(dup)}; rename one", field="run")
    rows: list[RatingRow] = []
    sources: list[JudgeSource] = []
    for (d, j), name in zip(judges, names):
        keys = [item_key(it, i) for i, it in enumerate(d.items)]
        scores = [None if math.isnan(v) else float(v) for v in d.final_scores(j)]
        got, src = judge_ratings(keys, scores, rater=name, source=str(d.path), judge=j, humans=humans,
                                 metric=metric, bins=bins)
        rows += got
        sources.append(src)
    return rows, sources


def human_majority(labels: Sequence[Any]) -> Any | None:
    """The label given by more than half of the raters, else ``None``.
    With a single human rating, that rating."""
    if not labels:
        return None
    (top, n), = Counter(labels).most_common(1)
    return top if 2 * n > len(labels) else None


def agreement_class(labels: Sequence[Any]) -> str:
    """``full`` (all the same), ``none`` (all different) or ``partial``.
    A single rating counts as ``full``."""
    distinct = len(set(labels))
    if distinct == 1:
        return "full"
    if distinct == len(labels):
        return "none"
    return "partial"


@dataclass
class CalibrationRow:
    language: str
    task: str
    metric: str
    judge: str
    n_items: int  # items with at least one human rating and a judge rating
    n_no_majority: int
    n_humans: int  # distinct human raters
    pa_judge: float  # judge vs human majority
    pa_humans_all: float  # share of items on which all humans agree (>= 2 ratings)
    pa_humans_pairwise: float  # mean over rater pairs of percentage agreement
    f1_judge: float  # weighted F1, human majority as truth
    f1_humans: float  # mean pairwise weighted F1 (both directions)
    kappa_judge: float
    qwk_judge: float
    fleiss_humans: float
    alpha_nominal_humans: float
    alpha_ordinal_humans: float
    alpha_interval_humans: float
    alpha_nominal_judge: float
    alpha_ordinal_judge: float
    alpha_interval_judge: float
    judge_mean: float
    human_mean: float

    def to_dict(self) -> dict[str, Any]:
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in asdict(self).items()}


NAN = float("nan")


def _nan(fn: Any, *args: Any, **kw: Any) -> float:
    """Statistics on tiny or degenerate groups are reported as NaN, not errors."""
    try:
        return float(fn(*args, **kw))
    except (InputError, ValueError, ZeroDivisionError):
        return NAN


def _numeric(values: Iterable[Any]) -> bool:
    return all(isinstance(v, float) for v in values)


def _group(rows: Iterable[RatingRow]) -> dict[tuple[str, str, str], dict[str, dict[str, dict[str, Any]]]]:
    """(language, task, metric) -> item_id -> {"human": {rater: v}, "judge": {rater: v}}."""
    g: dict[tuple[str, str, str], dict[str, dict[str, dict[str, Any]]]] = defaultdict(
        lambda: defaultdict(lambda: {"human": {}, "judge": {}}))
    for r in rows:
        g[(r.language, r.task, r.metric)][r.item_id][r.kind][r.rater] = r.rating
    return g


def _human_stats(items: dict[str, dict[str, dict[str, Any]]], codes: dict[Any, float],
                 numeric: bool) -> dict[str, float]:
    raters = sorted({h for it in items.values() for h in it["human"]})
    ids = sorted(items)
    mat = np.full((len(raters), len(ids)), np.nan)
    for j, i in enumerate(ids):
        for r, v in items[i]["human"].items():
            mat[raters.index(r), j] = codes[v]
    out: dict[str, float] = {}
    multi = [items[i]["human"] for i in ids if len(items[i]["human"]) >= 2]
    out["pa_humans_all"] = float(np.mean([len(set(h.values())) == 1 for h in multi])) if multi else NAN
    pa, f1 = [], []
    for a in range(len(raters)):
        for b in range(a + 1, len(raters)):
            both = ~np.isnan(mat[a]) & ~np.isnan(mat[b])
            if both.any():
                x, y = mat[a, both], mat[b, both]
                pa.append(percent_agreement(x, y))
                f1.append((weighted_f1(x, y) + weighted_f1(y, x)) / 2)
    out["pa_humans_pairwise"] = float(np.mean(pa)) if pa else NAN
    out["f1_humans"] = float(np.mean(f1)) if f1 else NAN
    # Fleiss: items with the most common number of human ratings (Fleiss' design needs equal counts)
    sizes = Counter(len(h) for h in multi)
    if sizes:
        m = max(sizes, key=lambda k: (sizes[k], k))
        lab = np.array([[codes[v] for v in h.values()] for h in multi if len(h) == m])
        counts, _ = labels_to_counts(lab, sorted(set(codes.values())))
        out["fleiss_humans"] = _nan(fleiss_kappa, counts)
    else:
        out["fleiss_humans"] = NAN
    domain = sorted(set(codes.values()))
    out["alpha_nominal_humans"] = _nan(krippendorff_alpha, mat, level="nominal", value_domain=domain)
    for level in ("ordinal", "interval"):
        out[f"alpha_{level}_humans"] = (_nan(krippendorff_alpha, mat, level=level, value_domain=domain)
                                        if numeric else NAN)
    return out


def calibrate(rows: Iterable[RatingRow]) -> list[CalibrationRow]:
    """One :class:`CalibrationRow` per language x task x metric x judge."""
    out: list[CalibrationRow] = []
    for (lang, task, metric), items in sorted(_group(rows).items()):
        items = {i: it for i, it in items.items() if it["human"]}
        if not items:
            continue
        values = {v for it in items.values() for k in ("human", "judge") for v in it[k].values()}
        numeric = _numeric(values)
        ordered = sorted(values, key=lambda v: (not isinstance(v, float), v if isinstance(v, float) else 0, str(v)))
        codes = {v: (v if numeric else float(k)) for k, v in enumerate(ordered)}
        hs = _human_stats(items, codes, numeric)
        n_humans = len({h for it in items.values() for h in it["human"]})
        human_mean = float(np.mean([v for it in items.values() for v in it["human"].values()])) if numeric else NAN
        judges = sorted({j for it in items.values() for j in it["judge"]})
        for judge in judges:
            pairs = [(human_majority(list(it["human"].values())), it["judge"][judge])
                     for it in items.values() if judge in it["judge"]]
            no_maj = sum(m is None for m, _ in pairs)
            kept = [(codes[m], codes[j]) for m, j in pairs if m is not None]
            h = np.array([m for m, _ in kept])
            jv = np.array([j for _, j in kept])
            two = np.vstack([h, jv]) if kept else np.empty((2, 0))
            labels = sorted(set(codes.values()))
            stats = dict(
                pa_judge=_nan(percent_agreement, h, jv),
                f1_judge=weighted_f1(h, jv) if kept else NAN,
                kappa_judge=_nan(cohen_kappa, h, jv, labels=labels),
                qwk_judge=_nan(cohen_kappa, h, jv, weights="quadratic", labels=labels) if numeric else NAN,
                alpha_nominal_judge=_nan(krippendorff_alpha, two, level="nominal", value_domain=labels),
                alpha_ordinal_judge=(_nan(krippendorff_alpha, two, level="ordinal", value_domain=labels)
                                     if numeric else NAN),
                alpha_interval_judge=(_nan(krippendorff_alpha, two, level="interval", value_domain=labels)
                                      if numeric else NAN),
            )
            jm = float(np.mean([j for _, j in pairs])) if numeric and pairs else NAN
            out.append(CalibrationRow(lang, task, metric, judge, len(pairs), no_maj, n_humans,
                                      judge_mean=jm, human_mean=human_mean, **stats, **hs))
    return out


@dataclass(frozen=True)
class DistributionCell:
    language: str
    task: str
    metric: str
    judge: str
    agreement: str  # full | partial | none
    human: str  # the human majority, "" when there is none
    judge_score: str
    count: int


def _label(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def class_distribution(rows: Iterable[RatingRow], *, by_language: bool = True, by_task: bool = True,
                       by_metric: bool = True) -> list[DistributionCell]:
    """Count items per human-agreement class x human majority x judge score
    (Hada et al., section 4.2). Set a ``by_*`` flag to False to pool over it: a pooled task or metric
    is ``*``, pooled languages are named ``pooled: A+B`` (those of the cell's task and metric)."""
    counts: Counter[tuple[str, str, str, str, str, str, str]] = Counter()
    groups = _group(rows)
    pooled: dict[tuple[str, str], set[str]] = defaultdict(set)
    for lang, task, metric in groups:
        pooled[(task if by_task else "*", metric if by_metric else "*")].add(lang)
    for (lang, task, metric), items in groups.items():
        tm = (task if by_task else "*", metric if by_metric else "*")
        key = (lang if by_language else _pooled_name(pooled[tm]), *tm)
        for it in items.values():
            hum = list(it["human"].values())
            if not hum:
                continue
            cls = agreement_class(hum)
            maj = _label(human_majority(hum))
            for judge, v in it["judge"].items():
                counts[key + (judge, cls, maj, _label(v))] += 1
    order = {"full": 0, "partial": 1, "none": 2}
    return [DistributionCell(*key, count) for key, count in
            sorted(counts.items(), key=lambda kv: (kv[0][:4], order[kv[0][4]], kv[0][5], kv[0][6]))]


def _pooled_name(languages: set[str]) -> str:
    """The language column of a class distribution pooled over languages (meta-eval's ``pooled: A+B``)."""
    named = sorted(x for x in languages if x)
    return "pooled: " + "+".join(named) if len(named) > 1 else (named[0] if named else "")


def _fmt(v: Any) -> str:
    """A cell of the agreement tables: a statistic to 4 places, ``n/a`` when undefined (NaN, None)."""
    if v is None or isinstance(v, float):
        return stat_text(v)
    return str(v)


def rows_tsv(rows: Sequence[CalibrationRow]) -> str:
    cols = list(CalibrationRow.__dataclass_fields__)
    lines = ["\t".join(cols)]
    lines += ["\t".join(_fmt(getattr(r, c)) for c in cols) for r in rows]
    return "\n".join(lines) + "\n"


def distribution_tsv(cells: Sequence[DistributionCell]) -> str:
    cols = list(DistributionCell.__dataclass_fields__)
    lines = ["\t".join(cols)] + ["\t".join(str(getattr(c, k)) for k in cols) for c in cells]
    return "\n".join(lines) + "\n"


def rows_text(rows: Sequence[CalibrationRow]) -> str:
    """A compact aligned table for the terminal (the main columns only)."""
    cols = ["language", "task", "metric", "judge", "n_items", "pa_judge", "pa_humans_all", "f1_judge",
            "kappa_judge", "qwk_judge", "fleiss_humans", "alpha_ordinal_humans", "alpha_interval_judge"]
    table = [cols] + [[_fmt(getattr(r, c)) or "-" for c in cols] for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(cols))]
    return "\n".join("  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip() for row in table) + "\n"
