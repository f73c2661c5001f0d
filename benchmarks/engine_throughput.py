"""Judging throughput against a local OpenAI-compatible server at fixed latency, side by side.

Clients send the same number of chat requests to a local server that answers
each after a fixed latency, in the same run, one after the other (order
rotated per repetition), each in a fresh process:

* ``polyjudge``: the real ``polyjudge judge`` command (DA, ``-c CONCURRENCY``,
  a run directory written), run in-process by a child;
* ``aiohttp``: one bare ``aiohttp.ClientSession`` with a pool as large as the
  concurrency: the transport polyjudge is built on, with no engine;
* ``raw``: a bare asyncio client (one keep-alive connection per worker, JSON
  in and out): the limit of what Python can do;
* ``openai``: the official ``openai`` client (``AsyncOpenAI``, defaults, no
  retries), as users run it (a benchmark-only peer: ``pip install openai``,
  or ``--openai-python`` naming the interpreter of an environment that has it);
* ``polyjudge-http`` (backends/http.py: aiohttp with its bounds) and ``httpx``
  (only when installed: it is no dependency); ``--tools all`` runs every one.

Two scenarios of the ``polyjudge`` tool:

* **first run** (the default): what a user's first run does. Distinct items,
  one run each (``-p da --runs 1 --no-cache``), a fresh run directory, and a
  fresh server process for every measured run of every tool: nothing is known
  of the server (the judge's request form is learned from the first answer)
  and no answer is found anywhere;
* **warm cache** (``--warm-cache``): DA, 10 runs per item, each run starting
  from a copy of a shared response cache that one small polyjudge run (other
  items) filled before the measured runs: as in a user's later run against the
  same server, the judge's request form as the server settled it is known
  (with ``--cold-form``, no warm-up: a first contact each time).

Per tool and scenario it prints, min and median over the repetitions:

* ``ratio``: achieved / ideal request rate, where the achieved rate is what
  the server saw (requests ÷ time from the first request's arrival to the last
  answer) and the ideal one is ``concurrency / latency``;
* ``cpu ms/req``: the client process's CPU time ÷ requests, for the judging
  call (polyjudge: the ``judge`` command after its modules are imported:
  planning, sending, store, parsing, outputs) and for the whole process
  (interpreter start and imports included);

and then polyjudge against aiohttp alone: its ratio ÷ aiohttp's and its
whole-process CPU per request ÷ aiohttp's (min against min, median against
median), with the targets (at least 0.97 and at most 2).

    python benchmarks/engine_throughput.py       # first run: 0.1 s:c=64:3000 and 1 s:c=256:3840, 3 repeats
    python benchmarks/engine_throughput.py --scenario 0.1:64:1000 --repeats 2   # smaller, while developing
    python benchmarks/engine_throughput.py --warm-cache         # the warm-cache scenario (10 runs per item)
    python benchmarks/engine_throughput.py --tools all --repeats 3      # and the other clients and transports
    python benchmarks/engine_throughput.py --baseline-src /tmp/base/src  # and another polyjudge, side by side
    python benchmarks/engine_throughput.py --openai-python /tmp/openai-venv/bin/python --tools polyjudge,aiohttp,openai
    # a self-hosted server's pace: one driver next to Ray's executor with 2 actors
    python benchmarks/engine_throughput.py --warm-cache --scenario 0.005:512:20000 --repeats 1 \
        --tools polyjudge,polyjudge-ray,aiohttp

The machine should be otherwise idle; on a shared one compare the tools
side by side (same run), not with numbers from another run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# The polyjudge sources the "polyjudge" tools import (the parent sets it per tool: --baseline-src).
SRC = Path(os.environ.get("PJ_BENCH_SRC") or ROOT / "src")
TOOLS = ("polyjudge", "raw", "openai")
# What runs without --tools: polyjudge next to the transport it is built on.
DEFAULT_TOOLS = ("polyjudge", "aiohttp")
# The two scenarios of the polyjudge tool (the child reads it from PJ_BENCH_SCENARIO).
FIRST_RUN, WARM_CACHE = "first-run", "warm-cache"
# Transports alone (no engine), for choosing polyjudge's HTTP client: --tools all adds them.
TRANSPORTS = ("polyjudge-http", "aiohttp", "httpx")
# The judge command with --executor ray (PJ_BENCH_RAY_ACTORS actors, 2 by default): --tools polyjudge-ray.
# Its CPU is the driver's only (the actors are Ray's processes): compare its ratio, not its CPU.
EXECUTORS = ("polyjudge-ray",)
CONTENT = json.dumps({"score": 50})
# What the raw and openai clients send: about the size of polyjudge's DA prompt.
PROMPT = ("Score the following translation from English to German on a continuous scale from 0 to 100. "
          "English source: source sentence 1. German translation: target sentence 1. ") * 4


# --------------------------------------------------------------------------- the server

def serve(port: int, latency: float) -> None:
    """A small asyncio HTTP/1.1 server: every POST is answered after ``latency`` seconds with one
    chat completion; ``GET /stats`` returns (and resets) the count and the first arrival / last answer
    times it saw; any other GET is a 404."""
    payload = json.dumps({
        "id": "bench", "object": "chat.completion", "created": 0, "model": "bench",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": CONTENT}}],
        "usage": {"prompt_tokens": 60, "completion_tokens": 5, "total_tokens": 65},
    }).encode()
    answer = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
              + str(len(payload)).encode() + b"\r\n\r\n" + payload)
    seen: dict[str, Any] = {"n": 0, "first": None, "last": None}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                if length:
                    await reader.readexactly(length)
                if head.startswith(b"GET /stats"):
                    first, last = seen["first"], seen["last"]
                    body = json.dumps({"requests": seen["n"], "span_s": (last - first) if first and last else 0.0})
                    seen.update(n=0, first=None, last=None)
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                                 + str(len(body)).encode() + b"\r\n\r\n" + body.encode())
                    await writer.drain()
                    continue
                if head.startswith(b"GET "):  # polyjudge asks self-hosted servers for /props: not a request
                    writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                    await writer.drain()
                    continue
                if seen["first"] is None:
                    seen["first"] = time.monotonic()
                seen["n"] += 1
                await asyncio.sleep(latency)
                writer.write(answer)
                seen["last"] = time.monotonic()
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=2048)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def server_stats(port: int) -> dict[str, Any]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET /stats HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        data = b""
        while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"}"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    result: dict[str, Any] = json.loads(data.split(b"\r\n\r\n", 1)[1])
    return result


# --------------------------------------------------------------------------- the clients (one per child process)

async def _workers(n: int, concurrency: int, one: Any) -> None:
    todo = iter(range(n))

    async def worker() -> None:
        for _ in todo:
            await one()

    await asyncio.gather(*(worker() for _ in range(concurrency)))


def client_raw(url: str, n: int, concurrency: int) -> int:
    host, port = url.split("//")[1].split("/")[0].split(":")
    body = {"model": "bench", "messages": [{"role": "user", "content": PROMPT}], "temperature": 0.0, "max_tokens": 64}
    ok = 0

    async def go() -> None:
        free: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

        async def one() -> None:
            nonlocal ok
            reader, writer = free.pop() if free else await asyncio.open_connection(host, int(port))
            data = json.dumps(body).encode()
            writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n" % (host.encode(), len(data)) + data)
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            answer = json.loads(await reader.readexactly(length))
            ok += answer["choices"][0]["message"]["content"] == CONTENT
            free.append((reader, writer))

        await _workers(n, concurrency, one)
        for _, writer in free:
            writer.close()

    asyncio.run(go())
    return ok


def client_openai(url: str, n: int, concurrency: int) -> int:
    from openai import AsyncOpenAI

    ok = 0

    async def go() -> None:
        client = AsyncOpenAI(base_url=url, api_key="bench", max_retries=0)

        async def one() -> None:
            nonlocal ok
            answer = await client.chat.completions.create(model="bench", temperature=0.0, max_tokens=64,
                                                          messages=[{"role": "user", "content": PROMPT}])
            ok += answer.choices[0].message.content == CONTENT

        await _workers(n, concurrency, one)
        await client.close()

    asyncio.run(go())
    return ok


def client_polyjudge_http(url: str, n: int, concurrency: int) -> int:
    """polyjudge's HTTP layer alone (backends/http.py), no engine: what the transport costs."""
    from polyjudge.backends.http import HttpClients

    body = {"model": "bench", "messages": [{"role": "user", "content": PROMPT}], "temperature": 0.0, "max_tokens": 64}
    target = f"{url}/chat/completions"
    ok = 0

    async def go() -> None:
        clients = HttpClients(120.0)

        async def one() -> None:
            nonlocal ok
            resp = await clients.post(target, body, headers={"Authorization": "Bearer bench"})
            ok += resp.json()["choices"][0]["message"]["content"] == CONTENT

        await _workers(n, concurrency, one)
        await clients.aclose()

    asyncio.run(go())
    return ok


