"""How much a judge's repeated runs disagree, and what aggregation buys.

Input is a runs matrix: one row per judged item, one column per run, NaN
where a run failed or is missing. From it (GEMBA-MQM V2, Section 4):

* per segment: Δ = max − min over the ok runs, and the number of distinct scores;
* the tie rate across segments (share of segment pairs with equal scores),
  for single runs and after each aggregator: MQM scores are sums of a few
  weights, so single runs tie a lot and aggregation breaks ties;
* per system: how stable the system ranking is when only one run is used
  (Kendall τ-b against the aggregated ranking, and whether the best system
  stays the best), the paper's single-run ablation.

Nothing here imports the engine: run directories are read as files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy import stats

from polyjudge.aggregate.rrwa import COMPARISON
from polyjudge.aggregate.runs import get_aggregator
from polyjudge.data.errors import InputError
from polyjudge.data.readers import iter_jsonl


@dataclass
class RunMatrix:
    """Run scores of one judge: ``scores[i, r]`` is run ``r`` of item ``i`` (NaN = no score)."""

    judge: str
    systems: list[str]
    seg_ids: list[str]
    scores: np.ndarray


def load_run_matrices(run_dir: str | Path) -> dict[str, RunMatrix]:
    """Read ``judgments.jsonl`` of a run directory into one matrix per judge."""
    path = Path(run_dir) / "judgments.jsonl"
    if not path.is_file():
        raise InputError("no judgments.jsonl in the run directory", path=str(path))
    rows: list[dict] = []
    for lineno, row in iter_jsonl(path):
        for key in ("item_index", "run_index", "judge"):
            if key not in row:
                raise InputError("missing key", path=str(path), line=lineno, field=key)
        rows.append(row)
    out: dict[str, RunMatrix] = {}
    for judge in dict.fromkeys(r["judge"] for r in rows):
        mine = [r for r in rows if r["judge"] == judge]
        n_items = max(r["item_index"] for r in mine) + 1
        n_runs = max(r["run_index"] for r in mine) + 1
        scores = np.full((n_items, n_runs), np.nan)
        systems = [""] * n_items
        segs = [""] * n_items
        for r in mine:
            i = r["item_index"]
            systems[i] = str(r.get("system") or "")
            segs[i] = str(r.get("seg_id") or i)
            if r.get("status") == "ok" and r.get("score") is not None:
                scores[i, r["run_index"]] = float(r["score"])
        out[judge] = RunMatrix(judge, systems, segs, scores)
    return out


# -- per segment -----------------------------------------------------------------

def _ok_counts(scores: np.ndarray) -> np.ndarray:
    return np.sum(~np.isnan(scores), axis=1)


def segment_deltas(scores: np.ndarray) -> np.ndarray:
    """Δ = max − min over each row's ok runs; NaN for rows without any."""
    out = np.full(scores.shape[0], np.nan)
    has = _ok_counts(scores) > 0
    out[has] = np.nanmax(scores[has], axis=1) - np.nanmin(scores[has], axis=1)
    return out


def distinct_counts(scores: np.ndarray) -> np.ndarray:
    """Number of different scores among each row's ok runs."""
    return np.array([np.unique(row[~np.isnan(row)]).size for row in scores])


def tie_rate(values: Sequence[float] | np.ndarray) -> float:
    """Share of pairs of (non-NaN) segments with exactly equal scores; NaN if < 2."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    n = v.size
    if n < 2:
        return float("nan")
    _, counts = np.unique(v, return_counts=True)
    return float(np.sum(counts * (counts - 1)) / (n * (n - 1)))


def aggregate_rows(scores: np.ndarray, name: str, min_runs: int = 1) -> np.ndarray:
    """One aggregated score per row (NaN when fewer than ``min_runs`` ok runs or undefined)."""
    agg = get_aggregator(name)
    out = np.full(scores.shape[0], np.nan)
    for i, row in enumerate(scores):
        ok = row[~np.isnan(row)]
        if ok.size >= max(1, min_runs):
            try:
                out[i] = agg(ok)
            except ValueError:
                pass
    return out


def aggregate_table(scores: np.ndarray, names: Sequence[str] = COMPARISON,
                    min_runs: int = 1) -> dict[str, np.ndarray]:
    """Every aggregator's per-row scores, e.g. for an ``aggregates.tsv``."""
    return {n: aggregate_rows(scores, n, min_runs) for n in names}


# -- per system ------------------------------------------------------------------

