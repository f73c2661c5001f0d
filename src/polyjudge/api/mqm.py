"""Human MQM annotations and run-to-run variability, as ``human-mqm`` and ``variability`` use them.

Imported only when one of those commands runs (the analysis pulls in scipy).
"""

from __future__ import annotations

from polyjudge.aggregate.mqm import MQMWeights, score_human_annotations
from polyjudge.aggregate.rrwa import COMPARISON
from polyjudge.analysis import aggregate_table, distinct_counts, segment_deltas, variability_report
from polyjudge.data.wmt_mqm import read_wmt_mqm_report

__all__ = ["COMPARISON", "MQMWeights", "aggregate_table", "distinct_counts", "read_wmt_mqm_report",
           "score_human_annotations", "segment_deltas", "variability_report"]
