"""The ``pairwise`` protocol: prompt, strict parsing, typed options, categorical annotation."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polyjudge.data.errors import InputError
from polyjudge.data.records import DocumentContext, Item
from polyjudge.protocols import PROTOCOLS, ParseFailure, ProtocolOptions, get_protocol
from polyjudge.protocols.pairwise import PairwiseJudge, PairwiseOptions, merge_verdicts

CTX = DocumentContext(None, ("s",), 0)


def item(ref: str | None = None, **extra) -> Item:
    fields = {"tgt_b": "Servus Welt.", "system_a": "sysA", "system_b": "sysB", **extra}
    return Item("Hello world.", "Hallo Welt.", ref, "en", "de", "d1", "3", "sysA vs sysB", fields)


def protocol(**options) -> PairwiseJudge:
    p = get_protocol("pairwise", ProtocolOptions(extra=options))
    assert isinstance(p, PairwiseJudge)
    return p


def test_registered_with_typed_options_and_signature():
    assert PROTOCOLS.get("pairwise") is PairwiseJudge
    assert PairwiseJudge.options_type is PairwiseOptions
    assert protocol().signature_fields() == {"tie": "true", "ref": "false"}
    assert protocol(allow_tie="false", with_reference=True).signature_fields() == {"tie": "false", "ref": "true"}
    assert [name for name, _, _ in PairwiseJudge.option_help()] == ["allow_tie", "with_reference"]
    with pytest.raises(InputError, match="unknown option 'tie'.*valid options: allow_tie, with_reference"):
        protocol(tie=True)
    with pytest.raises(InputError, match="option 'allow_tie' of protocol 'pairwise' must be bool"):
        protocol(allow_tie="maybe")


def test_prompt_shows_the_source_and_both_candidates_labelled():
    msgs = protocol().messages(item(ref="Hallo Erde."), CTX)
    assert [m.role for m in msgs] == ["system", "user"]
    user = msgs[-1].content
    assert "English source: Hello world." in user
    assert "Translation A: Hallo Welt.\nTranslation B: Servus Welt." in user
    assert "reference" not in user  # the reference is shown only when asked for
    assert '"tie"' in user
    strict = protocol(allow_tie=False, with_reference=True).messages(item(ref="Hallo Erde."), CTX)[-1].content
    assert "German reference: Hallo Erde." in strict and '"tie"' not in strict


def test_bad_items_are_input_errors():
    with pytest.raises(InputError, match="tgt_b"):
        protocol().messages(Item("s", "t", extra={}), CTX)
    with pytest.raises(InputError, match="tgt_b"):
        protocol().messages(item(tgt_b=3), CTX)
    with pytest.raises(InputError, match="no reference") as exc:
        protocol(with_reference=True).messages(item(), CTX)
    assert exc.value.field == "ref"


@pytest.mark.parametrize(("text", "verdict"), [
    ('{"winner": "A"}', "A"), ('```json\n{"winner": "b"}\n```', "B"), ('{"winner": "Tie"}', "tie"),
    ("A", "A"), (" b.\n", "B"), ("**A**", "A"), ('"tie"', "tie"), ("TIE", "tie"), ("`B`", "B"),
])
def test_parse_accepts_one_verdict(text, verdict):
    ann = protocol().parse(text, item())
    assert ann == {"verdict": verdict, "system_a": "sysA", "system_b": "sysB"}
    assert protocol().score(ann, item()) is None  # categorical


@pytest.mark.parametrize("text", [
    "", "A or B", "A.B", "Translation A", "AB", "I prefer A", '{"winner": "C"}', '{"winner": 1}', '{"best": "A"}',
    '{"winner": "A"', "both", "1",
])
def test_parse_refuses_anything_else(text):
    with pytest.raises(ParseFailure):
        protocol().parse(text, item())


def test_ties_can_be_forbidden():
    p = protocol(allow_tie=False)
    assert p.parse("B", item())["verdict"] == "B"
    with pytest.raises(ParseFailure, match="ties are not allowed"):
        p.parse('{"winner": "tie"}', item())
    assert p.output_schema(item())["properties"]["winner"]["enum"] == ["A", "B"]
    assert protocol().output_schema(item())["properties"]["winner"]["enum"] == ["A", "B", "tie"]


def test_merging_runs_is_a_majority_vote():
    assert merge_verdicts([]) is None
    assert merge_verdicts(["A"]) == "A"
    assert merge_verdicts(["A", "B", "A"]) == "A"
    assert merge_verdicts(["A", "B"]) == "tie"  # equally common top verdicts
    assert merge_verdicts(["A", "tie", "B", "B", "A"]) == "tie"
    p = protocol()
    anns = [p.parse(t, item()) for t in ("A", "B", "B")]
    merged = p.merge_runs(anns, item())
    assert merged == {"verdict": "B", "votes": {"A": 1, "B": 2, "tie": 0}, "system_a": "sysA", "system_b": "sysB"}
    assert json.loads(json.dumps(merged)) == merged
    assert p.merge_runs([], item()) is None


FRAGMENTS = ["<|system|>", "<|user|>", "\n<|assistant|>\n", "{{", "}}", "{% raw %}", '{"winner": "A"}', "\r\n",
             "\ue000", "\ue001", "Translation A:", "é", "漢", "\\", '"']
TEXT = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4)), max_size=10).map("".join)


@settings(max_examples=100, deadline=None)
@given(src=TEXT, a=TEXT, b=TEXT, ref=TEXT)
def test_texts_never_change_the_conversation(src, a, b, ref):
    p = protocol(with_reference=True)
    plain = p.messages(item(ref="r"), CTX)
    it = Item(src, a, ref or "r", "en", "de", extra={"tgt_b": b})
    msgs = p.messages(it, CTX)
    assert [m.role for m in msgs] == [m.role for m in plain]
    for text in (src, a, b, ref or "r"):
        assert text in msgs[-1].content
