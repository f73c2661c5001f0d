"""Rating tasks and the letter -> response-set mapping, built from the definition."""

from __future__ import annotations

import json

import pytest

from polyjudge.data.errors import InputError
from polyjudge.validation.task import RatingTask, all_subsets, load_task

TOX = ["Very toxic", "Toxic", "Not toxic"]
# the paper's Table 2 column order: VT, T, N/U, {VT,T}, {T,N/U}, {VT,N/U}, {VT,T,N/U}
TABLE2_SETS = [["Very toxic"], ["Toxic"], ["Not toxic"], ["Very toxic", "Toxic"],
               ["Toxic", "Not toxic"], ["Very toxic", "Not toxic"], TOX]


def test_all_subsets_order():
    assert all_subsets(3) == [frozenset(s) for s in
                              [{0}, {1}, {2}, {0, 1}, {0, 2}, {1, 2}, {0, 1, 2}]]
    assert len(all_subsets(4)) == 15


def test_letters_map_to_the_set_with_exactly_those_options():
    t = RatingTask.build(TOX, TABLE2_SETS)
    expected = {"A": 0, "B": 1, "C": 2, "AB": 3, "BC": 4, "AC": 5, "ABC": 6}
    for letters, v in expected.items():
        assert t.set_of_letters(letters) == v
        assert {TOX[k] for k in t.response_sets[v]} == {TOX["ABC".index(c)] for c in letters}
    # order and case do not matter
    assert t.set_of_letters("CA") == 5 and t.set_of_letters("cba") == 6
    # explicit guard against the off-by-one: 'AB' is not the set at position 2 or 4
    assert t.set_of_letters("AB") not in (2, 4)


def test_round_trip_every_set_for_several_shapes():
    for q in (2, 3, 4, 5):
        t = RatingTask.build([f"o{k}" for k in range(q)])
        for v in range(t.n_sets):
            assert t.set_of_letters(t.set_letters(v)) == v
            assert t.set_of_letters(t.set_letters(v)[::-1]) == v


def test_membership_matrix():
    t = RatingTask.build(TOX, TABLE2_SETS)
    lam = t.membership
    assert lam.shape == (3, 7)
    assert lam[:, 4].tolist() == [0, 1, 1]  # {Toxic, Not toxic}
    assert lam.sum(0).tolist() == [1, 1, 1, 2, 2, 2, 3]


@pytest.mark.parametrize("bad", ["", "AA", "D", "A B", "ABD"])
def test_bad_answers_raise(bad):
    t = RatingTask.build(TOX, TABLE2_SETS)
    with pytest.raises(InputError):
        t.set_of_letters(bad)


def test_inadmissible_set_raises():
    t = RatingTask.build(["Yes", "No", "Maybe"], "singletons")
    assert t.fully_specified
    with pytest.raises(InputError):
        t.set_of_letters("AB")
    u = RatingTask.build(["Yes", "No"], [["Yes"], ["No"], ["Yes", "No"]])
    assert not u.fully_specified and u.set_of_letters("BA") == 2


def test_custom_letters_and_validation():
    t = RatingTask.build(["good", "bad"], "all", letters=("G", "B"))
    assert t.set_of_letters("BG") == 2 and t.option_of_letter("g") == 0
    with pytest.raises(InputError):
        RatingTask.build(["x"], "all")
    with pytest.raises(InputError):
        RatingTask.build(["x", "y"], [["x"], ["x"]])
    with pytest.raises(InputError):
        RatingTask.build(["x", "y"], [["z"]])


def test_load_json_and_toml(tmp_path):
    j = tmp_path / "t.json"
    j.write_text(json.dumps({"name": "tox", "options": [{"label": "Very toxic", "description": "v"},
                                                        "Toxic", "Not toxic"],
                             "response_sets": TABLE2_SETS}))
    t = load_task(j)
    assert t.name == "tox" and t.descriptions[0] == "v" and t.set_of_letters("AC") == 5
    toml = tmp_path / "t.toml"
    toml.write_text('name = "yn"\noptions = ["Yes", "No"]\nresponse_sets = "all"\n')
    assert load_task(toml).n_sets == 3
    bad = tmp_path / "bad.json"
    bad.write_text('{"options": ["a", "b"], "response_sets": [["c"]]}')
    with pytest.raises(InputError) as exc:
        load_task(bad)
    assert exc.value.path == str(bad) and exc.value.field == "response_sets"
    with pytest.raises(InputError):
        load_task(tmp_path / "missing.json")


def test_validation_uses_the_data_layer_task():
    from polyjudge.data import rating_task

    assert RatingTask is rating_task.RatingTask and load_task is rating_task.load_task
    assert all_subsets is rating_task.all_subsets
