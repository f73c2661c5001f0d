"""What only Anthropic's Message Batches do, on the scripted Anthropic server (real HTTP, real store).

What every provider's batches do (half price, retries, limits, kill -9) is
tested once for all in ``test_batch_providers.py``.
"""

import asyncio
import json
import sqlite3
import threading
import time

import pytest

from polyjudge.api import JudgeConfig, judge
from polyjudge.backends.anthropic_batch import ANTHROPIC_LIMITS
from polyjudge.backends.batch import BatchLimits, BatchLine, batch_client_for
from polyjudge.backends.registry import BackendSettings, JudgeSpec
from polyjudge.data.readers import read_items
from polyjudge.engine.plan import plan_tasks
from polyjudge.engine.store import BatchLineRow, Store
from polyjudge.protocols import get_protocol
from tests.engine.helpers import FAST_BATCH, FAST_RETRY, responder
from tests.helpers.anthropic_server import AnthropicServer
from tests.helpers.batch_providers import ANTHROPIC, da, write_items


def test_the_provider_limits_apply_by_default():
    client = batch_client_for(JudgeSpec("anthropic", ANTHROPIC.model, "http://127.0.0.1:9/v1"), BackendSettings())
    assert client.limits == ANTHROPIC_LIMITS == BatchLimits(100_000, 256_000_000)
    smaller = batch_client_for(JudgeSpec("anthropic", ANTHROPIC.model, "http://127.0.0.1:9/v1"), BackendSettings(),
                               BatchLimits(max_requests=7))
    assert smaller.limits == BatchLimits(7, 200_000_000)
    asyncio.run(client.aclose())
    asyncio.run(smaller.aclose())


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
            judge(items, ANTHROPIC.batched(srv), out=run)
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
        again = judge(items, ANTHROPIC.batched(srv), out=run)  # resumed: the cancelled requests go once more
        assert again.status_counts() == {"ok": 12} and len(srv.batch_lines) == 24
    assert "sk-ant-secret-123" not in (run / "manifest.json").read_text()


def test_a_batch_created_before_a_crash_is_found_by_what_was_recorded(tmp_path):
    """The process died after Anthropic created its batch and before the id was recorded: the next run
    finds it by its request count and time (Message Batches carry no tag) and sends nothing again."""
    inp = tmp_path / "in.jsonl"
    write_items(inp)
    items = read_items(inp)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    tasks = plan_tasks(items, get_protocol("da"), [ANTHROPIC.model], runs=2, temperature=ANTHROPIC.temperature, seed=0)

    async def submit(tag):
        client = ANTHROPIC.client(srv.base_url)
        await client.submit([BatchLine(t.key, t.request) for t in tasks], tag)
        await client.aclose()

    with AnthropicServer(responder, batch_delay_s=0.2) as srv:
        asyncio.run(submit("someone-else"))  # another run's batch, created before ours was recorded
        time.sleep(0.01)
        store = Store(run_dir / "store.sqlite")
        rows = [BatchLineRow(t.key, 0, t.key, t.prompt_hash, t.judge, t.run_index) for t in tasks]
        store.add_batch("pj-lost", "anthropic", ANTHROPIC.model, rows, endpoint=srv.base_url)
        store.close()
        asyncio.run(submit("pj-lost"))
        result = judge(items, JudgeConfig(judges=(ANTHROPIC.judge_spec(srv.base_url),), runs=2, batch=True,
                                          temperature=ANTHROPIC.temperature, batch_options=FAST_BATCH,
                                          retry=FAST_RETRY), out=run_dir)
        assert len(srv.batches) == 2 and len(srv.batch_lines) == 80  # the two made here; nothing more
    assert result.status_counts() == {"ok": 40} and result.manifest.counts["sent_this_session"] == 40
    db = sqlite3.connect(run_dir / "store.sqlite")
    assert db.execute("SELECT batch_id FROM batches").fetchall() == [("msgbatch_0002",)]
    db.close()
