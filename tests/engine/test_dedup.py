"""One request per distinct cache key: items with the same prompt share one answer."""

import json

import pytest

from polyjudge.api import JudgeConfig, estimate, judge
from polyjudge.engine import core
from tests.engine.helpers import FAST_RETRY, duplicated_items, responder, same_outputs
from tests.helpers.openai_server import ScriptedServer


def config(srv, **kw):
    kw.setdefault("retry", FAST_RETRY)
    return JudgeConfig(judges=(f"openai:m@{srv.base_url}",), **kw)


def test_duplicated_items_are_sent_once_and_outputs_match_a_run_without_dedup(tmp_path):
    items = duplicated_items()
    with ScriptedServer(responder) as srv:
        result = judge(items, config(srv, runs=2), out=tmp_path / "dedup")
        sent = [(r["messages"][-1]["content"], r["seed"]) for r in srv.requests]
    # 10 items, 7 distinct prompts (A and B share segments 1 and 2; C repeats segment 3), 2 runs each
    assert len(sent) == len(set(sent)) == 14
    counts = result.manifest.counts
    assert counts["distinct_requests"] == 14 and counts["judgments"] == 20
    assert counts["shared_answers"] == 12  # A1, B1, A2, B2, C3, C4 in both runs
    assert counts["sent_this_session"] == 14 and counts["status_ok"] == 20

    with pytest.MonkeyPatch.context() as mp, ScriptedServer(responder) as srv:
        mp.setattr(core, "distinct_tasks", list)  # 0.1.0: one request per item and run
        judge(items, config(srv, runs=2), out=tmp_path / "per_item")
        assert len(srv.requests) == 20
    same_outputs(tmp_path / "dedup", tmp_path / "per_item")
    dedup = json.loads((tmp_path / "dedup" / "manifest.json").read_text())
    per_item = json.loads((tmp_path / "per_item" / "manifest.json").read_text())
    for key in ("signature", "failures", "config"):
        assert dedup[key] == per_item[key], key
    # tokens and cost count each distinct answer once (what 14 requests were billed)
    assert dedup["tokens"] == per_item["tokens"] and dedup["cost_usd"] == per_item["cost_usd"]
    assert dedup["counts"]["shared_answers"] == per_item["counts"]["shared_answers"] == 12


def test_resume_and_more_runs_keep_one_request_per_key(tmp_path):
    items = duplicated_items()
    with ScriptedServer(responder) as srv:
        judge(items, config(srv, runs=1), out=tmp_path / "run")
        judge(items, config(srv, runs=1), out=tmp_path / "run")
        assert len(srv.requests) == 7
        more = judge(items, config(srv, runs=3), out=tmp_path / "run")
        assert len(srv.requests) == 21
    assert more.manifest.counts["from_store"] == 10 and more.manifest.counts["sent_this_session"] == 14


def test_dry_run_counts_distinct_requests(tmp_path, capsys):
    items = duplicated_items()
    est = estimate(items, JudgeConfig(judges=("openai:gpt-4.1-mini@http://127.0.0.1:9/v1",), runs=2))
    assert est.requests_total == 20 and est.requests_to_send == 14 and est.shared == 6
    assert "6 judgment(s) answered by a request another item also sends" in est.describe()


def test_shared_answers_are_one_stored_row(tmp_path):
    import sqlite3

    items = duplicated_items()
    with ScriptedServer(responder) as srv:
        judge(items, config(srv, runs=1), out=tmp_path / "run")
    db = sqlite3.connect(tmp_path / "run" / "store.sqlite")
    assert db.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 7
    db.close()
    lines = [json.loads(x) for x in (tmp_path / "run" / "judgments.jsonl").read_text().splitlines()]
    by = {(x["system"], x["seg_id"]): x for x in lines}
    assert by[("A", "1")]["raw_text"] == by[("B", "1")]["raw_text"]
    assert by[("C", "3")]["score"] == by[("C", "4")]["score"]


def test_an_estimate_of_shared_prompts_counts_their_tokens_once():
    from polyjudge.engine.core import estimate as engine_estimate
    from polyjudge.engine.plan import plan_tasks
    from polyjudge.protocols import get_protocol

    items = duplicated_items()
    tasks = plan_tasks(items, get_protocol("da"), ["j"], runs=1, temperature=0.0, seed=0)
    est = engine_estimate(tasks, set(), prices={"j": (1.0, 1.0)})
    single = engine_estimate(tasks[:1], set(), prices={"j": (1.0, 1.0)})
    assert est.requests_to_send == 7 and est.calls == 7
    assert single.prompt_tokens < est.prompt_tokens < 10 * single.prompt_tokens
