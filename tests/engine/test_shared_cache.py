"""The machine's shared response cache, end to end against the scripted OpenAI server.

A second run directory with the same judging sends nothing and writes the
same bytes; another aggregator sends nothing; --no-cache, a cleared cache and
any change of seed, runs or temperature send again; failures are never cached;
cached answers are free for the cost and the spending cap; no API key reaches
the cache file.
"""

import importlib.util
import json
import sqlite3

import pytest

from tests.helpers.cli import cli
from tests.helpers.extras import needs_extra, skip_reason
from tests.helpers.openai_server import Reply, ScriptedServer

OUTPUTS = ("judgments.jsonl", "segments.tsv", "systems.tsv")


def write_items(path, n=6):
    path.write_text("".join(json.dumps({"src": f"source {i}", "tgt": f"translation {i}", "system": f"S{i % 2}",
                                        "seg_id": str(i), "src_lang": "en", "tgt_lang": "de"}) + "\n"
                            for i in range(n)))
    return path


def answer(body):
    """A score that depends on the item and the seed, so a copy from another run would show."""
    user = body["messages"][-1]["content"]
    return json.dumps({"score": sum(map(ord, user)) % 60 + int(body.get("seed") or 0)})


def cache_rows(folder):
    db = sqlite3.connect(folder / "responses.sqlite")
    try:
        return db.execute("SELECT scope, key, model, text, finish_reason FROM answers ORDER BY key").fetchall()
    finally:
        db.close()


def store_keys(run_dir, status="done"):
    db = sqlite3.connect(run_dir / "store.sqlite")
    try:
        return {k for (k,) in db.execute("SELECT key FROM responses WHERE status=?", (status,))}
    finally:
        db.close()


def manifest(run_dir):
    return json.loads((run_dir / "manifest.json").read_text())


@pytest.fixture
def study(tmp_path):
    """Items, a cache folder and the judge command's arguments against a scripted server."""
    inp = write_items(tmp_path / "in.jsonl")
    cache = tmp_path / "cache"

    def args(srv, out, *more):
        return ["judge", inp, "-o", tmp_path / out, "--judge", f"openai:m@{srv.base_url}", "--runs", "2", "-q",
                "--cache", cache, *more]

    return args, cache


def test_second_run_directory_sends_nothing_and_writes_the_same_bytes(tmp_path, study, capsys):
    args, cache = study
    with ScriptedServer(answer) as srv:
        assert cli(*args(srv, "first")) == 0
        assert len(srv.requests) == 12
        capsys.readouterr()
        assert cli(*args(srv, "second")) == 0
        assert len(srv.requests) == 12  # nothing sent
        err = capsys.readouterr().err
    assert "(sent now: 0, from store: 0, from cache: 12, retries: 0)" in err
    for name in OUTPUTS:
        assert (tmp_path / "first" / name).read_bytes() == (tmp_path / "second" / name).read_bytes(), name
    counts = manifest(tmp_path / "second")["counts"]
    assert counts["from_cache"] == 12 and counts["answered_from_cache"] == 12 and counts["sent_this_session"] == 0
    # The cache's keys are the run store's own keys, one entry per request.
    assert {r[1] for r in cache_rows(cache)} == store_keys(tmp_path / "first") == store_keys(tmp_path / "second")


def test_another_aggregator_sends_nothing(tmp_path, study):
    args, _ = study
    with ScriptedServer(answer) as srv:
        assert cli(*args(srv, "mean")) == 0
        assert cli(*args(srv, "median", "--aggregator", "median")) == 0
        assert len(srv.requests) == 12
    assert manifest(tmp_path / "median")["config"]["aggregator"] == "median"
    assert (tmp_path / "mean" / "judgments.jsonl").read_bytes() == \
        (tmp_path / "median" / "judgments.jsonl").read_bytes()


def test_no_cache_and_a_cleared_cache_send_again(tmp_path, study, capsys):
    args, cache = study
    with ScriptedServer(answer) as srv:
        assert cli(*args(srv, "first")) == 0
        assert cli(*args(srv, "uncached")[:-2], "--no-cache") == 0
        assert len(srv.requests) == 24  # --no-cache: neither read ...
        assert len(cache_rows(cache)) == 12  # ... nor filled (no new entries)
        assert cli("cache", "clear", "--cache", cache) == 0
        assert "removed 12 entries" in capsys.readouterr().err
        assert cli(*args(srv, "after-clear")) == 0
        assert len(srv.requests) == 36
        assert cli(*args(srv, "again")) == 0
        assert len(srv.requests) == 36


