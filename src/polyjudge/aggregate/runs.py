"""Merging the scores of several runs of one judge on one item.

Each aggregator takes the scores of the *successful* runs (failed runs are
left out before this point, and counted) and returns one score. Aggregators
are looked up by name in :data:`AGGREGATORS`; the built-ins live here and in
:mod:`polyjudge.aggregate.rrwa`, which is imported on the first lookup.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from polyjudge.registry import Builtin, Registry

Aggregator = Callable[[Sequence[float]], float]

# The built-ins as ``--help`` lists them (name, function, summary), so listing them imports no module
# of the package; tests/architecture/test_startup.py fails when an entry differs from what its module
# registers.
BUILTIN_AGGREGATORS: dict[str, Builtin] = {
    "rrwa": Builtin("polyjudge.aggregate.rrwa:rrwa",
        "Reciprocal-rank weighted average after 2σ outlier removal (GEMBA-MQM V2)."),
    "mean-2s": Builtin("polyjudge.aggregate.rrwa:mean_without_outliers",
        'Mean after 2σ outlier removal (GEMBA-MQM V2\'s "mean"; mean = mean-2s).'),
    "mean": Builtin("polyjudge.aggregate.rrwa:mean_without_outliers",
        'Mean after 2σ outlier removal (GEMBA-MQM V2\'s "mean"; mean = mean-2s).'),
    "mean-all": Builtin("polyjudge.aggregate.rrwa:mean_all",
        "Plain mean of every successful run (no outlier removal)."),
    "max": Builtin("polyjudge.aggregate.rrwa:maximum",
        "Highest run: the most lenient (fewest error points for MQM)."),
    "min": Builtin("polyjudge.aggregate.rrwa:minimum",
        "Lowest run: the harshest."),
    "geo": Builtin("polyjudge.aggregate.rrwa:geometric",
        "Geometric mean of magnitudes after 2σ removal; 0 if any kept run is 0 (paper's geo)."),
    "geo+1": Builtin("polyjudge.aggregate.rrwa:geometric_shifted",
        "Geometric mean shifted by +1 after 2σ removal: an error-free run does not make it 0."),
    "trimmed-mean": Builtin("polyjudge.aggregate.rrwa:trimmed_mean",
        "Mean after dropping the single highest and lowest run."),
    "majority": Builtin("polyjudge.aggregate.rrwa:majority",
        "Most frequent value, for categorical answers (labels, choices, 1-5 ratings)."),
    "median": Builtin("polyjudge.aggregate.runs:median",
        "Median of the runs (no outlier removal)."),
    "first": Builtin("polyjudge.aggregate.runs:first",
        "The first successful run only: what a single-run judge would have said."),
}

# Every module of polyjudge.aggregate is imported by the registry on first use, never
# from here (rrwa imports this module for the decorator), so none is half-loaded.
AGGREGATORS: Registry[Aggregator] = Registry(
    "aggregator", package="polyjudge.aggregate",
    entry_point_group="polyjudge.aggregators", builtins=BUILTIN_AGGREGATORS)


def register_aggregator(name: str) -> Callable[[Aggregator], Aggregator]:
    """Decorator: register a run aggregator; its docstring's first line is its ``--help`` summary."""
    return AGGREGATORS.register(name)


def get_aggregator(name: str) -> Aggregator:
    """The aggregator called ``name``; an unknown name raises ``UnknownNameError`` (a ``KeyError``)."""
    return AGGREGATORS.get(name)


def available_aggregators() -> list[str]:
    """Every registered aggregator name, sorted."""
    return sorted(AGGREGATORS.names())


@register_aggregator("median")
def median(scores: Sequence[float]) -> float:
    """Median of the runs (no outlier removal)."""
    import numpy as np  # here, not at the top: the registry is read by --help, which needs no numpy

    return float(np.median(np.asarray(scores, dtype=float)))


@register_aggregator("first")
def first(scores: Sequence[float]) -> float:
    """The first successful run only: what a single-run judge would have said."""
    return float(scores[0])


__all__ = ["AGGREGATORS", "BUILTIN_AGGREGATORS", "Aggregator", "available_aggregators", "first", "get_aggregator",
           "median", "register_aggregator"]
