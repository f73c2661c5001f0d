"""Ctrl-C and SIGTERM mid-run: sending stops, every output file is written from the store,
the process says how to resume and exits 130; re-running sends nothing answered twice."""

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from polyjudge.api import JudgeConfig, judge
from polyjudge.engine.errors import RunInterrupted
from polyjudge.engine.result import RunResult
from polyjudge.engine.signals import Interrupts, catching_interrupts
from polyjudge.rundir import LOCK_FILE, PENDING, RunDir
from tests.engine.test_kill_resume import ROOT, free_port, judge_cmd, logged
from tests.engine.test_lock import wait_for_port
from tests.helpers.openai_server import ScriptedServer

N_ITEMS, RUNS = 20, 3
TOTAL = N_ITEMS * RUNS

SERVER = """
import json, sys, hashlib
sys.path.insert(0, {root!r})
from tests.helpers.openai_server import serve_forever
log = open({log!r}, "a")
def responder(body):
    user = body["messages"][-1]["content"]
    log.write(json.dumps({{"user": user, "seed": body.get("seed")}}) + "\\n"); log.flush()
    h = int(hashlib.sha256((user + str(body.get("seed"))).encode()).hexdigest(), 16)
    return json.dumps({{"score": h % 101}})
serve_forever(responder, {port}, latency_s=0.03)
"""


def store_rows(run):
    db = sqlite3.connect(run / "store.sqlite")
    try:
        done = {(json.loads(rq)["messages"][-1]["content"], r)
                for rq, r in db.execute("SELECT p.request_json, r.run_index FROM responses r "
                                        "JOIN prompts p USING(prompt_hash) WHERE r.status='done'")}
        failed = db.execute("SELECT count(*) FROM responses WHERE status='failed'").fetchone()[0]
    finally:
        db.close()
    return done, failed


