"""Merging the scores of several runs of one judge on one item.

Each aggregator takes the scores of the *successful* runs (failed runs are
left out before this point, and counted) and returns one score.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence

import numpy as np

Aggregator = Callable[[Sequence[float]], float]

_REGISTRY: dict[str, Aggregator] = {}
# Aggregators implemented in other modules, imported on first use.
# "mean" is the mean after 2-sigma outlier removal (GEMBA-MQM V2); "mean-all" keeps every run.
_LAZY = {name: "polyjudge.aggregate.rrwa"
         for name in ("rrwa", "mean", "mean-2s", "mean-all", "max", "min", "geo", "trimmed-mean", "majority")}


def register_aggregator(name: str) -> Callable[[Aggregator], Aggregator]:
    def deco(fn: Aggregator) -> Aggregator:
        _REGISTRY[name] = fn
        return fn
    return deco


def get_aggregator(name: str) -> Aggregator:
    if name not in _REGISTRY and name in _LAZY:
        importlib.import_module(_LAZY[name])
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown aggregator '{name}'; known: {', '.join(available_aggregators())}") from None


def available_aggregators() -> list[str]:
    return sorted(set(_REGISTRY) | set(_LAZY))


@register_aggregator("median")
def median(scores: Sequence[float]) -> float:
    return float(np.median(np.asarray(scores, dtype=float)))


@register_aggregator("first")
def first(scores: Sequence[float]) -> float:
    """The first successful run only: what a single-run judge would have said."""
    return float(scores[0])