def system_means(values: np.ndarray, systems: Sequence[str]) -> dict[str, float]:
    """Mean of the non-NaN segment scores per system (NaN if a system has none)."""
    out: dict[str, float] = {}
    sys_arr = np.asarray(systems)
    for s in dict.fromkeys(systems):
        v = values[sys_arr == s]
        v = v[~np.isnan(v)]
        out[s] = float(v.mean()) if v.size else float("nan")
    return out


@dataclass
class RunStability:
    run: int  # 0-based run index
    kendall_tau: float  # τ-b of this run's system scores vs. the aggregated ones
    same_best: bool  # the best system is the same


def single_run_stability(scores: np.ndarray, systems: Sequence[str],
                         aggregator: str = "rrwa") -> list[RunStability]:
    """For each run alone: how its system ranking compares with the aggregate's."""
    ref = system_means(aggregate_rows(scores, aggregator), systems)
    names = [s for s in ref if not np.isnan(ref[s])]
    ref_v = np.array([ref[s] for s in names])
    out = []
    for r in range(scores.shape[1]):
        run = system_means(scores[:, r], systems)
        run_v = np.array([run[s] for s in names])
        ok = ~np.isnan(run_v)
        if ok.sum() < 2:
            out.append(RunStability(r, float("nan"), False))
            continue
        tau = stats.kendalltau(run_v[ok], ref_v[ok]).statistic
        best_same = names[int(np.nanargmax(run_v))] == names[int(np.argmax(ref_v))]
        out.append(RunStability(r, float(tau), bool(best_same)))
    return out


# -- summary ---------------------------------------------------------------------

@dataclass
class VariabilityReport:
    judge: str
    n_items: int
    n_runs: int
    scored_items: int  # items with at least one ok run
    delta_mean: float
    delta_median: float
    delta_max: float
    share_delta_zero: float  # items whose ok runs all agree
    distinct_mean: float
    tie_rate_single_runs: float  # mean over runs of each run's tie rate
    tie_rate_after: dict[str, float] = field(default_factory=dict)
    stability: list[RunStability] = field(default_factory=list)

    def to_text(self) -> str:
        lines = [
            f"judge {self.judge}: {self.scored_items}/{self.n_items} items scored, {self.n_runs} runs",
            f"  delta (max-min over runs): mean {self.delta_mean:.3f}, median {self.delta_median:.3f}, "
            f"max {self.delta_max:.3f}; all runs agree on {100 * self.share_delta_zero:.1f}% of items",
            f"  distinct scores per item: mean {self.distinct_mean:.2f}",
            f"  tie rate across items: single run {self.tie_rate_single_runs:.4f}",
        ]
        for name, rate in self.tie_rate_after.items():
            lines.append(f"    after {name:<13}{rate:.4f}")
        if self.stability:
            taus = [s.kendall_tau for s in self.stability if not np.isnan(s.kendall_tau)]
            if taus:
                lines.append(f"  single-run system ranking vs aggregate: Kendall tau "
                             f"min {min(taus):.3f}, mean {float(np.mean(taus)):.3f}; best system kept in "
                             f"{sum(s.same_best for s in self.stability)}/{len(self.stability)} runs")
        return "\n".join(lines)


def variability_report(matrix: RunMatrix, aggregators: Sequence[str] = COMPARISON,
                       stability_aggregator: str = "rrwa") -> VariabilityReport:
    s = matrix.scores
    d = segment_deltas(s)
    scored = ~np.isnan(d)
    single = [tie_rate(s[:, r]) for r in range(s.shape[1])]
    single = [t for t in single if not np.isnan(t)]
    n_systems = len(set(matrix.systems))
    return VariabilityReport(
        judge=matrix.judge, n_items=s.shape[0], n_runs=s.shape[1], scored_items=int(scored.sum()),
        delta_mean=float(np.nanmean(d)) if scored.any() else float("nan"),
        delta_median=float(np.nanmedian(d)) if scored.any() else float("nan"),
        delta_max=float(np.nanmax(d)) if scored.any() else float("nan"),
        share_delta_zero=float(np.mean(d[scored] == 0)) if scored.any() else float("nan"),
        distinct_mean=float(distinct_counts(s)[scored].mean()) if scored.any() else float("nan"),
        tie_rate_single_runs=float(np.mean(single)) if single else float("nan"),
        tie_rate_after={n: tie_rate(aggregate_rows(s, n)) for n in aggregators},
        stability=single_run_stability(s, matrix.systems, stability_aggregator) if n_systems >= 2 else [],
    )


__all__ = ["RunMatrix", "RunStability", "VariabilityReport", "aggregate_rows", "aggregate_table",
           "distinct_counts", "load_run_matrices", "segment_deltas", "single_run_stability",
           "system_means", "tie_rate", "variability_report"]
