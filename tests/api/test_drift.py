"""``polyjudge.api`` drift: the sample of a run, its price, anchors kept byte for byte (issue 51)."""

from __future__ import annotations

import json

import pytest

from polyjudge.api import DriftConfig, check_drift, plan_drift
from polyjudge.api.drift_source import anchors_dir, load_anchor, save_anchor
from polyjudge.data.errors import InputError
from polyjudge.engine.plan import prompt_hash
from tests.helpers.cli import cli
from tests.helpers.openai_server import ScriptedServer


def answer(body):
    user = body["messages"][-1]["content"]
    return json.dumps({"score": 40 + sum(map(ord, user)) % 50})


@pytest.fixture
def judged(tmp_path):
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"src": f"s {i}", "tgt": f"t {i}", "system": f"S{i % 2}", "seg_id": str(i),
                                       "src_lang": "en", "tgt_lang": "de"}) + "\n" for i in range(12)))
    with ScriptedServer(answer) as srv:
        assert cli("judge", inp, "-o", tmp_path / "run", "--judge", f"openai:gpt-4o-mini@{srv.base_url}",
                   "-q", "--no-cache", "--runs", "2", "--temperature", "0.5") == 0
        yield tmp_path / "run", srv


def test_the_sample_is_the_runs_own_requests_run_0_and_priced_from_their_tokens(judged):
    run, _ = judged
    plan = plan_drift(DriftConfig(str(run), sample=5, seed=3))
    assert plan.requests == 5 and len({p.item.seg_id for p in plan.source.pairs}) == 5
    assert all(p.request.seed == 0 for p in plan.source.pairs)  # run 0's seed, as it was sent
    assert plan.estimate_usd is not None and 0 < plan.estimate_usd < plan.reserve_usd
    assert plan_drift(DriftConfig(str(run), sample=5, seed=3)).source.pairs == plan.source.pairs  # seeded
    assert plan_drift(DriftConfig(str(run), sample=50)).requests == 12  # at most the run's items


def test_check_drift_sends_the_sample_fresh_and_finds_nothing_in_an_unchanged_judge(judged):
    run, srv = judged
    before = len(srv.requests)
    result = check_drift(DriftConfig(str(run), sample=12))
    assert len(srv.requests) == before + 12
    assert not result.drift and result.sent == 12 and result.cost_usd is not None
    assert [r["seed"] for r in srv.requests[before:]] == [0] * 12


def test_an_anchor_keeps_each_request_byte_for_byte(judged, tmp_path):
    run, _ = judged
    plan = plan_drift(DriftConfig(str(run), sample=4))
    path = save_anchor(plan.source, "a1", tmp_path / "cache")
    assert path == anchors_dir(tmp_path / "cache") / "a1.json"
    back = load_anchor("a1", tmp_path / "cache")
    assert [prompt_hash(p.request) for p in back.pairs] == [prompt_hash(p.request) for p in plan.source.pairs]
    assert [(p.text, p.judge, p.item.seg_id) for p in back.pairs] == \
        [(p.text, p.judge, p.item.seg_id) for p in plan.source.pairs]


@pytest.mark.parametrize("name", ["../escape", "", "a/b", "x" * 65])
def test_an_anchor_name_is_one_plain_name(name, tmp_path):
    with pytest.raises(InputError):
        load_anchor(name, tmp_path)


@pytest.mark.parametrize("name", ["../up", "a/b", ".hidden", "nl\n", "x" * 65, ""])
def test_an_anchor_name_is_one_plain_file_name(name, tmp_path):
    """Anchor sets live beside the shared cache as NAME.json: a name that is a path, hidden, too long or
    ends in a newline (which a bare `$` in the pattern let through) is an InputError naming the setting."""
    from polyjudge.api.drift_source import anchor_path

    with pytest.raises(InputError) as err:
        anchor_path(name, tmp_path)
    assert err.value.field == "save" and "\n" not in str(err.value)
    assert anchor_path("weekly-gpt4o_1.0", tmp_path).name == "weekly-gpt4o_1.0.json"
