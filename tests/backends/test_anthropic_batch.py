"""--batch with the anthropic backend: Message Batches on the scripted Anthropic server (real HTTP, real store)."""

import asyncio
import dataclasses
import json
import sqlite3
import threading
import time
from collections import Counter

import pytest

from polyjudge.api import JudgeConfig, ModelPrice, judge
from polyjudge.backends.anthropic_batch import ANTHROPIC_LIMITS, AnthropicBatchClient
from polyjudge.backends.base import BackendError
from polyjudge.backends.batch import BatchLimits, batch_client_for
from polyjudge.backends.registry import BackendSettings, JudgeSpec
from polyjudge.data.records import Item
from tests.engine.conftest import da_score
from tests.engine.helpers import FAST_BATCH, FAST_RETRY, same_outputs
from tests.helpers.anthropic_server import AnthropicServer, MReply

MODEL = "claude-x"
PRICES = {MODEL: ModelPrice(1.0, 2.0, batch_discount=0.5)}


@pytest.fixture
def items():
    """The engine tests' six items (two systems, three segments), which ``da_score`` judges."""
    return [Item(src=f"source {seg}", tgt=f"{system} translation {seg}", src_lang="en", tgt_lang="de",
                 doc_id="d1" if seg < 3 else "d2", seg_id=str(seg), system=system)
            for system in ("A", "B") for seg in range(1, 4)]


def da(body):
    return json.dumps({"score": da_score(body)})


def user_text(body):
    return body["messages"][-1]["content"]


def config(srv, **kw):
    kw.setdefault("retry", FAST_RETRY)
    kw.setdefault("runs", 2)
    kw.setdefault("prices", PRICES)
    return JudgeConfig(judges=(f"anthropic:{MODEL}@{srv.base_url}",), **kw)


def batched(srv, **kw):
    kw.setdefault("batch_options", FAST_BATCH)
    return config(srv, batch=True, **kw)


def test_a_batch_run_gives_the_outputs_of_a_live_run_at_half_price(items, tmp_path):
    with AnthropicServer(da) as srv:
        live = judge(items, config(srv), out=tmp_path / "live")
    with AnthropicServer(da) as srv:
        result = judge(items, batched(srv), out=tmp_path / "batch")
        assert srv.requests == []  # nothing sent live
        assert len(srv.batch_lines) == 12 and len({x["custom_id"] for x in srv.batch_lines}) == 12
        params = srv.batch_lines[0]["params"]
        assert params["model"] == MODEL and params["tool_choice"]["type"] == "tool" and params["max_tokens"] > 0
        assert all(h.get("anthropic-version") for h in srv.headers_seen)
    same_outputs(tmp_path / "live", tmp_path / "batch")
    assert result.manifest.counts["answered_by_batch"] == 12
    assert result.manifest.tokens == live.manifest.tokens
    assert result.manifest.cost_usd == pytest.approx(live.manifest.cost_usd / 2)
    db = sqlite3.connect(tmp_path / "batch" / "store.sqlite")
    assert db.execute("SELECT provider, status, total, collected FROM batches").fetchall() == [
        ("anthropic", "ended", 12, 1)]
    db.close()


def flaky(failing):
    """Each listed translation fails once (its scripted reply), then is answered."""
    seen = Counter()

    def responder(body):
        for text, reply in failing.items():
            if text in user_text(body):
                seen[text] += 1
                if seen[text] <= 2:  # both runs of the item (no seed in the Messages API)
                    return reply
        return da(body)
    return responder


FAILING = {"A translation 1": MReply(status=529), "A translation 2": MReply(batch_result="expired"),
           "B translation 1": MReply(batch_result="canceled")}


def test_errored_expired_and_canceled_requests_go_again_in_a_new_batch(items, tmp_path):
    with AnthropicServer(da) as srv:
        judge(items, config(srv), out=tmp_path / "live")
    with AnthropicServer(flaky(FAILING)) as srv:
        result = judge(items, batched(srv), out=tmp_path / "batch")
        ids = Counter(x["custom_id"] for x in srv.batch_lines)
        assert len(srv.batches) == 2
    assert result.status_counts() == {"ok": 12}
    assert sorted(ids.values()) == [1] * 6 + [2] * 6  # 3 items x 2 runs went twice, the rest once
    assert result.manifest.counts["retries"] == 6
    same_outputs(tmp_path / "live", tmp_path / "batch")


