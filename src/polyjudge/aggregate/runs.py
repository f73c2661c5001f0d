"""Merging the scores of several runs of one judge on one item.

Each aggregator takes the scores of the *successful* runs (failed runs are
left out before this point, and counted) and returns one score. Aggregators
are looked up by name in :data:`AGGREGATORS`; the built-ins live here and in
:mod:`polyjudge.aggregate.rrwa`, which is imported on the first lookup.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from polyjudge.registry import Registry

Aggregator = Callable[[Sequence[float]], float]

# Every module of polyjudge.aggregate is imported by the registry on first use, never
# from here (rrwa imports this module for the decorator), so none is half-loaded.
AGGREGATORS: Registry[Aggregator] = Registry(
    "aggregator", package="polyjudge.aggregate",
    entry_point_group="polyjudge.aggregators")


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


__all__ = ["AGGREGATORS", "Aggregator", "available_aggregators", "first", "get_aggregator", "median",
           "register_aggregator"]
