"""WMT task presets, the per-LP standard statistics, and ranking tables.

A ranking table has one column per :class:`Task` (a statistic registered in
:mod:`polyjudge.metaeval.statistics`, a level, its language pairs and a
weight); presets are named task lists in :data:`PRESETS`:

``wmt23``: system-level pairwise accuracy pooled over all language pairs
(weight = number of LPs), then per LP system Pearson, segment Pearson (no
grouping) and segment acc-t (item grouping), weight 1 each.
``wmt24``: per LP system SPA and segment acc-t (item grouping), equal weights.
The average rescales every statistic to [0, 1] (correlations: (r + 1) / 2)
and takes the weighted mean, as the WMT toolkit does. Ranks in the table are
positions; ``cluster`` ranks come from pairwise permutation tests (k > 0).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from polyjudge.data.errors import InputError
from polyjudge.data.numbers import stat_text
from polyjudge.metaeval import results, stats
from polyjudge.metaeval import significance as sig
from polyjudge.metaeval.matrices import ScoreMatrix, align, row_means
from polyjudge.metaeval.results import MetaEvalRank, MetaEvalResults, stats_rows, task_cell
from polyjudge.metaeval.statistics import (
    COLUMNS,
    SPA_PERMUTATIONS,
    SPA_SEED,
    Level,
    Scores,
    Statistic,
    get_statistic,
)
from polyjudge.registry import Registry, UnknownNameError


@dataclass
class LanguagePair:
    """Human and metric scores of one test set; every matrix is higher = better.

    System scores: a metric that scores every cell the humans scored is
    compared as mt-metrics-eval compares, the human system scores
    (``human_sys`` when given, else the mean over the human-scored cells)
    against the metric's own (``metric_sys[name]`` when given, else its mean
    over every cell it scored). When ``missing_metric="drop"`` leaves a metric
    without some human-scored cells, averaging each side over its own cells
    would compare different segments (a copy of the human scores could then
    rank systems wrongly), so both that metric's system scores and the human
    ones it is compared with are the means over the cells both scored. Given
    ``.sys.score`` values are not used for such a metric, on either side: a
    published system score cannot be restricted to a subset of segments.

    mt-metrics-eval has no such mode: a metric score file containing ``None``
    is refused, a system missing from it is an error (or, with ``repair``,
    gets zero scores), only missing *human* scores are dropped (from both
    vectors, in parallel), and system-level statistics read both sides'
    ``.sys.score`` files as given.
    """

    lp: str
    human: ScoreMatrix
    metrics: dict[str, ScoreMatrix]
    human_sys: dict[str, float] | None = None
    metric_sys: dict[str, dict[str, float]] = field(default_factory=dict)
    exclude_systems: Sequence[str] = ()
    missing_metric: str = "error"

    def prepare(self) -> Prepared:
        hm = self.human.drop_systems(self.exclude_systems)
        keep = [s for s, row in zip(hm.systems, hm.values) if (~np.isnan(row)).any()]
        if len(keep) < 2:
            raise InputError(f"{self.lp}: fewer than two systems with human scores")
        hm = hm.select(keep)
        seg = {name: align(hm, m, name=name, missing_metric=self.missing_metric)
               for name, m in self.metrics.items()}
        if self.human_sys is not None:
            hs = np.array([self.human_sys.get(s, np.nan) for s in keep], dtype=float)
        else:
            hs = hm.system_means()
        rated = ~np.isnan(hm.values)
        ms: dict[str, np.ndarray] = {}
        hs_for: dict[str, np.ndarray] = {}
        for name, values in seg.items():
            shared = rated & ~np.isnan(values)
            given = self.metric_sys.get(name)
            if np.array_equal(shared, rated):
                hs_for[name] = hs
                ms[name] = (np.array([given.get(s, np.nan) for s in keep], dtype=float) if given is not None
                            else self.metrics[name].select(keep).system_means())
            else:  # cells dropped: both sides over the cells the metric scored
                hs_for[name] = row_means(hm.values, shared)
                ms[name] = row_means(values, shared)
        return Prepared(self.lp, list(keep), list(hm.items), hm.values, seg, hs, ms, hs_for)


@dataclass
class Prepared:
    """One LP's scores restricted to the systems with human scores, metrics aligned to them.

    ``human_sys`` is the humans' own system scores; ``human_sys_by_metric[name]``
    the human system scores that metric is compared with (the same cells).
    """

    lp: str
    systems: list[str]
    items: list[str]
    human: np.ndarray
    metric_seg: dict[str, np.ndarray]
    human_sys: np.ndarray
    metric_sys: dict[str, np.ndarray]
    human_sys_by_metric: dict[str, np.ndarray] = field(default_factory=dict)

    def human_scores(self, metric: str | None = None) -> Scores:
        """The human scores, with the system scores ``metric`` is compared with."""
        sys = self.human_sys if metric is None else self.human_sys_by_metric.get(metric, self.human_sys)
        return Scores(self.human, sys)

    def metric_scores(self, name: str) -> Scores:
        return Scores(self.metric_seg[name], self.metric_sys[name])

    def shared_cells(self, name: str) -> np.ndarray:
        """Cells with both a human and a ``name`` score."""
        shared: np.ndarray = ~np.isnan(self.human) & ~np.isnan(self.metric_seg[name])
        return shared

    def compared(self, a: str, b: str) -> tuple[Scores, Scores, Scores]:
        """Human, ``a`` and ``b`` scores for testing ``a`` against ``b``.

        When the two metrics scored different cells (``missing_metric="drop"``),
        the three system scores are means over the cells both metrics scored,
        so that the test compares like with like; segment scores are passed as
        they are (the segment tests use only cells all three have).
        """
        ca, cb = self.shared_cells(a), self.shared_cells(b)
        if np.array_equal(ca, cb):
            return self.human_scores(a), self.metric_scores(a), self.metric_scores(b)
        both = ca & cb
        ma, mb = self.metric_seg[a], self.metric_seg[b]
        return (Scores(self.human, row_means(self.human, both)), Scores(ma, row_means(ma, both)),
                Scores(mb, row_means(mb, both)))


# --------------------------------------------------------------------------- standard stats

# The per-LP table's standard columns, in print order (registered statistics follow).
STANDARD_COLUMNS = tuple(c.key for c in COLUMNS if c.printed)


def registered_columns() -> list[tuple[str, Statistic, Level]]:
    """``(key, statistic, level)`` of every registered per-LP column beyond the standard ones."""
    return [(c.key, get_statistic(c.statistic), c.level) for c in results.registered_columns()]


def registered_stats(p: Prepared, name: str) -> dict[str, float]:
    """Every registered per-LP statistic (plugins' included) of one metric on one LP."""
    human, metric = [p.human_scores(name)], [p.metric_scores(name)]
    return {key: float(stat.value(level, human, metric)) for key, stat, level in registered_columns()}


def standard_stats(p: Prepared, name: str, seed: int = SPA_SEED) -> dict[str, float | int]:
    """The statistics every report carries, for one metric on one LP, then the registered ones."""
    h, m = p.human, p.metric_seg[name]
    hs, ms = p.human_scores(name).sys, p.metric_sys[name]
    tc = stats.tie_calibration(h, m, "item")
    few = len(p.systems) < stats.MIN_CORRELATION_POINTS  # undefined (NaN, shown n/a), not a bare +-1
    per_item = stats.grouped_correlation(h, m, "kendall", "item")  # items of < 3 systems left out
    return {
        "sys_pairwise_accuracy": stats.pairwise_accuracy(hs, ms),
        "sys_spa": stats.soft_pairwise_accuracy(h, m, SPA_PERMUTATIONS, seed),
        "sys_pearson": float("nan") if few else stats.pearson(hs, ms),
        "sys_kendall": float("nan") if few else stats.kendall(hs, ms),
        "seg_pearson": stats.pearson(h, m, "none"),
        "seg_kendall_item": per_item.value,
        "seg_items_left_out": per_item.left_out,
        "seg_acc_t": tc.value,
        "seg_acc_t_epsilon": tc.epsilon,
        "n_systems": len(p.systems),
        "n_items": int((~np.isnan(h)).any(axis=0).sum()),
        "n_scored_cells": int((~np.isnan(h) & ~np.isnan(m)).sum()),
        **registered_stats(p, name),
    }


# --------------------------------------------------------------------------- tasks

@dataclass(frozen=True)
class Task:
    """One column of the ranking table: a registered statistic at one level on some LPs."""

    lps: tuple[str, ...]
    level: Level
    statistic: str  # a name in STATISTICS
    weight: float = 1.0

    @property
    def lp_label(self) -> str:
        return "all" if len(self.lps) > 1 else self.lps[0]

    @property
    def stat(self) -> Statistic:
        return get_statistic(self.statistic)

    @property
    def label(self) -> str:
        return f"{self.level} ({self.stat.label})"

    @property
    def range(self) -> tuple[float, float]:
        return self.stat.range


def check_tasks(tasks: Sequence[Task], lps: Sequence[str]) -> None:
    """Reject tasks that name an unknown statistic or LP, or use a statistic where it does not apply."""
    known = set(lps)
    for t in tasks:
        stat = t.stat
        where = f"task {t.lp_label} {t.level} {t.statistic}"
        if not t.lps:
            raise InputError(f"{where}: names no language pair", field="tasks")
        missing = [lp for lp in t.lps if lp not in known]
        if missing:
            raise InputError(f"{where}: unknown language pair(s) {', '.join(missing)} "
                             f"(given: {', '.join(lps)})", field="tasks")
        if t.level not in stat.levels:
            raise InputError(f"{where}: statistic '{stat.name}' supports level(s) "
                             f"{', '.join(stat.levels)}, not '{t.level}'", field="tasks")
        if len(t.lps) > 1 and not stat.pools_lps:
            raise InputError(f"{where}: statistic '{stat.name}' takes one language pair per task",
                             field="tasks")
        if not t.weight >= 0:
            raise InputError(f"{where}: weight must be >= 0, not {t.weight}", field="tasks")
    if tasks and not sum(t.weight for t in tasks) > 0:
        raise InputError("task weights sum to zero", field="tasks")


def normalised(tasks: Sequence[Task]) -> list[Task]:
    """The tasks with weights scaled to sum to one (the ranking average is their weighted mean)."""
    total = sum(t.weight for t in tasks)
    return [Task(t.lps, t.level, t.statistic, t.weight / total) for t in tasks]


# --------------------------------------------------------------------------- presets

PresetBuilder = Callable[[list[str]], list[Task]]


@dataclass(frozen=True)
class Preset:
    """A named list of tasks for the given (sorted) LPs; weights are normalised afterwards."""

    name: str
    build: PresetBuilder
    summary: str = ""


PRESETS: Registry[Preset] = Registry("task preset", entry_point_group="polyjudge.presets")


def register_preset(name: str) -> Callable[[PresetBuilder], PresetBuilder]:
    """Decorator: register a task builder as preset ``name`` (summary = first docstring line)."""

    def deco(fn: PresetBuilder) -> PresetBuilder:
        doc = (fn.__doc__ or "").strip()
        PRESETS.add(name, Preset(name, fn, doc.splitlines()[0] if doc else ""))
        return fn

    return deco


@register_preset("wmt23")
def wmt23(lps: list[str]) -> list[Task]:
    """WMT23: pooled system accuracy, then per LP system and segment Pearson and segment acc-t."""
    tasks = [Task(tuple(lps), "sys", "accuracy", float(len(lps)))]
    for lp in lps:
        tasks += [Task((lp,), "sys", "pearson"), Task((lp,), "seg", "pearson"),
                  Task((lp,), "seg", "acc_t")]
    return tasks


@register_preset("wmt24")
def wmt24(lps: list[str]) -> list[Task]:
    """WMT24: per LP system SPA and segment acc-t, equal weights."""
    tasks: list[Task] = []
    for lp in lps:
        tasks += [Task((lp,), "sys", "spa"), Task((lp,), "seg", "acc_t")]
    return tasks


def preset_tasks(name: str, lps: Sequence[str]) -> list[Task]:
    """The preset's tasks for these LPs, weights summing to one."""
    try:
        preset = PRESETS.get(name)
    except UnknownNameError as exc:
        raise InputError(exc.message, field="task") from None
    return normalised(preset.build(sorted(lps)))


def _value(t: Task, data: dict[str, Prepared], m: str) -> float:
    return t.stat.value(t.level, [data[lp].human_scores(m) for lp in t.lps],
                        [data[lp].metric_scores(m) for lp in t.lps])


def _test(t: Task, data: dict[str, Prepared], a: str, b: str, k: int, seed: int) -> sig.PermutationResult:
    human, score_a, score_b = zip(*(data[lp].compared(a, b) for lp in t.lps), strict=True)
    return t.stat.test(t.level, human, score_a, score_b, k, seed)


def _run_task(ti: int, t: Task, data: dict[str, Prepared], metrics: Sequence[str], k: int, seed: int,
              alpha: float) -> TaskResult:
    values = {m: _value(t, data, m) for m in metrics}
    names = sig.ranked_names(values)

    def test(a: str, b: str) -> sig.PermutationResult:
        s = int(np.random.SeedSequence([seed, ti, names.index(a), names.index(b)]).generate_state(1)[0])
        return _test(t, data, a, b, k, s)

    return TaskResult(t, sig.compare_metrics(values, test if k > 0 else None, alpha))


@dataclass
class TaskResult:
    task: Task
    comparison: sig.Comparison

    def value(self, m: str) -> float:
        return self.comparison.values[self.comparison.names.index(m)]

    def position(self, m: str) -> int:
        return self.comparison.names.index(m) + 1

    def cluster(self, m: str) -> int:
        return self.comparison.ranks[self.comparison.names.index(m)]


@dataclass
class MetaEvalResult:
    preset: str | None
    metrics: list[str]
    per_lp: dict[str, dict[str, dict[str, float | int]]]
    tasks: list[TaskResult]
    average: dict[str, float]
    average_cluster: dict[str, int]
    k: int
    seed: int
    notes: list[str] = field(default_factory=list)

    def ranking(self) -> list[str]:
        return sig.ranked_names({m: self.average.get(m, -np.inf) for m in self.metrics})

    def results(self) -> MetaEvalResults:
        """The typed rows of these results (what the JSON holds and the report shows)."""
        ranking = tuple(MetaEvalRank(m, pos, self.average_cluster.get(m), self.average.get(m), tuple(
            task_cell(m, r.task.lp_label, r.task.level, r.task.statistic, r.value(m), rank=r.position(m),
                      cluster=r.cluster(m), weight=r.task.weight) for r in self.tasks))
            for pos, m in enumerate(self.ranking(), 1))
        return MetaEvalResults(self.preset, self.k, self.seed, ranking, stats_rows(self.per_lp),
                               notes=tuple(self.notes))

    def to_dict(self) -> dict[str, Any]:
        return self.results().to_json()


def evaluate(pairs: Sequence[LanguagePair], preset: str | None = "wmt24", k: int = 1000,
             seed: int = 0, alpha: float = 0.05, *, tasks: Sequence[Task] | None = None) -> MetaEvalResult:
    """Standard statistics per LP and metric, and the ranking table of a preset or of ``tasks``.

    Explicit ``tasks`` (with ``preset=None``) may use any registered statistic;
    their weights are normalised to sum to one, as a preset's are.
    """
    if tasks is not None and preset:
        raise InputError(f"give a task preset or explicit tasks, not both (preset={preset!r}; "
                         "pass preset=None with tasks)", field="task")
    data = {lp.lp: lp.prepare() for lp in pairs}
    if len(data) != len(pairs):
        raise InputError("the same language pair is given twice")
    common = set.intersection(*(set(p.metric_seg) for p in data.values()))
    metrics = [m for m in pairs[0].metrics if m in common]
    if not metrics:
        raise InputError("no metric is present in every language pair")
    per_lp = {lp: {m: standard_stats(p, m) for m in metrics} for lp, p in data.items()}
    if preset:
        todo = preset_tasks(preset, list(data))
    elif tasks is not None:
        check_tasks(tasks, list(data))
        todo = normalised(tasks)
    else:
        todo = []
    results = [_run_task(ti, t, data, metrics, k, seed, alpha) for ti, t in enumerate(todo)]
    average, clusters = _average(results, metrics, k, alpha)
    return MetaEvalResult(preset, metrics, per_lp, results, average, clusters, k, seed,
                          caveats(per_lp, [r.task for r in results]))


def caveats(per_lp: dict[str, dict[str, dict[str, float | int]]], tasks: Sequence[Task]) -> list[str]:
    """What a reader of the tables must know: metrics scored on different cells (``missing_metric="drop"``)
    and language pairs with too few systems for a system-level correlation. Printed under the text table,
    kept under ``notes`` in JSON (the command line says them on stderr for TSV)."""
    notes = []
    for lp, by_metric in per_lp.items():
        cells = {m: int(v["n_scored_cells"]) for m, v in by_metric.items()}
        if len(set(cells.values())) > 1:
            shown = ", ".join(f"{m} {n}" for m, n in sorted(cells.items(), key=lambda kv: -kv[1]))
            notes.append(f"{display_lp(lp)}: the metrics were scored on different numbers of segments ({shown}); "
                         "each is compared with the humans on its own segments, so their values are not on "
                         "the same data (column 'cells'; --missing-metric error refuses such metrics)")
        left_out = max((int(v.get("seg_items_left_out", 0)) for v in by_metric.values()), default=0)
        if left_out:
            notes.append(f"{display_lp(lp)}: {left_out} item(s) scored for fewer than {stats.MIN_CORRELATION_POINTS}"
                         " systems are left out of seg_kendall_item (over two systems a correlation is +-1 "
                         "whatever the scores); n/a when no item is left")
        n_sys = min((int(v["n_systems"]) for v in by_metric.values()), default=0)
        if 0 < n_sys < stats.MIN_CORRELATION_POINTS:
            sys_tasks = [t.label for t in tasks if t.level == "sys" and lp in t.lps]
            notes.append(f"{display_lp(lp)}: only {n_sys} systems: system-level correlations are undefined "
                         "(n/a)" + (f"; the ranking's system-level columns ({', '.join(sys_tasks)}) rest on "
                                    f"{n_sys * (n_sys - 1) // 2} system pair(s) and are unreliable"
                                    if sys_tasks else ""))
    return notes


# The language pair of scores given without --lp: kept as this key in results, labelled in the tables.
UNNAMED_LP = "lp"


def display_lp(lp: str) -> str:
    """A language pair as tables show it: an unnamed one says so."""
    return "unnamed pair (no --lp)" if lp == UNNAMED_LP else lp


def _average(tasks: list[TaskResult], metrics: list[str], k: int,
             alpha: float) -> tuple[dict[str, float], dict[str, int]]:
    if not tasks:
        return {}, {}
    avg = {}
    for m in metrics:
        avg[m] = float(sum(r.task.weight * (r.value(m) - r.task.range[0]) /
                           (r.task.range[1] - r.task.range[0]) for r in tasks))
    names = sig.ranked_names(avg)
    if k <= 0:
        return avg, {m: i + 1 for i, m in enumerate(names)}
    n = len(names)
    pm = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            null = np.zeros(k)
            for r in tasks:
                lo, hi = r.task.range
                key = (names[i], names[j])
                d = r.comparison.null.get(key)
                if d is None:
                    d = -r.comparison.null[(names[j], names[i])]
                null += r.task.weight * d / (hi - lo)
            gap = avg[names[i]] - avg[names[j]]  # NaN when an average is undefined: no p-value, no cluster cut
            pm[i, j] = np.mean(null >= gap - 1e-12) if np.isfinite(gap) else np.nan
    ranks = sig.significance_clusters(pm, alpha)
    return avg, dict(zip(names, ranks, strict=True))


# --------------------------------------------------------------------------- formatting

def format_result(res: MetaEvalResult, fmt: str = "text") -> str:
    if fmt == "json":
        return json.dumps(res.to_dict(), indent=2, default=float) + "\n"
    if fmt not in ("text", "tsv"):
        raise InputError(f"unknown format {fmt!r} (text, tsv, json)", field="format")
    out = io.StringIO()
    if res.tasks:
        lp_row = ["Metric", "Avg", ""] + sum(([display_lp(r.task.lp_label), ""] for r in res.tasks), [])
        st_row = ["", "", ""] + sum(([r.task.label, ""] for r in res.tasks), [])
        col_row = ["", "rank", "value"] + ["rank", "value"] * len(res.tasks)
        rows = []
        for pos, m in enumerate(res.ranking(), 1):
            row = [m, str(pos), stat_text(res.average[m], ".3f")]
            for r in res.tasks:
                row += [str(r.position(m)), stat_text(r.value(m), ".3f")]
            rows.append(row)
        _emit(out, [lp_row, st_row, col_row], rows, fmt)
        if res.k > 0:
            out.write("\n" if fmt == "text" else "")
            cl_head = [["Metric", "avg"] + [f"{display_lp(r.task.lp_label)} {r.task.label}" for r in res.tasks]]
            cl_rows = [[m, str(res.average_cluster[m])] + [str(r.cluster(m)) for r in res.tasks]
                       for m in res.ranking()]
            if fmt == "text":
                out.write(f"Significance clusters (permutation tests, k={res.k}, "
                          f"1 = top cluster):\n")
                _emit(out, cl_head, cl_rows, fmt)
        if fmt == "text":
            out.write("\n")
    if fmt == "text":
        keys = [*STANDARD_COLUMNS, *(key for key, _, _ in registered_columns())]
        for lp, by_metric in res.per_lp.items():
            out.write(f"{display_lp(lp)}:\n")
            head = [["Metric", "systems", "cells", *keys]]
            rows = [[m, str(v["n_systems"]), str(v["n_scored_cells"])] + [_number(v[k], k) for k in keys]
                    for m, v in by_metric.items()]
            _emit(out, head, rows, fmt)
        out.write("".join(f"note: {n}\n" for n in res.notes))
    elif not res.tasks:
        keys = list(next(iter(next(iter(res.per_lp.values())).values())))
        out.write("\t".join(["lp", "metric"] + keys) + "\n")
        for lp, by_metric in res.per_lp.items():
            for m, v in by_metric.items():
                out.write("\t".join([lp, m] + [stat_text(v[k], ".6g") for k in keys]) + "\n")
    return out.getvalue()


def _number(v: float | int | None, key: str) -> str:
    """A per-LP table cell; n/a when undefined (e.g. a correlation over fewer than 3 systems)."""
    return stat_text(v, ".4g" if key == "seg_acc_t_epsilon" else ".4f")


def _emit(out: io.StringIO, headers: list[list[str]], rows: list[list[str]], fmt: str) -> None:
    if fmt == "tsv":
        for r in headers + rows:
            out.write("\t".join(r) + "\n")
        return
    widths = [max(len(r[c]) for r in headers + rows) for c in range(len(headers[0]))]
    for r in headers:
        out.write("  ".join(x.ljust(w) for x, w in zip(r, widths)).rstrip() + "\n")
    out.write("  ".join("-" * w for w in widths) + "\n")
    for r in rows:
        out.write("  ".join(x.ljust(w) if c == 0 else x.rjust(w)
                            for c, (x, w) in enumerate(zip(r, widths))).rstrip() + "\n")
