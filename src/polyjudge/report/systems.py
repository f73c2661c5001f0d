"""The report's "Which systems differ" section: a run's systems in significance clusters and
every pair's paired tests, read from the typed :class:`polyjudge.metaeval.systems.SystemComparison`
(the numbers ``polyjudge compare-systems`` prints for the same run and settings).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from polyjudge.metaeval.systems import MIN_PAIRED_SEGMENTS, CompareSettings, SystemComparison, compare_systems, pivot
from polyjudge.report.blocks import Cell, Para, Table
from polyjudge.report.format import interval, number

__all__ = ["comparison_blocks", "run_comparison"]

_KEY_SEPARATOR = "\x1f"  # doc_id and seg_id joined: a character no id holds


def run_comparison(systems: Sequence[str], doc_ids: Sequence[str | None], seg_ids: Sequence[str | None],
                   scores: np.ndarray, *, draws: int = 1000) -> SystemComparison | None:
    """The comparison of a run's systems on its segment scores (segments keyed by document and id),
    or None with fewer than two scored systems or a segment scored twice for one system."""
    keys = [f"{d or ''}{_KEY_SEPARATOR}{s or k}" for k, (d, s) in enumerate(zip(doc_ids, seg_ids))]
    try:
        names, matrix = pivot(systems, keys, scores)
    except ValueError:
        return None
    result = compare_systems(names, matrix, CompareSettings(n_boot=draws, n_perm=draws))
    return result if len(result.systems) >= 2 else None


def comparison_blocks(cmp: SystemComparison) -> list[Any]:
    """A note on the tests, the systems by cluster, and the pairs (significant ones marked)."""
    s = cmp.settings
    note = Para(f"Every pair of systems compared on the segments both scored: delta = mean of A − B with its "
                f"{100 * (1 - s.alpha):g}% paired bootstrap interval ({s.n_boot} resamples), two-sided p-values "
                f"of the paired bootstrap, paired approximate randomization ({s.n_perm} draws) and the paired "
                f"t-test, uncorrected; significance is decided by {s.test} at α = {s.alpha:g}. A system in a "
                "higher cluster is significantly better than every system in every lower cluster. A pair sharing "
                f"fewer than {MIN_PAIRED_SEGMENTS} segments has no resampling p-value or interval (n/a): no "
                "difference on so few segments can reach p < 0.05.")
    systems = Table(["cluster", "rank", "system", "mean", "segments"],
                    [[Cell(str(r.cluster), "best" if r.cluster == 1 else ""), r.rank, r.system, number(r.mean), r.n]
                     for r in cmp.systems], "Systems by significance cluster (higher is better)")
    rows = [[p.system_a, p.system_b, p.n, number(p.delta), interval(p.ci_low, p.ci_high), number(p.p_bootstrap),
             number(p.p_randomization), number(p.p_ttest),
             Cell("yes" if p.significant else "no", "best" if p.significant else "")] for p in cmp.pairs]
    pairs = Table(["A", "B", "segments", "delta", "interval", "p bootstrap", "p randomization", "p t-test",
                   "significant"], rows, "Pairs (A ranked above B)")
    return [note, systems, pairs]
