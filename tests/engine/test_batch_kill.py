"""kill -9 while batches are in progress, then resume: re-attached, no task ever submitted twice."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from polyjudge.api import JudgeConfig, judge
from tests.engine.helpers import FAST_RETRY, responder, same_outputs
from tests.engine.test_kill_resume import free_port
from tests.helpers.openai_server import ScriptedServer

ROOT = Path(__file__).resolve().parents[2]

SERVER = """
import sys
sys.path.insert(0, {root!r})
from tests.engine.helpers import responder
from tests.helpers.openai_server import serve_forever
serve_forever(responder, {port}, batch_delay_s=1.0, log_path={log!r})
"""

JUDGE = """
import sys
from polyjudge.backends.batch import BatchLimits
from polyjudge.engine.batches import BatchOptions
from polyjudge.engine.session import JudgeConfig, judge
options = BatchOptions(poll_initial_s=0.05, poll_max_s=0.2, limits=BatchLimits(max_requests=10))
judge(sys.argv[1], JudgeConfig(judges=("openai:m@http://127.0.0.1:{port}/v1",), runs=2, batch=True,
                               batch_options=options), out=sys.argv[2])
"""


def logged(log):
    """The server's log so far; a line still being written (no newline yet) is left for the next look."""
    text = log.read_text() if log.exists() else ""
    return [json.loads(x) for x in text[:text.rfind("\n") + 1].splitlines()]


def test_kill_minus_9_mid_batch_then_resume(tmp_path):
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"src": f"s{i}", "tgt": f"t{i}", "seg_id": str(i), "system": "X"}) + "\n"
                           for i in range(20)), encoding="utf-8")
    port, log = free_port(), tmp_path / "server.log"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    server = subprocess.Popen([sys.executable, "-c", SERVER.format(root=str(ROOT), port=port, log=str(log))])
    try:
        for _ in range(100):
            try:
                import socket
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        run = tmp_path / "run"
        args = [sys.executable, "-c", JUDGE.format(port=port), str(inp), str(run)]
        proc = subprocess.Popen(args, env=env)
        deadline = time.time() + 30
        while time.time() < deadline and not any(x["kind"] == "batch_line" for x in logged(log)):
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)  # batches submitted, none finished (each takes a second)
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
    # every task was submitted exactly once, across the killed process and the resumed one
    assert len(lines) == 40 and len({x["custom_id"] for x in lines}) == 40

    items = [json.loads(x) for x in inp.read_text().splitlines()]
    from polyjudge.data.readers import read_items
    assert len(items) == 20
    with ScriptedServer(responder) as srv:
        judge(read_items(inp), JudgeConfig(judges=(f"openai:m@{srv.base_url}",), runs=2, retry=FAST_RETRY),
              out=tmp_path / "live")
    same_outputs(run, tmp_path / "live")