@pytest.mark.parametrize("change", [("--seed", "7"), ("--runs", "3"), ("--temperature", "0.5")])
def test_other_seeds_runs_and_temperatures_are_other_entries(tmp_path, study, change):
    args, cache = study
    with ScriptedServer(answer) as srv:
        assert cli(*args(srv, "first")) == 0
        assert cli(*args(srv, "changed", *change)) == 0
        sent = srv.requests[12:]
    # Three runs: runs 0 and 1 are the first run's entries, run 2 is new. A seed or temperature changes all.
    assert len(sent) == (6 if change[0] == "--runs" else 12)
    if change[0] == "--runs":
        assert {b["seed"] for b in sent} == {2}
    assert len(cache_rows(cache)) == 12 + len(sent)


def test_failures_are_never_cached_and_anomalies_are_kept_as_they_are(tmp_path, study):
    args, cache = study

    def flaky(body):
        user = body["messages"][-1]["content"]
        if "translation 1" in user:
            return Reply(status=400, content="bad request")  # not retried: a failure, never an answer
        if "translation 2" in user:
            return Reply(content='{"score": 5', finish_reason="length")  # truncated: an answer, as it is
        return answer(body)

    with ScriptedServer(flaky) as srv:
        assert cli(*args(srv, "first", "--max-failure-rate", "1")) == 0
        failed = store_keys(tmp_path / "first", "failed")
        assert len(failed) == 2
        rows = cache_rows(cache)
        assert len(rows) == 10 and not failed & {r[1] for r in rows}
        assert sum(1 for r in rows if r[4] == "length") == 2
        before = len(srv.requests)
        assert cli(*args(srv, "second", "--max-failure-rate", "1")) == 0
        resent = srv.requests[before:]
    assert len(resent) == 2 and all("translation 1" in b["messages"][-1]["content"] for b in resent)
    first = [json.loads(x) for x in (tmp_path / "first" / "judgments.jsonl").read_text().splitlines()]
    second = [json.loads(x) for x in (tmp_path / "second" / "judgments.jsonl").read_text().splitlines()]
    assert [j["status"] for j in first] == [j["status"] for j in second]
    assert sum(j["status"] == "truncated" for j in second) == 2


def test_cached_answers_are_free_for_the_cost_and_the_cap(tmp_path, study):
    args, _ = study
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"m": {"input": 1000, "output": 1000}}))
    with ScriptedServer(answer) as srv:
        assert cli(*args(srv, "first", "--prices", prices)) == 0
        paid = manifest(tmp_path / "first")["cost_usd"]
        assert paid > 0.01
        # A cap far below what the answers first cost: they are in the cache, so nothing is spent.
        assert cli(*args(srv, "second", "--prices", prices, "--max-cost", "0.0001")) == 0
        assert len(srv.requests) == 12
    m = manifest(tmp_path / "second")
    assert m["cost_usd"] == 0 and m["tokens"] == manifest(tmp_path / "first")["tokens"]


def test_dry_run_counts_cached_answers_as_answered(tmp_path, study, capsys):
    args, _ = study
    with ScriptedServer(answer) as srv:
        assert cli(*args(srv, "first")) == 0
        capsys.readouterr()
        assert cli(*args(srv, "planned", "--runs", "3", "--dry-run")) == 0
    out = capsys.readouterr().out
    assert "6 requests to send (12 of 18 already in the store, 12 of them in the shared cache)" in out
    assert not (tmp_path / "planned").exists()


