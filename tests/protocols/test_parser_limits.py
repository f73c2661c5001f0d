"""Answers are server data: no nesting depth, size or error count crashes a parser or becomes a score.

Before the limits, JSON nested 1,500 levels raised RecursionError inside ``json.loads`` (da, mqm,
gemba-esa), and mqm scored 5,000 errors in one answer as -5000.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from polyjudge.data.records import Item
from polyjudge.protocols import ProtocolOptions, available_protocols, get_protocol
from polyjudge.protocols.base import MAX_ANSWER_CHARS, MAX_NESTING, JudgeProtocol, ParseFailure, nesting_depth

ITEM = Item(src="Der Hund bellt.", tgt="The dog barks.", ref="The dog is barking.", src_lang="de",
            tgt_lang="en", doc_id="d", seg_id="1", system="s", extra={"tgt_b": "A dog barks."})


def _protocol(name: str, **extra: Any) -> JudgeProtocol | None:
    try:
        return get_protocol(name, ProtocolOptions(extra=dict(extra)))
    except Exception as exc:  # protocols that need a task file or options this test cannot give
        pytest.skip(f"{name} cannot be built without options: {exc}")
    return None


def _deep(levels: int) -> str:
    return '{"score": ' + "[" * levels + "1" + "]" * levels + "}"


PARSE_PATHS = [(name, {}) for name in available_protocols() if name not in ("forced-choice", "response-set")]
PARSE_PATHS += [("da", {"score_mode": "expected"}), ("pointwise", {"score_mode": "expected", "scale": "grade"})]


@pytest.mark.parametrize(("name", "extra"), PARSE_PATHS, ids=[f"{n}{'-expected' if e else ''}" for n, e in PARSE_PATHS])
@pytest.mark.parametrize("levels", [1_500, 100_000])
def test_deep_nesting_is_a_parse_failure_in_every_protocol(name: str, extra: dict[str, Any], levels: int) -> None:
    protocol = _protocol(name, **extra)
    assert protocol is not None
    with pytest.raises(ParseFailure, match="levels deep|longer than"):
        protocol.parse_answer(_deep(levels), ITEM)


@pytest.mark.parametrize(("name", "extra"), PARSE_PATHS, ids=[f"{n}{'-expected' if e else ''}" for n, e in PARSE_PATHS])
def test_an_answer_over_the_size_cap_is_a_parse_failure(name: str, extra: dict[str, Any]) -> None:
    protocol = _protocol(name, **extra)
    assert protocol is not None
    huge = '{"score": 90, "errors": [], "winner": "A", "note": "' + "x" * MAX_ANSWER_CHARS + '"}'
    with pytest.raises(ParseFailure, match="longer than"):
        protocol.parse_answer(huge, ITEM)


def test_nesting_at_the_limit_is_still_read_and_strings_do_not_count() -> None:
    assert nesting_depth('{"a": "[[[[[[[[[[{{{{{{"}') == 1
    assert nesting_depth('{"a": "\\"[[[", "b": [[1]]}') == 3
    da = _protocol("da")
    assert da is not None
    inside = "[" * (MAX_NESTING - 1) + "]" * (MAX_NESTING - 1)
    assert da.parse_answer('{"score": 70, "pad": ' + inside + "}", ITEM) is not None


def test_mqm_refuses_more_errors_per_severity_than_its_schema() -> None:
    mqm = _protocol("mqm")
    assert mqm is not None
    many = json.dumps({"errors": {"major": ["accuracy/mistranslation"] * 5_000}})
    with pytest.raises(ParseFailure, match="5,000 major errors; the answer schema allows at most 8"):
        mqm.parse_answer(many, ITEM)
    at_bound = json.dumps({"errors": {"minor": [{"type": "fluency/grammar", "desc": "x"}] * 8}})
    assert mqm.score(mqm.parse_answer(at_bound, ITEM), ITEM) == -8.0


def test_mqm_without_a_schema_bound_still_has_a_ceiling() -> None:
    mqm = _protocol("mqm", max_errors_per_severity=0)
    assert mqm is not None
    many = json.dumps({"errors": {"minor": ["fluency/grammar"] * 101}})
    with pytest.raises(ParseFailure, match="allows at most 100"):
        mqm.parse_answer(many, ITEM)


@pytest.mark.parametrize("name", ["gemba-esa", "tsa", "gemba-spans", "direct-index"])
def test_span_protocols_refuse_more_errors_than_their_schema(name: str) -> None:
    protocol = _protocol(name)
    assert protocol is not None
    errors = [{"span": "dog", "severity": "minor", "category": "fluency", "start": 4, "end": 7}] * 21
    answer = {"errors": errors, "score": 50, "annotated_translation": "The <e1>dog</e1> barks."}
    with pytest.raises(ParseFailure, match="21 errors; the answer schema allows at most 20"):
        protocol.parse_answer(json.dumps(answer), ITEM)


@pytest.mark.parametrize("name", ["forced-choice", "response-set"])
def test_elicitation_protocols_fail_deep_and_huge_answers(tmp_path, name: str) -> None:
    task = tmp_path / "task.json"
    task.write_text(json.dumps({"name": "adequacy", "instruction": "How adequate is the translation?",
                                "options": ["Good", "Minor", "Bad"], "response_sets": [["Good"], ["Bad"]]}))
    protocol = _protocol(name, task=str(task))
    assert protocol is not None
    with pytest.raises(ParseFailure, match="levels deep"):
        protocol.parse_answer("A" + "[" * 1_500, ITEM)
    with pytest.raises(ParseFailure, match="longer than"):
        protocol.parse_answer("A" * (MAX_ANSWER_CHARS + 1), ITEM)


@pytest.mark.parametrize(("answer", "bare"), [
    ("B", "B"), ("  B.  ", "B"), ('"B"', "B"), ("**B**", "B"), ("`'AC'`.", "AC"), ('"B', '"B'), ("", ""),
    ("tie .", "tie"), ("'", "'"),
])
def test_a_short_answer_loses_its_full_stop_and_wrapping_marks_in_both_protocols_that_read_one(answer, bare):
    from polyjudge.data.records import Item
    from polyjudge.protocols import get_protocol
    from polyjudge.protocols.answers import bare_answer

    assert bare_answer(answer) == bare
    if bare in ("A", "B"):  # pairwise reads the verdict the same way
        item = Item(src="s", tgt="a", src_lang="en", tgt_lang="de", extra={"tgt_b": "b"})
        assert get_protocol("pairwise").parse(answer, item)["verdict"] == bare
