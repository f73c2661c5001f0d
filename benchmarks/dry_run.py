"""``polyjudge judge --dry-run`` at scale: one long document, and a million small items.

Two cases (issue 23, item 6), each run as a child process ``--repeat`` times,
printing wall time and the child's own peak RSS (``os.wait4``), min and median:

* ``document``: one document of ``--segments`` segments (default 10,000) under
  mqm with its full-document context, so every prompt holds the whole document;
* ``items``: ``--items`` (default 1,000,000) small items without documents (da).

Targets: the document under 10 s and 1 GB, the million items under 60 s and
1.5 GB. Nothing is sent: the judge's URL points at a closed port.

    python benchmarks/dry_run.py [--case document|items|both] [--segments 10000] [--items 1000000] [--repeat 3]

Measured (wall time and peak RSS of the child, min/median of 3):

* first streamed dry run (previous session, machine at load 7-9): document of 10,000 segments 221 s,
  73 MB; a million items 451 s, 1,049 MB (the issue, before streaming: 240 s and 11.3 GB; 92 s and 4.0 GB);
* templates rendered once per shape and documents hashed once (2026-11-25, idle 2-core machine):
  document of 10,000 segments 3.56/4.21 s, 97 MB; a million items 47.4/51.6 s, 1,047 MB.
  On the same idle machine the earlier code took 7.35 s for a 2,000-segment document and 24.4 s for
  100,000 items (one run each).

Estimates (requests, tokens, cost) are identical before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = ("the quick brown fox jumps over a lazy dog while seven judges read every sentence of the long "
         "document twice before they agree on a score").split()


def sentence(i: int, n: int = 14) -> str:
    return " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(n)) + f" {i}."


def write_document(path: Path, segments: int) -> None:
    """One document of ``segments`` segments, one system."""
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(segments):
            fh.write(json.dumps({"src": sentence(i), "tgt": f"Übersetzung von {sentence(i, 10)}", "src_lang": "en",
                                 "tgt_lang": "de", "system": "sys0", "doc_id": "doc0", "seg_id": str(i)},
                                ensure_ascii=False) + "\n")


def write_items(path: Path, n_items: int) -> None:
    """``n_items`` short items, no documents."""
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n_items):
            fh.write(json.dumps({"src": f"source {i}", "tgt": f"Ziel {i}", "src_lang": "en", "tgt_lang": "de",
                                 "system": "sys0", "seg_id": str(i)}) + "\n")


def run_child(cmd: list[str]) -> tuple[float, float, int, str]:
    """Wall seconds, peak RSS (MB) and exit code of one child, and its stdout."""
    env = dict(os.environ, OPENAI_API_KEY="sk-bench")
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - t0, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), out


def measure(name: str, data: Path, protocol: str, repeat: int, tmp: Path) -> dict[str, object]:
    cmd = [sys.executable, "-m", "polyjudge.cli.main", "judge", str(data), "-o", str(tmp / f"run-{name}"),
           "-p", protocol, "--judge", "openai:gpt-4o-mini@http://127.0.0.1:9/v1", "--dry-run"]
    walls, rsses = [], []
    last = ""
    for _ in range(repeat):
        wall, rss, code, out = run_child(cmd)
        if code != 0:
            sys.stderr.write(out)
            raise SystemExit(f"{name}: polyjudge exited {code}")
        walls.append(wall)
        rsses.append(rss)
        last = out
    return {"case": name, "wall_s_min": round(min(walls), 2), "wall_s_median": round(statistics.median(walls), 2),
            "peak_rss_mb_min": round(min(rsses), 1), "peak_rss_mb_median": round(statistics.median(rsses), 1),
            "estimate": last.strip().splitlines()[0] if last.strip() else ""}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=("document", "items", "both"), default="both")
    ap.add_argument("--segments", type=int, default=10_000)
    ap.add_argument("--items", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        if args.case in ("document", "both"):
            write_document(tmp / "document.jsonl", args.segments)
            print(json.dumps(measure(f"document-{args.segments}", tmp / "document.jsonl", "mqm", args.repeat, tmp)),
                  flush=True)
        if args.case in ("items", "both"):
            write_items(tmp / "items.jsonl", args.items)
            print(json.dumps(measure(f"items-{args.items}", tmp / "items.jsonl", "da", args.repeat, tmp)), flush=True)


if __name__ == "__main__":
    main()
