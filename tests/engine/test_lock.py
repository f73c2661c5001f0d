"""One judging process per run directory: a second one exits 2 at once and sends nothing."""

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from polyjudge.data.errors import InputError
from polyjudge.engine.store import Store
from polyjudge.rundir import LOCK_FILE, RunDirInUse, RunDirLock, clear_run
from tests.engine.test_kill_resume import ROOT, free_port, judge_cmd, logged

GATED_SERVER = """
import json, os, sys, time
sys.path.insert(0, {root!r})
from tests.helpers.openai_server import serve_forever
log = open({log!r}, "a")
def responder(body):
    log.write(json.dumps({{"user": body["messages"][-1]["content"], "seed": body.get("seed")}}) + "\\n"); log.flush()
    while not os.path.exists({gate!r}):  # answers wait until the test opens the gate
        time.sleep(0.01)
    return json.dumps({{"score": 50}})
serve_forever(responder, {port}, latency_s=0.0)
"""


def wait_for_port(port):
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return
        except OSError:
            time.sleep(0.05)


def test_second_holder_is_refused_naming_the_pid(tmp_path):
    run = tmp_path / "run"
    with RunDirLock(run):
        assert (run / LOCK_FILE).read_text().strip() == str(os.getpid())
        with pytest.raises(RunDirInUse) as exc:
            RunDirLock(run).acquire()
        assert exc.value.pid == os.getpid()
        assert str(exc.value).startswith(f"{run} is in use by process {os.getpid()}")
        assert isinstance(exc.value, InputError)  # the CLI's exit 2
    assert not (run / LOCK_FILE).exists()  # released, file removed
    with RunDirLock(run):  # and free again
        pass


def test_released_on_exception(tmp_path):
    with pytest.raises(RuntimeError), RunDirLock(tmp_path / "run"):
        raise RuntimeError("boom")
    RunDirLock(tmp_path / "run").acquire()


def test_stale_lock_file_of_a_dead_process_does_not_block(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / LOCK_FILE).write_text("999999\n")  # left by a killed run: nobody holds the flock
    with RunDirLock(run):
        assert (run / LOCK_FILE).read_text().strip() == str(os.getpid())


def test_lock_held_by_a_killed_process_is_released_by_the_kernel(tmp_path):
    run = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; sys.path.insert(0, sys.argv[2]); from polyjudge.rundir import RunDirLock\n"
        "RunDirLock(sys.argv[1]).acquire(); print('held', flush=True); time.sleep(60)"),
        str(run), str(ROOT / "src")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunDirInUse) as exc:
            RunDirLock(run).acquire()
        assert exc.value.pid == holder.pid
    finally:
        holder.kill()
        holder.wait()
    assert (run / LOCK_FILE).exists()  # SIGKILL left the file behind ...
    with RunDirLock(run):  # ... but not the lock
        pass


def test_out_that_is_a_file_is_bad_input(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(InputError, match="is not a directory"):
        RunDirLock(tmp_path / "f").acquire()


def test_clear_run_removes_outputs_and_store_only(tmp_path):
    run = tmp_path / "run"
    (run / "mtme").mkdir(parents=True)
    for name in ("manifest.json", "judgments.jsonl", "segments.tsv", "aggregates.tsv",
                 "store.sqlite-wal", "mtme/polyjudge-da-src.seg.score", "notes.txt"):
        (run / name).write_text("x")
    Store(run / "store.sqlite").close()  # polyjudge's own store (a foreign one is never deleted)
    removed = clear_run(run)
    assert "store.sqlite" in removed and "mtme/polyjudge-da-src.seg.score" in removed
    assert sorted(p.name for p in run.iterdir() if p.name != ".polyjudge-owned.json") == ["notes.txt"]


def test_two_processes_on_one_directory(tmp_path):
    """The second `judge` exits 2 at once naming the first one's pid; every request is sent once."""
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"src": f"s{i}", "tgt": f"t{i}", "seg_id": str(i), "system": "X",
                                       "src_lang": "en", "tgt_lang": "de"}) + "\n"
                           for i in range(20)), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    port, log, gate = free_port(), tmp_path / "server.log", tmp_path / "gate"
    proc = subprocess.Popen([sys.executable, "-c", GATED_SERVER.format(root=str(ROOT), log=str(log), gate=str(gate),
                                                                      port=port)])
    wait_for_port(port)
    run = tmp_path / "run"
    try:
        first = subprocess.Popen(judge_cmd(inp, run, port), env=env, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 30
        while not logged(log) and time.time() < deadline:  # the first one is sending
            time.sleep(0.01)
        started = time.perf_counter()
        second = subprocess.run(judge_cmd(inp, run, port), env=env, capture_output=True, text=True, timeout=30)
        elapsed = time.perf_counter() - started
        assert first.poll() is None, "the first run ended before the second started; slow the server down"
        assert second.returncode == 2, second.stderr
        assert f"{run} is in use by process {first.pid}" in second.stderr
        assert "Traceback" not in second.stderr and elapsed < 10
        gate.write_text("open")
        _, err = first.communicate(timeout=60)
        assert first.returncode == 0, err
    finally:
        proc.kill()
    assert len(logged(log)) == 60  # 20 items x 3 runs, each sent once
    assert not (run / LOCK_FILE).exists()
