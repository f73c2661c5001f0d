"""Meta-evaluation of metrics that score systems only.

Some rankings have no segment scores at all: the pairwise study's
Bradley–Terry strengths (``systems-bt.sys.score``), a published system table,
a metric's ``.sys.score`` file. They can still be compared with the human
*system* scores: system-level pairwise accuracy (the WMT23 system statistic),
Pearson and Kendall correlations. Statistics that need segment scores (soft
pairwise accuracy, which permutes segments, and every segment-level one) are
reported as not applicable (``None``), never computed from nothing.

Human system scores are the humans' own system file when there is one, else
the mean over each system's human-scored segments (as for every other
metric). A system the humans scored but the metric did not is an input error,
or with ``missing_metric="drop"`` left out of that metric's comparison.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from polyjudge.data.errors import InputError
from polyjudge.data.numbers import stat_text
from polyjudge.metaeval import stats
from polyjudge.metaeval.results import registered_columns
from polyjudge.metaeval.statistics import COLUMNS

SYSTEM_STATS = tuple(c.key for c in COLUMNS if c.from_system_scores)
# What the standard per-LP table holds that system scores cannot give.
NOT_APPLICABLE = tuple(c.key for c in COLUMNS if c.printed and not c.from_system_scores)

Stats = dict[str, float | int | None]


def not_applicable() -> list[str]:
    """The per-LP columns system scores cannot give: the standard ones, then every registered statistic's."""
    return [*NOT_APPLICABLE, *(c.key for c in registered_columns())]


@dataclass(frozen=True, slots=True)
class SystemScores:
    """One metric's system scores (higher = better) and where they came from."""

    name: str
    scores: Mapping[str, float]
    source: str


def system_level_stats(human: Mapping[str, float], metric: SystemScores, *, lp: str = "lp",
                       missing_metric: str = "error") -> Stats:
    """System statistics of ``metric`` against the human system scores (NaN = no human score)."""
    systems = [s for s, v in human.items() if not math.isnan(v)]
    missing = [s for s in systems if s not in metric.scores or math.isnan(metric.scores[s])]
    if missing and missing_metric != "drop":
        shown = ", ".join(missing[:5]) + (f" (+{len(missing) - 5} more)" if len(missing) > 5 else "")
        raise InputError(f"{lp}: metric '{metric.name}' has no score for system(s) the humans scored: {shown} "
                         "(--missing-metric drop compares the systems it has)", path=metric.source,
                         field="system")
    keep = [s for s in systems if s not in missing]
    if len(keep) < 2:
        raise InputError(f"{lp}: metric '{metric.name}' shares fewer than two systems with the human scores",
                         path=metric.source, field="system")
    hs = np.array([human[s] for s in keep], dtype=float)
    ms = np.array([metric.scores[s] for s in keep], dtype=float)
    few = len(keep) < stats.MIN_CORRELATION_POINTS  # a correlation of two points is +-1 whatever they are
    out: Stats = {"sys_pairwise_accuracy": stats.pairwise_accuracy(hs, ms),
                  "sys_pearson": None if few else stats.pearson(hs, ms),
                  "sys_kendall": None if few else stats.kendall(hs, ms)}
    out.update({k: None for k in not_applicable()})
    out["n_systems"] = len(keep)
    return out


def format_system_level(results: Mapping[str, Mapping[str, Stats]], fmt: str = "text") -> str:
    """The system-level-only table: one row per language pair and metric ("n/a" where not applicable)."""
    keys = [*SYSTEM_STATS, "n_systems", *not_applicable()]
    from polyjudge.metaeval.tasks import display_lp

    rows = [[display_lp(lp) if fmt == "text" else lp, m] + [_cell(v.get(k), fmt) for k in keys]
            for lp, by in results.items() for m, v in by.items()]
    if fmt == "tsv":
        return "".join("\t".join(r) + "\n" for r in [["lp", "metric", *keys], *rows])
    head = ["lp", "metric", *keys]
    widths = [max(len(r[c]) for r in [head, *rows]) for c in range(len(head))]
    lines = ["System-level-only metrics (segment statistics not applicable; correlations need at least "
             f"{stats.MIN_CORRELATION_POINTS} systems, else n/a):",
             "  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(x.ljust(w) if c < 2 else x.rjust(w) for c, (x, w) in enumerate(zip(r, widths))).rstrip()
              for r in rows]
    return "\n".join(lines) + "\n"


def _cell(v: float | int | None, fmt: str) -> str:
    """A cell: n/a where not applicable or undefined (NaN: a constant metric's correlation), in text and TSV."""
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    return stat_text(v, ".4f" if fmt == "text" else ".6g")


__all__ = ["NOT_APPLICABLE", "SYSTEM_STATS", "SystemScores", "format_system_level", "system_level_stats"]
