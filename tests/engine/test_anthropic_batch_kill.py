"""kill -9 while Anthropic Message Batches are in progress, then resume: every request in exactly one batch."""

import asyncio
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from polyjudge.api import JudgeConfig, judge
from polyjudge.backends.anthropic import AnthropicBackend
from polyjudge.backends.anthropic_batch import AnthropicBatchClient
from polyjudge.backends.batch import BatchLine
from polyjudge.data.readers import read_items
from polyjudge.engine.plan import plan_tasks
from polyjudge.engine.store import BatchLineRow, Store
from polyjudge.protocols import get_protocol
from tests.engine.helpers import FAST_BATCH, FAST_RETRY, responder, same_outputs
from tests.engine.test_batch_kill import logged
from tests.engine.test_kill_resume import free_port
from tests.helpers.anthropic_server import AnthropicServer

ROOT = Path(__file__).resolve().parents[2]

SERVER = """
import sys
sys.path.insert(0, {root!r})
from tests.engine.helpers import responder
from tests.helpers.anthropic_server import serve_forever
serve_forever(responder, {port}, batch_delay_s=1.0, log_path={log!r})
"""

JUDGE = """
import sys
from polyjudge.backends.batch import BatchLimits
from polyjudge.engine.batches import BatchOptions
from polyjudge.engine.session import JudgeConfig, judge
options = BatchOptions(poll_initial_s=0.05, poll_max_s=0.2, limits=BatchLimits(max_requests=10))
judge(sys.argv[1], JudgeConfig(judges=("anthropic:claude-x@http://127.0.0.1:{port}/v1",), runs=2, batch=True,
                               batch_options=options), out=sys.argv[2])
"""


def _wait_for(port: int) -> None:
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return
        except OSError:
            time.sleep(0.05)


def _items(path: Path) -> None:
    path.write_text("".join(json.dumps({"src": f"s{i}", "tgt": f"t{i}", "seg_id": str(i), "system": "X"}) + "\n"
                            for i in range(20)), encoding="utf-8")


def test_kill_minus_9_mid_anthropic_batch_then_resume(tmp_path):
    inp = tmp_path / "in.jsonl"
    _items(inp)
    port, log = free_port(), tmp_path / "server.log"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    server = subprocess.Popen([sys.executable, "-c", SERVER.format(root=str(ROOT), port=port, log=str(log))])
    try:
        _wait_for(port)
        run = tmp_path / "run"
        args = [sys.executable, "-c", JUDGE.format(port=port), str(inp), str(run)]
        proc = subprocess.Popen(args, env=env)
        deadline = time.time() + 30
        while time.time() < deadline and not any(x["kind"] == "batch_line" for x in logged(log)):
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)  # batches created, none ended (each takes a second)
        proc.wait()
        db = sqlite3.connect(run / "store.sqlite")
        recorded = db.execute("SELECT COUNT(*), SUM(collected) FROM batches").fetchone()
        answered = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        db.close()
        assert recorded[0] >= 1 and recorded[1] == 0 and answered == 0
        subprocess.run(args, env=env, check=True, timeout=60)
    finally:
        server.kill()
        server.wait()
    lines = [x for x in logged(log) if x["kind"] == "batch_line"]
    assert [x for x in logged(log) if x["kind"] == "chat"] == []
    # 20 items x 2 runs: every request submitted exactly once, across the killed process and the resumed one
    assert len(lines) == 40 and len({x["custom_id"] for x in lines}) == 40
    batches = {x["batch_id"] for x in lines}
    assert len(batches) == 4  # split at 10 requests
    print(f"\nkill/resume record: requests={len(lines)} batches={len(batches)} "
          f"duplicates={len(lines) - len({x['custom_id'] for x in lines})}")
    with AnthropicServer(responder) as srv:
        judge(read_items(inp), JudgeConfig(judges=(f"anthropic:claude-x@{srv.base_url}",), runs=2, retry=FAST_RETRY),
              out=tmp_path / "live")
    same_outputs(run, tmp_path / "live")


def test_a_batch_created_before_a_crash_is_found_by_what_was_recorded(tmp_path):
    """The process died after Anthropic created its batch and before the id was recorded: the next run
    finds it by its request count and time (Message Batches carry no tag) and sends nothing again."""
    inp = tmp_path / "in.jsonl"
    _items(inp)
    items = read_items(inp)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    tasks = plan_tasks(items, get_protocol("da"), ["claude-x"], runs=2, temperature=0.0, seed=0)
    with AnthropicServer(responder, batch_delay_s=0.2) as srv:
        async def older_batch_of_the_same_size():  # another run's batch, created before ours was recorded
            client = AnthropicBatchClient(AnthropicBackend("claude-x", srv.base_url))
            await client.submit([BatchLine(t.key, t.request) for t in tasks], "someone-else")
            await client.aclose()
        asyncio.run(older_batch_of_the_same_size())
        time.sleep(0.01)
        store = Store(run_dir / "store.sqlite")
        rows = [BatchLineRow(t.key, 0, t.key, t.prompt_hash, t.judge, t.run_index) for t in tasks]
        store.add_batch("pj-lost", "anthropic", "claude-x", rows, endpoint=srv.base_url)
        store.close()

        async def ours():
            client = AnthropicBatchClient(AnthropicBackend("claude-x", srv.base_url))
            await client.submit([BatchLine(t.key, t.request) for t in tasks], "pj-lost")
            await client.aclose()
        asyncio.run(ours())
        result = judge(items, JudgeConfig(judges=(f"anthropic:claude-x@{srv.base_url}",), runs=2, batch=True,
                                          batch_options=FAST_BATCH, retry=FAST_RETRY), out=run_dir)
        assert len(srv.batches) == 2 and len(srv.batch_lines) == 80  # the two made here; nothing more
    assert result.status_counts() == {"ok": 40} and result.manifest.counts["sent_this_session"] == 40
    db = sqlite3.connect(run_dir / "store.sqlite")
    assert db.execute("SELECT batch_id FROM batches").fetchall() == [("msgbatch_0002",)]
    db.close()