def client_aiohttp(url: str, n: int, concurrency: int) -> int:
    """aiohttp (one session, a connection pool as large as the concurrency): a candidate transport."""
    import aiohttp

    body = {"model": "bench", "messages": [{"role": "user", "content": PROMPT}], "temperature": 0.0, "max_tokens": 64}
    target = f"{url}/chat/completions"
    ok = 0

    async def go() -> None:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=max(100, concurrency))) as session:
            async def one() -> None:
                nonlocal ok
                async with session.post(target, json=body, headers={"Authorization": "Bearer bench"}) as resp:
                    answer = await resp.json()
                ok += answer["choices"][0]["message"]["content"] == CONTENT

            await _workers(n, concurrency, one)

    asyncio.run(go())
    return ok


def client_httpx(url: str, n: int, concurrency: int) -> int:
    """httpx (one AsyncClient, a pool as large as the concurrency): a candidate transport."""
    import httpx

    body = {"model": "bench", "messages": [{"role": "user", "content": PROMPT}], "temperature": 0.0, "max_tokens": 64}
    target = f"{url}/chat/completions"
    ok = 0

    async def go() -> None:
        limits = httpx.Limits(max_connections=max(100, concurrency), max_keepalive_connections=max(100, concurrency))
        async with httpx.AsyncClient(limits=limits) as client:
            async def one() -> None:
                nonlocal ok
                resp = await client.post(target, json=body, headers={"Authorization": "Bearer bench"})
                ok += resp.json()["choices"][0]["message"]["content"] == CONTENT

            await _workers(n, concurrency, one)

    asyncio.run(go())
    return ok


