"""The streamed dry run gives exactly the Estimate of the materialised task list (issue 23, item 6).

``estimate_plan`` walks the plan once without building tasks; ``estimate`` over
``plan.tasks()`` is the reference. Documents long enough for the prompt-cache
estimate, repeated prompts, a partly filled store, panels, priced, free and
unpriced judges, several samples per request and context overflows are covered.
"""

from __future__ import annotations

import random

import pytest

from polyjudge.data.records import Item, document_contexts
from polyjudge.engine.core import estimate, estimate_plan, oversized_prompts
from polyjudge.engine.plan import Plan
from polyjudge.engine.pricing import ModelPrice
from polyjudge.protocols import ProtocolOptions, get_protocol


def items(n_docs: int, segments: int, systems: int, *, repeat: bool) -> list[Item]:
    out = []
    for d in range(n_docs):
        for s in range(systems):
            for k in range(segments):
                src = f"Sentence {k} of document {d}, long enough to matter in a prompt. " * 3
                tgt = "same translation" if repeat and k % 3 == 0 else f"Übersetzung {s}/{k} von {d}"
                out.append(Item(src_lang="en", tgt_lang="de",
                                src=src, tgt=tgt, system=f"sys{s}", doc_id=f"doc{d}", seg_id=str(k)))
    out.append(Item(src_lang="en", tgt_lang="de", src="lonely", tgt="allein", system="sys0", seg_id="x"))
    return out


PRICES = {"a": ModelPrice(2.5, 10.0, cached_input=1.25, batch_discount=0.5), "b": ModelPrice(0.15, 0.6)}


@pytest.mark.parametrize("protocol,runs,judges,spr,cached_share,free,context", [
    ("mqm", 3, ["a"], 1, 0.0, (), {}),
    ("mqm", 4, ["a", "b", "c"], 3, 0.3, ("c",), {"a": 3000}),
    ("mqm", 2, ["a", "b"], {"a": 2, "b": 1}, 0.6, (), {"b": 100}),
    ("da", 5, ["b", "a"], 1, 0.5, (), {}),
    ("da", 1, ["c"], 1, 0.0, ("c",), {}),
])
def test_streamed_estimate_equals_the_task_list_estimate(protocol, runs, judges, spr, cached_share, free, context):
    its = items(3, 40, 2, repeat=True)
    plan = Plan(its, get_protocol(protocol, ProtocolOptions()), judges, runs=runs, temperature=0.7, seed=3)
    tasks = plan.tasks()
    rng = random.Random(7)
    cached = {t.key for t in tasks if rng.random() < cached_share}
    over = oversized_prompts([t for t in tasks if t.key not in cached], its, context)
    expected = estimate(tasks, cached, prices=PRICES, free=free, oversized=over, samples_per_request=spr)
    fresh = Plan(its, get_protocol(protocol, ProtocolOptions()), judges, runs=runs, temperature=0.7, seed=3)
    got = estimate_plan(fresh, cached, prices=PRICES, free=free, context_sizes=context, samples_per_request=spr)
    assert got == expected
    if protocol == "mqm":
        assert any(s.cached_prompt_tokens for s in got.scenarios if not s.batch)  # the cache estimate is exercised
    for in_batch in (False, True):
        assert estimate_plan(fresh, cached, prices=PRICES, free=free, samples_per_request=spr, batch=in_batch) == \
            estimate(tasks, cached, prices=PRICES, free=free, samples_per_request=spr, batch=in_batch)


def test_documents_share_one_context():
    its = items(2, 50, 3, repeat=False)
    contexts = document_contexts(its)
    doc0 = [c for c, it in zip(contexts, its) if it.doc_id == "doc0"]
    assert len({id(c.sources) for c in doc0}) == 1 and len({id(c.text) for c in doc0}) == 1
    assert doc0[7].text == "\n".join(doc0[7].sources) and len(doc0[0].sources) == 50
    assert [c.position for c in doc0[:50]] == list(range(50))


def long_items(n_docs: int, segments: int) -> list[Item]:
    """Documents longer than long_prompts.LONG characters: their prompts take the shared-piece path."""
    out = []
    for d in range(n_docs):
        for k in range(segments):
            src = f"Satz {k} \"des\" Dokuments {d}\\ mit\tTab und é — lang genug. " * 3
            out.append(Item(src_lang="en", tgt_lang="de",
                            src=src, tgt=f"Sentence {k} of {d}", system="sys0", doc_id=f"doc{d}", seg_id=str(k)))
    return out


def test_documents_longer_than_a_long_piece_give_the_same_estimate_and_keys(monkeypatch):
    from polyjudge.engine.long_prompts import LONG
    from polyjudge.engine.plan import _slow_prompt_hash
    from polyjudge.protocols.templates import PromptTemplate

    its = long_items(3, 260)
    assert len("\n".join(it.src for it in its[:260])) > LONG
    plan = Plan(its, get_protocol("mqm", ProtocolOptions()), ["a", "b"], runs=2, temperature=0.0, seed=1)
    tasks = plan.tasks()
    rng = random.Random(3)
    cached = {t.key for t in tasks if rng.random() < 0.2}
    fresh = Plan(its, get_protocol("mqm", ProtocolOptions()), ["a", "b"], runs=2, temperature=0.0, seed=1)
    got = estimate_plan(fresh, cached, prices=PRICES, samples_per_request=2)
    assert got == estimate(tasks, cached, prices=PRICES, samples_per_request=2)
    assert got.cached_prompt_tokens > 0
    # The keys are those of the canonical JSON hashed in full, and of prompts rendered without shapes.
    for t in tasks[::37]:
        assert t.prompt_hash == _slow_prompt_hash(t.request)
    monkeypatch.setattr(PromptTemplate, "render", PromptTemplate.render_directly)
    direct = Plan(its, get_protocol("mqm", ProtocolOptions()), ["a", "b"], runs=2, temperature=0.0, seed=1)
    assert [direct.prompt_hash(i) for i in range(len(its))] == [fresh.prompt_hash(i) for i in range(len(its))]
    assert [m.content for m in direct.request(5).messages] == [m.content for m in plan.request(5).messages]
