"""The span protocols: prompts, schemas, parsing to original offsets, scores, run voting."""

from __future__ import annotations

import json

import jsonschema
import pytest

from polyjudge.data.records import DocumentContext, Item
from polyjudge.protocols import ParseFailure, ProtocolOptions, get_protocol
from polyjudge.protocols.tsa import DirectIndex, GembaSpans, TaggedSpanAnnotation, vote_spans

ITEM = Item(src="Er kam am Dienstag an, vergaß jedoch, die Unterlagen mitzubringen.",
            tgt="He arrived on Monday but forgot the documents.", src_lang="de", tgt_lang="en")
CTX = DocumentContext(None, (ITEM.src,), 0)
NAMES = ("tsa", "gemba-spans", "direct-index")


def tsa_answer(annotated, *errors):
    return json.dumps({"annotated_translation": annotated,
                       "errors": [{"severity": s, "category": c} for s, c in errors]})


@pytest.mark.parametrize("name", NAMES)
def test_prompts_share_one_body_and_few_shots_validate(name):
    p = get_protocol(name)
    msgs = p.messages(ITEM, CTX)
    assert msgs[0].role == "system" and msgs[-1].role == "user"
    assert "German" in msgs[-1].content and ITEM.tgt in msgs[-1].content
    assert "When you are unsure, leave it unmarked" in msgs[0].content
    answers = [m.content for m in msgs if m.role == "assistant"]
    assert len(answers) == 3 and any('"errors": []' in a for a in answers)  # one without errors
    # every few-shot answer parses with this protocol and satisfies its own schema
    for user, answer in zip([m for m in msgs if m.role == "user"], answers):
        lines = user.content.splitlines()
        item = Item(src=lines[1], tgt=lines[3])
        jsonschema.validate(json.loads(answer), p.output_schema(item))
        ann = p.parse(answer, item)
        assert ann["problems"] == []
    # the shared body differs only in the answer directive
    other = get_protocol("tsa").messages(ITEM, CTX)[0].content
    assert msgs[0].content.split("How to answer")[0] == other.split("How to answer")[0]


def test_tsa_parse_to_original_offsets_and_score():
    p = TaggedSpanAnnotation()
    text = "```json\n" + tsa_answer("He arrived on <v0>Monday</v0> but forgot <v1></v1>the documents.",
                                   ("Major", "accuracy/mistranslation"),
                                   ("minor", "accuracy/omission")) + "\n```"
    ann = p.parse(text, ITEM)
    assert [(s["start"], s["end"], s["severity"], s["text"]) for s in ann["spans"]] == [
        (14, 20, "major", "Monday"), (32, 32, "minor", "")]
    assert ann["exact"] and p.score(ann, ITEM) == -6.0
    p2 = TaggedSpanAnnotation(ProtocolOptions(extra={"weights": {"major": 10}}))
    assert p2.score(ann, ITEM) == -11.0
    assert p.score(p.parse(tsa_answer(ITEM.tgt), ITEM), ITEM) == 0.0


@pytest.mark.parametrize("answer, reason", [
    ("no json here", "no complete JSON"),
    ('{"errors": []}', "annotated_translation"),
    (tsa_answer(ITEM.tgt, ("major", "x")), "error 0 has no tag"),
    (tsa_answer("He <v0>arrived</v0> on <v0>Monday</v0> but forgot the documents.", ("major", "x")),
     "duplicate"),
    (tsa_answer("He <v0>arrived on Monday but forgot the documents.", ("major", "x")), "never closed"),
    (tsa_answer("Completely <v0>different</v0> sentence here.", ("major", "x")), "similarity"),
    (tsa_answer("He <v0>arrived</v0> on Monday but forgot the documents.", ("severe", "x")),
     "unknown severity"),
])
def test_tsa_failures_are_parse_failures_with_reason(answer, reason):
    with pytest.raises(ParseFailure, match=reason):
        TaggedSpanAnnotation().parse(answer, ITEM)