def test_no_api_key_reaches_the_cache(tmp_path, study, monkeypatch):
    secret = "sk-test-0123456789abcdefghijklmnopqrstuv"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    args, cache = study
    seen_headers = []

    def echoing(body):  # a hostile server that puts the key it was sent into its answers
        return Reply(content=json.dumps({"score": 50, "note": f"your key is {secret}"}))

    with ScriptedServer(echoing) as srv:
        original = srv._httpd.RequestHandlerClass.do_POST

        def spy(handler):
            seen_headers.append(handler.headers.get("Authorization", ""))
            return original(handler)

        srv._httpd.RequestHandlerClass.do_POST = spy
        try:
            assert cli(*args(srv, "first")) == 0
        finally:
            srv._httpd.RequestHandlerClass.do_POST = original
    assert seen_headers and all(secret in h for h in seen_headers)  # the key was really sent
    on_disk = b"".join(p.read_bytes() for p in cache.iterdir() if p.is_file())
    assert secret.encode() not in on_disk and b"[REDACTED]" in on_disk


def test_backfill_offers_a_run_judged_without_the_cache(tmp_path, study):
    args, cache = study
    with ScriptedServer(answer) as srv:
        assert cli(*args(srv, "first")[:-2], "--no-cache") == 0
        assert not (cache / "responses.sqlite").exists()
        # The same directory again, with the cache: nothing to send, its answers go to the cache ...
        assert cli(*args(srv, "first")) == 0
        assert len(cache_rows(cache)) == 12
        # ... so a new directory sends nothing.
        assert cli(*args(srv, "second")) == 0
        assert len(srv.requests) == 12


def test_two_servers_with_one_model_name_never_answer_for_each_other(tmp_path, study):
    args, cache = study
    with ScriptedServer(answer) as one, ScriptedServer(lambda b: json.dumps({"score": 1})) as other:
        assert cli(*args(one, "first")) == 0
        assert cli(*args(other, "second")) == 0
        assert len(other.requests) == 12
    assert len({r[0] for r in cache_rows(cache)}) == 2


def test_batch_mode_reads_the_cache_before_building_a_batch_and_fills_it(tmp_path, study):
    args, cache = study
    with ScriptedServer(answer) as srv:
        assert cli(*args(srv, "by-batch", "--batch")) == 0
        assert len(srv.batch_lines) == 12 and not srv.requests
        assert len(cache_rows(cache)) == 12
        assert cli(*args(srv, "live")) == 0  # live, from what the batch paid for
        assert cli(*args(srv, "batch-again", "--batch")) == 0  # no new batch
        assert len(srv.batch_lines) == 12 and not srv.requests
    for name in ("segments.tsv", "systems.tsv"):
        assert (tmp_path / "by-batch" / name).read_bytes() == (tmp_path / "live" / name).read_bytes()


def test_record_sends_to_record_but_fills_the_cache(tmp_path, study):
    args, cache = study
    with ScriptedServer(answer) as srv:
        assert cli(*args(srv, "first")) == 0
        assert cli(*args(srv, "recorded", "--record", tmp_path / "rec.jsonl")) == 0
        assert len(srv.requests) == 24
    assert len((tmp_path / "rec.jsonl").read_text().splitlines()) == 12
    assert len(cache_rows(cache)) == 12


def test_a_cache_path_that_is_a_file_exits_2(tmp_path, study, capsys):
    args, _ = study
    blocker = tmp_path / "blocker"
    blocker.write_text("mine")
    with ScriptedServer(answer) as srv:
        assert cli(*args(srv, "first")[:-1], blocker) == 2
        assert not srv.requests
    err = capsys.readouterr().err
    assert "blocker" in err and "cache" in err and "Traceback" not in err
    assert blocker.read_text() == "mine" and not (tmp_path / "first").exists()


@pytest.fixture
def ray_cluster():
    if importlib.util.find_spec("ray") is None:
        pytest.skip(skip_reason("ray") or "")
    import logging

    import ray

    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    yield ray
    ray.shutdown()


