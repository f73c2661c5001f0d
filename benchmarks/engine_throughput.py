"""Engine throughput against a local OpenAI-compatible server at fixed latency.

Prints achieved / ideal request rate (ideal = concurrency / latency) and the
CPU milliseconds the judging process spends per judgment (HTTP client,
planning, store writes, parsing and scoring), all measured in this one run.

    python benchmarks/engine_throughput.py [--requests 3000] [--latency 0.1] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

SERVER = """
import sys, json
sys.path.insert(0, {root!r})
from tests.helpers.openai_server import serve_fast
serve_fast(json.dumps({{"score": 50}}), {port}, latency_s={latency})
"""


def bare_client_cpu(base_url: str, n: int, concurrency: int) -> float:
    import asyncio

    from polyjudge.backends.base import GenerateRequest, Message
    from polyjudge.backends.openai import OpenAIBackend

    async def go() -> float:
        backend = OpenAIBackend("bench", base_url)
        req = GenerateRequest(messages=(Message("user", "x"),), max_tokens=10)
        todo = iter(range(n))
        cpu0 = time.process_time()

        async def worker() -> None:
            for _ in todo:
                await backend.generate(req)
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        await backend.aclose()
        return time.process_time() - cpu0
    return asyncio.run(go())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--concurrency", type=int, default=64)
    args = ap.parse_args()

    from polyjudge.backends.openai import OpenAIBackend
    from polyjudge.data.records import Item
    from polyjudge.engine import run
    from polyjudge.protocols import get_protocol

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-c", SERVER.format(root=str(ROOT), port=port, latency=args.latency)])
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        runs = 10
        items = [Item(f"source sentence {i}", f"target sentence {i}", src_lang="en", tgt_lang="de",
                      doc_id=f"d{i // 20}", seg_id=str(i), system="sys") for i in range(args.requests // runs)]
        n = len(items) * runs
        with tempfile.TemporaryDirectory() as tmp:
            cpu0, t0 = time.process_time(), time.perf_counter()
            result = run(items, get_protocol("da"), [OpenAIBackend("bench", f"http://127.0.0.1:{port}/v1")],
                         runs=runs, concurrency=args.concurrency, store_path=Path(tmp) / "store.sqlite")
            result.write(Path(tmp) / "run")
            wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        ok = result.manifest["counts"].get("status_ok", 0)
        # The same number of requests through the bare backend, no engine: the HTTP client's own cost.
        bare_cpu = bare_client_cpu(f"http://127.0.0.1:{port}/v1", n, args.concurrency)
        ideal = args.concurrency / args.latency
        achieved = n / wall
        print(json.dumps({"requests": n, "ok": ok, "latency_s": args.latency, "concurrency": args.concurrency,
                          "wall_s": round(wall, 3), "ideal_req_per_s": round(ideal, 1),
                          "achieved_req_per_s": round(achieved, 1)}))
        print(f"achieved / ideal request rate: {achieved / ideal:.3f}  (target >= 0.9)")
        print(f"CPU per judgment, whole process: {1000 * cpu / n:.3f} ms "
              f"(HTTP client alone: {1000 * bare_cpu / n:.3f} ms)")
        print(f"engine overhead per judgment (planning, store, parsing, scoring, outputs): "
              f"{1000 * (cpu - bare_cpu) / n:.3f} ms  (target < 2 ms)")
    finally:
        server.kill()


if __name__ == "__main__":
    main()
