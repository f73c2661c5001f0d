"""Issue 15 item 6: a streamed plan, bounded executor calls, outputs summarised once and reused."""

import dataclasses
import hashlib
import json
import os

import pytest

from polyjudge.api import JudgeConfig, judge
from polyjudge.data.chat import GenerateRequest, Message
from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from polyjudge.engine import core
from polyjudge.engine.plan import Plan, plan_tasks, prompt_hash
from polyjudge.protocols import get_protocol
from tests.engine.helpers import FAST_RETRY, duplicated_items, responder, same_outputs
from tests.helpers.openai_server import Reply, ScriptedServer


def reference_hash(request: GenerateRequest) -> str:
    """The prompt hash as 0.1.0 computed it: the canonical request (asdict) without its seed."""
    d = request.canonical()
    d.pop("seed", None)
    return hashlib.sha256(json.dumps(d, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


def documents(n_docs=4, segments=3, systems=("A", "B")):
    return [Item(src=f"source {d}.{s} ünïcode", tgt=f"{system} translation {d}.{s}", src_lang="en", tgt_lang="de",
                 doc_id=f"doc{d}", seg_id=str(s), system=system)
            for system in systems for d in range(n_docs) for s in range(segments)]


def config(srv, **kw):
    kw.setdefault("retry", FAST_RETRY)
    return JudgeConfig(judges=(f"openai:m@{srv.base_url}",), **kw)


@pytest.mark.parametrize("protocol", ["da", "mqm", "gemba-esa"])
def test_the_cheap_prompt_hash_is_the_canonical_one(protocol):
    plan = Plan(documents(), get_protocol(protocol), ["j"], runs=1, temperature=0.4, seed=0)
    for i in range(len(plan.items)):
        request = plan.request(i)
        assert prompt_hash(request) == reference_hash(request) == plan.prompt_hash(i)
    base = plan.request(0)
    for changed in (dict(n=3), dict(top_logprobs=5), dict(reasoning_effort="low"), dict(json_schema=None),
                    dict(messages=(Message("system", "a\x00b"), Message("user", "✓ \"quoted\"")))):
        request = dataclasses.replace(base, **changed)
        assert prompt_hash(request) == reference_hash(request), changed


def test_the_plan_gives_the_tasks_of_plan_tasks_in_order():
    items = documents() + duplicated_items()
    tasks = plan_tasks(items, get_protocol("mqm"), ["j1", "j2"], runs=3, temperature=0.4, seed=7)
    plan = Plan(items, get_protocol("mqm"), ["j1", "j2"], runs=3, temperature=0.4, seed=7)
    again = [t for i in plan.order for t in plan.tasks_of(i)]
    assert [(t.item_index, t.run_index, t.judge, t.key, t.request) for t in tasks] == \
        [(t.item_index, t.run_index, t.judge, t.key, t.request) for t in again]
    assert all(plan.keys_of(i) == [t.key for t in plan.tasks_of(i)] for i in range(len(items)))
    assert len(tasks) == plan.n_tasks == len(items) * 3 * 2
    # documents stay together: every doc's items are contiguous in the planned order
    docs = [items[i].doc_id for i in plan.order if items[i].doc_id is not None]
    assert all(docs.index(d) + docs.count(d) - 1 == len(docs) - 1 - docs[::-1].index(d) for d in set(docs))


def test_fingerprints_map_to_hashes_only_for_the_same_prompt():
    a = Plan(documents(), get_protocol("mqm"), ["j"], runs=1, temperature=0.4, seed=0)
    b = Plan(documents(), get_protocol("mqm"), ["j"], runs=1, temperature=0.4, seed=0)
    assert [a.fingerprint(i) for i in range(6)] == [b.fingerprint(i) for i in range(6)]
    for other in (Plan(documents(), get_protocol("mqm"), ["j"], runs=1, temperature=0.0, seed=0),
                  Plan(documents(), get_protocol("da"), ["j"], runs=1, temperature=0.4, seed=0),
                  Plan(documents(n_docs=4, segments=4), get_protocol("mqm"), ["j"], runs=1, temperature=0.4,
                       seed=0)):  # the same item in a longer document has another context
        assert other.fingerprint(0) != a.fingerprint(0)


def test_chunked_sending_matches_one_chunk_and_sends_each_prompt_once(tmp_path, monkeypatch):
    items = documents() + duplicated_items()
    with ScriptedServer(responder) as srv:
        whole = judge(items, config(srv, runs=2), out=tmp_path / "whole")
        n_whole = len(srv.requests)
    calls = []
    original = core._chunk_work

    def recording(*args, **kwargs):  # the local executor takes the chunks as one stream, prepared one by one
        work = original(*args, **kwargs)
        calls.append(len({t.item_index for t in work}))
        return work

    monkeypatch.setattr(core, "ITEMS_PER_CHUNK", 3)
    monkeypatch.setattr(core, "SCAN_MIN_TASKS", 0)  # answered keys from one scan of the store
    monkeypatch.setattr(core, "_chunk_work", recording)
    with ScriptedServer(responder) as srv:
        chunked = judge(items, config(srv, runs=2), out=tmp_path / "chunked")
        sent = [(r["messages"][-1]["content"], r["seed"]) for r in srv.requests]
    assert len(sent) == len(set(sent)) == n_whole == 2 * 31  # 24 + 7 distinct prompts, 2 runs
    assert len(calls) > 5 and max(calls) <= 3  # bounded chunks of work (test_first_run: prepared as reached)
    same_outputs(tmp_path / "whole", tmp_path / "chunked")
    assert whole.manifest.counts == chunked.manifest.counts
    assert whole.manifest.tokens == chunked.manifest.tokens


def stamp(path):
    st = path.stat()
    return st.st_ino, st.st_mtime_ns, st.st_size


def test_a_finished_run_is_not_parsed_or_rewritten_again(tmp_path, monkeypatch):
    items = documents()
    run = tmp_path / "run"
    outputs = ("judgments.jsonl", "segments.tsv", "systems.tsv", "items.jsonl", "aggregates.tsv")
    with ScriptedServer(responder) as srv:
        first = judge(items, config(srv, runs=2), out=run)
        before = {n: stamp(run / n) for n in outputs}
        first_lines = (run / "judgments.jsonl").read_text()

        def no_parsing(*args, **kwargs):
            raise AssertionError("a finished run was summarised again")

        with monkeypatch.context() as mp:
            mp.setattr(core, "collect", no_parsing)
            again = judge(items, config(srv, runs=2, concurrency=3), out=run)
        assert len(srv.requests) == 48  # 24 items x 2 runs, all in the first session
    assert {n: stamp(run / n) for n in outputs} == before
    c = again.manifest.counts
    assert c["sent_this_session"] == 0 and c["from_store"] == 48 and c["status_ok"] == 48
    assert {k: v for k, v in c.items() if k not in ("sent_this_session", "from_store")} == \
        {k: v for k, v in first.manifest.counts.items() if k not in ("sent_this_session", "from_store")}
    assert again.manifest.config.concurrency == 3  # the manifest is the new session's
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["counts"]["from_store"] == 48 and manifest["outputs"] == {"mtme_name": "polyjudge-da-src"}
    assert again.system_rows() == first.system_rows() and again.failures() == first.failures()
    assert again.manifest.tokens == first.manifest.tokens and again.manifest.cost_usd == first.manifest.cost_usd
    # the judgments are still there for whoever asks, read back from the store
    assert [(j.item_index, j.run_index, j.score) for j in again.judgments] == \
        [(j.item_index, j.run_index, j.score) for j in first.judgments]
    assert again.segment_scores() == first.segment_scores()
    # written elsewhere, the same files
    again.write(tmp_path / "copy")
    assert (tmp_path / "copy" / "judgments.jsonl").read_text() == first_lines
    for name in ("segments.tsv", "systems.tsv", "aggregates.tsv"):
        assert (tmp_path / "copy" / name).read_text() == (run / name).read_text()


def test_changed_outputs_or_settings_are_written_again(tmp_path):
    items = documents()
    run = tmp_path / "run"
    with ScriptedServer(responder) as srv:
        judge(items, config(srv, runs=2), out=run)
        good = (run / "segments.tsv").read_text()
        (run / "segments.tsv").write_text(good.replace("\t", " ", 3))  # damaged by hand
        judge(items, config(srv, runs=2), out=run)
        assert (run / "segments.tsv").read_text() == good
        os.remove(run / "systems.tsv")
        judge(items, config(srv, runs=2), out=run)
        assert (run / "systems.tsv").is_file()
        mean = (run / "segments.tsv").read_text()
        judge(items, config(srv, runs=2, aggregator="max"), out=run)  # another aggregation: new scores
        assert (run / "segments.tsv").read_text() != mean
        # every segment unscored: refused (issue 23); the API names its field (the CLI shows --min-runs)
        with pytest.raises(InputError, match="min_runs"):
            judge(items, config(srv, runs=2, min_runs=3), out=run)
        assert (run / "segments.tsv").read_text() != mean  # the last good outputs are kept
        assert len(srv.requests) == 48


def test_a_failed_request_is_retried_on_resume_and_outputs_follow(tmp_path):
    items = documents(n_docs=1)
    run = tmp_path / "run"
    failing = {"on": True}

    def flaky(body):
        if failing["on"] and "A translation 0.0" in body["messages"][-1]["content"]:
            return Reply(status=400, content="bad")
        return responder(body)

    with ScriptedServer(flaky) as srv:
        first = judge(items, config(srv, runs=1, max_failure_rate=None), out=run)
        assert first.request_failed_count() == 1
        failing["on"] = False
        again = judge(items, config(srv, runs=1, max_failure_rate=None), out=run)
    assert again.request_failed_count() == 0 and again.manifest.counts["sent_this_session"] == 1
    statuses = [json.loads(x)["status"] for x in (run / "judgments.jsonl").read_text().splitlines()]
    assert statuses == ["ok"] * len(items)


def test_reasoning_is_kept_only_where_the_model_returned_some(tmp_path):
    items = documents(n_docs=1, segments=2, systems=("A",))

    def thinking(body):
        answer = responder(body)
        return f"<think>weighing {body['seed']}</think>{answer}" if "0.0" in body["messages"][-1]["content"] \
            else answer

    with ScriptedServer(thinking) as srv:
        result = judge(items, config(srv, runs=2), out=tmp_path / "run")
    lines = [json.loads(x) for x in (tmp_path / "run" / "judgments.jsonl").read_text().splitlines()]
    assert [x.get("reasoning") for x in lines] == ["weighing 0", "weighing 1", None, None]
    assert ["reasoning" in x for x in lines] == [True, True, False, False]
    assert all(x["status"] == "ok" for x in lines)  # the thinking is never parsed
    assert [j.reasoning for j in result.judgments] == ["weighing 0", "weighing 1", None, None]
    from polyjudge.rundir import RunDir

    assert [j.reasoning for j in RunDir.open(tmp_path / "run").judgments] == ["weighing 0", "weighing 1", None, None]


def test_judgments_without_a_run_directory_are_a_plain_list():
    items = documents(n_docs=1)

    class Backend:
        model = "m"

        async def generate(self, request):
            from polyjudge.data.chat import GenerateResult

            return GenerateResult(json.dumps({"score": 60 + request.seed}), "stop")

        async def aclose(self):
            pass

    result = core.run(items, get_protocol("da"), [Backend()], runs=2)
    assert isinstance(result.judgments, list) and len(result.judgments) == 12
    assert result.segment_scores() == [60.5] * 6
    assert result.status_counts() == {"ok": 12}


def test_an_unwritten_result_leaves_no_spool_behind(tmp_path):
    import gc

    with ScriptedServer(responder) as srv:
        result = judge(documents(n_docs=1), config(srv, runs=1))  # no run directory: nothing on disk
        assert result.judgments
        store = tmp_path / "store.sqlite"
        from polyjudge.backends.openai import OpenAIBackend

        kept = core.run(documents(n_docs=1), get_protocol("da"), [OpenAIBackend("m", srv.base_url)], runs=1,
                        store_path=store, retry=FAST_RETRY)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".judgments")]
    del kept
    gc.collect()
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".judgments")]


