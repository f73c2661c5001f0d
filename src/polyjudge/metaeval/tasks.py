"""WMT task presets, the per-LP standard statistics, and ranking tables.

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
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from polyjudge.data.errors import InputError
from polyjudge.metaeval import significance as sig
from polyjudge.metaeval import stats
from polyjudge.metaeval.matrices import ScoreMatrix, align

SPA_PERMUTATIONS = 1000
SPA_SEED = 4


@dataclass
class LanguagePair:
    """Human and metric scores of one test set; every matrix is higher = better."""

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
        ms = {}
        for name, m in self.metrics.items():
            given = self.metric_sys.get(name)
            if given is not None:
                ms[name] = np.array([given.get(s, np.nan) for s in keep], dtype=float)
            else:
                ms[name] = m.select(keep).system_means()
        return Prepared(self.lp, list(keep), list(hm.items), hm.values, seg, hs, ms)


@dataclass
class Prepared:
    lp: str
    systems: list[str]
    items: list[str]
    human: np.ndarray
    metric_seg: dict[str, np.ndarray]
    human_sys: np.ndarray
    metric_sys: dict[str, np.ndarray]


# --------------------------------------------------------------------------- standard stats

def standard_stats(p: Prepared, name: str, seed: int = SPA_SEED) -> dict[str, float | int]:
    """The statistics every report carries, for one metric on one LP."""
    h, m = p.human, p.metric_seg[name]
    tc = stats.tie_calibration(h, m, "item")
    return {
        "sys_pairwise_accuracy": stats.pairwise_accuracy(p.human_sys, p.metric_sys[name]),
        "sys_spa": stats.soft_pairwise_accuracy(h, m, SPA_PERMUTATIONS, seed),
        "sys_pearson": stats.pearson(p.human_sys, p.metric_sys[name]),
        "sys_kendall": stats.kendall(p.human_sys, p.metric_sys[name]),
        "seg_pearson": stats.pearson(h, m, "none"),
        "seg_kendall_item": stats.kendall(h, m, "item", "b"),
        "seg_acc_t": tc.value,
        "seg_acc_t_epsilon": tc.epsilon,
        "n_systems": len(p.systems),
        "n_items": int((~np.isnan(h)).any(axis=0).sum()),
        "n_scored_cells": int((~np.isnan(h) & ~np.isnan(m)).sum()),
    }


# --------------------------------------------------------------------------- tasks

STAT_LABEL = {"accuracy": "acc", "pearson": "pearson", "acc_t": "acc-t", "spa": "pce"}


@dataclass(frozen=True)
class Task:
    lps: tuple[str, ...]
    level: str  # "sys" or "seg"
    statistic: str  # accuracy | pearson | acc_t | spa
    weight: float = 1.0

    @property
    def lp_label(self) -> str:
        return "all" if len(self.lps) > 1 else self.lps[0]

    @property
    def label(self) -> str:
        return f"{self.level} ({STAT_LABEL[self.statistic]})"

    @property
    def range(self) -> tuple[float, float]:
        return (-1.0, 1.0) if self.statistic == "pearson" else (0.0, 1.0)


def preset_tasks(name: str, lps: Sequence[str]) -> list[Task]:
    lps = sorted(lps)
    if name == "wmt23":
        tasks = [Task(tuple(lps), "sys", "accuracy", float(len(lps)))]
        for lp in lps:
            tasks += [Task((lp,), "sys", "pearson"), Task((lp,), "seg", "pearson"),
                      Task((lp,), "seg", "acc_t")]
    elif name == "wmt24":
        tasks = []
        for lp in lps:
            tasks += [Task((lp,), "sys", "spa"), Task((lp,), "seg", "acc_t")]
    else:
        raise InputError(f"unknown task preset {name!r} (wmt23, wmt24)", field="task")
    total = sum(t.weight for t in tasks)
    return [Task(t.lps, t.level, t.statistic, t.weight / total) for t in tasks]


def _value(t: Task, data: dict[str, Prepared], m: str) -> float:
    if t.statistic == "accuracy":
        return stats.pairwise_accuracy([data[lp].human_sys for lp in t.lps],
                                       [data[lp].metric_sys[m] for lp in t.lps])
    p = data[t.lps[0]]
    if t.statistic == "pearson":
        if t.level == "sys":
            return stats.pearson(p.human_sys, p.metric_sys[m])
        return stats.pearson(p.human, p.metric_seg[m], "none")
    if t.statistic == "acc_t":
        return stats.tie_calibration(p.human, p.metric_seg[m], "item").value
    if t.statistic == "spa":
        return stats.soft_pairwise_accuracy(p.human, p.metric_seg[m], SPA_PERMUTATIONS, SPA_SEED)
    raise ValueError(t.statistic)


def _test(t: Task, data: dict[str, Prepared], a: str, b: str, k: int, seed: int) -> sig.PermutationResult:
    if t.statistic == "accuracy":
        return sig.accuracy_permutation_test([data[lp].human_sys for lp in t.lps],
                                             [data[lp].metric_sys[a] for lp in t.lps],
                                             [data[lp].metric_sys[b] for lp in t.lps], k, seed)
    p = data[t.lps[0]]
    if t.statistic == "pearson" and t.level == "sys":
        return sig.scores_permutation_test(p.human_sys[None], p.metric_sys[a][None],
                                           p.metric_sys[b][None],
                                           lambda h, m: stats.pearson(h, m), k, seed)
    if t.statistic == "pearson":
        return sig.pearson_permutation_test(p.human, p.metric_seg[a], p.metric_seg[b], k, seed)
    if t.statistic == "acc_t":
        return sig.pairs_permutation_test(p.human, p.metric_seg[a], p.metric_seg[b], "item", k=k,
                                          seed=seed)
    if t.statistic == "spa":
        return sig.spa_permutation_test(p.human, p.metric_seg[a], p.metric_seg[b], k, seed,
                                        SPA_PERMUTATIONS, SPA_SEED)
    raise ValueError(t.statistic)


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

    def ranking(self) -> list[str]:
        return sorted(self.metrics, key=lambda m: (-self.average.get(m, -np.inf), m))

    def to_dict(self) -> dict:
        rows = []
        for pos, m in enumerate(self.ranking(), 1):
            rows.append({
                "metric": m, "rank": pos, "cluster": self.average_cluster.get(m),
                "average": self.average.get(m),
                "columns": [{"lp": r.task.lp_label, "level": r.task.level,
                             "statistic": r.task.statistic, "weight": r.task.weight,
                             "value": r.value(m), "rank": r.position(m), "cluster": r.cluster(m)}
                            for r in self.tasks],
            })
        return {"task": self.preset, "permutations": self.k, "seed": self.seed,
                "language_pairs": self.per_lp, "ranking": rows}


def evaluate(pairs: Sequence[LanguagePair], preset: str | None = "wmt24", k: int = 1000,
             seed: int = 0, alpha: float = 0.05) -> MetaEvalResult:
    """Standard statistics per LP and metric, and the preset's ranking table."""
    data = {lp.lp: lp.prepare() for lp in pairs}
    if len(data) != len(pairs):
        raise InputError("the same language pair is given twice")
    common = set.intersection(*(set(p.metric_seg) for p in data.values()))
    metrics = [m for m in pairs[0].metrics if m in common]
    if not metrics:
        raise InputError("no metric is present in every language pair")
    per_lp = {lp: {m: standard_stats(p, m) for m in metrics} for lp, p in data.items()}
    tasks: list[TaskResult] = []
    if preset:
        for ti, t in enumerate(preset_tasks(preset, list(data))):
            values = {m: _value(t, data, m) for m in metrics}
            names = sorted(values, key=lambda n: (-values[n], n))

            def test(a: str, b: str, t=t, ti=ti, names=names) -> sig.PermutationResult:
                s = int(np.random.SeedSequence([seed, ti, names.index(a), names.index(b)])
                        .generate_state(1)[0])
                return _test(t, data, a, b, k, s)

            tasks.append(TaskResult(t, sig.compare_metrics(values, test if k > 0 else None, alpha)))
    average, clusters = _average(tasks, metrics, k, alpha)
    return MetaEvalResult(preset, metrics, per_lp, tasks, average, clusters, k, seed)


