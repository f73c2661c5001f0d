"""A statistic registered with register_statistic is a column of the per-LP table, at each of its levels."""

from __future__ import annotations

import numpy as np
import pytest

from polyjudge.metaeval import statistics, tasks
from polyjudge.metaeval.matrices import ScoreMatrix
from polyjudge.metaeval.system_level import SystemScores, format_system_level, system_level_stats


@pytest.fixture
def scratch_statistics(monkeypatch):
    """Statistics registered inside a test disappear after it."""
    statistics.STATISTICS.names()
    monkeypatch.setattr(statistics.STATISTICS, "_entries", dict(statistics.STATISTICS._entries))


def _pair(seed: int = 3) -> tasks.LanguagePair:
    rng = np.random.default_rng(seed)
    human = rng.normal(size=(4, 10))
    metric = human + rng.normal(size=human.shape)
    systems, items = tuple(f"s{i}" for i in range(4)), tuple(str(i) for i in range(10))
    return tasks.LanguagePair("en-de", ScoreMatrix(systems, items, human), {"M": ScoreMatrix(systems, items, metric)})


def test_registered_statistic_is_a_per_lp_column_with_its_value(scratch_statistics):
    pair = _pair()
    before = tasks.format_result(tasks.evaluate([pair], "wmt24", k=0))

    @statistics.register_statistic("max_gap", levels=("seg", "sys"), range=(0.0, 10.0))
    def max_gap(level, human, metric):
        """Largest absolute difference between the two sides."""
        side = "seg" if level == "seg" else "sys"
        return float(np.nanmax(np.abs(getattr(human[0], side) - getattr(metric[0], side))))

    res = tasks.evaluate([pair], "wmt24", k=0)
    row = res.per_lp["en-de"]["M"]
    h, m = pair.human.values, pair.metrics["M"].values
    assert row["seg_max_gap"] == pytest.approx(np.abs(h - m).max())
    assert row["sys_max_gap"] == pytest.approx(np.abs(h.mean(axis=1) - m.mean(axis=1)).max())
    text = tasks.format_result(res)
    head = next(line for line in text.splitlines() if "seg_max_gap" in line)
    assert head.split()[-2:] == ["seg_max_gap", "sys_max_gap"]
    assert text.startswith(before.split("en-de:")[0])  # the ranking table is untouched

    sys_only = system_level_stats({"a": 1.0, "b": 2.0, "c": 3.0}, SystemScores("X", {"a": 1, "b": 3, "c": 2}, "x"))
    assert sys_only["seg_max_gap"] is None and "seg_max_gap" in format_system_level({"lp": {"X": sys_only}})


def test_builtins_are_not_repeated_as_columns():
    assert tasks.registered_columns() == [] or all(
        stat.per_lp_column for _, stat, _ in tasks.registered_columns())
    assert not any(s.per_lp_column for n, s in statistics.STATISTICS.items()
                   if s.value.__module__ == "polyjudge.metaeval.statistics")
