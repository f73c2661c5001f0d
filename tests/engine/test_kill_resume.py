"""kill -9 in the middle of a run, then resume: same results, nothing answered sent twice."""

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SERVER = """
import json, re, sys, hashlib
sys.path.insert(0, {root!r})
from tests.helpers.openai_server import serve_forever
log = open({log!r}, "a")
def responder(body):
    user = body["messages"][-1]["content"]
    h = int(hashlib.sha256((user + str(body.get("seed"))).encode()).hexdigest(), 16)
    log.write(json.dumps({{"user": user, "seed": body.get("seed")}}) + "\\n"); log.flush()
    return json.dumps({{"score": h % 101}})
serve_forever(responder, {port}, latency_s=0.02)
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(tmp_path, name):
    port, log = free_port(), tmp_path / f"{name}.log"
    proc = subprocess.Popen([sys.executable, "-c", SERVER.format(root=str(ROOT), log=str(log), port=port)])
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            time.sleep(0.05)
    return proc, port, log


def judge_cmd(input_path, out, port):
    return [sys.executable, "-m", "polyjudge.cli.main", "judge", str(input_path), "--out", str(out),
            "--backend", "openai", "--model", "m", "--base-url", f"http://127.0.0.1:{port}/v1",
            "--runs", "3", "--concurrency", "4", "-q"]


def logged(log):
    """The server's log so far; a line still being written (no newline yet) is left for the next look."""
    text = log.read_text() if log.exists() else ""
    return [tuple(json.loads(x).values()) for x in text[:text.rfind("\n") + 1].splitlines()]


def test_kill_minus_9_then_resume(tmp_path):
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"src_lang": "en", "tgt_lang": "de",
                                       "src": f"s{i}", "tgt": f"t{i}", "seg_id": str(i), "system": "X"}) + "\n"
                           for i in range(60)), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc, port, log = start_server(tmp_path, "killed")
    try:
        judge = subprocess.Popen(judge_cmd(inp, tmp_path / "run", port), env=env)
        store = tmp_path / "run" / "store.sqlite"
        deadline = time.time() + 60
        while time.time() < deadline:  # kill once a good part is done
            time.sleep(0.05)
            if len(logged(log)) >= 60:
                break
        os.kill(judge.pid, signal.SIGKILL)
        judge.wait()
        db = sqlite3.connect(store)
        done_before = {(json.loads(rq)["messages"][-1]["content"], run)
                       for rq, run in db.execute("SELECT p.request_json, r.run_index FROM responses r "
                                                 "JOIN prompts p USING(prompt_hash) WHERE r.status='done'")}
        db.close()
        sent_before = len(logged(log))
        assert 0 < len(done_before) < 180
        subprocess.run(judge_cmd(inp, tmp_path / "run", port), env=env, check=True)
        resent = logged(log)[sent_before:]
    finally:
        proc.kill()
    # nothing already answered and stored was sent again; at most the in-flight ones were repeated
    assert not {(user, seed) for user, seed in resent} & done_before
    assert len(resent) == 180 - len(done_before)
    assert len(resent) + sent_before - 180 <= 4

    proc2, port2, _ = start_server(tmp_path, "clean")
    try:
        subprocess.run(judge_cmd(inp, tmp_path / "clean", port2), env=env, check=True)
    finally:
        proc2.kill()
    for name in ("segments.tsv", "systems.tsv", "mtme/polyjudge-da-src.seg.score"):
        assert (tmp_path / "run" / name).read_text() == (tmp_path / "clean" / name).read_text(), name


def test_a_request_slot_never_holds_an_uncommitted_answer_and_a_request(tmp_path):
    """Answers are committed once per turn of the event loop (engine/store.py: Store.deferring), and a worker
    sends its next request only once its answer is committed. So at every moment the answers a kill -9 would
    lose (received, not yet committed) and the requests in flight together fit in the request slots: a
    killed run is never sent again more than what its slots held, as with one commit per answer."""
    import asyncio

    from polyjudge.backends.openai import OpenAIBackend
    from polyjudge.data.records import Item
    from polyjudge.engine import run
    from polyjudge.protocols import get_protocol
    from tests.helpers.openai_server import ScriptedServer

    store_path, concurrency = tmp_path / "store.sqlite", 16
    seen: list[tuple[int, int, int]] = []

    class Watched(OpenAIBackend):
        received = in_flight = 0

        async def generate(self, request):  # type: ignore[no-untyped-def]
            committed = 0
            if store_path.exists():
                db = sqlite3.connect(f"file:{store_path}?mode=ro", uri=True)
                try:
                    committed = db.execute("SELECT COUNT(*) FROM responses WHERE status='done'").fetchone()[0]
                except sqlite3.OperationalError:  # the schema is not there yet
                    pass
                db.close()
            seen.append((self.received - committed, self.in_flight, committed))
            self.in_flight += 1
            try:
                result = await super().generate(request)
                await asyncio.sleep(0)  # answers arrive in the same turn of the loop, as under load
            finally:
                self.in_flight -= 1
            self.received += 1
            return result

    items = [Item(src=f"s{i}", tgt=f"t{i}", src_lang="en", tgt_lang="de", seg_id=str(i), system="X")
             for i in range(40)]
    with ScriptedServer(lambda body: json.dumps({"score": 50})) as srv:
        result = run(items, get_protocol("da"), [Watched("m", srv.base_url)], store_path=store_path, runs=4,
                     concurrency=concurrency)
    assert result.status_counts().get("ok") == 160
    assert len(seen) == 160
    # Uncommitted answers and requests in flight, seen as each request leaves (itself included).
    worst = max(uncommitted + flying + 1 for uncommitted, flying, _ in seen)
    assert worst <= concurrency, worst
    assert max(c for _, _, c in seen) > 0  # the store was read while the run went on
