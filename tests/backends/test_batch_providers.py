"""--batch through every provider's Batch API, on its scripted server (real HTTP, real store).

Each test runs once per provider (the ``batch_provider`` fixture); what a
provider does differently is a field of its record in
``tests/helpers/batch_providers.py``.
"""

import asyncio
import dataclasses
import sqlite3
from collections import Counter

import pytest

from polyjudge.api import judge
from polyjudge.backends.base import BackendError
from polyjudge.backends.batch import BatchEndpoint, BatchLimits, batch_client_for, batch_endpoint
from polyjudge.backends.registry import BackendSettings, JudgeSpec
from polyjudge.data.readers import read_items
from polyjudge.data.secrets import redact
from tests.engine.helpers import FAST_BATCH, FAST_RETRY, responder, same_outputs
from tests.helpers.batch_providers import da, fails_first, kill_then_resume, logged, user_text, write_items


def test_a_batch_run_gives_the_outputs_of_a_live_run_at_half_price(batch_provider, items, tmp_path):
    p = batch_provider
    with p.server(da) as srv:
        live = judge(items, p.config(srv, prices=p.prices), out=tmp_path / "live")
    with p.server(da) as srv:
        result = judge(items, p.batched(srv, prices=p.prices), out=tmp_path / "batch")
        assert srv.requests == []  # nothing sent live
        assert len(srv.batch_lines) == 12 and len({x["custom_id"] for x in srv.batch_lines}) == 12
        assert p.sent_as_asked(srv, p.model)
    same_outputs(tmp_path / "live", tmp_path / "batch")
    assert result.manifest.counts["answered_by_batch"] == 12
    assert result.manifest.tokens == live.manifest.tokens
    assert result.manifest.cost_usd == pytest.approx(live.manifest.cost_usd / 2)
    db = sqlite3.connect(tmp_path / "batch" / "store.sqlite")
    assert db.execute("SELECT provider, status, total, collected FROM batches").fetchall() == [
        (p.name, p.ended, 12, 1)]
    assert db.execute("SELECT COUNT(*) FROM batch_lines").fetchone()[0] == 12
    db.close()


def test_failed_and_expired_lines_are_retried_in_a_new_batch(batch_provider, items, tmp_path):
    p = batch_provider
    retried = 2 * len(p.failing)  # both runs of each failing item
    with p.server(da) as srv:
        judge(items, p.config(srv), out=tmp_path / "live")
    with p.server(fails_first(p.failing)) as srv:
        result = judge(items, p.batched(srv), out=tmp_path / "batch")
        ids = Counter(x["custom_id"] for x in srv.batch_lines)
        assert tuple(p.batch_statuses(srv)) == p.retry_statuses
    assert result.status_counts() == {"ok": 12}
    assert sorted(ids.values()) == [1] * (12 - retried) + [2] * retried
    assert result.manifest.counts["retries"] == retried
    same_outputs(tmp_path / "live", tmp_path / "batch")


def test_failed_lines_go_live_with_batch_fallback_live(batch_provider, items, tmp_path):
    p = batch_provider
    with p.server(fails_first(p.failing)) as srv:
        options = dataclasses.replace(FAST_BATCH, fallback="live")
        result = judge(items, p.batched(srv, batch_options=options), out=tmp_path / "batch")
        assert len(srv.batches) == 1 and len(srv.requests) == 2 * len(p.failing)
    assert result.status_counts() == {"ok": 12}
    assert result.manifest.counts["answered_by_batch"] == 12 - 2 * len(p.failing)


def test_lines_that_cannot_succeed_are_recorded_and_never_retried(batch_provider, items, tmp_path):
    p = batch_provider

    def invalid_for_b3(body):
        return p.invalid if "B translation 3" in user_text(body) else da(body)

    with p.server(invalid_for_b3) as srv:
        result = judge(items, p.batched(srv, max_failure_rate=None), out=tmp_path / "batch")
        assert len(srv.batches) == 1
    failed = [j for j in result.judgments if j.status != "ok"]
    assert len(failed) == 2 and all(all(e in j.error for e in p.invalid_errors) for j in failed)


