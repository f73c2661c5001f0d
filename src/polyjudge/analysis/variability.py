"""How much a judge's repeated runs disagree, and what aggregating them buys.

From one judge's runs matrix (GEMBA-MQM V2, Section 4):

* per item: Δ = max − min over the ok runs, and the number of distinct scores;
* the tie rate across items for single runs and after each aggregator (MQM
  scores are sums of a few weights, so single runs tie a lot);
* per system: whether one run alone ranks the systems like the aggregate
  (Kendall τ-b, and whether the best system stays the best), the paper's
  single-run ablation;
* each aggregator against the plain mean (segment Pearson r, system τ).

An expected-score run against sampled runs, with human scores, is compared in
:mod:`polyjudge.metaeval.expected`: analysis sits below meta-evaluation and
never imports it.

Run directories are read through :class:`polyjudge.rundir.RunDir`
(``RunDir.open(path).run_score_matrices()``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from polyjudge.aggregate.rrwa import COMPARISON
from polyjudge.analysis.runs import Floats, aggregate_rows, aggregate_table, distinct_counts, segment_deltas
from polyjudge.analysis.stats import system_means, tie_rate, tie_stats
from polyjudge.data.numbers import defined, stat_text
from polyjudge.rundir import RunScores


@dataclass
class RunStability:
    run: int  # 0-based run index
    kendall_tau: float  # τ-b of this run's system scores vs. the aggregated ones
    same_best: bool  # the best system is the same


def single_run_stability(scores: Floats, systems: Sequence[str],
                         aggregator: str = "rrwa") -> list[RunStability]:
    """For each run alone: how its system ranking compares with the aggregate's."""
    from scipy import stats  # here, not at import: judging imports this package and needs no scipy

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


@dataclass(frozen=True, slots=True)
class AggregatorRow:
    """One aggregator on one judge's runs: its ties and its agreement with the plain mean."""

    aggregator: str
    n: int
    distinct: int
    tie_rate: float
    mean: float
    pearson_vs_mean: float
    kendall_sys_vs_mean: float
    error: str | None = None  # why the aggregator does not apply to these scores


def compare_aggregators(matrix: Floats, systems: Sequence[str], names: Sequence[str]) -> list[AggregatorRow]:
    """Each aggregator's ties and agreement with ``mean-all`` (segment Pearson r, system Kendall τ)."""
    from scipy import stats  # here, not at import: judging imports this package and needs no scipy

    base = aggregate_rows(matrix, "mean-all")
    base_sys = np.array(list(system_means(base, systems).values()))
    rows = []
    for name in names:
        try:
            v = aggregate_rows(matrix, name)
        except (ValueError, ArithmeticError) as exc:
            rows.append(AggregatorRow(name, 0, 0, math.nan, math.nan, math.nan, math.nan, str(exc)))
            continue
        n, distinct, tie = tie_stats(v)
        both = ~np.isnan(v) & ~np.isnan(base)
        r = math.nan
        if both.sum() >= 3 and np.ptp(v[both]) > 0 and np.ptp(base[both]) > 0:
            r = float(stats.pearsonr(v[both], base[both])[0])
        tau = math.nan
        sv = np.array(list(system_means(v, systems).values()))
        ok = ~np.isnan(sv) & ~np.isnan(base_sys)
        if ok.sum() >= 2:
            tau = float(stats.kendalltau(sv[ok], base_sys[ok])[0])
        rows.append(AggregatorRow(name, n, distinct, tie, float(np.nanmean(v)) if n else math.nan, r, tau))
    return rows


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
        """What ``human-mqm --variability`` prints; an undefined figure (no scored item) is ``n/a``."""
        share = defined(self.share_delta_zero)
        lines = [
            f"judge {self.judge}: {self.scored_items}/{self.n_items} items scored, {self.n_runs} runs",
            f"  delta (max-min over runs): mean {stat_text(self.delta_mean, '.3f')}, "
            f"median {stat_text(self.delta_median, '.3f')}, max {stat_text(self.delta_max, '.3f')}; "
            f"all runs agree on {stat_text(None if share is None else 100 * share, '.1f')}% of items",
            f"  distinct scores per item: mean {stat_text(self.distinct_mean, '.2f')}",
            f"  tie rate across items: single run {stat_text(self.tie_rate_single_runs)}",
        ]
        for name, rate in self.tie_rate_after.items():
            lines.append(f"    after {name:<13}{stat_text(rate)}")
        if self.stability:
            taus = [s.kendall_tau for s in self.stability if not np.isnan(s.kendall_tau)]
            if taus:
                lines.append(f"  single-run system ranking vs aggregate: Kendall tau "
                             f"min {min(taus):.3f}, mean {float(np.mean(taus)):.3f}; best system kept in "
                             f"{sum(s.same_best for s in self.stability)}/{len(self.stability)} runs")
        return "\n".join(lines)


def variability_report(matrix: RunScores, aggregators: Sequence[str] = COMPARISON,
                       stability_aggregator: str = "rrwa") -> VariabilityReport:
    """Spread, ties and single-run ranking stability of one judge's runs."""
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
        tie_rate_after={n: tie_rate(v) for n, v in aggregate_table(s, aggregators).items()},
        stability=single_run_stability(s, matrix.systems, stability_aggregator) if n_systems >= 2 else [],
    )


__all__ = ["AggregatorRow", "RunStability", "VariabilityReport", "compare_aggregators", "single_run_stability",
           "variability_report"]