def test_failed_requests_go_live_with_batch_fallback_live(items, tmp_path):
    with AnthropicServer(flaky(FAILING)) as srv:
        options = dataclasses.replace(FAST_BATCH, fallback="live")
        result = judge(items, batched(srv, batch_options=options), out=tmp_path / "batch")
        assert len(srv.batches) == 1 and len(srv.requests) == 6
    assert result.status_counts() == {"ok": 12}
    assert result.manifest.counts["answered_by_batch"] == 6


def test_an_invalid_request_is_recorded_and_never_retried(items, tmp_path):
    def responder(body):
        return MReply(status=400, error_message="bad thing") if "B translation 3" in user_text(body) else da(body)

    with AnthropicServer(responder) as srv:
        result = judge(items, batched(srv, max_failure_rate=None), out=tmp_path / "batch")
        assert len(srv.batches) == 1
    failed = [j for j in result.judgments if j.status != "ok"]
    assert len(failed) == 2 and all("invalid_request_error: bad thing" in j.error for j in failed)


def test_batches_are_split_at_the_limits(items, tmp_path):
    with AnthropicServer(da) as srv:
        options = dataclasses.replace(FAST_BATCH, limits=BatchLimits(max_requests=5))
        judge(items, batched(srv, batch_options=options), out=tmp_path / "by_count")
        assert [len(b["requests"]) for b in srv.batches.values()] == [5, 5, 2]
    with AnthropicServer(da) as srv:
        options = dataclasses.replace(FAST_BATCH, limits=BatchLimits(max_bytes=4000))
        judge(items, batched(srv, batch_options=options), out=tmp_path / "by_bytes")
        sizes = [len(json.dumps({"requests": b["requests"]}, separators=(",", ":")))
                 for b in srv.batches.values()]
        assert len(sizes) > 1 and all(s <= 4000 for s in sizes)
    same_outputs(tmp_path / "by_count", tmp_path / "by_bytes")


def test_the_provider_limits_apply_by_default():
    client = batch_client_for(JudgeSpec("anthropic", MODEL, "http://127.0.0.1:9/v1"), BackendSettings())
    assert client.limits == ANTHROPIC_LIMITS == BatchLimits(100_000, 256_000_000)
    smaller = batch_client_for(JudgeSpec("anthropic", MODEL, "http://127.0.0.1:9/v1"), BackendSettings(),
                               BatchLimits(max_requests=7))
    assert smaller.limits == BatchLimits(7, 200_000_000)
    asyncio.run(client.aclose())
    asyncio.run(smaller.aclose())


def test_a_creation_whose_answer_was_lost_is_attached_not_repeated(items, tmp_path, monkeypatch):
    original = AnthropicBatchClient.submit

    async def lost(self, lines, tag):
        await original(self, lines, tag)
        raise BackendError("connection error: ReadError", retryable=True)

    monkeypatch.setattr(AnthropicBatchClient, "submit", lost)
    with AnthropicServer(da) as srv:
        result = judge(items, batched(srv), out=tmp_path / "run")
        assert len(srv.batches) == 1 and len(srv.batch_lines) == 12
    assert result.status_counts() == {"ok": 12}


def test_batch_status_and_cancel_for_an_anthropic_run(items, tmp_path, monkeypatch, capsys):
    from polyjudge.cli.main import main
    from polyjudge.engine.batches import batch_status, cancel_batches
    from polyjudge.engine.errors import RunInterrupted

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-123")
    run = tmp_path / "run"
    with AnthropicServer(da, batch_delay_s=60) as srv:
        def cancel_when_submitted():
            deadline = time.monotonic() + 30
            while not srv.batches and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.05)  # the run has recorded the batch's id
            shown.extend(batch_status(run))
            cancel_batches(run)
        shown = []
        thread = threading.Thread(target=cancel_when_submitted, daemon=True)
        thread.start()
        with pytest.raises(RunInterrupted) as exc:
            judge(items, batched(srv), out=run)
        thread.join()
        assert [(r.provider, r.status, r.total) for r in shown] == [("anthropic", "in_progress", 12)]
        assert exc.value.result.status_counts() == {"pending": 12}
        with pytest.raises(SystemExit) as done:
            main(["batch", "status", str(run), "--format", "json"])
        assert done.value.code == 0
        listed = json.loads(capsys.readouterr().out)
        assert [(b["provider"], b["status"]) for b in listed] == [("anthropic", "canceled")]
        assert all(h.get("x-api-key") == "sk-ant-secret-123" for h in srv.headers_seen)
        srv.batch_delay_s = 0.0
        again = judge(items, batched(srv), out=run)  # resumed: the cancelled requests go once more
        assert again.status_counts() == {"ok": 12} and len(srv.batch_lines) == 24
    assert "sk-ant-secret-123" not in (run / "manifest.json").read_text()
