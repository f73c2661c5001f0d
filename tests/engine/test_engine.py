import json
import time

import pytest

from polyjudge.backends.openai import OpenAIBackend
from polyjudge.engine import RetryPolicy, run
from polyjudge.protocols import get_protocol
from polyjudge.rundir import OK, PARSE_FAILED, REQUEST_FAILED, TRUNCATED
from tests.engine.conftest import da_score
from tests.helpers.openai_server import Reply, ScriptedServer

FAST_RETRY = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.02)


def judge(srv, items, tmp_path, **kw):
    kw.setdefault("retry", FAST_RETRY)
    return run(items, get_protocol("da"), [OpenAIBackend("judge-1", srv.base_url)],
               store_path=tmp_path / "store.sqlite", **kw)


def test_runs_outputs_and_run_directory(items, da_responder, tmp_path):
    with ScriptedServer(da_responder) as srv:
        result = judge(srv, items, tmp_path, runs=3, temperature=0.0)
    assert len(srv.requests) == 18
    # runs are separate samples with their own seed, even at temperature 0
    assert sorted(r["seed"] for r in srv.requests if "source 1" in r["messages"][-1]["content"]
                  and "A translation" in r["messages"][-1]["content"]) == [0, 1, 2]
    scores = result.segment_scores()
    assert scores[0] == pytest.approx(81 + 1)  # mean of 81, 82, 83
    assert scores[3] == pytest.approx(51 + 1)
    result.write(tmp_path / "run")
    run_dir = tmp_path / "run"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["signature"].startswith("da|judge:judge-1|prompt:")
    assert "|runs:3|agg:mean|T:0|version:" in manifest["signature"]
    lines = [json.loads(x) for x in (run_dir / "judgments.jsonl").read_text().splitlines()]
    assert len(lines) == 18 and {x["status"] for x in lines} == {"ok"}
    assert {(x["seg_id"], x["system"], x["run_index"]) for x in lines} == {
        (str(s), y, r) for s in range(1, 4) for y in "AB" for r in range(3)}
    seg = [row.split("\t") for row in (run_dir / "segments.tsv").read_text().splitlines()]
    assert seg[0][:8] == ["system", "doc_id", "seg_id", "src_lang", "tgt_lang", "score", "runs_ok", "runs_failed"]
    assert [(r[0], r[2]) for r in seg[1:]] == [(it.system, it.seg_id) for it in items]
    assert float(seg[1][5]) == pytest.approx(82.0) and seg[1][6:8] == ["3", "0"]
    systems = (run_dir / "systems.tsv").read_text().splitlines()
    assert systems[0] == "system\tscore\tn_segments\tn_unscored"
    assert systems[1].split("\t")[:3] == ["A", "83.0", "3"]
    mtme = (run_dir / "mtme" / "polyjudge-da-src.seg.score").read_text().splitlines()
    assert mtme[:3] == ["A\t82.0", "A\t83.0", "A\t84.0"] and len(mtme) == 6
    assert (run_dir / "mtme" / "polyjudge-da-src.sys.score").read_text().splitlines() == ["A\t83.0", "B\t53.0"]


def test_resume_sends_nothing_twice(items, da_responder, tmp_path):
    with ScriptedServer(da_responder) as srv:
        first = judge(srv, items, tmp_path, runs=2)
        n = len(srv.requests)
        again = judge(srv, items, tmp_path, runs=2)
        assert len(srv.requests) == n == 12
        # more runs: only the new run indices are sent
        more = judge(srv, items, tmp_path, runs=3)
        assert len(srv.requests) == 18
    assert first.segment_scores() == again.segment_scores()
    assert more.manifest.counts["from_store"] == 12


def test_failures_are_recorded_never_scored(items, tmp_path):
    def responder(body):
        user = body["messages"][-1]["content"]
        if "A translation 1" in user:
            return "I think it is quite good, maybe 70 or 80."
        if "A translation 2" in user:
            return Reply(content='{"score": 9', finish_reason="length")
        if "A translation 3" in user:
            return Reply(status=503)
        return json.dumps({"score": da_score(body)})
    with ScriptedServer(responder) as srv:
        result = judge(srv, items, tmp_path, runs=1)
    by_seg = {(result.items[j.item_index].system, result.items[j.item_index].seg_id): j for j in result.judgments}
    assert by_seg[("A", "1")].status == PARSE_FAILED and "ambiguous" in by_seg[("A", "1")].error
    assert by_seg[("A", "2")].status == TRUNCATED
    assert by_seg[("A", "3")].status == REQUEST_FAILED and "503" in by_seg[("A", "3")].error
    assert "after 3 attempts" in by_seg[("A", "3")].error
    assert by_seg[("B", "1")].status == OK
    assert result.segment_scores()[:3] == [None, None, None]
    assert result.manifest.counts["status_ok"] == 3
    assert sum(result.failures().values()) == 3
    result.write(tmp_path / "run")
    rows = (tmp_path / "run" / "segments.tsv").read_text().splitlines()
    assert rows[1].split("\t")[5:8] == ["", "0", "1"]
    assert (tmp_path / "run" / "systems.tsv").read_text().splitlines()[2].split("\t") == ["A", "", "0", "3"]
    # a resume retries the request that failed in transport, not the answered ones
    with ScriptedServer(lambda b: json.dumps({"score": 1})) as srv2:
        judge(srv2, items, tmp_path, runs=1)
    assert len(srv2.requests) == 1 and "A translation 3" in srv2.requests[0]["messages"][-1]["content"]


def test_retry_after_is_honoured(items, da_responder, tmp_path):
    calls = {"n": 0}

    def responder(body):
        calls["n"] += 1
        if calls["n"] == 1:
            return Reply(status=429, headers={"Retry-After": "0.4"})
        return da_responder(body)
    start = time.perf_counter()
    with ScriptedServer(responder) as srv:
        result = judge(srv, items[:1], tmp_path, runs=1)
    assert time.perf_counter() - start >= 0.4
    assert result.judgments[0].status == OK and result.manifest.counts["retries"] == 1


def test_concurrency_limit_and_prefix_order(items, da_responder, tmp_path):
    import threading
    live, peak, lock = [0], [0], threading.Lock()

    def responder(body):
        with lock:
            live[0] += 1
            peak[0] = max(peak[0], live[0])
        time.sleep(0.05)
        with lock:
            live[0] -= 1
        return da_responder(body)
    with ScriptedServer(responder) as srv:
        judge(srv, items, tmp_path, runs=2, concurrency=3)
    assert peak[0] <= 3
    # documents are judged together: all d1 requests before d2's
    docs = ["d2" if "source 3" in r["messages"][-1]["content"] else "d1" for r in srv.requests]
    assert docs.index("d2") > max(i for i, d in enumerate(docs) if d == "d1") - 3


def test_dry_run_estimates_without_sending(items, da_responder, tmp_path):
    import asyncio

    from polyjudge.engine import Estimate, RunSpec, run_async
    with ScriptedServer(da_responder) as srv:
        est = asyncio.run(run_async(items, RunSpec.of(get_protocol("da"), [OpenAIBackend("j", srv.base_url)], runs=4,
                                                   dry_run=True, store_path=tmp_path / "s.sqlite")))
    assert isinstance(est, Estimate) and est.requests_to_send == 24 and not srv.requests
    assert est.prompt_tokens > 0 and "24 requests" in est.describe()
