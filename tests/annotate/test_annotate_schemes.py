"""What each scheme accepts (the server's 422s come from here) and what ``/api/campaign`` tells the page."""

from __future__ import annotations

import pytest

from polyjudge.annotate.schemes import DEFAULT_TASK, SCHEMES, AnnotationError, campaign_view, check_annotation

TGT = "Übersetzung 译文 ‮x"


@pytest.mark.parametrize(("scheme", "body", "field"), [
    ("esa", {"spans": [], "score": 101}, "score"),
    ("esa", {"spans": [], "score": True}, "score"),
    ("esa", {"spans": [], "score": float("nan")}, "score"),
    ("esa", {"spans": [{"start": 0, "end": 2, "severity": "critical"}], "score": 5}, "spans[0].severity"),
    ("esa", {"spans": "0-2", "score": 5}, "spans"),
    ("da", {"score": None}, "score"),
    ("forced-choice", {"choice": "D"}, "choice"),
    ("forced-choice", {"choice": ["A"]}, "choice"),
    ("response-set", {"choices": []}, "choices"),
    ("response-set", {"choices": ["A", "A"]}, "choices"),
    ("response-set", {"choices": ["A", "Z"]}, "choices"),
    ("mqm", {"no_error": "yes"}, "no_error"),
])
def test_what_does_not_fit_names_its_field(scheme, body, field):
    with pytest.raises(AnnotationError, match=rf"'{field.replace('[', '.').replace(']', '.')}'"):
        check_annotation(body, SCHEMES[scheme], DEFAULT_TASK, TGT)


def test_what_fits_is_stored_in_one_shape():
    esa = check_annotation({"spans": [{"start": 12, "end": 14, "severity": "major"}], "score": 33.5, "extra": 1},
                           SCHEMES["esa"], None, TGT)
    assert esa == {"spans": [{"start": 12, "end": 14, "category": "", "severity": "major"}], "no_error": False,
                   "score": 33.5, "choice": None, "choices": None}
    assert TGT[12:14] == "译文"  # code points, as a page's Array.from(tgt) counts them
    rs = check_annotation({"choices": ["C", "A"]}, SCHEMES["response-set"], DEFAULT_TASK, TGT)
    assert rs["choices"] == ["A", "C"]  # in the task's order
    assert check_annotation({"choice": "B"}, SCHEMES["forced-choice"], DEFAULT_TASK, TGT)["choice"] == "B"


def test_the_campaign_view_of_each_scheme():
    mqm = campaign_view(SCHEMES["mqm"], None)
    assert mqm["severities"] == ["minor", "major", "critical"] and mqm["score"] is None and mqm["options"] == []
    assert campaign_view(SCHEMES["esa"], None)["score"] == {"min": 0, "max": 100}
    fc = campaign_view(SCHEMES["forced-choice"], DEFAULT_TASK)
    assert [o["key"] for o in fc["options"]] == ["A", "B", "C"] and fc["question"] and fc["categories"] == []
    assert fc["options"][0]["label"] == "Acceptable" and fc["options"][0]["description"]
