"""Turning annotations into scores: run aggregators, MQM weighting, panels."""

from polyjudge.aggregate.runs import (
    AGGREGATORS,
    Aggregator,
    available_aggregators,
    get_aggregator,
    register_aggregator,
)

__all__ = ["AGGREGATORS", "Aggregator", "available_aggregators", "get_aggregator", "register_aggregator"]
