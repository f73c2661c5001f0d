"""The fast paths that summarise a million MQM answers (issue 35, item 4) give what the full
functions give, for well-formed and malformed answers alike: the same annotation, the same
score to the last bit, and the same parse failure (a failure never becomes a score).

Each property compares a fast path with the general code it shortcuts, run on the same input.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polyjudge.aggregate import mqm as agg
from polyjudge.data.records import Item
from polyjudge.engine.result import judgment_of
from polyjudge.engine.store import StoredResponse
from polyjudge.protocols import mqm
from polyjudge.protocols.base import ParseFailure
from polyjudge.rundir import OK, PARSE_FAILED

# Error types as judges write them and as they should not: case, whitespace of every kind around
# and inside, slashes, non-ASCII letters and spaces.
type_text = st.one_of(
    st.sampled_from(["accuracy/mistranslation", "Fluency / Punctuation", "fluency/punctuation", " non-translation",
                     "Non-Translation!", "style/awkward", "terminology", "", "other", "accuracy /\tomission",
                     "fluency/\u00a0grammar", "İ/x", "a//b", "/", "\x1cfluency/punctuation\x1f"]),
    st.text(alphabet=st.sampled_from(list("aAbz/ -\t\n\x0b\x0c\r\x1c\x1f\u00a0\u2003İßé!")), max_size=24))
json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False), type_text)
error_value = st.one_of(
    type_text, json_scalar,
    st.dictionaries(st.sampled_from(["type", "category", "desc", "description", "span", "severity"]),
                    st.one_of(type_text, json_scalar, st.lists(json_scalar, max_size=2)), max_size=4),
    st.lists(json_scalar, max_size=2))
severity_key = st.sampled_from(["critical", "major", "minor", "Major", " minor ", "neutral", "no-error", "severe"])
errors_object = st.dictionaries(severity_key, st.one_of(st.none(), st.lists(error_value, max_size=4), json_scalar),
                                max_size=4)
answer_object = st.one_of(st.builds(lambda e: {"errors": e}, errors_object), errors_object,
                          st.builds(lambda e: {"errors": e}, st.lists(error_value, max_size=3)))


def full_path(monkeypatch: pytest.MonkeyPatch, text: str) -> tuple[str, Any]:
    """What parse_mqm_answer gives with its fast path switched off: every error through _error_from_value."""
    with monkeypatch.context() as m:
        m.setattr(mqm, "_plain_error", lambda value: None)
        return outcome(text)


def outcome(text: str) -> tuple[str, Any]:
    try:
        return "ok", mqm.parse_mqm_answer(text)
    except ParseFailure as exc:
        return "failed", exc.reason


def mangled(text: str, cut: int, junk: str) -> str:
    """An answer broken the ways answers break: cut short, wrapped in prose, or with junk inside."""
    return [text, text[:cut], f"Here it is: {text} hope this helps", text[:cut] + junk + text[cut:]][cut % 4]


@settings(max_examples=400, deadline=None)
@given(error_value)
def test_plain_error_is_the_full_reading_whenever_it_answers(value):
    fast = mqm._plain_error(value)
    if fast is not None:
        assert fast == mqm._error_from_value(value, "w")


@settings(max_examples=400, deadline=None)
@given(answer_object, st.integers(0, 400), st.sampled_from(["", "}", "{", "\"", ",", "]", "x", "\\"]))
def test_parse_with_fast_path_equals_full_path_on_good_and_broken_answers(answer, cut, junk):
    text = mangled(json.dumps(answer, ensure_ascii=bool(cut % 2)), cut, junk)
    # (pytest's monkeypatch is function-scoped, so each example gets its own undo list)
    mp = pytest.MonkeyPatch()
    try:
        assert outcome(text) == full_path(mp, text)
    finally:
        mp.undo()


def reference_norm_type(error_type: str) -> str:
    return "/".join(p.strip() for p in error_type.strip().lower().split("/"))


@settings(max_examples=500, deadline=None)
@given(type_text)
def test_norm_type_shortcut_equals_per_part_strip(error_type):
    assert agg._norm_type(error_type) == reference_norm_type(error_type)


weight = st.one_of(st.floats(min_value=-100, max_value=100, allow_nan=False), st.integers(-30, 30))
weights = st.builds(agg.MQMWeights, critical=weight, major=weight, minor=weight, minor_punctuation=weight,
                    neutral=weight, non_translation=weight)
parsed_error = st.one_of(st.fixed_dictionaries({"type": type_text, "desc": st.text(max_size=3)}),
                         st.dictionaries(st.sampled_from(["type", "desc"]), json_scalar, max_size=2),
                         type_text, json_scalar)
annotation = st.builds(lambda e: {"errors": e},
                       st.dictionaries(st.sampled_from(["critical", "major", "minor", "neutral"]),
                                       st.one_of(st.none(), st.lists(parsed_error, max_size=6)), max_size=4))


@settings(max_examples=500, deadline=None)
@given(annotation, st.one_of(st.just(agg.DEFAULT_WEIGHTS), weights))
def test_one_loop_score_is_bit_for_bit_the_sum_of_error_points(ann, w):
    fast = agg.llm_mqm_score(ann, w)
    reference = -agg.mqm_points(agg.annotation_errors(ann), w)
    assert repr(fast) == repr(reference)  # same float, sign of zero and NaN included


def test_score_of_parsed_answers_matches_on_real_weightings():
    text = json.dumps({"errors": {"critical": [{"type": "Non-translation", "desc": "x"}],
                                  "major": [{"type": "accuracy / mistranslation", "desc": "y"}],
                                  "minor": [{"type": "Fluency/ Punctuation", "desc": "z"}, "style: awkward"]}})
    ann = mqm.parse_mqm_answer(text)
    for w in (agg.DEFAULT_WEIGHTS, agg.MQMWeights(minor_punctuation=1.0), agg.MQMWeights(classic=True)):
        assert agg.llm_mqm_score(ann, w) == -agg.mqm_points(agg.annotation_errors(ann), w)
    assert agg.llm_mqm_score(ann) == -(25 + 5 + 0.1 + 1)


def stored(text: str) -> StoredResponse:
    return StoredResponse("k", "done", text, "stop", 11, 7, 0.25, None, 1, judge="j")


@pytest.mark.parametrize("text, reason", [
    ('{"errors": {"major": [{"type": "accuracy", "desc": "a"}], "minor": [', "no complete JSON object"),
    ('{"errors": {"major": [{"type": 3, "desc": "a"}]}}', "error type must be a string"),
    ('{"errors": {"serious": [{"type": "accuracy", "desc": "a"}]}}', "unknown severity"),
    ('{"errors": {"major": "accuracy"}}', "must be a list"),
    ('{"errors": {"major": [7]}}', "an error must be an object or a string"),
])
def test_malformed_answer_stays_a_recorded_failure_never_a_score(text, reason):
    item = Item(src="a b", tgt="c d", src_lang="en", tgt_lang="de", system="s", seg_id="1")
    jd = judgment_of(0, 0, "j", stored(text), mqm.GembaMQM(), item)
    assert jd.status == PARSE_FAILED and jd.score is None and reason in (jd.error or "")
    assert (jd.prompt_tokens, jd.completion_tokens, jd.raw_text) == (11, 7, text)


def test_well_formed_answer_is_scored_with_the_stored_token_counts():
    text = json.dumps({"errors": {"critical": [], "major": [{"type": "accuracy/mistranslation", "desc": "w"}],
                                  "minor": []}})
    item = Item(src="a b", tgt="c d", src_lang="en", tgt_lang="de", system="s", seg_id="1")
    jd = judgment_of(0, 3, "j", stored(text), mqm.GembaMQM(), item)
    assert (jd.status, jd.score, jd.run_index) == (OK, -5.0, 3)
    assert (jd.prompt_tokens, jd.completion_tokens, jd.latency_s, jd.finish_reason) == (11, 7, 0.25, "stop")
    assert not math.isnan(jd.score)