def _average(tasks: list[TaskResult], metrics: list[str], k: int,
             alpha: float) -> tuple[dict[str, float], dict[str, int]]:
    if not tasks:
        return {}, {}
    avg = {}
    for m in metrics:
        avg[m] = float(sum(r.task.weight * (r.value(m) - r.task.range[0]) /
                           (r.task.range[1] - r.task.range[0]) for r in tasks))
    names = sorted(avg, key=lambda n: (-avg[n], n))
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
            pm[i, j] = np.mean(null >= avg[names[i]] - avg[names[j]] - 1e-12)
    ranks = sig.significance_clusters(pm, alpha)
    return avg, dict(zip(names, ranks))


# --------------------------------------------------------------------------- formatting

def format_result(res: MetaEvalResult, fmt: str = "text") -> str:
    if fmt == "json":
        return json.dumps(res.to_dict(), indent=2, default=float) + "\n"
    if fmt not in ("text", "tsv"):
        raise InputError(f"unknown format {fmt!r} (text, tsv, json)", field="format")
    out = io.StringIO()
    if res.tasks:
        lp_row = ["Metric", "Avg", ""] + sum(([r.task.lp_label, ""] for r in res.tasks), [])
        st_row = ["", "", ""] + sum(([r.task.label, ""] for r in res.tasks), [])
        rows = []
        for pos, m in enumerate(res.ranking(), 1):
            row = [m, str(pos), f"{res.average[m]:.3f}"]
            for r in res.tasks:
                row += [str(r.position(m)), f"{r.value(m):.3f}"]
            rows.append(row)
        _emit(out, [lp_row, st_row], rows, fmt)
        if res.k > 0:
            out.write("\n" if fmt == "text" else "")
            cl_head = [["Metric", "avg"] + [f"{r.task.lp_label} {r.task.label}" for r in res.tasks]]
            cl_rows = [[m, str(res.average_cluster[m])] + [str(r.cluster(m)) for r in res.tasks]
                       for m in res.ranking()]
            if fmt == "text":
                out.write(f"Significance clusters (permutation tests, k={res.k}, "
                          f"1 = top cluster):\n")
                _emit(out, cl_head, cl_rows, fmt)
        if fmt == "text":
            out.write("\n")
    if fmt == "text":
        keys = ["sys_pairwise_accuracy", "sys_spa", "sys_pearson", "seg_pearson",
                "seg_kendall_item", "seg_acc_t", "seg_acc_t_epsilon"]
        for lp, by_metric in res.per_lp.items():
            out.write(f"{lp}:\n")
            head = [["Metric"] + keys]
            rows = [[m] + [f"{v[k]:.4f}" if k != "seg_acc_t_epsilon" else f"{v[k]:.4g}" for k in keys]
                    for m, v in by_metric.items()]
            _emit(out, head, rows, fmt)
    elif not res.tasks:
        keys = list(next(iter(next(iter(res.per_lp.values())).values())))
        out.write("\t".join(["lp", "metric"] + keys) + "\n")
        for lp, by_metric in res.per_lp.items():
            for m, v in by_metric.items():
                out.write("\t".join([lp, m] + [f"{v[k]:.6g}" for k in keys]) + "\n")
    return out.getvalue()


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
