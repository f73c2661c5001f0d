"""The Ray executor at its edges: a cluster that cannot be joined, a node lost mid-run, and what
the actors learned reaching the driver's manifest.

The cluster here is a real multi-node one on this machine (``ray.cluster_utils.Cluster``:
a head with 1 CPU and a worker node with 2), shared by the module; the test that removes
the worker node runs last. Joining failures run the real command in a subprocess, as a user
would (a given-up ``ray.init`` keeps retrying in its thread until the process exits).
"""

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from polyjudge.backends.openai import OpenAIBackend
from polyjudge.backends.registry import BackendSettings, JudgeSpec
from polyjudge.engine import run
from polyjudge.engine.ray_executor import RayExecutor, RayOptions
from polyjudge.engine.runner import RetryPolicy
from polyjudge.protocols import get_protocol
from polyjudge.rundir.names import RAY_LOG
from tests.backends.test_openai_reasoning import o_series
from tests.helpers.ray_tests import HAVE_RAY, needs_ray, quiet_server, two_system_items

FAST_RETRY = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.02)
ROOT = Path(__file__).resolve().parents[2]
CONNECT_TIMEOUT_S = 3.0
# Python and Ray start-up on a busy two-core machine, on top of the connect timeout.
START_UP_S = 25.0


items = two_system_items


serve = quiet_server


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------- a cluster that cannot be joined


def judge_command(tmp_path, *extra, env=None):
    """``polyjudge judge`` with the Ray executor in a subprocess: (exit code, stderr, seconds, run dir)."""
    data = tmp_path / "items.jsonl"
    data.write_text("\n".join(json.dumps({"src": f"s{i}", "tgt": f"t{i}", "src_lang": "en", "tgt_lang": "de",
                                          "system": "A", "doc_id": "d", "seg_id": str(i)}) for i in range(3)))
    out = tmp_path / "run"
    full_env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + str(ROOT), **(env or {})}
    full_env.pop("POLYJUDGE_RAY_LOGS", None)
    command = [sys.executable, "-c", "from polyjudge.cli.main import main; main()", "judge", str(data),
               "-o", str(out), "-p", "da", "-q", "--judge", "openai:m@http://127.0.0.1:9/v1", "--executor", "ray",
               "--ray-connect-timeout", str(CONNECT_TIMEOUT_S), *extra]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, env=full_env,
                          timeout=CONNECT_TIMEOUT_S + START_UP_S + 30)
    return done.returncode, done.stderr, time.monotonic() - started, out


def assert_one_clear_line(code, stderr, seconds, out, address):
    lines = stderr.strip().splitlines()
    assert code == 2, stderr
    assert len(lines) == 1, stderr  # Ray's retries are not on the terminal
    assert lines[0].startswith("polyjudge: error: field 'ray-address': ")
    assert address in lines[0] and "--ray-connect-timeout" in lines[0] and "Traceback" not in stderr
    assert seconds < CONNECT_TIMEOUT_S + START_UP_S
    assert (out / RAY_LOG).is_file()


@needs_ray
def test_nothing_listening_at_the_address_fails_at_once(tmp_path):
    address = f"127.0.0.1:{free_port()}"
    code, stderr, seconds, out = judge_command(tmp_path, "--ray-address", address)
    assert_one_clear_line(code, stderr, seconds, out, address)
    assert "Connection refused" in stderr


@needs_ray
def test_a_server_that_is_not_ray_is_given_up_after_the_timeout(tmp_path, da_responder):
    with serve(da_responder) as srv:  # an HTTP server where Ray's GCS should be
        address = srv.base_url.split("//")[1].split("/")[0]
        code, stderr, seconds, out = judge_command(tmp_path, "--ray-address", address)
    assert_one_clear_line(code, stderr, seconds, out, address)
    assert "in time" in stderr
    assert seconds >= CONNECT_TIMEOUT_S  # it waited for the cluster as long as it was told, no longer
    assert "WARNING" in (out / RAY_LOG).read_text()  # Ray's own log lines went to the run directory


@needs_ray
def test_a_ray_address_variable_pointing_nowhere_is_named(tmp_path):
    address = f"127.0.0.1:{free_port()}"
    code, stderr, seconds, out = judge_command(tmp_path, env={"RAY_ADDRESS": address})
    assert_one_clear_line(code, stderr, seconds, out, address)
    assert f"RAY_ADDRESS={address}" in stderr


@needs_ray
def test_a_ray_client_address_with_nothing_behind_it(tmp_path):
    address = f"ray://127.0.0.1:{free_port()}"
    code, stderr, seconds, out = judge_command(tmp_path, "--ray-address", address)
    assert_one_clear_line(code, stderr, seconds, out, address)


def test_the_connect_timeout_is_checked():
    from polyjudge.data.errors import InputError

    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(InputError, match="ray-connect-timeout"):
            RayOptions(ray_connect_timeout=bad).check()


# --------------------------------------------------------------------------- a multi-node cluster


