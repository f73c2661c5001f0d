"""A million judgments: 100,000 items x 10 runs with document context against a local server.

Generates ``--items`` items (documents of ``--segments`` segments, translated
by ``--systems`` systems) as a JSONL file in a temporary directory, starts the
asyncio test server at zero latency, and runs ``polyjudge judge`` (MQM, 10 runs,
document context) as a child process twice:

1. the run itself: wall time, requests per second, peak RSS of the child;
2. the same command again on the finished run (nothing to send): wall time and peak RSS.

With ``--keep DIR --outputs-again`` on a run kept earlier, only its outputs are written again
from its store (the same answers, parsed and summarised anew), timed as below.

Inside the child, the seconds spent summarising the stored answers (``collect_s``:
parsing, aggregation, the judgments spool) and writing the run directory
(``write_s``) are timed around the engine's own functions, in wall and in CPU seconds of the child
(``collect_cpu_s``, ``write_cpu_s``: steadier than wall time on a shared machine); together they are
the output time of the first run (the second reuses the outputs and only
rewrites the manifest, so both are ~0 there).

Peak RSS is the child's own (``os.wait4``), never this process's or the server's.

    python benchmarks/scale.py [--items 100000] [--runs 10] [--concurrency 64] [--protocol mqm]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The CLI, with the time spent summarising the stored answers and writing the run directory measured
# around the engine's own functions (printed as one "timings:" line on stderr).
CLI = """
import json, sys, time
sys.argv[0] = "polyjudge"
from polyjudge.engine import core, result
spent = {{"collect_s": 0.0, "write_s": 0.0, "collect_cpu_s": 0.0, "write_cpu_s": 0.0}}

def timed(fn, name):
    def wrapper(*args, **kwargs):
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - t0
            spent[name.replace("_s", "_cpu_s")] += time.process_time() - c0
    return wrapper

if hasattr(core, "collect"):  # (absent before polyjudge summarised runs in one pass)
    core.collect = timed(core.collect, "collect_s")
result.RunResult.write = timed(result.RunResult.write, "write_s")
from polyjudge.cli.main import main
try:
    main()
finally:
    sys.stderr.write("timings: " + json.dumps({{k: round(v, 2) for k, v in spent.items()}}) + "\\n")
"""

SERVER = """
import sys
sys.path.insert(0, {root!r})
from tests.helpers.openai_server import serve_fast
serve_fast({content!r}, {port}, latency_s=0.0)
"""

ANSWERS = {
    "mqm": json.dumps({"errors": {"critical": [], "major": [{"type": "accuracy/mistranslation", "desc": "a word"}],
                                  "minor": []}}),
    "da": json.dumps({"score": 70}),
}

WORDS = ("the quick brown fox jumps over a lazy dog while seven judges read every sentence of the long "
         "document twice before they agree on a score").split()


def sentence(i: int, n: int = 14) -> str:
    return " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(n)) + f" {i}."


def write_items(path: Path, n_items: int, segments: int, systems: int) -> None:
    """``n_items`` items: documents of ``segments`` segments, each translated by every system."""
    per_doc = segments * systems
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n_items):
            doc, rest = divmod(i, per_doc)
            system, seg = divmod(rest, segments)
            src_id = doc * segments + seg
            fh.write(json.dumps({"src": sentence(src_id), "tgt": f"Übersetzung {system} von {sentence(src_id, 10)}",
                                 "src_lang": "en", "tgt_lang": "de", "system": f"sys{system}",
                                 "doc_id": f"doc{doc}", "seg_id": str(src_id)}, ensure_ascii=False) + "\n")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_child(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """Wall seconds, peak RSS (MB) and exit code of one child, and its stderr."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    return wall, usage.ru_maxrss / 1024, proc.returncode, err


def forget_outputs(run_dir: Path) -> None:
    """Drop the finished run's note that its outputs are current (engine.collect.remember_outputs), so
    the next ``judge`` on it summarises every stored answer again and rewrites the run directory."""
    store = run_dir / "store.sqlite"
    if not store.is_file():
        raise SystemExit(f"--outputs-again: no run store at {store}")
    with closing(sqlite3.connect(store)) as db, db:
        db.execute("DELETE FROM meta WHERE name = 'outputs'")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--segments", type=int, default=10, help="segments per document")
    ap.add_argument("--systems", type=int, default=4, help="systems translating each document")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--protocol", choices=sorted(ANSWERS), default="mqm")
    ap.add_argument("--keep", default=None, help="write the run directory here instead of a temporary one")
    ap.add_argument("--outputs-again", action="store_true",
                    help="with --keep DIR of a finished run (same --items, --segments, --systems, --runs): "
                         "only write its outputs again from its store, timed (nothing is sent)")
    args = ap.parse_args()
    if args.outputs_again:
        forget_outputs(Path(args.keep) if args.keep else ap.error("--outputs-again needs --keep DIR"))

    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVER.format(root=str(ROOT), port=port,
                                                                  content=ANSWERS[args.protocol])])
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp) / "items.jsonl"
            write_items(data, args.items, args.segments, args.systems)
            out = Path(args.keep) if args.keep else Path(tmp) / "run"
            # The shared response cache is filled as in any run (its cost is measured), in the temporary folder.
            env = dict(os.environ, OPENAI_API_KEY="sk-bench", POLYJUDGE_CACHE=str(Path(tmp) / "cache"))
            cmd = [sys.executable, "-c", CLI.format(), "judge", str(data), "-o", str(out), "-p", args.protocol,
                   "--judge", f"openai:bench@http://127.0.0.1:{port}/v1", "--runs", str(args.runs),
                   "--concurrency", str(args.concurrency), "--max-failure-rate", "1"]
            n = args.items * args.runs
            report: dict[str, object] = {"items": args.items, "runs": args.runs, "judgments": n,
                                         "protocol": args.protocol, "concurrency": args.concurrency}
            for phase in ("outputs",) if args.outputs_again else ("run", "resume"):
                wall, rss, code, err = run_child(cmd, env)
                if code != 0:
                    sys.stderr.write(err)
                    raise SystemExit(f"{phase}: polyjudge exited {code}")
                timings = [json.loads(line.split("timings: ", 1)[1]) for line in err.splitlines()
                           if "timings: " in line]
                report[phase] = {"wall_s": round(wall, 2), "peak_rss_mb": round(rss, 1),
                                 **({"timings_s": timings[-1]} if timings else {})}
                if phase == "run":
                    report[phase]["requests_per_s"] = round(n / wall, 1)  # type: ignore[index]
                print(f"{phase}: {json.dumps(report[phase])}", flush=True)
            print(json.dumps(report))
    finally:
        server.kill()


if __name__ == "__main__":
    main()