def client_polyjudge_ray(url: str, n: int, concurrency: int) -> int:
    """``polyjudge judge --executor ray`` with ``PJ_BENCH_RAY_ACTORS`` actors on a local Ray started by the command."""
    return client_polyjudge(url, n, concurrency, ["--executor", "ray", "--ray-actors",
                                                  os.environ.get("PJ_BENCH_RAY_ACTORS", "2")])


def client_polyjudge(url: str, n: int, concurrency: int, extra: list[str] | None = None) -> int:
    """The ``polyjudge judge`` command, in this process, outputs written: in the first-run scenario
    (``PJ_BENCH_SCENARIO``) ``n`` distinct items judged once each with ``--no-cache``; in the warm-cache
    one ``n / 10`` items judged 10 times each, with the shared cache ``POLYJUDGE_CACHE`` names.

    With ``PJ_BENCH_FORM_GIVEN`` set, the judge's request form is given (``?reasoning=false,structured=json_schema``:
    the same requests as by default), so no request waits for the first answer to settle it."""
    sys.path.insert(0, str(SRC))
    from polyjudge.cli.errors import run_cli
    from polyjudge.cli.main import cli
    from polyjudge.rundir import RunDir

    first_run = os.environ.get("PJ_BENCH_SCENARIO", FIRST_RUN) == FIRST_RUN
    runs = 1 if first_run else 10
    with tempfile.TemporaryDirectory() as tmp:
        items = Path(tmp) / "items.jsonl"
        with items.open("w", encoding="utf-8") as fh:
            salt = os.environ.get("PJ_BENCH_SALT", "")  # the warm-up's items: none of them is a measured one
            for i in range(n // runs):
                fh.write(json.dumps({"src": f"{salt}source sentence {i}", "tgt": f"target sentence {i}",
                                     "src_lang": "en", "tgt_lang": "de", "doc_id": f"d{i // 20}", "seg_id": str(i),
                                     "system": "sys"}) + "\n")
        out = Path(tmp) / "run"
        form = "?reasoning=false,structured=json_schema" if os.environ.get("PJ_BENCH_FORM_GIVEN") else ""
        cache = ["--no-cache"] if first_run else []
        code = run_cli(cli, ["judge", str(items), "-o", str(out), "-p", "da", "--judge", f"openai:bench{form}@{url}",
                             "--runs", str(runs), "-c", str(concurrency), "-q", "--format", "json", *cache,
                             *(extra or [])])
        if code != 0:
            raise SystemExit(f"polyjudge judge exited {code}")
        counts = RunDir(out).manifest.counts
        return int(counts.get("status_ok", 0))


def child(tool: str, url: str, n: int, concurrency: int) -> None:
    run = {"polyjudge": client_polyjudge, "polyjudge-ray": client_polyjudge_ray, "raw": client_raw,
           "openai": client_openai, "polyjudge-http": client_polyjudge_http, "aiohttp": client_aiohttp,
           "httpx": client_httpx}[tool]
    stdout = sys.stdout
    sys.stdout = sys.stderr  # the polyjudge summary goes to stderr; stdout carries one JSON line
    # The tool's modules are imported first: "cpu_s" is the judging call, "cpu_process_s" adds imports.
    sys.path.insert(0, str(SRC))
    if tool in ("polyjudge", "polyjudge-ray"):
        import polyjudge.backends.openai  # noqa: F401
        import polyjudge.cli.judge_cmd  # noqa: F401
        import polyjudge.cli.main  # noqa: F401
    elif tool == "polyjudge-http":
        import polyjudge.backends.http  # noqa: F401
    elif tool in ("openai", "aiohttp", "httpx"):
        __import__(tool)
    cpu0 = time.process_time()
    ok = run(url, n, concurrency)
    cpu = time.process_time() - cpu0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    sys.stdout = stdout
    print(json.dumps({"ok": ok, "cpu_s": cpu, "cpu_process_s": usage.ru_utime + usage.ru_stime}))


# --------------------------------------------------------------------------- the parent

def run_one(tool: str, port: int, latency: float, concurrency: int, n: int,
            baseline_src: str | None = None, openai_python: str | None = None,
            warm: Path | None = None) -> dict[str, Any]:
    server_stats(port)  # reset
    env = dict(os.environ)
    env.pop("PJ_BENCH_SRC", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # every tool imports compiled modules, as installed (compile_sources)
    if tool == "baseline":
        env["PJ_BENCH_SRC"] = str(baseline_src)
    python = openai_python if tool == "openai" and openai_python else sys.executable
    with tempfile.TemporaryDirectory() as cache:
        # A fresh shared response cache per run: polyjudge keeps every answer there (a cost it pays, so it is
        # measured), and a repetition must send its requests rather than find the last one's answers (the
        # first-run scenario does not use it: --no-cache).
        env["POLYJUDGE_CACHE"] = cache
        if warm is not None and tool.startswith(("polyjudge", "baseline")):
            # The warm-up's cache (its answers are of other items): what a run after the first one finds, the
            # judge's request form as the server settled it included (--cold-form: a first contact instead).
            shutil.copytree(warm, cache, dirs_exist_ok=True)
        proc = subprocess.run([python, __file__, "--child", "polyjudge" if tool == "baseline" else tool, "--url",
                               f"http://127.0.0.1:{port}/v1", "--n", str(n), "--concurrency", str(concurrency)],
                              capture_output=True, text=True, timeout=900, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{tool} failed:\n{proc.stderr[-3000:]}")
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    seen = server_stats(port)
    ideal_s = seen["requests"] * latency / concurrency
    return {"tool": tool, "requests": seen["requests"], "ok": got["ok"], "span_s": seen["span_s"],
            "ratio": ideal_s / seen["span_s"] if seen["span_s"] else 0.0,
            "cpu_ms": 1000 * got["cpu_s"] / n, "cpu_process_ms": 1000 * got["cpu_process_s"] / n}


def warm_up(folder: Path, port: int, concurrency: int) -> Path:
    """One small polyjudge run against the server (other items than the measured ones), its shared response
    cache in ``folder``: the cache every measured polyjudge run starts from, as a user's second run would."""
    env = dict(os.environ, POLYJUDGE_CACHE=str(folder), PJ_BENCH_SALT="warm-up ")
    env.pop("PJ_BENCH_SRC", None)
    proc = subprocess.run([sys.executable, __file__, "--child", "polyjudge", "--url", f"http://127.0.0.1:{port}/v1",
                           "--n", "20", "--concurrency", str(concurrency)], capture_output=True, text=True,
                          timeout=600, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"the warm-up run failed:\n{proc.stderr[-3000:]}")
    server_stats(port)  # reset
    return folder


def compile_sources(*trees: str | Path) -> None:
    """Byte-compile the polyjudge sources measured, as an installed package is: aiohttp's and openai's modules
    are compiled in site-packages, and a tree imported without its ``__pycache__`` (PYTHONDONTWRITEBYTECODE)
    would charge polyjudge the compilation of every module it imports."""
    import compileall

    for tree in trees:
        compileall.compile_dir(str(tree), quiet=1, workers=1)


def start_server(latency: float) -> tuple[subprocess.Popen[bytes], int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(port), "--latency", str(latency)])
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the benchmark server did not start")



def _scenario_rows(tools: list[str], latency: float, concurrency: int, n: int,
                   args: argparse.Namespace) -> dict[str, list[dict[str, Any]]]:
    """Every tool's measurements of one scenario, the order rotated per repetition. In the first-run
    scenario each measured run gets a server process of its own; in the warm-cache one they share one."""
    rows: dict[str, list[dict[str, Any]]] = {t: [] for t in tools}
    fresh = not args.warm_cache
    server, port = (None, 0) if fresh else start_server(latency)
    warm_dir = tempfile.TemporaryDirectory()
    try:
        warm = None if fresh or args.cold_form else warm_up(Path(warm_dir.name), port, concurrency)
        for rep in range(args.repeats):
            for k in range(len(tools)):
                tool = tools[(rep + k) % len(tools)]  # rotate the order: no tool always goes first
                if fresh:
                    server, port = start_server(latency)
                try:
                    row = run_one(tool, port, latency, concurrency, n, args.baseline_src, args.openai_python, warm)
                finally:
                    if fresh and server is not None:
                        _stop_server(server)
                rows[tool].append(row)
                if args.json:
                    print(json.dumps({"latency_s": latency, "concurrency": concurrency, **row}), flush=True)
    finally:
        if server is not None:
            _stop_server(server)
        warm_dir.cleanup()
    return rows


def _stop_server(server: subprocess.Popen[bytes]) -> None:
    server.kill()
    server.wait()


def _print_table(rows: dict[str, list[dict[str, Any]]], n: int) -> None:
    print(f"{'tool':<15} {'ratio min':>9} {'median':>7}   {'cpu ms/req min':>14} {'median':>7}   "
          f"{'whole process min':>17} {'median':>7}   ok")
    for tool, rs in rows.items():
        ratio = [r["ratio"] for r in rs]
        cpu = [r["cpu_ms"] for r in rs]
        whole = [r["cpu_process_ms"] for r in rs]
        ok = min(r["ok"] for r in rs)
        print(f"{tool:<15} {min(ratio):>9.3f} {statistics.median(ratio):>7.3f}   {min(cpu):>14.3f} "
              f"{statistics.median(cpu):>7.3f}   {min(whole):>17.3f} {statistics.median(whole):>7.3f}   "
              f"{ok}/{n}")
    if "aiohttp" not in rows:
        return
    ref = rows["aiohttp"]
    for tool in (t for t in rows if t.startswith(("polyjudge", "baseline")) and t != "polyjudge-http"):
        rs = rows[tool]
        rate = [f(r["ratio"] for r in rs) / f(r["ratio"] for r in ref) for f in (_min, _median)]
        cpu = [f(r["cpu_process_ms"] for r in rs) / f(r["cpu_process_ms"] for r in ref) for f in (_min, _median)]
        verdict = "met" if min(rate) >= 0.97 and max(cpu) <= 2.0 else "missed"
        print(f"{tool} / aiohttp alone: ratio {rate[0]:.3f} (min) {rate[1]:.3f} (median), target >= 0.97; "
              f"whole-process CPU per request {cpu[0]:.2f}x (min) {cpu[1]:.2f}x (median), target <= 2x: {verdict}")


def _min(values: Any) -> float:
    return min(values)


def _median(values: Any) -> float:
    return statistics.median(values)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", action="append", metavar="LATENCY:CONCURRENCY:REQUESTS",
                    help="repeatable; default 0.1:64:3000 and 1:256:3840")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tools", default=",".join(DEFAULT_TOOLS),
                    help=f"comma-separated, of {', '.join(TOOLS + TRANSPORTS + EXECUTORS)}, or 'all' "
                         f"(default: {','.join(DEFAULT_TOOLS)})")
    ap.add_argument("--json", action="store_true", help="also print every measurement as a JSON line")
    ap.add_argument("--warm-cache", action="store_true",
                    help="the warm-cache scenario instead of the first run: 10 runs per item, every polyjudge run "
                         "starting from a shared response cache a small warm-up run filled (one server per "
                         "scenario)")
    ap.add_argument("--form-given", action="store_true",
                    help="give polyjudge's judge its request form (?reasoning=false,structured=json_schema: the "
                         "same requests), so none waits for the first answer")
    ap.add_argument("--cold-form", action="store_true",
                    help="with --warm-cache: no warm-up run, so every polyjudge run meets the server for the "
                         "first time and its judge's first request goes alone (see backends/adaptation.py)")
    ap.add_argument("--ray-actors", type=int, default=2, help="actors of the polyjudge-ray tool (default 2)")
    ap.add_argument("--openai-python", metavar="PYTHON",
                    help="the interpreter that runs the openai tool (an environment with `openai` installed)")
    ap.add_argument("--baseline-src", metavar="DIR",
                    help="also run the judge command of another polyjudge source tree (its src/ directory, e.g. "
                         "of `git archive HEAD src | tar -x -C /tmp/base`) as tool 'baseline'")
    # internal: the server and the client processes
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--latency", type=float, default=0.1, help=argparse.SUPPRESS)
    ap.add_argument("--child", choices=TOOLS + TRANSPORTS + EXECUTORS, help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--concurrency", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.serve, args.latency)
        return
    if args.child:
        child(args.child, args.url, args.n, args.concurrency)
        return

    tools = list(TOOLS + TRANSPORTS) if args.tools == "all" else [t for t in args.tools.split(",") if t]
    if args.form_given:
        os.environ["PJ_BENCH_FORM_GIVEN"] = "1"
    os.environ["PJ_BENCH_SCENARIO"] = WARM_CACHE if args.warm_cache else FIRST_RUN
    os.environ["PJ_BENCH_RAY_ACTORS"] = str(args.ray_actors)
    if args.baseline_src:
        tools.append("baseline")
    scenarios = [tuple(s.split(":")) for s in (args.scenario or ["0.1:64:3000", "1:256:3840"])]
    compile_sources(*([SRC] + ([args.baseline_src] if args.baseline_src else [])))
    what = ("warm cache: DA, 10 runs per item, a shared response cache warmed" if args.warm_cache else
            "first run: DA, distinct items, --runs 1 --no-cache, a fresh server per run")
    print(f"scenario: {what}")
    print(f"cpus: {os.cpu_count()}, load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for lat_s, conc_s, n_s in scenarios:
        latency, concurrency, n = float(lat_s), int(conc_s), int(n_s)
        rows = _scenario_rows(tools, latency, concurrency, n, args)
        print(f"\nlatency {latency:g} s, concurrency {concurrency}, {n} requests, {args.repeats} repetitions "
              f"(ideal {concurrency / latency:.0f} req/s), load average now "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        _print_table(rows, n)
    print("\nratio: ideal time (requests x latency / concurrency) / time the server saw from the first request "
          "to the last answer; cpu: the client's process CPU time / requests (judging call; whole process "
          "with interpreter start and imports). Targets for polyjudge (issues 35 and 46): a ratio >= 0.97 x "
          "aiohttp alone's and a whole-process CPU per request <= 2 x aiohttp alone's, in the same run.")

if __name__ == "__main__":
    main()
