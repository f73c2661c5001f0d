"""GEMBA-MQM V2 protocol: prompt, schema, parser policy, scoring."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polyjudge.data.records import Item, document_contexts
from polyjudge.protocols import ParseFailure, ProtocolOptions, get_protocol
from polyjudge.protocols.mqm import ERROR_TYPES, GembaMQM, normalise_type, parse_mqm_answer

DOC = [
    Item("The cat sleeps.", "Die Katze schläft.", src_lang="en", tgt_lang="de", doc_id="d1", seg_id="1", system="A"),
    Item("It is tired.", "Es ist müde.", src_lang="en", tgt_lang="de", doc_id="d1", seg_id="2", system="A"),
    Item("The cat sleeps.", "Katze schlafen.", src_lang="en", tgt_lang="de", doc_id="d1", seg_id="1", system="B"),
    Item("Other text.", "Anderer Text.", src_lang="en", tgt_lang="de", doc_id="d2", seg_id="3", system="A"),
]
CTX = document_contexts(DOC)


def test_registry_and_defaults():
    p = get_protocol("mqm")
    assert isinstance(p, GembaMQM)
    assert (p.name, p.default_runs, p.default_temperature, p.default_aggregator) == ("mqm", 10, 0.4, "rrwa")


def test_messages_with_document_context():
    p = GembaMQM()
    msgs = p.messages(DOC[1], CTX[1])
    assert [m.role for m in msgs] == ["system", "user"]  # no history of earlier segments
    system, user = msgs[0].content, msgs[1].content
    assert json.loads(user) == {"source_language": "English", "source": "It is tired.",
                                "target_language": "German", "target": "Es ist müde."}
    # full source document, each sentence once, in order
    assert "The cat sleeps.\nIt is tired." in system and system.count("The cat sleeps.") == 1
    for word in ("critical", "major", "minor", "accuracy/untranslated text",
                 "fluency/character encoding", "terminology/inconsistent use", "non-translation"):
        assert word in system
    # the system message is the same for every segment of a document (and system)
    assert p.messages(DOC[0], CTX[0])[0] == p.messages(DOC[2], CTX[2])[0] == msgs[0]
    assert p.messages(DOC[3], CTX[3])[0].content != system  # another document


def test_no_context_switch():
    p = GembaMQM(ProtocolOptions(use_context=False))
    system = p.messages(DOC[1], CTX[1])[0].content
    assert "The cat sleeps." not in system and "document" not in system.split("Example answer")[1]
    assert p.signature_fields()["context"] == "none"
    assert GembaMQM().signature_fields()["context"] == "doc"


def test_unknown_languages_are_omitted():
    item = Item("a", "b")
    user = GembaMQM().messages(item, document_contexts([item])[0])[1].content
    assert json.loads(user) == {"source": "a", "target": "b"}


def _example_answer(system: str) -> str:
    return re.search(r"Example answer:\n(\{.*\})\n", system).group(1)


def test_one_shot_example_fits_schema_and_scores():
    p = GembaMQM()
    system = p.messages(DOC[0], CTX[0])[0].content
    example = _example_answer(system)
    schema = p.output_schema(DOC[0])
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(json.loads(example), schema)
    ann = p.parse(example, DOC[0])
    assert p.score(ann, DOC[0]) == pytest.approx(-(25 + 5 + 1 + 0.1))


def test_schema_is_bounded():
    schema = GembaMQM().output_schema(DOC[0])
    good = {"errors": {"critical": [], "major": [{"type": "other", "desc": "x"}], "minor": []}}
    jsonschema.validate(good, schema)
    bad = [
        {"errors": {"critical": [], "major": [], "minor": []}, "extra": 1},
        {"errors": {"critical": [], "major": [{"type": "made up", "desc": "x"}], "minor": []}},
        {"errors": {"critical": [], "major": [{"type": "other", "desc": "x" * 1000}], "minor": []}},
        {"errors": {"critical": [{"type": "other", "desc": "x"}] * 50, "major": [], "minor": []}},
        {"errors": {"critical": [], "major": []}},
    ]
    for b in bad:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(b, schema)
    assert len(ERROR_TYPES) == 15


# -- parser policy ---------------------------------------------------------------

def E(crit=(), major=(), minor=()):
    return {"errors": {"critical": list(crit), "major": list(major), "minor": list(minor)}}


@pytest.mark.parametrize("text,expected", [
    ('{"errors": {"critical": [], "major": [], "minor": []}}', E()),
    # code fence and chatter around the object
    ('Sure!\n```json\n{"errors": {"minor": [{"type": "Fluency/Punctuation", "desc": "comma"}]}}\n```',
     E(minor=[{"type": "fluency/punctuation", "desc": "comma"}])),
    # the paper's echo format: extra top-level keys are ignored
    ('{"source": "s", "target": "t", "source_language": "English", "target_language": "German", "note": 1,'
     ' "errors": {"critical": [], "major": [{"type": "accuracy/omission", "desc": "d", "span": "x"}], "minor": []}}',
     E(major=[{"type": "accuracy/omission", "desc": "d"}])),
    # severity lists at top level, case-insensitive keys, null lists, neutral dropped
    ('{"Critical": null, "MAJOR": [{"category": "other"}], "neutral": [{"type": "other"}]}',
     E(major=[{"type": "other", "desc": ""}])),
    # list of strings instead of objects
    ('{"errors": {"major": ["accuracy/mistranslation - wrong verb", "the tone is off"], "minor": []}}',
     E(major=[{"type": "accuracy/mistranslation", "desc": "accuracy/mistranslation - wrong verb"},
              {"type": "other", "desc": "the tone is off"}])),
    # a flat list with severities
    ('{"errors": [{"severity": "Minor", "type": "style/awkward", "desc": "x"}, {"severity": "no-error"}]}',
     E(minor=[{"type": "style/awkward", "desc": "x"}])),
    ('{"errors": null}', E()),
    ('{"errors": {}}', E()),
])
def test_parser_accepts(text, expected):
    assert parse_mqm_answer(text) == expected


@pytest.mark.parametrize("text,reason", [
    ("", "no complete JSON"),
    ("No errors found.", "no complete JSON"),
    ('{"errors": {"critical": [], "major": [{"type": "accuracy/omis', "truncated"),
    ('[{"type": "other"}]', "JSON object"),
    ('{"score": 3}', "no 'errors'"),
    ('{"errors": {"severe": [{"type": "other", "desc": "x"}]}}', "unknown severity"),
    ('{"errors": {"major": "accuracy/omission"}}', "must be a list"),
    ('{"errors": {"major": [5]}}', "object or a string"),
    ('{"errors": {"major": [{"type": 5}]}}', "must be a string"),
    ('{"errors": [{"type": "other"}]}', "severity"),
    ('{"errors": [{"severity": "blocker", "type": "other"}]}', "unknown severity"),
    ('{"errors": "none"}', "must be an object"),
])
def test_parser_rejects(text, reason):
    with pytest.raises(ParseFailure) as exc:
        GembaMQM().parse(text, DOC[0])
    assert reason in exc.value.reason


def test_scoring_options_and_signature():
    ann = parse_mqm_answer(json.dumps(E(major=[{"type": "other", "desc": ""}] * 6)))
    assert GembaMQM().score(ann, DOC[0]) == -30.0
    classic = GembaMQM(ProtocolOptions(extra={"classic": True}))
    assert classic.score(ann, DOC[0]) == -25.0
    custom = GembaMQM(ProtocolOptions(extra={"weights": {"major": 2}}))
    assert custom.score(ann, DOC[0]) == -12.0
    sigs = {p.signature_fields()["weights"] for p in (GembaMQM(), classic, custom)}
    assert len(sigs) == 3


def test_user_template_replaces_prompt(tmp_path):
    f = tmp_path / "exact.jinja"
    f.write_text("<|system|>\nJudge {{ target_language }}.\n<|user|>\n{{ segment_json }}\n", encoding="utf-8")
    p = GembaMQM(ProtocolOptions(template=str(f)))
    msgs = p.messages(DOC[0], CTX[0])
    assert msgs[0].content == "Judge German."
    assert p.template_hash != GembaMQM().template_hash


def _normalise_reference(value: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"\s*/\s*", "/", value.strip().lower()))


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aZ/ -_é") + [chr(c) for c in (9, 10, 11, 12, 13, 28, 29, 30, 31, 0x85,
                                                                           0xA0, 0x2003)])))
def test_error_type_normalisation_skips_the_regexes_only_when_they_change_nothing(text):
    assert normalise_type(text) == _normalise_reference(text)
    assert normalise_type(f"Fluency{text}Punctuation") == _normalise_reference(f"Fluency{text}Punctuation")
