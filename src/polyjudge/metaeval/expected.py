"""One expected-score run of a judge against N sampled runs of it, on the same items.

An expected-score run (``score_mode=expected``) sends one request per item; the
comparison says what that buys against sampling: ties, how well each way of
scoring reproduces the system ranking of all N sampled runs, how much single
rankings agree with each other, and, with human scores, soft pairwise accuracy
(SPA) and tie-calibrated accuracy (acc-t) from :mod:`polyjudge.metaeval.stats`.

It lives in meta-evaluation, not in :mod:`polyjudge.analysis`, because it
needs human scores and meta-evaluation statistics; it uses analysis' run
aggregation and system means (analysis never imports meta-evaluation).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any

import numpy as np

from polyjudge.aggregate.rrwa import COMPARISON
from polyjudge.analysis.runs import Floats, aggregate_rows
from polyjudge.analysis.stats import system_means, tie_stats
from polyjudge.metaeval.matrices import ScoreMatrix
from polyjudge.metaeval.readers import DOC_SEG_SEPARATOR
from polyjudge.rundir import RunScores

# The reference ranking every way is compared with: the plain mean of all N sampled runs.
REFERENCE = "mean-all"
ItemKey = tuple[str, str, str]  # (system, doc_id, seg_id)


@dataclass(frozen=True, slots=True)
class ScoringWay:
    """One way of scoring the items: the expected score, one sampled run, or N runs aggregated.

    For ``one sampled run`` the numbers are means over the N runs (``tau_min``: the worst run).
    """

    name: str
    requests: int  # requests per item
    n: int  # items scored
    distinct: int
    tie_rate: float
    tau_vs_reference: float  # Kendall tau-b of its system means vs the mean of all N sampled runs
    tau_min: float  # the worst single run's tau_vs_reference (the way itself when it is one ranking)
    same_best: float  # share of its rankings whose best system is the reference's best
    tau_between_runs: float  # mean tau-b between the rankings of two runs of this way (NaN: one run)
    spa: float = math.nan  # soft pairwise accuracy of its system ranking vs human (with human scores)
    acc_t: float = math.nan  # tie-calibrated segment-level pairwise accuracy vs human


@dataclass
class ExpectedComparison:
    """One expected-score run and N sampled runs of a judge, on the items both scored."""

    judge: str
    n_items: int  # items in both runs
    n_sampled_runs: int
    n_systems: int
    human: bool
    ways: list[ScoringWay]

    def to_json(self) -> dict[str, Any]:
        """As ``polyjudge variability --format json`` writes it and the report reads it (NaN as null)."""
        def clean(v: Any) -> Any:
            return None if isinstance(v, float) and not math.isfinite(v) else v

        return {"judge": self.judge, "n_items": self.n_items, "n_sampled_runs": self.n_sampled_runs,
                "n_systems": self.n_systems, "human": self.human, "reference": REFERENCE,
                "ways": [{k: clean(v) for k, v in asdict(w).items()} for w in self.ways]}

    def tsv_rows(self) -> list[str]:
        """One row per way (``variability --expected --format tsv``); empty cells for NaN."""
        rows = []
        for way in self.to_json()["ways"]:
            cells = [self.judge, str(self.n_items), str(self.n_sampled_runs), str(self.n_systems)]
            cells += ["" if v is None else str(v) for v in way.values()]
            rows.append("\t".join(cells))
        return rows

    def to_text(self) -> str:
        lines = [f"expected score (1 request per item) vs {self.n_sampled_runs} sampled runs, judge {self.judge}: "
                 f"{self.n_items} items, {self.n_systems} systems; ranking reference: {REFERENCE} of the "
                 f"sampled runs"]
        head = (f"  {'way':<24}{'requests':>9}{'scored':>8}{'distinct':>9}{'ties':>8}{'tau ref':>9}"
                f"{'tau min':>9}{'best':>6}{'tau runs':>9}")
        if self.human:
            head += f"{'SPA':>8}{'acc-t':>8}"
        lines.append(head)
        for w in self.ways:
            row = (f"  {w.name:<24}{w.requests:>9}{w.n:>8}{w.distinct:>9}{_f(w.tie_rate, 4):>8}"
                   f"{_f(w.tau_vs_reference):>9}{_f(w.tau_min):>9}{_f(w.same_best, 2):>6}{_f(w.tau_between_runs):>9}")
            if self.human:
                row += f"{_f(w.spa):>8}{_f(w.acc_t):>8}"
            lines.append(row)
        return "\n".join(lines)


def _f(x: float, digits: int = 3) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def _kendall(a: dict[str, float], b: dict[str, float]) -> float:
    from scipy import stats  # here, not at import: reading this module needs no scipy

    names = [s for s in a if s in b and math.isfinite(a[s]) and math.isfinite(b[s])]
    if len(names) < 2:
        return math.nan
    x, y = np.array([a[s] for s in names]), np.array([b[s] for s in names])
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(stats.kendalltau(x, y).statistic)


def _best(means: dict[str, float]) -> str | None:
    finite = {s: v for s, v in means.items() if math.isfinite(v)}
    return max(finite, key=lambda s: finite[s]) if finite else None


def _human_stats(values: Floats, keys: Sequence[ItemKey], human: ScoreMatrix, item_key: str) -> tuple[float, float]:
    """(SPA, acc-t) of segment scores laid out as the human matrix (systems x items)."""
    from polyjudge.metaeval import stats as mstats  # here: loads scipy, which the comparison without humans needs not

    sys_ix = {s: i for i, s in enumerate(human.systems)}
    item_ix = {it: i for i, it in enumerate(human.items)}
    metric = np.full(human.values.shape, np.nan)
    for v, (system, doc, seg) in zip(values, keys, strict=True):
        item = seg if item_key == "seg" else f"{doc}{DOC_SEG_SEPARATOR}{seg}"
        if system in sys_ix and item in item_ix:
            metric[sys_ix[system], item_ix[item]] = v
    h = np.where(np.isnan(metric), np.nan, human.values)  # the same cells on both sides
    if not np.isfinite(h).any():
        return math.nan, math.nan
    spa = mstats.soft_pairwise_accuracy(h, metric)
    acc = mstats.tie_calibration(h, metric, "item").value
    return float(spa), float(acc)


def _way(name: str, requests: int, columns: list[Floats], systems: Sequence[str], ref: dict[str, float],
         keys: Sequence[ItemKey], human: ScoreMatrix | None, item_key: str) -> ScoringWay:
    """A way given by one or more score columns (several: its independent runs, numbers averaged)."""
    means = [system_means(c, systems) for c in columns]
    taus = [_kendall(m, ref) for m in means]
    best = _best(ref)
    ties = [tie_stats(c) for c in columns]
    between = [_kendall(a, b) for a, b in combinations(means, 2)]
    spa = acc = math.nan
    if human is not None:
        pairs = [_human_stats(c, keys, human, item_key) for c in columns]
        spa, acc = (float(np.nanmean([p[k] for p in pairs])) for k in (0, 1))

    def avg(xs: Sequence[float]) -> float:
        finite = [x for x in xs if math.isfinite(x)]
        return float(np.mean(finite)) if finite else math.nan

    return ScoringWay(name, requests, int(round(avg([t.n for t in ties]))), int(round(avg([t.distinct for t in ties]))),
                      avg([t.rate for t in ties]), avg(taus),
                      min((t for t in taus if math.isfinite(t)), default=math.nan),
                      avg([float(_best(m) == best) for m in means]) if best is not None else math.nan,
                      avg(between), spa, acc)


def compare_expected(expected: RunScores, sampled: RunScores, aggregators: Sequence[str] = COMPARISON, *,
                     human: ScoreMatrix | None = None, item_key: str = "seg") -> ExpectedComparison:
    """The expected-score run against one sampled run and against N sampled runs under each aggregator.

    Items are matched by (system, doc_id, seg_id); only items in both runs count. ``human``
    (systems x items, items keyed by ``item_key``: ``seg`` or ``doc-seg``) adds SPA and acc-t.
    An expected run of several runs is averaged per item (its runs differ only by seed).
    """
    def keyed(m: RunScores) -> dict[ItemKey, int]:
        return {(s, d, g): i for i, (s, d, g) in enumerate(zip(m.systems, m.doc_ids, m.seg_ids, strict=True))}

    ek, sk = keyed(expected), keyed(sampled)
    keys = [k for k in sk if k in ek]
    if not keys:
        raise ValueError("the expected-score run and the sampled runs have no items in common")
    e_rows = expected.scores[[ek[k] for k in keys]]
    s_rows = sampled.scores[[sk[k] for k in keys]]
    systems = [k[0] for k in keys]
    ref = system_means(aggregate_rows(s_rows, REFERENCE), systems)
    n_runs = s_rows.shape[1]
    ways = [_way("expected", 1, [aggregate_rows(e_rows, "mean-all")], systems, ref, keys, human, item_key)]
    if e_rows.shape[1] > 1:  # its runs as separate rankings, for the between-runs agreement
        ways[0] = _way("expected", 1, [e_rows[:, r] for r in range(e_rows.shape[1])], systems, ref, keys,
                       human, item_key)
    ways.append(_way("one sampled run", 1, [s_rows[:, r] for r in range(n_runs)], systems, ref, keys, human,
                     item_key))
    for name in aggregators:
        if name == "first":  # one run alone: the row above
            continue
        try:
            column = aggregate_rows(s_rows, name)
        except (ValueError, ArithmeticError):
            continue
        ways.append(_way(f"{name} of {n_runs} runs", n_runs, [column], systems, ref, keys, human, item_key))
    return ExpectedComparison(expected.judge, len(keys), n_runs, len(set(systems)), human is not None, ways)


__all__ = ["REFERENCE", "ExpectedComparison", "ScoringWay", "compare_expected"]