def test_bulk_read_gives_missing_values_their_defaults(tmp_path):
    """Store.get_many (a million rows are read when a large run is summarised) gives missing values defaults:
    NULL counts and latency read as 0, an empty or NULL channel as 'live' (as a store written by an older
    polyjudge holds them), and values that are there come back unchanged."""
    from polyjudge.engine.store import LIVE, Store, StoredResponse

    store = Store(tmp_path / "store.sqlite")
    store._db.execute("INSERT INTO responses (key, prompt_hash, judge, run_index, status, text, finish_reason, "
                      "prompt_tokens, completion_tokens, latency_s, error, attempts, created, channel) VALUES "
                      "('a','h','',0,'done','x','stop',NULL,NULL,NULL,NULL,1,0,''),"
                      "('b','h','j',1,'done','y','length',7,3,0.25,NULL,2,0,'batch'),"
                      "('c','h','j',2,'failed',NULL,NULL,0,0,0,'boom',6,0,NULL)")
    got = store.get_many(["a", "b", "c", "missing"])
    store.close()
    assert got == {
        "a": StoredResponse("a", "done", "x", "stop", 0, 0, 0.0, None, 1, 0, 0, LIVE, ""),
        "b": StoredResponse("b", "done", "y", "length", 7, 3, 0.25, None, 2, 0, 0, "batch", "j"),
        "c": StoredResponse("c", "failed", None, None, 0, 0, 0.0, "boom", 6, 0, 0, LIVE, "j"),
    }
    assert isinstance(got["a"].latency_s, float)


def test_commits_per_loop_turn_give_the_outputs_of_one_commit_per_answer(tmp_path, monkeypatch):
    """The store's deferred commits (one per turn of the event loop, engine/store.py) against the reference
    path (every row committed as written): the same judgments, tables, mtme files, counts and tokens."""
    import contextlib

    from polyjudge.engine.store import Store

    items = documents() + duplicated_items()
    with ScriptedServer(responder) as srv:
        fast = judge(items, config(srv, runs=3, concurrency=8), out=tmp_path / "fast")
    monkeypatch.setattr(Store, "deferring", lambda self: contextlib.nullcontext())
    with ScriptedServer(responder) as srv:
        reference = judge(items, config(srv, runs=3, concurrency=8), out=tmp_path / "reference")
    same_outputs(tmp_path / "fast", tmp_path / "reference")
    assert fast.manifest.counts == reference.manifest.counts
    assert fast.manifest.tokens == reference.manifest.tokens
    assert fast.manifest.counts["status_ok"] == 3 * len(items)
