"""Forced-choice and response-set protocols: prompts and strict parsing."""

from __future__ import annotations

import json

import pytest

from polyjudge.data.errors import InputError
from polyjudge.data.records import DocumentContext, Item
from polyjudge.protocols import ParseFailure, ProtocolOptions, get_protocol


@pytest.fixture()
def task_file(tmp_path):
    p = tmp_path / "task.json"
    p.write_text(json.dumps({"name": "adequacy", "instruction": "How adequate is the translation?",
                             "options": [{"label": "Good", "description": "meaning kept"}, "Minor", "Bad"],
                             "response_sets": [["Good"], ["Minor"], ["Bad"], ["Good", "Minor"],
                                               ["Minor", "Bad"]]}))
    return str(p)


ITEM = Item(src="Hallo Welt", tgt="Hello world", src_lang="de", tgt_lang="en", doc_id="d1", seg_id="3")
CTX = DocumentContext("d1", ("Hallo Welt",), 0)


def test_forced_choice_prompt_and_parse(task_file):
    p = get_protocol("forced-choice", ProtocolOptions(extra={"task": task_file}))
    text = "\n".join(m.content for m in p.messages(ITEM, CTX))
    assert "How adequate" in text and "A. Good: meaning kept" in text and "Hello world" in text
    assert p.parse("B", ITEM) == {"option": "Minor", "letter": "B", "index": 1, "item_id": "d1:3"}
    assert p.parse(" c.\n", ITEM)["option"] == "Bad"
    assert p.parse("**A**", ITEM)["index"] == 0
    assert p.score(p.parse("A", ITEM), ITEM) is None
    for bad in ["", "AB", "D", "The answer is A", "A, B"]:
        with pytest.raises(ParseFailure):
            p.parse(bad, ITEM)


def test_response_set_parse(task_file):
    p = get_protocol("response-set", ProtocolOptions(extra={"task": task_file}))
    text = "\n".join(m.content for m in p.messages(ITEM, CTX))
    assert "EVERY option" in text
    ann = p.parse("BA", ITEM)
    assert ann["set"] == ["Good", "Minor"] and ann["letters"] == "AB" and ann["set_index"] == 3
    assert p.parse("cb", ITEM)["set_index"] == 4
    assert p.parse("A", ITEM)["set_index"] == 0
    for bad in ["AC", "AA", "A B", "A,B", "ABD", "", "none"]:  # AC is not admissible
        with pytest.raises(ParseFailure):
            p.parse(bad, ITEM)


def test_item_key_prefers_extra_id(task_file):
    p = get_protocol("forced-choice", ProtocolOptions(extra={"task": task_file}))
    it = Item(src="x", tgt="y", extra={"item_id": "q7"})
    assert p.parse("A", it)["item_id"] == "q7"


def test_missing_task_is_input_error():
    with pytest.raises(InputError):
        get_protocol("forced-choice", ProtocolOptions())
    with pytest.raises(InputError):
        get_protocol("response-set", ProtocolOptions(extra={"task": "/nonexistent/task.json"}))


def test_signature_and_template_override(task_file, tmp_path):
    tpl = tmp_path / "t.jinja"
    tpl.write_text("Rate {{ tgt }} with {{ task.letters | join('') }}")
    p = get_protocol("forced-choice", ProtocolOptions(template=str(tpl), extra={"task": task_file}))
    assert p.messages(ITEM, CTX)[0].content == "Rate Hello world with ABC"
    assert p.signature_fields()["task"] == "adequacy"
