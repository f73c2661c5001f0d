"""The plan's per-item fast paths (issue 46) give what the plain ways give: a task's request is the
base request with its seed, an item's prompt hash is :func:`prompt_hash` of its request and its
fingerprint is the JSON it always hashed, for protocols whose schema is shared or made per item."""

import dataclasses
import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polyjudge.data.chat import GenerateRequest, Message
from polyjudge.data.records import Item
from polyjudge.engine.plan import Plan, prompt_hash, with_seed
from polyjudge.protocols.registry import get_protocol

ITEMS = [Item(src=f"Der Satz {i} „zitiert“.", tgt=f"Sentence {i} \"quoted\"\n", src_lang="de", tgt_lang="en",
              doc_id=f"d{i // 3}", seg_id=str(i), system="S", ref="Ref" if i % 2 else None,
              extra={"note": i} if i % 4 == 0 else {}) for i in range(7)]


def _non_default(f: dataclasses.Field) -> object:  # type: ignore[type-arg]
    return {"messages": (Message("user", "hi"),), "temperature": 0.7, "max_tokens": 9, "seed": 3,
            "json_schema": {"type": "object"}, "n": 4, "top_logprobs": 5, "reasoning_effort": "low"}[f.name]


def test_with_seed_is_replace_for_every_field():
    """Every field of GenerateRequest is carried over (a field added later fails here until it is)."""
    base = GenerateRequest(**{f.name: _non_default(f) for f in dataclasses.fields(GenerateRequest)})
    for seed in (None, 0, 12):
        made = with_seed(base, seed)
        assert made == dataclasses.replace(base, seed=seed)
        assert all(getattr(made, f.name) is getattr(dataclasses.replace(base, seed=seed), f.name)
                   for f in dataclasses.fields(GenerateRequest) if f.name != "seed")


@pytest.mark.parametrize(("name", "extra"), [("da", {}), ("da", {"score_mode": "expected"}), ("mqm", {}),
                                             ("gemba-esa", {}), ("pairwise", {}), ("rubric", {})])
@pytest.mark.parametrize("effort", [None, "high"])
def test_plan_hashes_are_prompt_hash_of_the_request(name, extra, effort):
    from polyjudge.protocols.base import ProtocolOptions

    protocol = get_protocol(name, ProtocolOptions(extra=dict(extra)))
    items = ITEMS if name != "pairwise" else [dataclasses.replace(
        it, extra={**it.extra, "system_a": "A", "system_b": "B", "tgt_b": it.tgt + " b"}) for it in ITEMS]
    plan = Plan(items, protocol, ["j1", "j2"], runs=2, temperature=0.3, seed=5, reasoning_effort=effort)
    other = Plan(items, protocol, ["j1", "j2"], runs=2, temperature=0.3, seed=5, reasoning_effort=effort)
    for i in range(len(items)):
        request = other.request(i)
        assert plan.prompt_hash(i) == prompt_hash(request)
        tasks = plan.tasks_of(i)
        assert [t.request for t in tasks] == [dataclasses.replace(request, seed=5 + r) for r in range(2) for _ in "12"]
        c = plan.contexts[i]
        blob = json.dumps([plan.identity(), items[i].to_dict(), c.doc_id, plan._document_digest(c), c.position],
                          ensure_ascii=False, default=str)
        assert plan.fingerprint(i) == hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


texts = st.text(max_size=12) | st.sampled_from(["\ud800", "é\u2028\x00\"\\", "\U0001f600"])
fields = st.none() | texts
ids = fields | st.integers() | st.booleans() | st.floats()
extras = st.just({}) | st.dictionaries(st.text(max_size=4), st.none() | st.integers() | st.floats() | texts
                                       | st.lists(st.integers(), max_size=2), max_size=2)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.builds(Item, src=texts, tgt=texts, ref=fields, src_lang=fields, tgt_lang=fields,
                          doc_id=fields | st.integers(0, 3), seg_id=ids, system=fields,
                          extra=extras), min_size=1, max_size=4))
def test_fingerprints_are_the_json_they_always_hashed(items):
    plan = Plan(items, get_protocol("da"), ["j"], runs=1, temperature=0.0, seed=0)
    for i, item in enumerate(items):
        c = plan.contexts[i]
        blob = json.dumps([plan.identity(), item.to_dict(), c.doc_id, plan._document_digest(c), c.position],
                          ensure_ascii=False, default=str)
        assert plan.fingerprint(i) == hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()