@pytest.fixture(scope="module")
def cluster():
    if not HAVE_RAY:
        pytest.skip("Ray is not installed (pip install 'polyjudge[ray]')")
    import ray
    from ray.cluster_utils import Cluster

    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    worker = nodes.add_node(num_cpus=2)
    nodes.wait_for_nodes()
    ray.init(address=nodes.address, logging_level="WARNING", log_to_driver=False)
    yield nodes, worker
    ray.shutdown()
    nodes.shutdown()


def judged(out, srv, judge="judge-1", executor=None, **kw):
    out.mkdir(parents=True, exist_ok=True)
    extra = {"executor": executor} if executor is not None else {}
    result = run(items=kw.pop("items"), protocol=get_protocol("da"),
                 backends=[OpenAIBackend(judge, srv.base_url)], store_path=out / "store.sqlite",
                 retry=FAST_RETRY, **extra, **kw)
    result.write(out)
    return result, json.loads((out / "manifest.json").read_text())


@needs_ray
def test_what_actors_learn_reaches_the_manifest_and_signature(cluster, tmp_path):
    """An o-series-style server: the adaptations made inside actors appear as in a local run."""
    batch = items(12)
    with serve(o_series) as srv:
        _, local = judged(tmp_path / "local", srv, judge="o4-mini", items=batch, concurrency=2)
        executor = RayExecutor([JudgeSpec("openai", "o4-mini", srv.base_url)], BackendSettings(),
                               RayOptions(ray_actors=2))
        result, remote = judged(tmp_path / "ray", srv, judge="o4-mini", executor=executor, items=batch,
                                concurrency=2)
    assert "adapted:o4-mini=max_tokens,temperature" in local["signature"]
    assert remote["signature"] == local["signature"]
    assert remote["judges"] == local["judges"]
    assert remote["judges"][0]["adaptations"].keys() == {"max_tokens", "temperature"}
    assert remote["counts"]["ray_actors"] == 2 and remote["counts"]["ray_actors_lost"] == 0
    assert result.status_counts()["ok"] == 12


@needs_ray
def test_actors_adopt_the_form_an_earlier_run_settled(cluster, tmp_path):
    """The shared cache remembers how an o-series-style server (behind a name no table knows) settled the
    judge's requests: a later run on Ray sends them so from the start (no request rejected again), and records
    the same adaptations."""
    rejected = []

    def counting(body):
        reply = o_series(body)
        if reply.status == 400:
            rejected.append(body)
        return reply

    cache = tmp_path / "cache"
    with serve(counting) as srv:
        _, local = judged(tmp_path / "local", srv, judge="house-model", items=items(6), concurrency=2,
                          cache_path=cache)
        assert rejected, "the first run learns the form from the server's 400 answers"
        before = len(rejected)
        executor = RayExecutor([JudgeSpec("openai", "house-model", srv.base_url)], BackendSettings(),
                               RayOptions(ray_actors=2))
        result, remote = judged(tmp_path / "ray", srv, judge="house-model", executor=executor, items=items(12),
                                concurrency=2, cache_path=cache)
    assert len(rejected) == before  # nothing was rejected on the actors
    assert remote["judges"][0]["adaptations"] == local["judges"][0]["adaptations"]
    assert result.status_counts()["ok"] == 12

@needs_ray
def test_per_server_counts_come_from_the_actors(cluster, tmp_path, da_responder):
    batch = items(16)
    with serve(da_responder) as one, serve(da_responder) as two:
        urls = f"{one.base_url},{two.base_url}"
        executor = RayExecutor([JudgeSpec.parse(f"openai:judge-1@{urls}")], BackendSettings(),
                               RayOptions(ray_actors=2))
        from polyjudge.backends.build import build_backends

        backends, _ = build_backends([JudgeSpec.parse(f"openai:judge-1@{urls}")], BackendSettings())
        out = tmp_path / "ray"
        out.mkdir()
        result = run(items=batch, protocol=get_protocol("da"), backends=backends, store_path=out / "store.sqlite",
                     retry=FAST_RETRY, executor=executor, concurrency=4)
        seen = {one.base_url: len(one.requests), two.base_url: len(two.requests)}
    assert result.status_counts() == {"ok": 16}
    counts = result.server_counts["judge-1"]
    assert sum(counts.values()) == 16 == sum(seen.values())
    assert sorted(counts.values()) == sorted(seen.values())


@needs_ray
def test_a_pool_the_cluster_cannot_place_is_refused_in_time(cluster, tmp_path, da_responder):
    """The module's cluster has 3 CPUs: 4 actors of one CPU each can never all start. The run stops with one
    line naming the resources after restart_timeout_s, instead of waiting for them forever."""
    from polyjudge.data.errors import InputError

    with serve(da_responder) as srv:
        executor = RayExecutor([JudgeSpec("openai", "judge-1", srv.base_url)], BackendSettings(),
                               RayOptions(ray_actors=4, restart_timeout_s=5.0))
        started = time.monotonic()
        with pytest.raises(InputError, match=r"4 Ray actors .* did not all start within 5 s; .* 3 CPUs"):
            judged(tmp_path / "ray", srv, executor=executor, items=items(4), concurrency=4)
        assert time.monotonic() - started < 30
        assert srv.requests == []


