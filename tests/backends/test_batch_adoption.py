"""A listed batch is adopted (or cancelled) only when its requests prove it is the run's.

Before: an Anthropic --batch run killed while its batch was being created, on resume, took over another
run's batch of another model with the same request count (found by count and time): its own requests were
never collected, and ``polyjudge batch cancel`` cancelled the other run's batch. Now each custom_id carries
the submission's fingerprint and a candidate is adopted only when its requests are the recorded ones.
"""

import asyncio
import sqlite3
import time

from polyjudge.api import JudgeConfig, judge
from polyjudge.backends.batch import BatchLine, batch_custom_id
from polyjudge.backends.openai_batch import TAG_KEY
from polyjudge.data.readers import read_items
from polyjudge.engine.batches import cancel_batches
from polyjudge.engine.plan import plan_tasks
from polyjudge.engine.store import BatchLineRow, Store
from polyjudge.protocols import get_protocol
from tests.engine.helpers import FAST_BATCH, FAST_RETRY, responder
from tests.helpers.anthropic_server import AnthropicServer
from tests.helpers.batch_providers import ANTHROPIC, OPENAI, write_items
from tests.helpers.openai_server import ScriptedServer


def _lost_submission(tmp_path, provider, srv, model):
    """A run directory whose submission 'pj-lost' was recorded and then the process died (no batch made),
    and another run's batch of ``model`` with as many requests, created after the record."""
    inp = tmp_path / "in.jsonl"
    write_items(inp)
    items = read_items(inp)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    ours = plan_tasks(items, get_protocol("da"), [provider.model], runs=2, temperature=provider.temperature, seed=0)
    store = Store(run_dir / "store.sqlite")
    rows = [BatchLineRow(batch_custom_id("pj-lost", t.key), 0, t.key, t.prompt_hash, t.judge, t.run_index)
            for t in ours]
    store.add_batch("pj-lost", provider.name, provider.model, rows, endpoint=srv.base_url)
    store.close()
    time.sleep(0.01)
    theirs = plan_tasks(items, get_protocol("da"), [model], runs=2, temperature=provider.temperature, seed=0)

    async def submit():
        client = provider.client(srv.base_url)
        await client.submit([BatchLine(batch_custom_id("pj-theirs", t.key), t.request) for t in theirs], "pj-theirs")
        await client.aclose()

    asyncio.run(submit())
    return items, run_dir, len(ours)


def _batch_ids(run_dir):
    db = sqlite3.connect(run_dir / "store.sqlite")
    try:
        return [b for (b,) in db.execute("SELECT batch_id FROM batches")]
    finally:
        db.close()


def test_anthropic_resume_never_adopts_another_runs_batch_of_the_same_size(tmp_path):
    with AnthropicServer(responder, batch_delay_s=0.3) as srv:
        items, run_dir, n = _lost_submission(tmp_path, ANTHROPIC, srv, "another-model")
        result = judge(items, JudgeConfig(judges=(ANTHROPIC.judge_spec(srv.base_url),), runs=2, batch=True,
                                          temperature=ANTHROPIC.temperature, batch_options=FAST_BATCH,
                                          retry=FAST_RETRY), out=run_dir)
        other = srv.batches["msgbatch_0001"]
        assert other["cancelled"] is None  # the other run's batch is left alone
        assert len(srv.batches) == 2  # ours, submitted now that no listed batch is provably it
    assert result.status_counts() == {"ok": n}
    assert _batch_ids(run_dir) == ["msgbatch_0002"]


def test_batch_cancel_never_cancels_a_batch_it_cannot_prove_is_the_runs(tmp_path):
    with AnthropicServer(responder, batch_delay_s=30) as srv:
        _, run_dir, _ = _lost_submission(tmp_path, ANTHROPIC, srv, "another-model")
        records = cancel_batches(run_dir)
        assert srv.batches["msgbatch_0001"]["cancelled"] is None
    assert len(records) == 1 and "msgbatch_0001" in (records[0].note or "")
    assert "cannot be proven" in (records[0].note or "")


def test_a_resume_that_cannot_prove_a_batch_yet_sends_nothing_again_and_says_so(tmp_path, caplog):
    """Interrupted while waiting for an unproven candidate: nothing adopted, nothing sent again."""
    from polyjudge.engine.batches import run_batches
    from polyjudge.engine.runner import SendControls

    with AnthropicServer(responder, batch_delay_s=30) as srv:
        items, run_dir, n = _lost_submission(tmp_path, ANTHROPIC, srv, "another-model")
        tasks = plan_tasks(items, get_protocol("da"), [ANTHROPIC.model], runs=2, temperature=ANTHROPIC.temperature,
                           seed=0)
        store = Store(run_dir / "store.sqlite")

        async def go():
            stop = asyncio.Event()
            asyncio.get_running_loop().call_later(0.5, stop.set)
            client = ANTHROPIC.client(srv.base_url)
            try:
                return await run_batches(tasks, [client], store, SendControls(retry=FAST_RETRY, stop=stop),
                                         options=FAST_BATCH)
            finally:
                await client.aclose()

        with caplog.at_level("WARNING", logger="polyjudge"):
            asyncio.run(go())
        store.close()
        assert len(srv.batches) == 1 and srv.batches["msgbatch_0001"]["cancelled"] is None
    assert "msgbatch_0001" in caplog.text and "polyjudge batch status" in caplog.text


def test_openai_batch_found_by_tag_is_adopted_only_when_its_requests_are_the_runs(tmp_path):
    with ScriptedServer(responder, batch_delay_s=0.2) as srv:
        items, run_dir, n = _lost_submission(tmp_path, OPENAI, srv, "another-model")
        # the other run's batch is relabelled with our tag: the tag alone proves nothing
        srv.batches["batch_1"]["metadata"] = {TAG_KEY: "pj-lost"}
        result = judge(items, OPENAI.batched(srv), out=run_dir)
        assert len(srv.batches) == 2
    assert result.status_counts() == {"ok": n}
    assert _batch_ids(run_dir) == ["batch_2"]
