"""The parts protocols compose (reference, few-shot, expected scores) and what the base declares once
(template_hash, mtme_name)."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

from polyjudge.data.errors import InputError
from polyjudge.data.records import DocumentContext, Item
from polyjudge.protocols import JudgeProtocol, ProtocolOptions, get_protocol
from polyjudge.protocols.esa import EsaOptions
from polyjudge.protocols.fewshot import FewShotPool, fewshot_signature, pool_for
from polyjudge.protocols.mqm import MQMOptions
from polyjudge.protocols.options import describe_options
from polyjudge.protocols.reference import ReferenceUse
from polyjudge.protocols.templates import PromptTemplate
from polyjudge.protocols.tsa import SpanOptions

PROTOCOLS_DIR = Path(__file__).resolve().parents[2] / "src" / "polyjudge" / "protocols"
REFERENCE_AND_FEWSHOT = [("with_reference", False), ("ref_name", "refA"), ("fewshot_pool", None),
                         ("fewshot_k", 2), ("fewshot_seed", 0), ("fewshot_buckets", ())]


def _defaults(options_type: type) -> list[tuple[str, object]]:
    out = []
    for f in dataclasses.fields(options_type):
        if f.init:
            out.append((f.name, f.default if f.default is not dataclasses.MISSING else f.default_factory()))
    return out


@pytest.mark.parametrize(("options_type", "own_before", "own_after"), [
    (MQMOptions, [("weights", {}), ("classic", False), ("max_errors_per_severity", 8), ("echo_fields", "auto")], []),
    (EsaOptions, [("on_unlocated", "keep"), ("vote_threshold", 0.5), ("score_mode", "sample")], []),
    (SpanOptions, [("weights", {"major": 5.0, "minor": 1.0}), ("on_unlocated", "fail"), ("min_similarity", 0.9),
                   ("vote_threshold", 0.5), ("precision_emphasis", True)], []),
])
def test_option_fields_keep_their_names_defaults_and_order(options_type, own_before, own_after):
    """The shared fields come from one factory each, in the place each protocol had them."""
    assert _defaults(options_type) == own_before + REFERENCE_AND_FEWSHOT + own_after


def test_shared_fields_have_one_help_text_everywhere():
    helps = [{name: text for name, _, text in describe_options(t)} for t in (MQMOptions, EsaOptions, SpanOptions)]
    for name, _ in REFERENCE_AND_FEWSHOT:
        assert len({h[name] for h in helps}) == 1, name
    assert helps[0]["ref_name"].endswith("(default: refA)")


def _defined_in(name: str) -> list[str]:
    """The protocol modules whose classes define ``name`` (a method, property or attribute)."""
    where = []
    for path in sorted(PROTOCOLS_DIR.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            for node in cls.body:
                named = node.name if isinstance(node, ast.FunctionDef) else None
                if named == name:
                    where.append(path.name)
    return where


@pytest.mark.parametrize("name", ["template_hash", "mtme_name"])
def test_declared_once_on_the_base(name):
    assert _defined_in(name) == ["base.py"]


class _Bare(JudgeProtocol):
    """A protocol written outside polyjudge with no template and no reference."""

    name = "bare"

    def messages(self, item, context):
        return []

    def parse(self, text, item):
        return {}

    def score(self, annotation, item):
        return None


def test_a_protocol_without_parts_gets_the_defaults():
    p = _Bare()
    assert p.template_hash == "none" and p.mtme_name == "polyjudge-bare-src" and p.fewshot is None
    assert p.reference == ReferenceUse() and not p.reference.on


@pytest.mark.parametrize(("protocol", "extra", "mtme"), [
    ("mqm", {}, "polyjudge-mqm-src"),
    ("mqm", {"with_reference": True}, "polyjudge-mqm-refA"),
    ("tsa", {"with_reference": True, "ref_name": "refB"}, "polyjudge-tsa-refB"),
    ("gemba-esa", {"with_reference": True}, "polyjudge-gemba-esa-refA"),
    ("gemba-esa", {"ref_name": "refB"}, "polyjudge-gemba-esa-src"),  # the name counts only with the reference on
    ("pairwise", {"with_reference": True}, "polyjudge-pairwise-src"),  # its reference is a prompt switch only
    ("da", {}, "polyjudge-da-src"),
])
def test_mtme_name_and_template_hash_from_the_base(protocol, extra, mtme):
    p = get_protocol(protocol, ProtocolOptions(extra=extra))
    assert p.mtme_name == mtme
    assert p.template is not None and p.template_hash == p.template.hash and len(p.template_hash) == 10


def test_reference_use():
    on, off = ReferenceUse(True, "refB"), ReferenceUse()
    assert on.signature() == {"ref": "refB"} and off.signature() == {}
    assert on.metric_name("mqm") == "polyjudge-mqm-refB" and off.metric_name("mqm") == "polyjudge-mqm-src"
    item = Item("a", "b", ref="c", origin="items.jsonl:7")
    assert on.for_prompt(item) == "c" and off.for_prompt(item) is None
    with pytest.raises(InputError) as exc:
        on.for_prompt(Item("a", "b", ref="  ", origin="items.jsonl:7"))
    assert (exc.value.path, exc.value.line, exc.value.field) == ("items.jsonl", 7, "ref")
    template = PromptTemplate("{{ source }}", "mine.jinja")
    off.check_template(template, "reference")  # off: nothing to check
    with pytest.raises(InputError) as exc:
        on.check_template(template, "reference")
    assert (exc.value.path, exc.value.field) == ("mine.jinja", "with_reference")


def _pool(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_pool_for_checks_what_the_protocol_shows(tmp_path):
    rows = [{"src": "Hallo.", "tgt": "Hello.", "label": "good", "answer": "{}"},
            {"src": "Tschüss.", "tgt": "Bye.", "label": "bad"}]
    settings = MQMOptions(fewshot_pool=_pool(tmp_path / "pool.jsonl", rows), fewshot_k=1, fewshot_seed=3)
    assert pool_for(MQMOptions(), answers_as_turns=True, with_reference=True) is None
    with pytest.raises(InputError) as exc:  # shown as turns: every example needs its answer
        pool_for(settings, answers_as_turns=True, with_reference=False)
    assert (exc.value.line, exc.value.field) == (2, "answer")
    with pytest.raises(InputError) as exc:  # reference-based: every example needs its reference
        pool_for(settings, answers_as_turns=False, with_reference=True)
    assert (exc.value.line, exc.value.field) == (1, "ref")
    pool = pool_for(settings, answers_as_turns=False, with_reference=False)
    assert isinstance(pool, FewShotPool) and (pool.k, pool.seed) == (1, 3)
    assert fewshot_signature(pool) == {"fewshot": f"{pool.hash}/k1/s3"} and fewshot_signature(None) == {}


def test_composed_parts_reach_the_signature_in_the_published_order(tmp_path):
    pool = _pool(tmp_path / "pool.jsonl", [{"src": "Hallo.", "tgt": "Hello.", "ref": "Hi.", "label": "good",
                                            "answer": "{}", "errors": []}])
    extra = {"with_reference": True, "ref_name": "refB", "fewshot_pool": pool}
    tsa = get_protocol("tsa", ProtocolOptions(extra={**extra, "precision_emphasis": False}))
    assert list(tsa.signature_suffix()) == ["ref", "precision", "fewshot"]
    mqm = get_protocol("mqm", ProtocolOptions(extra=extra))
    assert list(mqm.signature_suffix()) == ["context", "ref", "fewshot"]
    esa = get_protocol("gemba-esa", ProtocolOptions(extra=extra))
    assert esa.signature_suffix() == {"ref": "refB", "fewshot": esa.fewshot.signature()}
    msgs = esa.messages(Item("Neu.", "New.", ref="REF!", src_lang="de", tgt_lang="en"),
                        DocumentContext(None, ("Neu.",), 0))
    assert "REF!" in msgs[-1].content
