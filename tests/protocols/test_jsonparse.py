"""json_object_in (issue 46: an answer that is one JSON object is read without a scan for its brackets)
gives what the long way gives: the object parse_json_object reads when find_json_object finds one, the
same ParseFailure, else None, whatever the text."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from polyjudge.protocols.answers import MAX_ANSWER_CHARS, MAX_NESTING, ParseFailure
from polyjudge.protocols.jsonparse import find_json_object, json_object_in, parse_json_object

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                           max_size=3), max_leaves=8)
blanks = st.sampled_from(["", " ", "\n", "\t \n", "\u00a0", "\u2003"])
pieces = st.sampled_from(["{", "}", "[", "]", '"', "\\", "```json\n", "\n```", "Score: ", "NaN", "50", ",", ":"])
answers = st.one_of(
    st.tuples(blanks, values.map(lambda v: json.dumps(v, ensure_ascii=False)), blanks).map("".join),
    st.tuples(st.text(max_size=6), values.map(json.dumps), st.text(max_size=6)).map("".join),
    st.lists(pieces | st.text(max_size=3), max_size=12).map("".join),
)


def _long_way(text):
    try:
        return ("value", parse_json_object(text) if find_json_object(text) is not None else None)
    except ParseFailure as exc:
        return ("failure", exc.reason)


def _short_way(text):
    try:
        return ("value", json_object_in(text))
    except ParseFailure as exc:
        return ("failure", exc.reason)


@settings(max_examples=600, deadline=None)
@given(answers)
def test_json_object_in_reads_what_the_long_way_reads(text):
    assert repr(_short_way(text)) == repr(_long_way(text))


def test_answers_over_the_limits_fail_as_before():
    deep = "{" * (MAX_NESTING + 1) + "}" * (MAX_NESTING + 1)
    long = json.dumps({"score": 5, "pad": "x" * MAX_ANSWER_CHARS})
    for text in (deep, long, '{"a": [1]} trailing {', '[{"score": 5}]', '{"score": 5} {"score": 6}'):
        assert repr(_short_way(text)) == repr(_long_way(text))
    assert _short_way('[{"score": 5}]')[0] == "failure"
