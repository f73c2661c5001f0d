"""Summarising a run parses an answer text once per item (engine.result.judgment_of's memo, issue 35):
the judgments are the same as when every run's answer is parsed on its own, whatever the answers."""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polyjudge.data.records import Item
from polyjudge.engine.result import judgment_of
from polyjudge.engine.store import StoredResponse
from polyjudge.protocols.registry import get_protocol

ITEM = Item(src_lang="en", tgt_lang="de", src="The dog runs fast.", tgt="Der Hund läuft schnell.", system="A",
            doc_id="d", seg_id="1")
# Answers of every kind: scores, errors, garbage, non-finite, cut or refused, failed requests.
ANSWERS = [json.dumps({"score": 70}), json.dumps({"score": 1e400}), '{"score": NaN}', "not json", "",
           json.dumps({"errors": {"critical": [], "major": [{"type": "accuracy/mistranslation", "desc": "Hund"}],
                                  "minor": []}}),
           json.dumps({"errors": {"critical": [], "major": [], "minor": []}}), '{"errors": []}', "score: 55"]
answers = st.builds(
    StoredResponse, key=st.just("k"), status=st.sampled_from(["done", "done", "done", "failed"]),
    text=st.sampled_from(ANSWERS) | st.none(), finish_reason=st.sampled_from(["stop", "stop", "length", "refusal"]),
    prompt_tokens=st.integers(0, 100), completion_tokens=st.integers(0, 100), latency_s=st.floats(0, 5),
    error=st.none() | st.just("HTTP 500"), attempts=st.integers(1, 3))


def _same(a, b):
    assert (a.status, a.error, a.raw_text, a.run_index, a.prompt_tokens, a.latency_s) == \
        (b.status, b.error, b.raw_text, b.run_index, b.prompt_tokens, b.latency_s)
    assert json.dumps(a.annotation, sort_keys=True) == json.dumps(b.annotation, sort_keys=True)
    assert a.score == b.score or (a.score is not None and math.isnan(a.score) and math.isnan(b.score))


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["da", "mqm", "gemba-esa", "tsa", "gemba-spans", "direct-index"]),
       st.lists(answers | st.none(), min_size=1, max_size=12))
def test_an_items_runs_parsed_with_the_memo_are_the_judgments_parsed_one_by_one(name, stored):
    protocol, memo = get_protocol(name), {}
    for run, s in enumerate(stored):
        _same(judgment_of(0, run, "m", s, protocol, ITEM, memo), judgment_of(0, run, "m", s, protocol, ITEM))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from([0.0, -0.0, -1.0, -5.0, -25.0, 70.0, 12.5]) | st.floats(-100, 100),
                         min_size=1, max_size=10), min_size=1, max_size=20))
def test_an_aggregate_remembered_is_the_aggregate_computed(score_lists):
    from polyjudge.aggregate.runs import available_aggregators, get_aggregator
    from polyjudge.engine.result import _remembering

    for name in available_aggregators():
        agg = get_aggregator(name)
        remembered = _remembering(agg)
        for scores in score_lists + score_lists:  # each list twice: the second from memory
            try:
                want = agg(list(scores))
            except ValueError as exc:  # scores an aggregator refuses (geo: mixed signs) are refused again
                with pytest.raises(type(exc)):
                    remembered(list(scores))
                continue
            got = remembered(list(scores))
            assert repr(got) == repr(want) and type(got) is type(want)
