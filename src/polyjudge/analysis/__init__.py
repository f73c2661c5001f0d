"""Run analysis: what a run's scores say, computed from run directories and arrays.

Layer: above :mod:`polyjudge.rundir` and :mod:`polyjudge.aggregate`, below the
engine and the report; imports only data, aggregate, rundir, numpy and scipy.

* :mod:`~polyjudge.analysis.runs`: runs matrices (items x runs): aggregation,
  spread (Δ), distinct scores.
* :mod:`~polyjudge.analysis.stats`: ties, per-system means, bootstrap intervals,
  system ranking.
* :mod:`~polyjudge.analysis.variability`: run-to-run variability of a judge
  (``polyjudge variability``, the report's variability section).
"""

from polyjudge.analysis.runs import (
    aggregate_rows,
    aggregate_table,
    available_run_aggregators,
    distinct_counts,
    segment_deltas,
)
from polyjudge.analysis.stats import (
    SystemScore,
    TieStats,
    bootstrap_mean_ci,
    scores_by_system,
    system_means,
    system_ranking,
    tie_rate,
    tie_stats,
)
from polyjudge.analysis.variability import (
    AggregatorRow,
    RunStability,
    VariabilityReport,
    compare_aggregators,
    single_run_stability,
    variability_report,
)

__all__ = ["AggregatorRow", "RunStability", "SystemScore", "TieStats", "VariabilityReport", "aggregate_rows",
           "aggregate_table", "available_run_aggregators", "bootstrap_mean_ci", "compare_aggregators",
           "distinct_counts", "scores_by_system", "segment_deltas", "single_run_stability", "system_means",
           "system_ranking", "tie_rate", "tie_stats", "variability_report"]
