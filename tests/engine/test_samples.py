"""--samples-per-request: n choices per request, choice k stored as run r+k; fallback when n is refused."""

import json
import logging
import sqlite3

from polyjudge.api import JudgeConfig, judge
from polyjudge.data.chat import Usage
from polyjudge.engine import run
from polyjudge.engine.plan import plan_tasks, sample_groups
from polyjudge.engine.runner import split_usage
from polyjudge.protocols import get_protocol
from tests.engine.conftest import da_score
from tests.engine.helpers import FAST_RETRY, SampleBackend, same_outputs
from tests.helpers.openai_server import ScriptedServer


def judged(items, backend, out, **kw):
    out.mkdir(parents=True, exist_ok=True)
    result = run(items, get_protocol("da"), [backend], store_path=out / "store.sqlite", retry=FAST_RETRY, **kw)
    result.write(out)
    return result


def test_groups_keep_one_key_per_run(items):
    tasks = plan_tasks(items, get_protocol("da"), ["j"], runs=5, temperature=0.0, seed=0)
    groups = sample_groups(tasks, 3)
    assert [len(g) for g in groups[:2]] == [3, 2] and len(groups) == 12
    assert [t.run_index for t in groups[0]] == [0, 1, 2] and groups[0][0].request.seed == 0
    assert len({t.key for g in groups for t in g}) == 30


def test_choice_k_answers_run_r_plus_k_and_outputs_match_single_requests(items, tmp_path):
    grouped, single = SampleBackend(), SampleBackend()
    result = judged(items, grouped, tmp_path / "grouped", runs=5, samples_per_request=3)
    judged(items, single, tmp_path / "single", runs=5)
    assert len(grouped.requests) == 6 * 2 and [r.n for r in grouped.requests[:2]] == [3, 2]
    assert len(single.requests) == 30
    same_outputs(tmp_path / "grouped", tmp_path / "single")
    assert result.manifest.counts["multi_sample_requests"] == 12
    # each request's usage is shared among its choices: the shares add up to what was billed
    db = sqlite3.connect(tmp_path / "grouped" / "store.sqlite")
    assert db.execute("SELECT SUM(prompt_tokens), SUM(completion_tokens) FROM responses").fetchone() == (120, 90)
    db.close()


def test_a_server_that_rejects_n_gets_single_requests_said_once(items, tmp_path, caplog):
    backend = SampleBackend(mode="reject")
    with caplog.at_level(logging.WARNING, logger="polyjudge"):
        result = judged(items, backend, tmp_path / "run", runs=4, samples_per_request=4, concurrency=1)
    assert result.status_counts() == {"ok": 24}
    assert [r.n for r in backend.requests].count(4) == 1  # asked once, then one request per run
    assert len(backend.requests) == 1 + 24
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "rejected n" in warnings[0] and "one request per run" in warnings[0]
    assert result.samples_fallback == {"judge-1": "the server rejected n (several samples per request)"}
    assert [j.score for j in result.judgments[:4]] == [
        da_score({"messages": [{"content": backend.requests[1].messages[-1].content}], "seed": s}) for s in range(4)]


def test_a_server_that_ignores_n_keeps_its_one_choice_and_sends_the_rest_singly(items, tmp_path, caplog):
    backend = SampleBackend(mode="ignore")
    with caplog.at_level(logging.WARNING, logger="polyjudge"):
        result = judged(items, backend, tmp_path / "run", runs=3, samples_per_request=3, concurrency=1)
    assert result.status_counts() == {"ok": 18}
    assert len(backend.requests) == 1 + 2 + 5 * 3  # the first group: one choice kept, two runs sent again
    assert len([r for r in caplog.records if "n was ignored (1 of 3 choices came back)" in r.getMessage()]) == 1


def test_split_usage_adds_up():
    parts = split_usage(Usage(10, 7, 4, 1), 3)
    assert [p.prompt_tokens for p in parts] == [4, 3, 3] and sum(p.completion_tokens for p in parts) == 7
    assert sum(p.cached_prompt_tokens for p in parts) == 4 and sum(p.reasoning_tokens for p in parts) == 1


def da_responder(body):
    return json.dumps({"score": da_score(body)})


def test_against_the_server_outputs_match_and_a_rejecting_server_falls_back(items, tmp_path):
    def cfg(srv, **kw):
        return JudgeConfig(judges=(f"openai:m@{srv.base_url}",), runs=4, retry=FAST_RETRY, **kw)

    with ScriptedServer(da_responder) as srv:
        judge(items, cfg(srv), out=tmp_path / "single")
    with ScriptedServer(da_responder) as srv:
        judge(items, cfg(srv, samples_per_request=4), out=tmp_path / "grouped")
        asked = [r.get("n", 1) for r in srv.requests]
    same_outputs(tmp_path / "single", tmp_path / "grouped")
    if 4 in asked:  # the openai backend sends n: one request per item
        assert len(asked) == 6
    with ScriptedServer(da_responder, reject_n=True) as srv:
        result = judge(items, cfg(srv, samples_per_request=4, concurrency=1), out=tmp_path / "rejected")
        asked = [r.get("n", 1) for r in srv.requests]
    assert result.status_counts() == {"ok": 24}
    assert asked.count(4) <= 1 and asked.count(1) == 24
    same_outputs(tmp_path / "single", tmp_path / "rejected")


def test_local_judges_and_recordings_are_never_asked_for_n(tmp_path):
    from polyjudge.api import InputError

    config = JudgeConfig(judges=("openai:m@http://127.0.0.1:9/v1",), samples_per_request=2,
                         record=str(tmp_path / "rec.jsonl"))
    try:
        judge([], config, out=tmp_path / "run")
    except InputError as exc:
        assert "--record" in str(exc)
    else:
        raise AssertionError("--record with --samples-per-request must be refused")
