"""Meta-evaluation statistics by name: one function plus one registry entry each.

A ranking task (see :mod:`polyjudge.metaeval.tasks`) names a statistic and a
level; everything it needs to know about that statistic lives in one
:class:`Statistic` entry of :data:`STATISTICS`: how to compute it, how to test
whether one metric beats another on it, its range (for the averaged ranking),
and the labels tables and reports print.

Adding a statistic::

    @register_statistic("mean_abs_diff", label="mad", levels=("seg",), test=my_test)
    def mean_abs_diff(level, human, metric):
        ...

A value function gets the task's level and, per language pair of the task,
the human and the metric :class:`Scores`; per-LP statistics get one of each.
Such a statistic is also a column of meta-eval's per-LP table
(``seg_mean_abs_diff``) and of the report. Without ``test`` the generic PERM-BOTH test (:func:`perm_both`) is used.
Plugins register through the ``polyjudge.statistics`` entry-point group.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from polyjudge.data.errors import InputError
from polyjudge.metaeval import significance as sig
from polyjudge.metaeval import stats
from polyjudge.registry import Registry, UnknownNameError

Level = Literal["sys", "seg"]
LEVELS: tuple[Level, ...] = ("sys", "seg")

# SPA's own sign flips (Thompson et al. 2024 use 1000 draws, seed 4).
SPA_PERMUTATIONS = 1000
SPA_SEED = 4


@dataclass(frozen=True)
class Scores:
    """One side's scores (humans or one metric) on one language pair; higher = better.

    ``seg`` is systems x items with NaN for missing cells, ``sys`` one score
    per system, in the same system order.
    """

    seg: np.ndarray
    sys: np.ndarray


ValueFunction = Callable[[str, Sequence[Scores], Sequence[Scores]], float]
"""``value(level, human, metric)``: the statistic of one metric on a task."""

TestFunction = Callable[[str, Sequence[Scores], Sequence[Scores], Sequence[Scores], int, int],
                        sig.PermutationResult]
"""``test(level, human, metric_a, metric_b, k, seed)``: is metric A better than B?"""


@dataclass(frozen=True)
class Statistic:
    """A registered statistic: what to compute, how to test it, how to print it.

    ``pools_lps``: a task may span several language pairs (their data is
    pooled by the value function); otherwise a task names exactly one.
    ``per_lp_column``: meta-eval's per-LP table (and the report) shows it as
    ``LEVEL_NAME`` at each of its levels; the built-ins say no, as the
    standard WMT columns (``sys_spa``, ``seg_acc_t``, ...) already hold them.
    """

    name: str
    label: str
    title: str
    levels: tuple[Level, ...]
    range: tuple[float, float]
    value: ValueFunction
    test: TestFunction
    pools_lps: bool = False
    summary: str = ""
    per_lp_column: bool = True

    def column(self, level: str) -> str:
        """The key of this statistic at ``level`` in the per-LP table (``seg_mean_abs_diff``)."""
        return f"{level}_{self.name}"

    def rescale(self, x: float) -> float:
        """Map a value from :attr:`range` onto [0, 1] (how the ranking averages)."""
        lo, hi = self.range
        return (x - lo) / (hi - lo)


STATISTICS: Registry[Statistic] = Registry("statistic", entry_point_group="polyjudge.statistics")


def register_statistic(name: str, *, label: str | None = None, title: str | None = None,
                       levels: Sequence[Level] = LEVELS, range: tuple[float, float] = (0.0, 1.0),
                       test: TestFunction | None = None, pools_lps: bool = False,
                       summary: str | None = None,
                       per_lp_column: bool = True) -> Callable[[ValueFunction], ValueFunction]:
    """Decorator: register a value function as statistic ``name``.

    ``label`` is the short column label in ranking tables (default: the name),
    ``title`` the readable name in reports (default: the label), ``summary``
    the ``--help`` line (default: the function's first docstring line).
    A statistic that takes one language pair at a time is a column of
    meta-eval's per-LP table and of the report unless ``per_lp_column`` is false.
    """
    bad = [lv for lv in levels if lv not in LEVELS]
    if bad or not levels:
        raise ValueError(f"statistic {name!r}: levels must be among {LEVELS}, got {tuple(levels)}")
    if not range[0] < range[1]:
        raise ValueError(f"statistic {name!r}: range {range} is empty")

    def deco(fn: ValueFunction) -> ValueFunction:
        doc = (fn.__doc__ or "").strip()
        STATISTICS.add(name, Statistic(
            name=name, label=label or name, title=title or label or name, levels=tuple(levels),
            range=range, value=fn, test=test if test is not None else perm_both(fn),
            pools_lps=pools_lps, per_lp_column=per_lp_column,
            summary=summary if summary is not None else (doc.splitlines()[0] if doc else "")))
        return fn

    return deco


def get_statistic(name: str) -> Statistic:
    """The statistic called ``name``; an input error listing the valid names otherwise."""
    try:
        return STATISTICS.get(name)
    except UnknownNameError as exc:
        raise InputError(exc.message, field="statistic") from None


def statistic_titles() -> dict[str, str]:
    """Name -> readable title of every statistic (report column names)."""
    return {name: s.title for name, s in STATISTICS.items()}


# --------------------------------------------------------------------------- generic test

def perm_both(value: ValueFunction) -> TestFunction:
    """PERM-BOTH (Deutsch et al. 2021) for any value function.

    The cells the level reads (segment scores at ``seg``, system scores at
    ``sys``) of every language pair are laid end to end, both metrics are
    z-normalised over the cells with a human score, and cells are swapped at
    random between them. Statistics that read segment scores at system level
    (SPA) need their own test.
    """

    def test(level: str, human: Sequence[Scores], a: Sequence[Scores], b: Sequence[Scores],
             k: int, seed: int) -> sig.PermutationResult:
        def part(s: Scores) -> np.ndarray:
            return s.seg if level == "seg" else s.sys

        shapes = [part(h).shape for h in human]
        cuts = np.cumsum([int(np.prod(shape)) for shape in shapes])[:-1]

        def flat(side: Sequence[Scores]) -> np.ndarray:
            return np.concatenate([np.asarray(part(s), dtype=np.float64).ravel() for s in side])[None]

        def rebuild(row: np.ndarray, like: Sequence[Scores]) -> list[Scores]:
            pieces = [x.reshape(shape) for x, shape in zip(np.split(row[0], cuts), shapes, strict=True)]
            if level == "seg":
                return [Scores(p, s.sys) for p, s in zip(pieces, like, strict=True)]
            return [Scores(s.seg, p) for p, s in zip(pieces, like, strict=True)]

        def on_rows(h: np.ndarray, m: np.ndarray) -> float:
            return value(level, rebuild(h, human), rebuild(m, a))

        return sig.scores_permutation_test(flat(human), flat(a), flat(b), on_rows, k, seed)

    return test


# --------------------------------------------------------------------------- built-ins

def _one(side: Sequence[Scores]) -> Scores:
    if len(side) != 1:
        raise ValueError(f"this statistic takes one language pair per task, got {len(side)}")
    return side[0]


@register_statistic("accuracy", label="acc", title="pairwise accuracy", levels=("sys",), pools_lps=True,
                    per_lp_column=False)
def accuracy(level: str, human: Sequence[Scores], metric: Sequence[Scores]) -> float:
    """System-level pairwise accuracy, pairs pooled over the task's language pairs."""
    return stats.pairwise_accuracy([h.sys for h in human], [m.sys for m in metric])


def _pearson_test(level: str, human: Sequence[Scores], a: Sequence[Scores], b: Sequence[Scores],
                  k: int, seed: int) -> sig.PermutationResult:
    h, ma, mb = _one(human), _one(a), _one(b)
    if level == "sys":
        return sig.scores_permutation_test(h.sys[None], ma.sys[None], mb.sys[None],
                                           lambda x, y: stats.pearson(x, y), k, seed)
    return sig.pearson_permutation_test(h.seg, ma.seg, mb.seg, k, seed)


@register_statistic("pearson", label="pearson", range=(-1.0, 1.0), test=_pearson_test, per_lp_column=False)
def pearson(level: str, human: Sequence[Scores], metric: Sequence[Scores]) -> float:
    """Pearson correlation over systems, or over all segments pooled (no grouping)."""
    h, m = _one(human), _one(metric)
    if level == "sys":
        return stats.pearson(h.sys, m.sys)
    return stats.pearson(h.seg, m.seg, "none")


@register_statistic("kendall", label="kendall", title="Kendall tau", range=(-1.0, 1.0),
                    per_lp_column=False)
def kendall(level: str, human: Sequence[Scores], metric: Sequence[Scores]) -> float:
    """Kendall tau-b over systems, or per item over systems and averaged (item grouping)."""
    h, m = _one(human), _one(metric)
    if level == "sys":
        return stats.kendall(h.sys, m.sys)
    return stats.kendall(h.seg, m.seg, "item", "b")


def _acc_t_test(level: str, human: Sequence[Scores], a: Sequence[Scores], b: Sequence[Scores],
                k: int, seed: int) -> sig.PermutationResult:
    return sig.pairs_permutation_test(_one(human).seg, _one(a).seg, _one(b).seg, "item", k=k, seed=seed)


@register_statistic("acc_t", label="acc-t", levels=("seg",), test=_acc_t_test, per_lp_column=False)
def acc_t(level: str, human: Sequence[Scores], metric: Sequence[Scores]) -> float:
    """Tie-calibrated pairwise accuracy (acc23 at its best threshold), item grouping."""
    return stats.tie_calibration(_one(human).seg, _one(metric).seg, "item").value


def _spa_test(level: str, human: Sequence[Scores], a: Sequence[Scores], b: Sequence[Scores],
              k: int, seed: int) -> sig.PermutationResult:
    return sig.spa_permutation_test(_one(human).seg, _one(a).seg, _one(b).seg, k, seed,
                                    SPA_PERMUTATIONS, SPA_SEED)


@register_statistic("spa", label="pce", title="SPA", levels=("sys",), test=_spa_test, per_lp_column=False)
def spa(level: str, human: Sequence[Scores], metric: Sequence[Scores]) -> float:
    """Soft pairwise accuracy of system rankings, from segment scores."""
    return stats.soft_pairwise_accuracy(_one(human).seg, _one(metric).seg, SPA_PERMUTATIONS, SPA_SEED)


# --------------------------------------------------------------------------- the standard columns

@dataclass(frozen=True, slots=True)
class Column:
    """A standard column of meta-eval's per-LP results: the key it is stored under, the registered
    statistic it reports and at which level; ``title``: the report's heading when the report shows it
    without a task preset (None: not shown there); ``printed``: in the text table of ``meta-eval``;
    ``from_system_scores``: computable from system scores alone (``meta-eval`` on system-level-only
    metrics)."""

    key: str
    statistic: str
    level: Level
    title: str | None
    printed: bool = True
    from_system_scores: bool = False


# The one table of the standard columns, in print order: meta-eval, system-level meta-eval and the
# report read their columns from it (registered statistics with per_lp_column follow them).
COLUMNS = (
    Column("sys_pairwise_accuracy", "accuracy", "sys", None, from_system_scores=True),
    Column("sys_spa", "spa", "sys", "SPA"),
    Column("sys_pearson", "pearson", "sys", "pearson", from_system_scores=True),
    Column("sys_kendall", "kendall", "sys", None, printed=False, from_system_scores=True),
    Column("seg_pearson", "pearson", "seg", "pearson"),
    Column("seg_kendall_item", "kendall", "seg", None),
    Column("seg_acc_t", "acc_t", "seg", "acc-t"),
    Column("seg_acc_t_epsilon", "acc_t", "seg", None),
)


__all__ = ["COLUMNS", "LEVELS", "Column", "SPA_PERMUTATIONS", "SPA_SEED", "STATISTICS", "Level", "Scores", "Statistic",
           "TestFunction", "ValueFunction", "get_statistic", "perm_both", "register_statistic",
           "statistic_titles"]