def check_outputs_match_store(run, n_done, n_failed):
    """Every output file is there, complete, and says exactly what the store holds."""
    lines = [json.loads(x) for x in (run / "judgments.jsonl").read_text().splitlines()]
    assert len(lines) == TOTAL  # one line per planned judgment; the unsent ones say so
    answered = [x for x in lines if x["status"] != PENDING]
    assert len([x for x in answered if x["status"] != "request_failed"]) == n_done
    assert len([x for x in answered if x["status"] == "request_failed"]) == n_failed
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["counts"]["judgments"] == TOTAL
    assert manifest["counts"].get("status_pending", 0) == TOTAL - len(answered)
    assert len((run / "items.jsonl").read_text().splitlines()) == N_ITEMS
    assert len((run / "segments.tsv").read_text().splitlines()) == N_ITEMS + 1
    assert (run / "systems.tsv").read_text().startswith("system\tscore")
    # mt-metrics-eval refuses None: with unscored segments no mtme/ files are written, and the manifest says why
    mtme = run / "mtme" / "polyjudge-da-src.seg.score"
    if n_done == TOTAL:
        assert len(mtme.read_text().splitlines()) == N_ITEMS
    elif not mtme.exists():
        assert "without a score" in manifest["outputs"]["mtme_skipped"]
    rd = RunDir.open(run)  # the one reader accepts it
    assert len(rd.judgments) == TOTAL and len(rd.segment_rows) == N_ITEMS
    assert not (run / LOCK_FILE).exists()
    return len(answered)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_mid_run_then_resume(tmp_path, sig):
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"src_lang": "en", "tgt_lang": "de",
                                       "src": f"s{i}", "tgt": f"t{i}", "seg_id": str(i), "system": "X"}) + "\n"
                           for i in range(N_ITEMS)), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    port, log = free_port(), tmp_path / "server.log"
    # stderr: the server complains about the connections the interrupted client dropped
    server = subprocess.Popen([sys.executable, "-c", SERVER.format(root=str(ROOT), log=str(log), port=port)],
                              stderr=subprocess.DEVNULL)
    wait_for_port(port)
    run = tmp_path / "run"
    try:
        proc = subprocess.Popen(judge_cmd(inp, run, port), env=env, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 60
        while len(logged(log)) < 12 and time.time() < deadline:
            time.sleep(0.01)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "Traceback" not in err and "Aborted" not in err
        m = re.search(rf"^interrupted: (\d+) of {TOTAL} judgments done and kept in {re.escape(str(run))}; "
                      r"re-run the same command to resume$", err, re.M)
        assert m, err
        done_before, failed = store_rows(run)
        answered = check_outputs_match_store(run, len(done_before), failed)
        assert int(m.group(1)) == answered == len(done_before) + failed
        assert 0 < answered < TOTAL
        sent_before = len(logged(log))

        again = subprocess.run(judge_cmd(inp, run, port), env=env, capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stderr
        resent = logged(log)[sent_before:]
    finally:
        server.kill()
    assert not {(user, seed) for user, seed in resent} & done_before  # nothing answered is sent twice
    assert len(resent) == TOTAL - len(done_before)
    done_after, _ = store_rows(run)
    assert len(done_after) == TOTAL
    assert check_outputs_match_store(run, TOTAL, 0) == TOTAL


# ----------------------------------------------------------------------------- in one process

def items_file(tmp_path, n=12):
    p = tmp_path / "in.jsonl"
    p.write_text("".join(json.dumps({"src_lang": "en", "tgt_lang": "de",
                                     "src": f"s{i}", "tgt": f"t{i}", "seg_id": str(i), "system": "X"}) + "\n"
                         for i in range(n)), encoding="utf-8")
    return p


def test_interrupt_stops_sending_and_keeps_what_is_done(tmp_path):
    calls = []

    def responder(body):
        calls.append(1)
        if len(calls) == 5:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while the run is sending
        return json.dumps({"score": 60})

    with ScriptedServer(responder, latency_s=0.01) as srv:
        cfg = JudgeConfig(judges=(f"openai:m@{srv.base_url}",), runs=2, concurrency=2)
        with pytest.raises(RunInterrupted) as exc:
            judge(items_file(tmp_path), cfg, out=tmp_path / "run")
        sent = len(srv.requests)
    assert sent < 24  # stopped sending early
    result = exc.value.result
    assert exc.value.signum == signal.SIGINT and exc.value.out == tmp_path / "run"
    assert 0 < result.answered_count() <= sent
    assert str(exc.value).startswith(f"interrupted: {result.answered_count()} of 24 judgments done and kept in")
    assert len((tmp_path / "run" / "judgments.jsonl").read_text().splitlines()) == 24
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handlers restored


def test_signal_while_writing_waits_for_every_file(tmp_path, monkeypatch):
    real_write = RunResult.write

    def write_with_signal(self, out_dir, mtme_name=None):
        os.kill(os.getpid(), signal.SIGTERM)  # arrives while the files are written
        real_write(self, out_dir, mtme_name)

    monkeypatch.setattr(RunResult, "write", write_with_signal)
    with ScriptedServer(lambda b: json.dumps({"score": 60})) as srv:
        cfg = JudgeConfig(judges=(f"openai:m@{srv.base_url}",))
        with pytest.raises(RunInterrupted) as exc:
            judge(items_file(tmp_path, 3), cfg, out=tmp_path / "run")
    assert exc.value.signum == signal.SIGTERM
    assert exc.value.result.answered_count() == 3
    assert (tmp_path / "run" / "manifest.json").exists()  # the last file written


def test_interrupts_outside_the_main_thread_change_nothing():
    import threading

    seen = []

    def body():
        with catching_interrupts() as it:
            seen.append(isinstance(it, Interrupts))
            seen.append(signal.getsignal(signal.SIGINT))

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert seen == [True, signal.default_int_handler]


# ----------------------------------------------------------------------------- what Ctrl-C says, and a second one

def _stderr_reader(proc):
    """Lines of ``proc``'s standard error as they come, each with the time it arrived."""
    import queue
    import threading

    lines: queue.Queue = queue.Queue()

    def pump():
        for line in proc.stderr:
            lines.put((time.monotonic(), line))

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _wait_for(lines, text, timeout):
    """(arrival time, line) of the first line holding ``text`` within ``timeout`` seconds, else (None, seen)."""
    import queue

    seen, end = [], time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            at, line = lines.get(timeout=0.05)
        except queue.Empty:
            continue
        seen.append(line)
        if text in line:
            return at, line
    return None, "".join(seen)


def _done_rows(run):
    store = run / "store.sqlite"
    if not store.exists():
        return 0
    try:
        db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=0.1)
        try:
            return db.execute("SELECT count(*) FROM responses WHERE status='done'").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error:
        return 0


def test_ctrl_c_says_at_once_what_happens_next_and_exits_within_the_deadline(tmp_path):
    inp = items_file(tmp_path, 40)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    with ScriptedServer(lambda b: json.dumps({"score": 60}), latency_s=0.3) as srv:
        cmd = [sys.executable, "-m", "polyjudge.cli.main", "judge", str(inp), "-o", str(tmp_path / "run"),
               "--judge", f"openai:m@{srv.base_url}", "--lp", "en-de", "-c", "4", "-q", "--timeout", "5"]
        proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
        lines = _stderr_reader(proc)
        deadline = time.time() + 60
        while len(srv.requests) < 8 and time.time() < deadline:
            time.sleep(0.01)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        at, line = _wait_for(lines, "stopping", 1.0)
        assert at is not None, line  # today: nothing until the run has stopped
        assert at - sent < 1.0
        assert "in flight" in line and "kept" in line and "second Ctrl-C stops now" in line
        proc.wait(timeout=10)
        assert time.monotonic() - sent < 5 + 1  # within the requests' deadline
        assert proc.returncode == 130


def test_a_second_ctrl_c_stops_the_embedded_judge_within_a_second(tmp_path):
    pytest.importorskip("xllamacpp")
    from tests.backends.test_llamacpp import smollm2_path

    model = smollm2_path()
    inp = tmp_path / "in.jsonl"
    long_source = " ".join(f"Sentence number {k} of a long source document about rivers." for k in range(120))
    inp.write_text("".join(json.dumps({"src": f"{long_source} {i}", "tgt": f"Satz {i}.", "seg_id": str(i),
                                       "system": "X"}) + "\n" for i in range(30)), encoding="utf-8")
    run = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    cmd = [sys.executable, "-m", "polyjudge.cli.main", "judge", str(inp), "-o", str(run), "--judge",
           f"llamacpp:{model}", "--lp", "en-de", "-q"]
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    lines = _stderr_reader(proc)
    try:
        deadline = time.time() + 120
        while _done_rows(run) < 1 and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert _done_rows(run) >= 1, "the embedded judge answered nothing"
        first = time.monotonic()
        proc.send_signal(signal.SIGINT)
        at, line = _wait_for(lines, "stopping", 1.0)
        assert at is not None and at - first < 1.0, line  # today: the bar froze, no stopping line
        time.sleep(1.0)  # the first signal's work under way (the generation finishing its answer)
        at, line = None, "the run ended before a second signal"
        if proc.poll() is None:
            second = time.monotonic()
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=10)
            assert time.monotonic() - second < 1.0  # today: up to 30 s, the generation finishing
            at, line = _wait_for(lines, "stopped now", 1.0)
        assert proc.returncode == 130
    finally:
        if proc.poll() is None:
            proc.kill()
    done = _done_rows(run)
    assert done >= 1  # what was answered before stays in the store
    # Issue 43: a second Ctrl-C left no output files. They are written from the store, or (when the signal
    # came in the middle of an import, where nothing can safely run) the line says which command writes them.
    if at is None and line == "the run ended before a second signal":
        line = f"{done} of 30 judgments stored and written to {run}"
    assert at is not None or "written to" in line, line
    if "written to" not in line:
        assert "the run's files are not written: re-run the same command to write them" in line, line
        return
    assert f"{done} of 30 judgments stored and written to {run}" in line
    statuses = [json.loads(x)["status"] for x in (run / "judgments.jsonl").read_text().splitlines()]
    assert len(statuses) == 30 and statuses.count(PENDING) == 30 - done  # the rest is written, never lost
    assert RunDir(run).manifest is not None



