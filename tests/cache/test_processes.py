"""Several processes and kill -9: no lost and no torn entries.

Writers are real processes (``subprocess``) writing through
:class:`ResponseCache`; two ``polyjudge judge`` processes fill one cache from
the scripted OpenAI server at the same time.
"""

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from polyjudge.cache import ResponseCache
from tests.helpers.openai_server import ScriptedServer

ROOT = Path(__file__).resolve().parents[2]

WRITER = """
import hashlib, sys
from pathlib import Path
from polyjudge.cache import CachedAnswer, ResponseCache
folder, name, fills, per_fill, width = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def text(key):
    return (hashlib.sha256(key.encode()).hexdigest() * (width // 64 + 1))[:width]
with ResponseCache(Path(folder)) as cache:
    print("open", flush=True)
    fill = 0
    while fills < 0 or fill < fills:
        keys = [f"{name}-{fill:06d}-{i:03d}" for i in range(per_fill)]
        cache.put_many("openai@http://h/v1", [CachedAnswer(k, "m", text(k), "stop", 10, 2) for k in keys])
        fill += 1
"""


def expected_text(key, width):
    return (hashlib.sha256(key.encode()).hexdigest() * (width // 64 + 1))[:width]


def writer(folder, name, fills, per_fill, width):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
    return subprocess.Popen([sys.executable, "-c", WRITER, str(folder), name, str(fills), str(per_fill), str(width)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def rows(folder):
    db = sqlite3.connect(folder / "responses.sqlite")
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return db.execute("SELECT key, text, size, prompt_tokens, completion_tokens FROM answers").fetchall()
    finally:
        db.close()


def test_two_processes_fill_one_cache_at_once(tmp_path):
    folder = tmp_path / "cache"
    procs = [writer(folder, name, 150, 4, 200) for name in ("a", "b")]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
    found = rows(folder)
    assert len(found) == 2 * 150 * 4  # no entry lost
    for key, text, size, prompt, completion in found:
        assert text == expected_text(key, 200) and size == 200 and (prompt, completion) == (10, 2)


def test_kill_minus_9_mid_write_leaves_whole_fills_only(tmp_path):
    folder = tmp_path / "cache"
    per_fill, width = 50, 20_000  # 1 MB per transaction: the kill lands inside writes
    proc = writer(folder, "k", -1, per_fill, width)
    assert proc.stdout.readline().strip() == b"open"
    deadline = time.monotonic() + 60
    seen = 0
    while seen < 10 * per_fill and time.monotonic() < deadline:
        time.sleep(0.05)
        with ResponseCache(folder, readonly=True) as cache:
            seen = cache.stats().entries
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    found = rows(folder)
    assert len(found) >= seen and len(found) % per_fill == 0  # whole fills only: nothing torn
    for key, text, size, _, _ in found:
        assert text == expected_text(key, width) and size == width
    with ResponseCache(folder) as cache:  # and it takes new entries after the kill
        assert cache.stats().entries == len(found)


def _items(path, n):
    path.write_text("".join(json.dumps({"src": f"source {i}", "tgt": f"translation {i}", "system": f"S{i % 3}",
                                        "seg_id": str(i), "src_lang": "en", "tgt_lang": "de"}) + "\n"
                            for i in range(n)))
    return path


def test_two_judging_processes_share_one_cache(tmp_path):
    inp = _items(tmp_path / "in.jsonl", 30)
    folder = tmp_path / "cache"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))

    def judge(srv, out):
        return subprocess.Popen([sys.executable, "-m", "polyjudge.cli.main", "judge", str(inp), "-o",
                                 str(tmp_path / out), "--judge", f"openai:m@{srv.base_url}", "--runs", "2", "-q",
                                 "--concurrency", "4", "--cache", str(folder)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)

    answer = lambda body: json.dumps({"score": len(body["messages"][-1]["content"]) % 90 + body["seed"]})  # noqa: E731
    with ScriptedServer(answer, latency_s=0.01) as srv:
        procs = [judge(srv, "one"), judge(srv, "two")]
        for p in procs:
            _, err = p.communicate(timeout=300)
            assert p.returncode == 0, err.decode()
        both = len(srv.requests)
        assert 60 <= both <= 120
        assert len(rows(folder)) == 60
        third = judge(srv, "three")
        _, err = third.communicate(timeout=300)
        assert third.returncode == 0, err.decode()
        assert len(srv.requests) == both  # the third sends nothing
    for name in ("segments.tsv", "systems.tsv"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes() == \
            (tmp_path / "three" / name).read_bytes()


def test_a_judge_killed_mid_run_leaves_a_sound_cache_and_its_answers_reach_it_on_resume(tmp_path):
    inp = _items(tmp_path / "in.jsonl", 40)
    folder = tmp_path / "cache"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))

    def judge(srv, out):
        return [sys.executable, "-m", "polyjudge.cli.main", "judge", str(inp), "-o", str(tmp_path / out), "--judge",
                f"openai:m@{srv.base_url}", "-q", "--runs", "2", "--concurrency", "2", "--cache", str(folder)]

    answer = lambda body: json.dumps({"score": len(body["messages"][-1]["content"]) % 90 + body["seed"]})  # noqa: E731
    with ScriptedServer(answer, latency_s=0.05) as srv:
        first = subprocess.Popen(judge(srv, "run"), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while len(srv.requests) < 20 and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
        if (folder / "responses.sqlite").exists():
            rows(folder)  # whatever it holds is sound
        paid = len(srv.requests)
        assert 20 <= paid < 80
        done = subprocess.run(judge(srv, "run"), env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert len(rows(folder)) == 80  # the killed session's answers too
        resumed = len(srv.requests)
        assert resumed <= 80 + 2  # nothing answered is bought twice (at most the two in flight at the kill)
        fresh = subprocess.run(judge(srv, "fresh"), env=env, capture_output=True, text=True, timeout=300)
        assert fresh.returncode == 0, fresh.stderr
        assert len(srv.requests) == resumed
