"""Turning annotations into scores: run aggregators, MQM weighting, panels."""

from polyjudge.aggregate.runs import available_aggregators, get_aggregator, register_aggregator

__all__ = ["available_aggregators", "get_aggregator", "register_aggregator"]