SECOND_SIGNAL = """
import os, signal, sys, time
from polyjudge.engine.signals import catching_interrupts
with catching_interrupts() as interrupts:
    interrupts.finish_with({finisher})
    os.kill(os.getpid(), signal.SIGINT)
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)
print("not reached")
"""


@pytest.mark.parametrize(("finisher", "said"), [
    ("lambda: 'polyjudge: stopped now; 3 of 9 judgments stored and written to OUT'", "written to OUT"),
    ("lambda: 1 / 0", "re-run the same command to write them (it resumes from the store) (ZeroDivisionError"),
    ("None", "the run's files are not written: re-run the same command to write them")])
def test_a_second_signal_writes_the_files_first_or_names_the_command_that_does(finisher, said):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    done = subprocess.run([sys.executable, "-c", SECOND_SIGNAL.format(finisher=finisher)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 130 and "not reached" not in done.stdout
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("polyjudge: stopped now") and said in last, done.stderr


def test_the_second_signals_writer_writes_what_the_store_holds_while_sending(tmp_path, monkeypatch):
    """What a second signal calls while answers are still coming: the run's files from the store as it
    is (answered judgments ok, the rest pending), read through a connection of its own."""
    writers, seen = [], {}
    real = Interrupts.finish_with

    def record(self, writer):
        if writer is not None:
            writers.append(writer)
        real(self, writer)

    monkeypatch.setattr(Interrupts, "finish_with", record)
    run = tmp_path / "run"

    def responder(body):
        if len(writers) == 1 and not seen and _done_rows(run) >= 3:  # mid-run, as a second Ctrl-C would
            seen["line"] = writers[0]()
            seen["statuses"] = [json.loads(x)["status"] for x in (run / "judgments.jsonl").read_text().splitlines()]
        return json.dumps({"score": 60})

    with ScriptedServer(responder) as srv:
        judge(items_file(tmp_path, 12), JudgeConfig(judges=(f"openai:m@{srv.base_url}",), concurrency=1), out=run)
    assert seen["line"].startswith("polyjudge: stopped now; ") and f"written to {run}" in seen["line"]
    ok = seen["statuses"].count("ok")
    assert ok >= 3 and seen["statuses"].count(PENDING) == 12 - ok
    assert f"{ok} of 12 judgments stored" in seen["line"]
