"""The run-aggregator registry: every aggregator once, a summary each, clear errors."""

from __future__ import annotations

import pytest

from polyjudge.aggregate import AGGREGATORS, available_aggregators, get_aggregator, register_aggregator
from polyjudge.registry import UnknownNameError

BUILTIN = {"first", "geo", "geo+1", "majority", "max", "mean", "mean-2s", "mean-all", "median", "min", "rrwa",
           "trimmed-mean"}


def test_every_aggregator_is_listed_once():
    names = AGGREGATORS.names()
    assert len(names) == len(set(names))
    assert set(names) == BUILTIN
    assert available_aggregators() == sorted(BUILTIN)
    assert get_aggregator("mean") is get_aggregator("mean-2s")  # one aggregator, two names


def test_every_aggregator_has_a_help_summary():
    summaries = AGGREGATORS.describe()
    assert all(summaries[name] for name in BUILTIN), summaries
    assert summaries["rrwa"].startswith("Reciprocal-rank weighted average after 2σ outlier removal")
    assert "rrwa" in AGGREGATORS.help_text()


def test_unknown_aggregator_lists_the_valid_names():
    with pytest.raises(KeyError) as exc:
        get_aggregator("mode")
    assert isinstance(exc.value, UnknownNameError)
    assert str(exc.value).startswith("unknown aggregator 'mode'; available: ")
    assert all(name in str(exc.value) for name in BUILTIN)


def test_registered_aggregator_is_found(monkeypatch):
    AGGREGATORS.names()
    monkeypatch.setattr(AGGREGATORS, "_entries", dict(AGGREGATORS._entries))

    @register_aggregator("last")
    def last(scores):
        """The last successful run."""
        return float(scores[-1])

    assert get_aggregator("last")([1.0, 2.0, 5.0]) == 5.0
    assert "last" in available_aggregators()
    assert AGGREGATORS.describe()["last"] == "The last successful run."
