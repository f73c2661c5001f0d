"""The one runs-matrix aggregation: bit-identical to calling each aggregator row by row.

The reference is the definition itself: the registered aggregator called on
each row's non-NaN scores in run order (what the engine wrote before the
aggregation was vectorised), with NaN where it raises ``ValueError`` or the row
has fewer than ``min_runs`` scores.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest
from scipy import stats as sps

from polyjudge.aggregate.rrwa import COMPARISON
from polyjudge.aggregate.runs import get_aggregator
from polyjudge.analysis import (
    aggregate_rows,
    aggregate_table,
    available_run_aggregators,
    compare_aggregators,
    distinct_counts,
    scores_by_system,
    segment_deltas,
    system_means,
)


def _reference(m: np.ndarray, name: str, min_runs: int = 1) -> np.ndarray:
    fn = get_aggregator(name)
    out = []
    for row in m:
        ok = row[~np.isnan(row)]
        if ok.size < max(1, min_runs):
            out.append(math.nan)
            continue
        try:
            out.append(float(fn(ok)))
        except ValueError:
            out.append(math.nan)
    return np.array(out, dtype=float)


def _matrices():
    rng = np.random.default_rng(11)
    yield "mqm", -rng.choice([0.0, 0.1, 1.0, 5.0, 10.0, 25.0], size=(300, 10))  # -0.0 included
    yield "da", rng.integers(0, 101, size=(200, 3)).astype(float)
    yield "real", rng.normal(size=(150, 12)) * 37.3  # > 8 runs: numpy's pairwise summation
    odd = rng.normal(size=(100, 5))
    odd[rng.random(odd.shape) < 0.1] = -0.0
    odd[rng.random(odd.shape) < 0.1] = 0.0
    odd[rng.random(odd.shape) < 0.03] = np.inf
    yield "odd", odd
    yield "one-run", rng.integers(-5, 5, size=(40, 1)).astype(float)


@pytest.mark.parametrize("kind,m", list(_matrices()), ids=lambda x: x if isinstance(x, str) else "")
@pytest.mark.parametrize("min_runs", [1, 2, 4])
def test_aggregate_rows_is_bit_identical_to_the_definition(kind, m, min_runs):
    rng = np.random.default_rng(len(kind) + min_runs)
    m = m.copy()
    m[rng.random(m.shape) < 0.25] = np.nan
    m[0] = np.nan
    for name in available_run_aggregators():
        got = aggregate_rows(m, name, min_runs)
        want = _reference(m, name, min_runs)
        assert got.tobytes() == want.tobytes(), name  # same bits: signs of zero, last digits, NaN


def test_aggregate_table_is_aggregate_rows_per_name():
    m = -np.random.default_rng(2).choice([0.0, 1.0, 5.0], size=(50, 4))
    m[3, 1:] = np.nan
    table = aggregate_table(m, COMPARISON, min_runs=2)
    assert list(table) == list(COMPARISON)
    for name, v in table.items():
        assert v.tobytes() == aggregate_rows(m, name, min_runs=2).tobytes()
    assert np.isnan(table["rrwa"][3])


def test_aggregate_rows_edge_shapes():
    assert aggregate_rows(np.empty((0, 3)), "mean").shape == (0,)
    assert np.isnan(aggregate_rows(np.full((2, 3), np.nan), "rrwa")).all()
    with pytest.raises(KeyError):
        aggregate_rows(np.ones((2, 2)), "no-such-aggregator")


def test_deltas_and_distinct_against_python():
    rng = np.random.default_rng(4)
    m = rng.integers(-6, 0, size=(80, 6)).astype(float)
    m[rng.random(m.shape) < 0.4] = np.nan
    m[5] = [0.0, -0.0, np.nan, 0.0, np.nan, np.nan]
    for min_runs in (1, 2, 3):
        d = segment_deltas(m, min_runs)
        for i, row in enumerate(m):
            ok = [x for x in row.tolist() if not math.isnan(x)]
            if len(ok) < min_runs or not ok:
                assert math.isnan(d[i])
            else:
                assert d[i] == max(ok) - min(ok)
    k = distinct_counts(m)
    assert k.tolist() == [len({x for x in row.tolist() if not math.isnan(x)}) for row in m]
    assert k[5] == 1  # -0.0 == 0.0


def test_system_means_hand_computed():
    systems = ["b", "a", "b", "c", "a", "b"]
    v = np.array([1.0, 2.0, 4.0, np.nan, 5.0, np.nan])
    assert system_means(v, systems) == {"b": 2.5, "a": 3.5, "c": pytest.approx(math.nan, nan_ok=True)}
    assert list(system_means(v, systems)) == ["b", "a", "c"]  # first-seen order
    groups = scores_by_system(v, systems)
    assert groups["b"].tolist() == [1.0, 4.0] and groups["c"].size == 0


def test_compare_aggregators_against_scipy():
    rng = np.random.default_rng(8)
    m = -rng.choice([0.0, 1.0, 5.0, 25.0], size=(60, 5))
    m[rng.random(m.shape) < 0.2] = np.nan
    systems = [f"s{i % 4}" for i in range(60)]
    rows = {r.aggregator: r for r in compare_aggregators(m, systems, ["rrwa", "max"])}
    base = _reference(m, "mean-all")
    for name, r in rows.items():
        v = _reference(m, name)
        ok = ~np.isnan(v) & ~np.isnan(base)
        assert r.pearson_vs_mean == pytest.approx(sps.pearsonr(v[ok], base[ok]).statistic)
        by = defaultdict(list)
        by_base = defaultdict(list)
        for s, x, y in zip(systems, v, base):
            if not math.isnan(x):
                by[s].append(x)
            if not math.isnan(y):
                by_base[s].append(y)
        names = sorted(by)
        tau = sps.kendalltau([np.mean(by[s]) for s in names], [np.mean(by_base[s]) for s in names]).statistic
        assert r.kendall_sys_vs_mean == pytest.approx(tau)
        assert r.n == int((~np.isnan(v)).sum()) and r.distinct == len(set(v[~np.isnan(v)].tolist()))
