"""Bins that put continuous judge scores into human classes, and how judged
items are matched to the ratings file."""

from __future__ import annotations

import pytest

from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from polyjudge.metaeval.ratings.calibration import Bins, RatingRow, item_key, judge_ratings


def test_bin_edges_are_left_closed():
    b = Bins((33.3, 66.7))
    assert [b.label(x) for x in (0, 33.2, 33.3, 66.6, 66.7, 100)] == [0, 0, 1, 1, 2, 2]
    assert Bins((3.0,), (0.0, 1.0)).label(2.5) == 0.0 and Bins((3.0,), (0.0, 1.0)).label(3) == 1.0
    assert Bins((2.5, 3.5, 4.5), (1.0, 2.0, 3.0, 4.0)).classes == (1.0, 2.0, 3.0, 4.0)
    with pytest.raises(InputError, match="increase"):
        Bins((5.0, 5.0))
    with pytest.raises(InputError, match="need 2 labels"):
        Bins((5.0,), (1.0, 2.0, 3.0))
    with pytest.raises(InputError):
        Bins(())


def test_item_keys():
    assert item_key(Item("s", "t", seg_id="7", extra={"item_id": "q1"}), 0) == "q1"
    assert item_key(Item("s", "t", seg_id="7"), 0) == "7"
    assert item_key(Item("s", "t"), 3) == "3"


def human(item, v, rater="h1", metric="LA"):
    return RatingRow(item, "de", "qa", metric, rater, "human", float(v))


def test_judge_ratings_by_hand():
    humans = [human("a", 2), human("b", 0), human("c", 1)]
    rows, src = judge_ratings(["a", "b", "x", "c"], [2.0, None, 1.0, 1.0], rater="J", source="run", judge="J",
                              humans=humans)
    assert [(r.item_id, r.rating, r.language, r.metric, r.kind) for r in rows] == \
        [("a", 2.0, "de", "LA", "judge"), ("c", 1.0, "de", "LA", "judge")]
    assert (src.n_items, src.matched, src.unscored, src.bucketed) == (4, 3, 1, False)
    with pytest.raises(InputError, match="key 'a'"):
        judge_ratings(["a", "a"], [1.0, 1.0], rater="J", source="run", judge="J", humans=humans)
    with pytest.raises(InputError, match="not on the human scale"):
        judge_ratings(["a"], [1.5], rater="J", source="run", judge="J", humans=humans)
    rows, _ = judge_ratings(["a"], [1.5], rater="J", source="run", judge="J", humans=humans, bins=Bins((1.0, 2.0)))
    assert rows[0].rating == 1.0
