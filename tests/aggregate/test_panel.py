"""Panel aggregation: majority with stated tie rules, mean/median, agreement, Ens - Min."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polyjudge.aggregate.panel import aggregate_panel, ens_minus_min
from polyjudge.data.errors import InputError

NAN = float("nan")
VOTES = [
    [1, 1, 0],      # clear majority 1
    [1, 0, NAN],    # tie between 0 and 1 (one judge failed)
    [NAN, NAN, NAN],  # nobody answered
    [3, 5, 4],      # three-way tie on grades
    [2, 2, 2],      # unanimous
]


def test_majority_and_tie_rules():
    low = aggregate_panel(VOTES, "majority", tie="low")
    np.testing.assert_array_equal(low.value, [1, 0, NAN, 3, 2])
    np.testing.assert_array_equal(aggregate_panel(VOTES, tie="high").value, [1, 1, NAN, 5, 2])
    np.testing.assert_array_equal(aggregate_panel(VOTES, tie="none").value, [1, NAN, NAN, NAN, 2])
    np.testing.assert_array_equal(aggregate_panel(VOTES, tie="first").value, [1, 1, NAN, 3, 2])
    np.testing.assert_array_equal(low.tie, [False, True, False, True, False])
    np.testing.assert_array_equal(low.n_votes, [3, 2, 0, 3, 3])
    np.testing.assert_allclose(low.agreement, [2 / 3, 0.5, NAN, 1 / 3, 1.0])
    np.testing.assert_array_equal(low.unanimous, [False, False, False, False, True])
    np.testing.assert_allclose(low.spread, [1, 1, NAN, 2, 0])
    assert low.mean_agreement() == pytest.approx((2 / 3 + 0.5 + 1 / 3 + 1) / 4)


def test_mean_and_median():
    np.testing.assert_allclose(aggregate_panel(VOTES, "mean").value, [2 / 3, 0.5, NAN, 4, 2])
    np.testing.assert_allclose(aggregate_panel(VOTES, "median").value, [1, 0.5, NAN, 4, 2])


def test_bad_input():
    with pytest.raises(InputError):
        aggregate_panel([1, 2, 3])
    with pytest.raises(InputError):
        aggregate_panel(VOTES, "vote")
    with pytest.raises(InputError):
        aggregate_panel(VOTES, tie="random")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from([0.0, 1.0, 2.0, NAN]), min_size=3, max_size=3),
                min_size=1, max_size=8))
def test_majority_matches_a_plain_python_count(rows):
    res = aggregate_panel(rows, "majority", tie="low")
    for r, val in zip(rows, res.value):
        valid = [x for x in r if not np.isnan(x)]
        if not valid:
            assert np.isnan(val)
            continue
        counts = {x: valid.count(x) for x in valid}
        best = max(counts.values())
        assert val == min(x for x, c in counts.items() if c == best)


def test_ens_minus_min_paper_numbers():
    # Fu & Liu, Table 5, XQuAD yes/no: Aya 0.2999, Llama 0.0748, Qwen 0.3620; Ens 0.3227
    rep = ens_minus_min({"aya": 0.2999, "llama": 0.0748, "qwen": 0.3620}, 0.3227)
    assert rep.min_judge == "llama" and rep.min_value == 0.0748
    assert rep.delta == pytest.approx(0.2479)
    # MGSM grade: Min 0.0654 (Qwen), Ens 0.0512 -> negative gain -0.0142
    rep = ens_minus_min({"aya": 0.0260 + 1, "llama": 0.1084, "qwen": 0.0654}, 0.0512, "fk_grade")
    assert rep.delta == pytest.approx(-0.0142) and rep.to_dict()["statistic"] == "fk_grade"
    assert np.isnan(ens_minus_min({"a": NAN}, 0.3).delta)
    assert ens_minus_min({"a": NAN, "b": 0.1}, 0.3).min_judge == "b"