# This test removes the module cluster's worker node: it stays the file's last (after it the head holds one
# actor, and a test asking for two would wait for resources the cluster no longer has).
@needs_ray
def test_a_lost_node_costs_only_what_was_in_flight(cluster, tmp_path, da_responder):
    """Three actors (one on the head, two on the worker); the worker node is removed mid-run.

    Every prompt is answered; the only requests the server sees twice are ones in flight on
    the lost node; the pool shrinks to the one actor the head can hold and the run finishes.
    """
    nodes, worker = cluster
    batch = items(60)
    removed = threading.Event()

    def slow_then_remove(body):
        with srv.lock:
            arrived = len(srv.requests)
        if arrived == 15 and not removed.is_set():
            removed.set()
            threading.Thread(target=nodes.remove_node, args=(worker,), daemon=True).start()
        return da_responder(body)

    srv = serve(slow_then_remove, latency_s=0.2)
    with srv:
        executor = RayExecutor([JudgeSpec("openai", "judge-1", srv.base_url)], BackendSettings(),
                               RayOptions(ray_actors=3, restart_timeout_s=20.0))
        started = time.monotonic()
        result, manifest = judged(tmp_path / "ray", srv, executor=executor, items=batch, concurrency=6)
        wall = time.monotonic() - started
        prompts = Counter(json.dumps(r["messages"], sort_keys=True) for r in srv.requests)
    assert removed.is_set()
    assert result.status_counts()["ok"] == 60
    assert len(prompts) == 60  # every prompt answered
    twice = sum(n - 1 for n in prompts.values())
    counts = manifest["counts"]
    assert counts["ray_actors"] == 3 and counts["ray_actors_lost"] == 2 and counts["ray_nodes_lost"] == 1
    assert counts["ray_actors_left"] == 1
    # A lost node costs at most what its actors held unanswered: each of the 2 lost actors holds at
    # most twice its 2 request slots (4). Every request handed out again is counted as a retry.
    # The server may see more than the 2 x 2 requests in flight at the moment of removal: a dying
    # node's actor can send another of the requests it holds before Ray ends it (seen once in CI:
    # 5 prompts twice), so the bound is what the actors held, as docs/reference/ray.md promises.
    held = 2 * 4
    assert twice <= held and counts["ray_resent"] == counts["retries"] <= held
    assert wall < 60  # it never waited for the lost actors' resources



# --------------------------------------------------------------------------- a cluster that is gone, remembered


@needs_ray
def test_without_an_address_a_dead_clusters_address_file_does_not_hang_the_run(tmp_path):
    """Issue 43: ``ray.init`` without an address joins the cluster named in ``ray_current_cluster``, which a
    cluster not shut down cleanly leaves in Ray's temp folder; naming one that is gone, the run sat there
    for good (more than 5 minutes). The run starts a cluster of its own instead, and finishes."""
    import shutil
    import tempfile

    ray_tmp = Path(tempfile.mkdtemp(prefix="pjray", dir="/tmp"))  # short: Ray's socket paths must fit
    try:
        (ray_tmp / "ray").mkdir()
        (ray_tmp / "ray" / "ray_current_cluster").write_text("127.0.0.1:1\n")
        data = tmp_path / "items.jsonl"
        data.write_text("".join(json.dumps({"src": f"s{i}", "tgt": f"t{i}", "src_lang": "en", "tgt_lang": "de",
                                            "system": "A", "seg_id": str(i)}) + "\n" for i in range(2)))
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + str(ROOT), "RAY_TMPDIR": str(ray_tmp)}
        for name in ("RAY_ADDRESS", "POLYJUDGE_RAY_LOGS"):
            env.pop(name, None)
        with serve(lambda body: json.dumps({"score": 70})) as srv:
            command = [sys.executable, "-c", "from polyjudge.cli.main import main; main()", "judge", str(data),
                       "-o", str(tmp_path / "run"), "-p", "da", "-q", "--no-cache",
                       "--judge", f"openai:m@{srv.base_url}", "--executor", "ray"]
            started = time.monotonic()
            done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=START_UP_S + 150)
            seconds = time.monotonic() - started
        assert done.returncode == 0, done.stderr
        assert "ok: 2  failed: 0" in done.stderr
        assert all(line.startswith(("polyjudge: waiting for Ray to start a local cluster", "signature:", "items:",
                                    "failed judgments:", "tokens:", "run directory:"))
                   for line in done.stderr.strip().splitlines()), done.stderr  # at most one line about the wait
        print(f"judge --executor ray with a dead cluster's address file: {seconds:.1f} s")
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