def test_batches_are_split_at_the_limits(batch_provider, items, tmp_path):
    p = batch_provider
    with p.server(da) as srv:
        options = dataclasses.replace(FAST_BATCH, limits=BatchLimits(max_requests=5))
        judge(items, p.batched(srv, batch_options=options), out=tmp_path / "by_count")
        assert p.batch_sizes(srv) == [5, 5, 2]
    with p.server(da) as srv:
        options = dataclasses.replace(FAST_BATCH, limits=BatchLimits(max_bytes=p.max_bytes))
        judge(items, p.batched(srv, batch_options=options), out=tmp_path / "by_bytes")
        sizes = p.batch_bytes(srv)
        assert len(sizes) > 1 and all(s <= p.max_bytes for s in sizes)
    same_outputs(tmp_path / "by_count", tmp_path / "by_bytes")


def test_a_submission_whose_answer_was_lost_is_attached_not_repeated(batch_provider, items, tmp_path, monkeypatch):
    p = batch_provider
    client_class = type(p.client("http://127.0.0.1:9/v1"))
    original = client_class.submit

    async def lost(self, lines, tag):
        await original(self, lines, tag)
        raise BackendError("connection error: ReadError", retryable=True)

    monkeypatch.setattr(client_class, "submit", lost)
    with p.server(da) as srv:
        result = judge(items, p.batched(srv), out=tmp_path / "run")
        assert len(srv.batches) == 1 and len(srv.batch_lines) == 12
    assert result.status_counts() == {"ok": 12}


def test_kill_minus_9_mid_batch_then_resume(batch_provider, tmp_path):
    p = batch_provider
    inp, run, log = tmp_path / "in.jsonl", tmp_path / "run", tmp_path / "server.log"
    write_items(inp)
    recorded, collected, answered = kill_then_resume(p, inp, run, log)
    assert recorded >= 1 and collected == 0 and answered == 0  # killed with batches out, none read
    lines = [x for x in logged(log) if x["kind"] == "batch_line"]
    assert [x for x in logged(log) if x["kind"] == "chat"] == []
    # 20 items x 2 runs: every request submitted exactly once, across the killed process and the resumed one
    assert len(lines) == 40 and len({x["custom_id"] for x in lines}) == 40
    db = sqlite3.connect(run / "store.sqlite")
    assert db.execute("SELECT COUNT(*) FROM batches").fetchone()[0] == 4  # split at 10 requests
    db.close()
    with p.server(responder) as srv:
        judge(read_items(inp), p.config(srv, retry=FAST_RETRY), out=tmp_path / "live")
    same_outputs(run, tmp_path / "live")


def test_every_client_takes_one_server_a_model_and_a_secret_key_variable(batch_provider, monkeypatch):
    p = batch_provider
    with pytest.raises(ValueError, match=f"the {p.name} backend needs"):
        batch_client_for(JudgeSpec(p.name), BackendSettings())
    with pytest.raises(ValueError, match=f"one server; {p.model} names several"):
        batch_client_for(JudgeSpec.parse(p.judge_spec("http://a/v1,http://b/v1")), BackendSettings())
    monkeypatch.setenv("POLYJUDGE_BATCH_VARIABLE", "batch-secret-987654")
    client = batch_client_for(JudgeSpec(p.name, p.model, "http://127.0.0.1:9/v1",
                                        (("key_env", "POLYJUDGE_BATCH_VARIABLE"),)), BackendSettings())
    assert (client.model, client.endpoint) == (p.model, "http://127.0.0.1:9/v1")
    assert "batch-secret-987654" not in (redact("the key is batch-secret-987654") or "")
    asyncio.run(client.aclose())


def test_a_batch_endpoint_defaults_to_the_provider_url_and_key_variable():
    where = batch_endpoint(JudgeSpec("openai", "m"), BackendSettings(), "https://provider.example/v1", "PROVIDER_KEY",
                           missing_model="no model")
    assert where == BatchEndpoint("m", "https://provider.example/v1", "PROVIDER_KEY")
    chosen = batch_endpoint(JudgeSpec("openai", "m"), BackendSettings(api_key_env="MY_KEY"), "https://p/v1",
                            "PROVIDER_KEY", missing_model="no model")
    assert chosen.key_env == "MY_KEY"
    with pytest.raises(ValueError, match="^no model$"):
        batch_endpoint(JudgeSpec("openai"), BackendSettings(), "https://p/v1", "PROVIDER_KEY", missing_model="no model")