@needs_extra("ray")
def test_the_ray_executors_driver_reads_and_fills_the_same_cache(tmp_path, ray_cluster):
    """The hook sits where tasks are handed to any executor: the Ray driver's answers fill the cache,
    and a Ray run finds there what another run paid for."""
    from polyjudge.backends.openai import OpenAIBackend
    from polyjudge.backends.registry import BackendSettings, JudgeSpec
    from polyjudge.data.readers import read_items
    from polyjudge.engine import run
    from polyjudge.engine.ray_executor import RayExecutor, RayOptions
    from polyjudge.protocols import get_protocol

    items = read_items(write_items(tmp_path / "in.jsonl"))
    cache = tmp_path / "cache"

    def judged(srv, out, ray):
        (tmp_path / out).mkdir()
        executor = RayExecutor([JudgeSpec("openai", "m", srv.base_url)], BackendSettings(), RayOptions(ray_actors=1)) \
            if ray else None
        result = run(items, get_protocol("da"), [OpenAIBackend("m", srv.base_url)], runs=2, concurrency=4,
                     store_path=tmp_path / out / "store.sqlite", cache_path=cache, executor=executor)
        result.write(tmp_path / out)
        return result

    with ScriptedServer(answer) as srv:
        judged(srv, "by-ray", ray=True)
        assert len(srv.requests) == 12 and len(cache_rows(cache)) == 12  # Ray's answers filled the cache
        assert judged(srv, "local", ray=False).manifest.counts["from_cache"] == 12
        assert judged(srv, "by-ray-again", ray=True).manifest.counts["from_cache"] == 12
        assert len(srv.requests) == 12
    for name in OUTPUTS:
        assert (tmp_path / "by-ray" / name).read_bytes() == (tmp_path / "by-ray-again" / name).read_bytes()


def test_a_cache_that_fails_mid_run_costs_the_run_nothing(tmp_path, study, monkeypatch, caplog):
    import polyjudge.cache.store as cache_store

    args, cache = study

    def broken(self, *a, **k):
        raise sqlite3.OperationalError("disk I/O error")

    with ScriptedServer(answer) as srv:
        monkeypatch.setattr(cache_store.ResponseCache, "put_many", broken)
        assert cli(*args(srv, "first")) == 0
        assert "could not keep 12 answer(s)" in caplog.text
        monkeypatch.setattr(cache_store.ResponseCache, "get_many", broken)
        assert cli(*args(srv, "second")) == 0  # a cache that cannot be read: the run sends
        assert len(srv.requests) == 24
    assert (tmp_path / "first" / "segments.tsv").read_bytes() == (tmp_path / "second" / "segments.tsv").read_bytes()


def test_expected_scores_from_the_cache_keep_their_token_probabilities(tmp_path, study):
    """An answer's log-probabilities travel through the cache unchanged: the expected scores and their
    distributions of the second directory are the first's, byte for byte."""
    import math

    def with_probabilities(body):
        user = body["messages"][-1]["content"]
        top = [("80", math.log(.5)), ("100", math.log(.3)), (str(len(user) % 50), math.log(.2))]
        return Reply(content='{"score": 80}', logprobs=[('{"score": ', 0.0, []), ("80", top[0][1], top),
                                                        ("}", 0.0, [])])

    args, cache = study
    with ScriptedServer(with_probabilities) as srv:
        assert cli(*args(srv, "first", "--score-mode", "expected")) == 0
        assert cli(*args(srv, "second", "--score-mode", "expected")) == 0
        assert len(srv.requests) == 12  # 6 items x 2 runs, all by the first directory
    for name in OUTPUTS:
        assert (tmp_path / "first" / name).read_bytes() == (tmp_path / "second" / name).read_bytes(), name
    first = json.loads((tmp_path / "first" / "judgments.jsonl").read_text().splitlines()[0])
    assert first["annotation"]["expected"]["score"]["distribution"]


def test_what_a_reasoning_models_backend_adapted_comes_with_its_answers(tmp_path, study):
    """A run answered from the cache sends nothing, so its backend learns nothing: the adaptations the
    first run made come from the cache, and both manifests say how the answers were asked for."""
    from tests.backends.test_openai_reasoning import o_series

    args, _ = study
    with ScriptedServer(o_series) as srv:
        assert cli(*args(srv, "first")) == 0
        assert cli(*args(srv, "second", "--aggregator", "median")) == 0
        answered = [b for b in srv.requests if "max_tokens" not in b and b.get("temperature", 1) == 1]
    assert len(answered) == 12
    first, second = manifest(tmp_path / "first"), manifest(tmp_path / "second")
    assert "adapted:m=max_tokens,temperature" in first["signature"]
    assert second["signature"] == first["signature"].replace("agg:mean", "agg:median")
    assert second["judges"][0]["adaptations"] == first["judges"][0]["adaptations"]