def test_tsa_keep_unlocated_option_and_poor_alignment_still_fails():
    p = TaggedSpanAnnotation(ProtocolOptions(extra={"on_unlocated": "keep"}))
    ann = p.parse(tsa_answer(ITEM.tgt, ("major", "x")), ITEM)
    assert ann["spans"][0]["start"] is None and p.score(ann, ITEM) == -5.0
    assert any("no tag" in q for q in ann["problems"])
    with pytest.raises(ParseFailure, match="similarity"):
        p.parse(tsa_answer("Completely <v0>different</v0> sentence here.", ("major", "x")), ITEM)


def test_tsa_reports_non_fatal_problems_and_projects_changed_text():
    p = TaggedSpanAnnotation()
    ann = p.parse(tsa_answer("He  arrived on <v1>Monday</v1> but forgot <v0>the</v0> documents .",
                             ("minor", "a"), ("major", "b")), ITEM)
    assert [(s["text"], s["severity"]) for s in ann["spans"]] == [("the", "minor"), ("Monday", "major")]
    assert not ann["exact"] and any("out of order" in q for q in ann["problems"])


def test_gemba_spans_locate_and_fail():
    p = GembaSpans()
    ok = json.dumps({"errors": [{"span": "Monday", "severity": "major", "category": "m"},
                                {"span": "", "severity": "minor", "category": "accuracy/omission"}]})
    ann = p.parse(ok, ITEM)
    assert [(s["start"], s["end"]) for s in ann["spans"]] == [(14, 20), (None, None)]
    bad = json.dumps({"errors": [{"span": "Tuesday", "severity": "major", "category": "m"}]})
    with pytest.raises(ParseFailure, match="does not occur"):
        p.parse(bad, ITEM)


def test_direct_index_validates_offsets():
    p = DirectIndex()
    ann = p.parse(json.dumps({"errors": [{"start": 14, "end": 20, "severity": "major",
                                          "category": "m"}]}), ITEM)
    assert ann["spans"][0]["text"] == "Monday"
    with pytest.raises(ParseFailure, match="outside"):
        p.parse(json.dumps({"errors": [{"start": 40, "end": 99, "severity": "major",
                                        "category": "m"}]}), ITEM)
    schema = p.output_schema(ITEM)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"errors": [{"start": 0, "end": 99, "severity": "major",
                                         "category": "m"}]}, schema)


def test_vote_spans_hand_worked():
    # three runs over a 10-char text
    runs = [
        [{"start": 0, "end": 4, "severity": "major", "category": "a"}],
        [{"start": 2, "end": 6, "severity": "minor", "category": "b"}],
        [{"start": 2, "end": 4, "severity": "minor", "category": "b"},
         {"start": 8, "end": 8, "severity": "minor", "category": "omission"}],
    ]
    spans, problems = vote_spans(runs, 10, threshold=0.5)
    # chars 2-3 have 3 votes (1 major, 2 minor -> minor); 0-1 and 4-5 have one vote (< 1.5)
    assert spans == [{"start": 2, "end": 4, "severity": "minor", "category": "b"}]
    spans, _ = vote_spans(runs, 10, threshold=0.3)
    assert [(s["start"], s["end"], s["severity"]) for s in spans] == [
        (0, 2, "major"), (2, 6, "minor"), (8, 8, "minor")]  # one stretch of minor
    # tie between major and minor -> major
    spans, _ = vote_spans(runs[:2], 10, threshold=0.5)
    assert [(s["start"], s["end"], s["severity"]) for s in spans] == [(0, 4, "major"), (4, 6, "minor")]


def test_merge_runs_and_score():
    p = TaggedSpanAnnotation()
    a = p.parse(tsa_answer("He arrived on <v0>Monday</v0> but forgot the documents.", ("major", "m")), ITEM)
    b = p.parse(tsa_answer(ITEM.tgt), ITEM)
    merged = p.merge_runs([a, a, b], ITEM)
    assert [(s["text"], s["severity"]) for s in merged["spans"]] == [("Monday", "major")]
    assert p.score(merged, ITEM) == -5.0
    assert p.merge_runs([a, b, b], ITEM)["spans"] == []
