"""Judging on a Ray cluster: the same run, its requests sent from a pool of actors.

:class:`RayExecutor` has the contract of :func:`polyjudge.engine.runner.execute`
(see :class:`polyjudge.engine.executor.Executor`), so nothing else about a run
changes when it moves to a cluster. How the work is spread:

- Each actor builds its own backends from the judge specs (backends hold
  connections or a loaded model and do not travel; specs and settings do) and
  runs the local executor itself on the chunks it is given: the same retries,
  backoff, Retry-After, fatal answers, giving up on an endpoint, and several
  samples per request. The store writes it makes are recorded, not performed.
- Those writes stream back to the driver as each answer arrives (one Ray
  streaming generator per chunk), and the driver, the only writer of the
  SQLite store, performs them at once: the store ends up as the local
  executor leaves it, so resume, deduplication and outputs are unchanged.
- Work goes out in the planned order, in chunks that share a prompt prefix
  (everything but the last message: instructions and the document context).
  A prefix keeps going to the same actor while it has room, so a local model
  reuses its KV cache as with the local executor.
- Limits stay global. ``--rpm``/``--tpm`` and the per-server limit of a judge
  with several servers are split evenly between the actors; the spending cap
  stays on the driver, which reserves each request's worst case before
  handing it out, settles what the answer cost when it comes back and hands
  out nothing more once the cap is reached.
- An actor that dies is restarted by Ray; the tasks of its chunks whose answers
  had not arrived are sent again (to any actor), never the answered ones. A
  task whose actor dies :attr:`RayOptions.max_actor_deaths` times is recorded
  as failed, so a prompt that kills its worker cannot loop forever.
- A judge whose request form is not settled (a model that may turn out to be
  a reasoning model: see ``backends/adaptation.py``) sends one request alone,
  on one actor; its other requests wait on the driver for that answer, and
  every actor adopts what it taught before they go, so the whole pool pays
  one rejected request per adapted parameter (:class:`_FormHold`). A failure
  that is no adaptation, or a hold that ends with neither a rejection nor an
  answer, lets them go as they are. Judges settled from the start never wait.
- A judge whose backend runs only on a GPU cluster (``gpu_cluster_only``, the
  ``vllm`` judge: ``ray.data.llm``'s vLLM engine processor) is not sent from
  actors: its work goes to its backend's Ray Data processor
  (:class:`~polyjudge.backends.vllm.ClusterBackend`).

Ray is optional (``pip install 'polyjudge[ray]'``) and imported only here.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import importlib
import logging
import math
import os
import random
import signal
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from polyjudge.backends.adaptation import HOLD_S
from polyjudge.backends.base import Backend, BackendError
from polyjudge.backends.registry import BackendSettings, JudgeSpec, backend_class
from polyjudge.backends.vllm import ClusterBackend, ClusterPlacement
from polyjudge.data.chat import GenerateRequest, GenerateResult, Usage
from polyjudge.data.errors import InputError
from polyjudge.data.secrets import redact
from polyjudge.data.settings import default
from polyjudge.engine.plan import Task
from polyjudge.engine.runner import (
    BUDGET,
    INTERRUPTED,
    UNREACHABLE,
    ExecStats,
    ProgressHook,
    RetryPolicy,
    SendControls,
    as_group,
    execute,
    is_fatal,
)
from polyjudge.engine.spend import Budget, RateLimiter
from polyjudge.engine.store import Answerable, AnswerKey, Store
from polyjudge.rundir.names import RAY_LOG
from polyjudge.rundir.ownership import read_record

log = logging.getLogger("polyjudge")

INSTALL_RAY = "pip install 'polyjudge[ray]'"
# The error kind (ExecStats.errors, the run's failure table) of a task whose actor kept dying.
ACTOR_DIED = "ray actor died"
# The store calls that answer a task (an actor's executor also makes put_prompt); the driver performs them.
_ANSWERS = frozenset({"put_result", "put_failure"})

# How long joining a cluster named by an address may take before the run gives up (exit 2).
DEFAULT_CONNECT_TIMEOUT_S = default("ray_connect_timeout")
# How long starting a one-machine cluster may take (Ray's processes on a busy machine) before the run gives up.
LOCAL_START_TIMEOUT_S = 120.0
# A wait on Ray longer than this says on one line what it waits for.
SAY_WAIT_AFTER_S = 5.0
# Periods of --ray-restart-timeout the actors may take to start (packages installing on the nodes).
READY_PERIODS = 10
# Set to 1 to see Ray's own log lines on the terminal (else they go to the run directory's ray.log).
SHOW_RAY_LOGS_ENV = "POLYJUDGE_RAY_LOGS"

Work = tuple[Task, ...]  # one request: a task, or runs of one prompt sent with n choices


@dataclass(frozen=True, slots=True)
class RayOptions:
    """Where and how wide to run (the ``--ray-*`` flags).

    ``ray_address`` (the setting of that name, ``--ray-address``) None joins the
    cluster named by ``RAY_ADDRESS`` if set, else starts a one-machine cluster here;
    ``"auto"`` joins the cluster this machine is part of (``ray start``);
    ``"ray://HOST:10001"`` connects through Ray Client.
    ``ray_actors`` None means one actor per live node. ``ray_runtime_env`` ships code or
    packages to the nodes (e.g. ``{"pip": ["polyjudge[ray]"]}``). A field that is a setting has the
    setting's name (``ray_actors``, ``ray_cpus_per_actor``, ``ray_gpus_per_actor``, ``ray_runtime_env``,
    ``ray_connect_timeout``, ``ray_logs``); the others are this executor's own.
    """

    ray_address: str | None = None
    ray_actors: int | None = None
    ray_cpus_per_actor: float = 1.0
    ray_gpus_per_actor: float = 0.0
    ray_runtime_env: Mapping[str, Any] | None = None
    # Requests per call to an actor; None: twice the actor's request slots.
    chunk_tasks: int | None = None
    # Deaths of the actor answering a task before that task is recorded as failed.
    max_actor_deaths: int = 3
    # Seconds to wait for Ray to restart a lost actor before the pool goes on without it.
    restart_timeout_s: float = 60.0
    # Rows per batch sent to a vLLM engine (vllm judges only).
    vllm_batch_size: int = 64
    # Seconds to wait for a cluster named by an address (--ray-connect-timeout).
    ray_connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S
    # Ray's own log lines on the terminal rather than in the run directory (--ray-logs).
    ray_logs: bool = False
    # Seconds a judge's first request, sent alone while its form is unknown, holds the judge's others
    # when neither a rejection nor an answer has come (as backends.adaptation.FormGate on one actor).
    form_hold_s: float = HOLD_S

    @property
    def address(self) -> str | None:
        """The cluster's address (``ray_address``; the name of 0.2)."""
        return self.ray_address

    def check(self) -> None:
        """Bad values raise :class:`InputError` naming the flag."""
        if self.ray_actors is not None and self.ray_actors < 1:
            raise InputError(f"must be at least 1, got {self.ray_actors}", field="ray-actors")
        if not (math.isfinite(self.ray_cpus_per_actor) and self.ray_cpus_per_actor >= 0):
            raise InputError(f"must be a number >= 0, got {self.ray_cpus_per_actor}", field="ray-cpus-per-actor")
        if not (math.isfinite(self.ray_gpus_per_actor) and self.ray_gpus_per_actor >= 0):
            raise InputError(f"must be a number >= 0, got {self.ray_gpus_per_actor}", field="ray-gpus-per-actor")
        if self.chunk_tasks is not None and self.chunk_tasks < 1:
            raise InputError(f"must be at least 1, got {self.chunk_tasks}", field="ray-chunk-tasks")
        if not (math.isfinite(self.ray_connect_timeout) and self.ray_connect_timeout > 0):
            raise InputError(f"must be a number of seconds above 0, got {self.ray_connect_timeout}",
                             field="ray-connect-timeout")
        if not (math.isfinite(self.restart_timeout_s) and self.restart_timeout_s > 0):
            raise InputError(f"must be a number of seconds above 0, got {self.restart_timeout_s}",
                             field="ray-restart-timeout")
        if not (math.isfinite(self.form_hold_s) and self.form_hold_s >= 0):
            raise InputError(f"must be a number of seconds >= 0, got {self.form_hold_s}", field="form_hold_s")
        if self.max_actor_deaths < 1:
            raise InputError(f"must be at least 1, got {self.max_actor_deaths}", field="ray-max-actor-deaths")


def require_ray() -> ModuleType:
    """The ``ray`` module, or :class:`InputError` (exit 2) with the install command."""
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise InputError(f"the Ray executor needs Ray, which is not installed: {INSTALL_RAY}",
                         field="executor") from None


def cluster_backend(spec: JudgeSpec) -> type[ClusterBackend] | None:
    """The judge's backend class when it runs only on a GPU cluster (its capabilities say so), else None."""
    cls = backend_class(spec.backend)
    if not cls.capabilities.gpu_cluster_only:
        return None
    if not issubclass(cls, ClusterBackend):
        raise TypeError(f"backend {spec.backend} says it runs only on a GPU cluster but is no ClusterBackend")
    return cls


def require_cluster_backends(specs: Sequence[JudgeSpec]) -> None:
    """Ray, and what each GPU-cluster judge runs on (e.g. ``ray.data.llm``), or :class:`InputError`."""
    for cls in {c for c in map(cluster_backend, specs) if c is not None}:
        require_ray()
        cls.require()


def _target(options: RayOptions) -> tuple[str | None, str]:
    """The address to join (None: start a cluster here) and how the user gave it, for messages."""
    if options.address is not None and options.address != "auto":
        return options.address, f"--ray-address {options.address}"
    env = os.environ.get("RAY_ADDRESS")  # Ray lets RAY_ADDRESS win over "auto" too
    if env:
        return env, f"RAY_ADDRESS={env}"
    return options.address, f"--ray-address {options.address}"


def _host_port(address: str) -> tuple[str, int] | None:
    """HOST and PORT of ``HOST:PORT`` or ``ray://HOST:PORT`` (None for ``auto`` and what is not one)."""
    rest = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = rest.rstrip("/").rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]") or "127.0.0.1", int(port)


def _what_to_check(address: str, given: str, timeout: float) -> str:
    if address == "auto":
        return (f"check {given}: has this machine joined a running cluster ('ray start --address HEAD:6379', "
                f"then 'ray status')? --ray-connect-timeout sets the wait ({timeout:g} s)")
    port = "10001 for ray://" if address.startswith("ray://") else "6379, or what 'ray start --head --port' set"
    return (f"check {given}: is a Ray head running there ('ray status --address {address}' on that machine), "
            f"is the port Ray's (default {port}), and can this machine reach it (firewall, VPN)? "
            f"--ray-connect-timeout sets the wait ({timeout:g} s)")


def _reachable(address: str, given: str, timeout: float) -> None:
    """Fail in a moment when nothing listens at the address (a typo), rather than after Ray's retries."""
    where = _host_port(address)
    if where is None:
        return
    try:
        socket.create_connection(where, timeout=timeout).close()
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or type(exc).__name__)
        raise InputError(f"cannot reach a Ray cluster at {address} ({reason}); "
                         f"{_what_to_check(address, given, timeout)}", field="ray-address") from None


class _RayOutput:
    """Ray's own log lines (its C++ core writes to this process's stderr) go to a file, not the terminal.

    Used as a context around ``ray.init``. When a join attempt was given up but
    Ray is still retrying in its helper thread, stderr stays on the file until
    that thread ends, and ``sys.stderr`` (which our messages use) is moved to
    the terminal meanwhile, so Ray's retries never reach the terminal.
    """

    def __init__(self, log_path: Path | None, shown: bool) -> None:
        self.active = not shown and log_path is not None
        self.log_path = log_path
        self.saved = -1
        self.still_running: threading.Thread | None = None

    def __enter__(self) -> _RayOutput:
        if self.active:
            sys.stderr.flush()
            self.saved = os.dup(2)
            with open(self.log_path, "ab") as fh:  # type: ignore[arg-type]
                os.dup2(fh.fileno(), 2)
        return self

    def say(self, line: str) -> None:
        """One line on the terminal's standard error, even while Ray's output goes to the log file."""
        text = (line + "\n").encode("utf-8", "backslashreplace")
        try:
            if self.active and self.saved >= 0:
                os.write(self.saved, text)
            else:
                sys.stderr.write(line + "\n")
                sys.stderr.flush()
        except (OSError, ValueError):  # a closed standard error: the wait goes on without the line
            pass

    def __exit__(self, *exc: object) -> None:
        if not self.active:
            return
        sys.stderr.flush()
        helper = self.still_running
        if helper is None or not helper.is_alive():
            os.dup2(self.saved, 2)
            os.close(self.saved)
            return
        ours, terminal = sys.stderr, os.fdopen(self.saved, "w", buffering=1, encoding="utf-8",
                                               errors="backslashreplace")
        sys.stderr = terminal

        def restore() -> None:
            helper.join()
            terminal.flush()
            os.dup2(terminal.fileno(), 2)
            sys.stderr = ours

        threading.Thread(target=restore, name="ray-output", daemon=True).start()


def _ray_logger_to(log_path: Path | None, shown: bool) -> None:
    """Ray's Python loggers write to ``log_path`` too (once per process and file)."""
    if shown or log_path is None:
        return
    ray_log = logging.getLogger("ray")
    target = str(log_path.resolve())
    if any(isinstance(h, logging.FileHandler) and h.baseFilename == target for h in ray_log.handlers):
        return
    for h in [h for h in ray_log.handlers if isinstance(h, logging.StreamHandler)
              and not isinstance(h, logging.FileHandler)]:
        ray_log.removeHandler(h)
    handler = logging.FileHandler(target, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    ray_log.addHandler(handler)
    ray_log.propagate = False


def _init_within(ray: ModuleType, address: str, given: str, kwargs: dict[str, Any], output: _RayOutput, *,
                 wait: float, timeout: float) -> None:
    """``ray.init`` joining ``address``, given up after ``wait`` seconds (what is left of ``timeout``).

    Ray retries an address where no cluster answers for minutes; the call runs
    in a helper thread so the run can stop waiting (the thread is left to Ray,
    and the command exits).
    """
    outcome: list[BaseException | None] = []

    def join() -> None:
        try:
            ray.init(address=address, **kwargs)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            outcome.append(exc)

    helper = threading.Thread(target=join, name="ray-connect", daemon=True)
    helper.start()
    helper.join(wait)
    if not outcome:
        output.still_running = helper
        raise InputError(f"no Ray cluster answered at {address} in time; "
                         f"{_what_to_check(address, given, timeout)}", field="ray-address")
    exc = outcome[0]
    if exc is not None:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InputError(f"cannot join the Ray cluster at {address} ({redact(first)}); "
                         f"{_what_to_check(address, given, timeout)}", field="ray-address") from None


def _start_local(ray: ModuleType, kwargs: dict[str, Any], output: _RayOutput, limit: float) -> None:
    """Start a one-machine cluster for this process, whatever an earlier cluster left behind.

    ``address="local"``, never None: with None, ``ray.init`` joins the cluster named in the address file
    (``ray_current_cluster`` in Ray's temp folder) that a cluster not shut down cleanly leaves, and waits
    for it for good when that cluster is gone. The start is bounded by ``limit`` seconds; a start that
    takes more than a few seconds says once what it waits for.
    """
    outcome: list[BaseException | None] = []
    ended = threading.Event()

    def start() -> None:
        try:
            ray.init(address="local", include_dashboard=False, **kwargs)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            outcome.append(exc)
            return
        finally:
            ended.set()
        # Ray's processes are told to end with the thread that started them (Linux's parent-death
        # signal follows the thread): this one lives as long as the process.
        threading.Event().wait()

    helper = threading.Thread(target=start, name="ray-start", daemon=True)
    helper.start()
    if not ended.wait(min(SAY_WAIT_AFTER_S, limit)):
        output.say(f"polyjudge: waiting for Ray to start a local cluster (gives up after {limit:g} s)")
        ended.wait(max(0.0, limit - SAY_WAIT_AFTER_S))
    if not outcome:
        output.still_running = helper
        raise InputError(f"Ray did not start a local cluster within {limit:g} s (its log lines are in the run "
                         "directory's ray.log); give a running cluster with --ray-address, or use "
                         "--executor local", field="executor")
    exc = outcome[0]
    if exc is not None:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InputError(f"Ray could not start a local cluster ({redact(first)}); give a running cluster "
                         "with --ray-address, or use --executor local", field="executor") from None


def ray_log_path(store: Store) -> Path | None:
    """Where Ray's own log lines go: beside the run's store (None for a store in memory)."""
    if store.path == ":memory:" or not store.path:
        return None
    run_dir = Path(store.path).parent
    owned = read_record(run_dir)
    if owned is None:
        return None  # not a folder polyjudge owns: Ray's lines stay on the terminal rather than touch it
    owned.check_writable(RAY_LOG)  # a ray.log of the user's is refused, never appended to
    owned.record([RAY_LOG])
    return run_dir / RAY_LOG


def connect(options: RayOptions, log_path: Path | None = None) -> ModuleType:
    """Join (or start) the cluster once per process; later runs reuse the connection.

    Joining a cluster takes at most ``options.ray_connect_timeout`` (InputError,
    exit 2, naming the address). Ray's own log lines go to ``log_path`` unless
    ``options.ray_logs`` or the :data:`SHOW_RAY_LOGS_ENV` variable asks for
    them. ``ray.init`` replaces the SIGTERM handler; the run's own handlers
    (which stop sending and keep what is done) are put back.
    """
    ray = require_ray()
    if ray.is_initialized():
        return ray
    shown = options.ray_logs or os.environ.get(SHOW_RAY_LOGS_ENV, "") not in ("", "0")
    _ray_logger_to(log_path, shown)
    address, given = _target(options)
    main = threading.current_thread() is threading.main_thread()
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)} if main else {}
    kwargs: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": shown}
    if options.ray_runtime_env:
        kwargs["runtime_env"] = dict(options.ray_runtime_env)
    try:
        with _RayOutput(log_path, shown) as output:
            if address is None:  # a cluster started here, for as long as this process: no web UI
                _start_local(ray, kwargs, output, max(LOCAL_START_TIMEOUT_S, options.ray_connect_timeout))
            else:  # "auto" too: the address file it reads may name a cluster that is gone
                deadline = time.monotonic() + options.ray_connect_timeout
                _reachable(address, given, options.ray_connect_timeout)
                _init_within(ray, address, given, kwargs, output, wait=max(0.1, deadline - time.monotonic()),
                             timeout=options.ray_connect_timeout)
    finally:
        for s, handler in handlers.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
    return ray


# --------------------------------------------------------------------------- chunks of work


@dataclass(slots=True)
class _Chunk:
    prefix: str  # what the requests' prompts share (see _prefix_key)
    work: list[Work]
    alone: bool = False  # one request of a judge whose form is being learned (see _FormHold)

    @property
    def size(self) -> int:
        return len(self.work)


def _prefix_key(task: Task) -> str:
    """Everything the prompt holds before its last message (instructions, document context)."""
    h = hashlib.sha256()
    for m in task.request.messages[:-1]:
        h.update(f"{m.role}\x00{m.content}\x00".encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def chunk_work(work: Iterable[Task | Sequence[Task]], size: int) -> list[_Chunk]:
    """Consecutive requests (planned order: document by document) with one prefix, at most ``size`` each."""
    chunks: list[_Chunk] = []
    keys: dict[str, str] = {}  # prompt hash -> prefix key (runs and judges share a prompt)
    for unit in work:
        group = as_group(unit)
        first = group[0]
        key = keys.get(first.prompt_hash)
        if key is None:
            key = keys[first.prompt_hash] = _prefix_key(first)
        if chunks and chunks[-1].prefix == key and chunks[-1].size < size:
            chunks[-1].work.append(group)
        else:
            chunks.append(_Chunk(key, [group]))
    return chunks


# --------------------------------------------------------------------------- inside an actor


@dataclass(frozen=True, slots=True)
class _Write:
    """One store call made by an actor's executor, performed again by the driver."""

    method: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)


# judge -> (what its backend adapted, requests per server since the actor's last report, or None)
Lessons = dict[str, tuple[dict[str, str], dict[str, int] | None]]


@dataclass(frozen=True, slots=True)
class _ChunkDone:
    """The last message of a chunk: its executor's counts (``stop_kind`` set if it stopped early)
    and what the actor's backends learned meanwhile."""

    stats: ExecStats
    lessons: Lessons = field(default_factory=dict)
    settled: frozenset[str] = frozenset()  # judges whose request form is settled on the actor


@dataclass(frozen=True, slots=True)
class _HoldOver:
    """Sent while a judge's lone first request is out: its answer will not teach the judge's form
    (it failed for another reason, or neither a rejection nor an answer came within the hold)."""

    judge: str


@dataclass(frozen=True, slots=True)
class _Probe:
    """What an actor needs to watch a judge's lone first request (see :class:`_FormHold`)."""

    judge: str
    hold_s: float


@dataclass(slots=True)
class Learned:
    """What one judge's backends learned on the actors, kept on the driver.

    It stands in for the judge's backend where the engine reads a backend's
    ``adaptations`` and ``server_counts()`` (``backends.build.adaptations_of``,
    ``server_counts_of``), so a run's manifest and signature say what a local
    run would: the driver's own backends never send anything.
    """

    model: str
    adaptations: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] | None = None

    def server_counts(self) -> dict[str, int] | None:
        return dict(self.counts) if self.counts is not None else None

    def absorb(self, adaptations: Mapping[str, str], counts: Mapping[str, int] | None) -> None:
        for name, how in adaptations.items():
            self.adaptations.setdefault(name, how)
        if counts is not None:
            mine = self.counts if self.counts is not None else {}
            for url, n in counts.items():
                mine[url] = mine.get(url, 0) + n
            self.counts = mine


@dataclass(frozen=True, slots=True)
class _Ready:
    pid: int
    host: str
    error: str | None = None
    spec_error: bool = False  # a bad spec (exit 2) rather than a missing model or library
    unsettled: tuple[str, ...] = ()  # judges whose request form an answer may still change


class _Relay(Store):
    """The store as an actor's executor sees it: writes are recorded and sent to the driver.

    Writes made in one step of the event loop (a request's prompt and answers)
    travel together. Nothing is kept on the node.
    """

    def __init__(self) -> None:  # no database here: the driver's store is the only one
        self.outbox: asyncio.Queue[list[_Write] | _HoldOver | None] = asyncio.Queue()
        self._pending: list[_Write] = []

    def _add(self, write: _Write) -> None:
        if not self._pending:
            asyncio.get_running_loop().call_soon(self._flush)
        self._pending.append(write)

    def _flush(self) -> None:
        if self._pending:
            self.outbox.put_nowait(self._pending)
            self._pending = []

    def tell(self, news: _HoldOver) -> None:
        """Send ``news`` to the driver after the writes made so far."""
        self._flush()
        self.outbox.put_nowait(news)

    def close_outbox(self) -> None:
        self._flush()
        self.outbox.put_nowait(None)

    def put_prompt(self, prompt_hash: str, request: GenerateRequest) -> None:
        self._add(_Write("put_prompt", (prompt_hash,)))  # the driver has the request: only its hash travels

    def put_result(self, task: Answerable, result: GenerateResult, attempts: int, **kwargs: Any) -> None:
        where = (task.key, task.prompt_hash, task.judge, task.run_index)  # plain values travel, not the task
        self._add(_Write("put_result", (*where, result, attempts), kwargs))

    def put_failure(self, key: str, prompt_hash: str, judge: str, run_index: int, error: str,
                    attempts: int) -> None:
        self._add(_Write("put_failure", (key, prompt_hash, judge, run_index, error, attempts)))

    @contextmanager
    def transaction(self) -> Iterator[None]:
        yield  # the driver commits each write as it arrives


class _Slotted:
    """A backend whose requests share the actor's slots, however many chunks are running.

    A rejection (401, 403, ...) sets ``stopped`` before the slot is let go: a request
    of another chunk waiting for that slot is then never sent; it waits for its
    executor, which watches the same event, to stop and leave it pending.
    ``started`` and ``failed`` say that an attempt went to the backend and that
    one failed, for watching a judge's lone first request.
    """

    def __init__(self, backend: Backend, slots: asyncio.Semaphore, stopped: asyncio.Event) -> None:
        self.model, self._backend, self._slots, self._stopped = backend.model, backend, slots, stopped
        self.started, self.failed = asyncio.Event(), asyncio.Event()

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        async with self._slots:
            if self._stopped.is_set():
                await asyncio.Future()  # never resolves: cancelled by its executor's stop
            self.started.set()
            try:
                return await self._backend.generate(request)
            except BackendError as exc:
                if is_fatal(exc):
                    self._stopped.set()
                self.failed.set()
                raise

    async def aclose(self) -> None:
        await self._backend.aclose()


class _NotHere:
    """Stands for a judge the actors do not serve (one that runs only on GPU nodes: vllm); never asked."""

    def __init__(self, model: str) -> None:
        self.model = model

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        raise BackendError(f"judge {self.model} is not served by the Ray actors", retryable=False)

    async def aclose(self) -> None:
        return None


@contextmanager
def _cpu_count(cpus: int) -> Iterator[None]:
    """Make this actor's process see only the CPUs Ray gave it while its backends are built.

    The embedded backend starts one llama.cpp thread per CPU it sees; two actors
    on one node would each start one per core of the node and spin against each
    other (4× slower on two cores). This worker process belongs to the actor.
    To be replaced by a thread count in ``BackendSettings`` once it has one.
    """
    seen = os.cpu_count
    os.cpu_count = lambda: cpus
    try:
        yield
    finally:
        os.cpu_count = seen


def _share(limiter: RateLimiter | None, parts: int) -> tuple[float | None, float | None] | None:
    """One actor's share of a judge's ``--rpm``/``--tpm`` (requests, tokens per minute)."""
    if limiter is None:
        return None
    rpm = limiter.requests.rate * 60.0 / parts if limiter.requests is not None else None
    tpm = limiter.tokens.rate * 60.0 / parts if limiter.tokens is not None else None
    return rpm, tpm


class JudgeActor:
    """A Ray actor: the run's judges built here, and the local executor answering chunks.

    Up to ``slots`` requests are in flight at once over all its chunks. An error
    building the backends is kept and reported by :meth:`ready`, so a broken
    node is named rather than restarted over and over.
    """

    def __init__(self, specs: Sequence[JudgeSpec], settings: BackendSettings, served: Mapping[int, str],
                 slots: int, retry: RetryPolicy, seed: int, cpus: int,
                 rates: Sequence[tuple[float | None, float | None] | None]) -> None:
        from polyjudge.backends.build import build_backends

        # Ray forwards a worker's stdout to the driver's stdout, where a command may be printing
        # JSON or TSV: whatever this process prints (native libraries included) goes to stderr.
        os.dup2(2, 1)
        self._error: str | None = None
        self._spec_error = False
        self._slots_n = slots
        self._slots = asyncio.Semaphore(slots)
        self._stopped = asyncio.Event()  # an endpoint rejected a request: no chunk sends any more
        self._retry, self._rng = retry, random.Random(seed)
        self._limiters = [RateLimiter(*r) if r is not None else None for r in rates]
        self._backends: list[Backend] = []
        self._built: list[Backend] = []  # this actor's own backends, read for what they learned
        self._senders: dict[str, _Slotted] = {}  # judge -> its backend as the executor sees it
        self._reported: dict[str, dict[str, int]] = {}  # per-server counts already sent to the driver
        try:
            with _cpu_count(cpus):
                built, _ = build_backends([specs[i] for i in served], settings)
            mine = dict(zip(served, built))
            self._built = list(built)
            for index, name in served.items():
                if mine[index].model != name:
                    raise RuntimeError(f"judge {index + 1} is '{mine[index].model}' on this node, "
                                       f"'{name}' on the driver")
            self._senders = {name: _Slotted(mine[i], self._slots, self._stopped) for i, name in served.items()}
            self._backends = [self._senders[served[i]] if i in mine
                              else _NotHere(s.model or s.backend) for i, s in enumerate(specs)]
        except Exception as exc:  # noqa: BLE001 - reported to the driver by ready()
            self._error = redact(f"{type(exc).__name__}: {exc}")
            self._spec_error = isinstance(exc, ValueError)

    def ready(self) -> _Ready:
        return _Ready(os.getpid(), socket.gethostname(), self._error, self._spec_error,
                      tuple(sorted(set(self._senders) - self._settled())))

    def _settled(self) -> frozenset[str]:
        """The judges whose request form no answer can change any more (given, or learned)."""
        from polyjudge.backends.build import form_settled_of

        return frozenset(b.model for b in self._built if form_settled_of(b))

    async def adopt(self, forms: dict[str, dict[str, str]]) -> None:
        """Write each named judge's requests as another actor's backend learned to (judge -> adaptations)."""
        from polyjudge.backends.build import adopt_form_of

        for backend in self._built:
            if backend.model in forms:
                adopt_form_of(backend, forms[backend.model])

    async def _watch_probe(self, probe: _Probe, relay: _Relay) -> None:
        """Tell the driver to let the judge's other requests go when its lone request fails (not a
        rejection its backend adapts to), or when the hold ends with neither a rejection nor an answer."""
        from polyjudge.backends.build import adaptations_of, form_settled_of

        sender = self._senders[probe.judge]
        backend = next(b for b in self._built if b.model == probe.judge)
        before = adaptations_of(backend)
        await sender.started.wait()
        try:
            await asyncio.wait_for(sender.failed.wait(), probe.hold_s)
        except TimeoutError:
            if form_settled_of(backend):
                return  # answered: the chunk's end says the form
            if adaptations_of(backend) != before:  # rejected and resent adapted: hold until that is answered
                await sender.failed.wait()
        if not form_settled_of(backend):
            relay.tell(_HoldOver(probe.judge))

    def _lessons(self) -> Lessons:
        """Each judge's adaptations so far, and the requests per server since the last report."""
        from polyjudge.backends.build import adaptations_of, server_counts_of

        found: Lessons = {}
        for backend in self._built:
            counts = server_counts_of(backend)
            delta = None
            if counts is not None:
                before = self._reported.get(backend.model, {})
                delta = {url: n - before.get(url, 0) for url, n in counts.items()}
                self._reported[backend.model] = dict(counts)
            found[backend.model] = (adaptations_of(backend), delta)
        return found

    async def judge(self, work: list[Work], attempts_used: dict[str, int], probe: _Probe | None = None,
                    ) -> AsyncIterator[list[_Write] | _HoldOver | _ChunkDone]:
        """Run the local executor on ``work``; yield its store writes as they happen, then its counts.

        With ``probe`` the work is one request of a judge whose form is being learned, watched
        (:meth:`_watch_probe`) so that the driver can let the judge's other requests go early.
        """
        if self._error is not None:  # a restarted actor that could not build its judges this time
            raise RuntimeError(f"this Ray actor could not build its judges: {self._error}")
        relay = _Relay()
        if self._stopped.is_set():  # a sibling chunk was rejected: this one is left pending
            yield _ChunkDone(ExecStats(stop_kind=INTERRUPTED, stop_reason="stopped by a rejection"), self._lessons(),
                             self._settled())
            return
        watch = None
        if probe is not None and probe.judge in self._senders:
            sender = self._senders[probe.judge]
            sender.started.clear()
            sender.failed.clear()
            watch = asyncio.ensure_future(self._watch_probe(probe, relay))
        runner = asyncio.ensure_future(execute(work, self._backends, relay, SendControls(
            concurrency=self._slots_n, retry=self._retry, rng=self._rng, limiters=self._limiters,
            attempts_used=attempts_used or None, stop=self._stopped)))
        runner.add_done_callback(lambda _: relay.close_outbox())
        try:
            while (message := await relay.outbox.get()) is not None:
                yield message
            yield _ChunkDone(runner.result(), self._lessons(), self._settled())
        finally:
            runner.cancel()
            if watch is not None:
                watch.cancel()


# --------------------------------------------------------------------------- the driver


@dataclass(slots=True)
class _Unit:
    """A request handed out: its tasks still unanswered and the budget reserved for it."""

    group: Work
    open: set[str]
    reserved: float = 0.0
    # Ended by a failure: its actor's slot is freed only when the chunk ends, after the actor's
    # stop (a rejection) has reached the driver, so no new chunk goes to an actor about to stop.
    held: bool = False


@dataclass(slots=True)
class _FormHold:
    """The judges whose request form is still being learned on the pool, and their requests held.

    Each actor's backend holds its own requests while it learns (``FormGate``), but
    every actor would learn on its own: one rejected request per actor and
    parameter. So the driver sends one request of such a judge alone (a chunk
    with ``alone`` set), keeps the judge's others here, and hands them out once
    every actor has adopted what that answer taught, or once it is clear that it
    teaches nothing (a failure, or the hold's end without a rejection).
    """

    learning: set[str] = field(default_factory=set)  # judges whose requests are held
    probing: set[str] = field(default_factory=set)  # ... of those, the ones whose lone request is out
    waiting: dict[str, list[_Chunk]] = field(default_factory=dict)

    def holds(self, chunk: _Chunk) -> bool:
        """True when ``chunk`` has requests of a held judge (a lone request is never held)."""
        return bool(self.learning) and not chunk.alone and any(g[0].judge in self.learning for g in chunk.work)

    def split(self, chunk: _Chunk, size: int) -> list[_Chunk]:
        """What of ``chunk`` may go now, in order: a lone request of each held judge that has none
        out, then the requests of the judges not held. The rest waits, in chunks of at most ``size``."""
        lone: list[_Chunk] = []
        free: list[Work] = []
        for group in chunk.work:
            judge = group[0].judge
            if judge not in self.learning:
                free.append(group)
            elif judge not in self.probing:
                self.probing.add(judge)
                lone.append(_Chunk(chunk.prefix, [group], alone=True))
            else:
                held = self.waiting.setdefault(judge, [])
                if held and held[-1].prefix == chunk.prefix and held[-1].size < size:
                    held[-1].work.append(group)
                else:
                    held.append(_Chunk(chunk.prefix, [group]))
        return lone + ([_Chunk(chunk.prefix, free)] if free else [])

    def release(self, judge: str) -> list[_Chunk]:
        """Stop holding ``judge``: its held requests, in their order."""
        self.learning.discard(judge)
        self.probing.discard(judge)
        return self.waiting.pop(judge, [])


@dataclass(slots=True)
class ClusterReport:
    """What a run on Ray learned and lost, over all its executor calls (the manifest's ``ray_*`` counts)."""

    learned: dict[str, Learned] = field(default_factory=dict)
    actors_lost: int = 0  # actor deaths (a restarted actor can die again)
    nodes_lost: set[str] = field(default_factory=set)  # ids of nodes that died under the pool
    resent: int = 0  # requests handed to a lost actor unanswered, handed out again (also counted as retries)
    pool_started: int = 0  # actors the pool started with (the largest, over several calls)
    pool_left: int | None = None  # actors still working at the end, when the pool shrank
    # judge -> the adaptations of its settled request form, adopted by every actor (also of later calls)
    forms: dict[str, dict[str, str]] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        """The manifest's counts of a run on Ray."""
        found = {"ray_actors": self.pool_started, "ray_actors_lost": self.actors_lost,
                 "ray_nodes_lost": len(self.nodes_lost), "ray_resent": self.resent}
        if self.pool_left is not None:
            found["ray_actors_left"] = self.pool_left
        return found


class _Driver:
    """Hands chunks to actors, performs the writes that stream back, re-sends lost work."""

    def __init__(self, ray: ModuleType, actors: list[Any], store: Store, stats: ExecStats, *, slots: int,
                 options: RayOptions, on_update: ProgressHook | None, budget: Budget | None,
                 attempts_used: Mapping[str, int] | None, report: ClusterReport) -> None:
        self.ray, self.actors, self.store, self.stats = ray, actors, store, stats
        self.report, self.learned = report, report.learned
        self.nodes_at_start = {str(n.get("NodeID")) for n in ray.nodes() if n.get("Alive")}
        self.lost_errors = (ray.exceptions.RayActorError, ray.exceptions.ObjectLostError,
                            ray.exceptions.NodeDiedError)
        self.options, self.on_update, self.budget = options, on_update, budget
        self.attempts_used = attempts_used or {}
        self.chunk_size = options.chunk_tasks or max(1, slots)  # a new chunk while the last half is running
        self.room = max(self.chunk_size, 2 * slots)  # requests an actor may hold
        self.loads = [0] * len(actors)
        self.home: dict[str, int] = {}  # prefix -> the actor that last took it
        self.deaths: dict[str, int] = {}
        self.single_only: set[str] = set()  # judges whose server does not give n choices
        self.pending: deque[_Chunk] = deque()
        self.running: set[asyncio.Task[None]] = set()  # chunks being answered
        self.probes: set[asyncio.Task[None]] = set()  # waits for lost actors to come back
        self.down: set[int] = set()  # actors lost and not back yet: they get no work
        self.gone: set[int] = set()  # actors given up for good (the cluster cannot place them again)
        self.wake = asyncio.Event()
        self.halted = False
        self.draining = False  # the spending cap is reached: nothing more is handed out
        self.forms = _FormHold()

    # ---------------------------------------------------------------- handing out

    def _pick(self, chunk: _Chunk) -> int | None:
        # An actor never holds more than ``room`` requests (a chunk larger than that goes to an idle one):
        # what it holds is what a lost node costs.
        def fits(i: int) -> bool:
            return i not in self.down and (self.loads[i] + chunk.size <= self.room or self.loads[i] == 0)

        home = self.home.get(chunk.prefix)
        if home is not None and fits(home):
            return home
        free = [i for i in range(len(self.loads)) if fits(i)]
        return min(free, key=lambda i: self.loads[i]) if free else None

    def _units(self, chunk: _Chunk) -> list[_Unit] | None:
        """The chunk's requests with their reservations; what does not fit the cap goes back (None: nothing fits)."""
        work: list[Work] = []
        for group in chunk.work:  # judges whose server gave no n choices get one request per run
            work += [(t,) for t in group] if len(group) > 1 and group[0].judge in self.single_only else [group]
        units: list[_Unit] = []
        for group in work:
            reserved = 0.0
            if self.budget is not None:
                first = group[0]
                request = first.request if len(group) == 1 else dataclasses.replace(first.request, n=len(group))
                got = self.budget.reserve(first.judge, request)
                if got is None:
                    self.draining = True
                    if self.stats.stop_kind is None:
                        self.stats.stop_kind = BUDGET
                        self.stats.stop_reason = "the spending cap (--max-cost) leaves no room for the next request"
                    rest = work[len(units):]
                    if rest:
                        self.pending.appendleft(_Chunk(chunk.prefix, rest))
                    break
                reserved = got
            units.append(_Unit(group, {t.key for t in group}, reserved))
        return units or None

    # ---------------------------------------------------------------- what comes back

    def _perform(self, writes: list[_Write], units: dict[str, _Unit], prompts: Mapping[str, GenerateRequest],
                 index: int, started: set[str]) -> None:
        answered = 0
        for w in writes:
            if w.method == "put_prompt":  # the actor starts sending this prompt
                self.store.put_prompt(w.args[0], prompts[w.args[0]])
                started.add(w.args[0])
                continue
            if w.method not in _ANSWERS:
                raise RuntimeError(f"a Ray actor asked for an unknown store call: {w.method}")
            if w.method == "put_result":
                self.store.put_result(AnswerKey(*w.args[:4]), *w.args[4:], **w.kwargs)
            else:
                getattr(self.store, w.method)(*w.args, **w.kwargs)
            key = str(w.args[0])
            unit = units.get(key)
            if unit is None:
                continue
            answered += 1
            if w.method == "put_result":
                self.stats.done += 1
                if self.budget is not None:
                    task = next(t for t in unit.group if t.key == key)
                    usage: Usage = w.kwargs.get("usage") or w.args[4].usage
                    self.budget.learn(task.request, usage)
                    self.budget.settle(0.0, self.budget.cost_of(task.judge, usage))
            else:
                self.stats.failed += 1
                unit.held = True
            unit.open.discard(key)
            del units[key]
            if not unit.open:
                if not unit.held:
                    self.loads[index] -= 1
                self._release(unit)
        if answered and self.on_update is not None:
            self.on_update(self.stats)

    def _release(self, unit: _Unit) -> None:
        if self.budget is not None and unit.reserved:
            self.budget.settle(unit.reserved, 0.0)
            unit.reserved = 0.0

    def _learn(self, lessons: Lessons) -> None:
        for judge, (adaptations, counts) in lessons.items():
            self.learned.setdefault(judge, Learned(judge)).absorb(adaptations, counts)

    def _finish(self, part: ExecStats) -> None:
        """Fold a chunk's counts in (answers were counted as they came) and stop the run if it stopped."""
        self.single_only.update(part.samples_fallback)
        self.stats.add(dataclasses.replace(part, done=0, failed=0, stop_kind=None, stop_reason=None))
        # An actor's INTERRUPTED is its other chunks stopping after a rejection, whose own chunk says why.
        if part.stop_kind is not None and part.stop_kind not in (BUDGET, INTERRUPTED):
            self._halt(part.stop_kind, part.stop_reason or part.stop_kind)

    def _halt(self, kind: str, reason: str) -> None:
        if self.stats.stop_kind is None or self.stats.stop_kind == BUDGET:
            self.stats.stop_kind, self.stats.stop_reason = kind, reason
        self.halted = True
        self.wake.set()

    def _lost(self, index: int, chunk: _Chunk, left: list[_Unit], exc: Exception, started: set[str]) -> bool:
        """The actor died: its unanswered requests go out again, or fail once they have seen too many deaths.

        Each request handed out again counts as a retry (and in ``ray_resent``) once, however
        many dying actors it was handed to:
        the driver cannot tell which of them had reached the server, since the
        actor's last messages die with it; the log line says how many it knew
        had started.
        """
        if index not in self.down:
            self.down.add(index)
            self.report.actors_lost += 1
            self._note_lost_nodes()
            if self._placeable():
                self.probes.add(asyncio.ensure_future(self._probe(index)))
            else:
                self._give_up(index, "the cluster has no room left to place it again (a node was lost)")
        again: list[Work] = []
        known = 0
        for unit in left:
            keep = [t for t in unit.group if t.key in unit.open and self._survives(t, exc)]
            known += sum(1 for t in keep if t.prompt_hash in started)
            if len(keep) == len(unit.group):
                again.append(unit.group)
            else:  # part of a multi-sample request was answered: the rest one by one
                again += [(t,) for t in keep]
        # A request lost twice (handed to a second actor that died with the same node) is one re-send.
        first_loss = sum(1 for group in again if any(self.deaths.get(t.key) == 1 for t in group))
        self.stats.retries += first_loss
        self.report.resent += first_loss
        if again:
            log.warning(f"a Ray actor died ({type(exc).__name__}); sending its {len(again)} unanswered "
                        f"request(s) again (at least {known} of them had been sent)")
            self.pending.appendleft(_Chunk(chunk.prefix, again))
        return bool(again)

    def _survives(self, t: Task, exc: Exception) -> bool:
        """True when ``t`` may be sent again; else it is recorded as failed (its actors kept dying)."""
        self.deaths[t.key] = n = self.deaths.get(t.key, 0) + 1
        if n < self.options.max_actor_deaths:
            return True
        self.store.put_prompt(t.prompt_hash, t.request)
        self.store.put_failure(t.key, t.prompt_hash, t.judge, t.run_index,
                               f"{ACTOR_DIED}: the Ray actor answering it died {n} times "
                               f"({type(exc).__name__})", 0)
        self.stats.failed += 1
        self.stats.errors[ACTOR_DIED] = self.stats.errors.get(ACTOR_DIED, 0) + 1
        if self.on_update is not None:
            self.on_update(self.stats)
        return False

    def _note_lost_nodes(self) -> None:
        try:
            dead = {str(n.get("NodeID")) for n in self.ray.nodes() if not n.get("Alive")}
        except Exception as exc:  # noqa: BLE001 - the count is informative; the run goes on without it
            log.debug(f"could not list the Ray nodes: {exc}")
            return
        self.report.nodes_lost |= dead & self.nodes_at_start

    def _placeable(self) -> bool:
        """Whether the live nodes can hold every actor not given up (else a restart would wait forever)."""
        keep = len(self.actors) - len(self.gone)
        try:
            cpus, gpus = _live_resources(self.ray)
        except Exception as exc:  # noqa: BLE001 - unknown: let the bounded wait for the restart decide
            log.debug(f"could not read the Ray cluster's resources: {exc}")
            return True
        fit = [math.floor(have / each + 1e-9) for have, each in ((cpus, self.options.ray_cpus_per_actor),
                                                                  (gpus, self.options.ray_gpus_per_actor)) if each > 0]
        return min(fit, default=keep) >= keep

    def _give_up(self, index: int, why: str) -> None:
        """Stop waiting for actor ``index``: the pool shrinks and goes on with the others."""
        self.gone.add(index)
        self.down.add(index)
        _kill(self.ray, [self.actors[index]])
        left = len(self.actors) - len(self.gone)
        self.report.pool_left = left
        log.warning(f"the Ray pool shrank from {len(self.actors)} to {left} actor(s): {why}")
        self.wake.set()

    async def _consume(self, index: int, chunk: _Chunk, units: list[_Unit]) -> None:
        by_key = {k: u for u in units for k in u.open}
        prompts = {t.prompt_hash: t.request for u in units for t in u.group}
        used = {k: self.attempts_used[k] for u in units for t in u.group
                if (k := t.key) in self.attempts_used}
        started: set[str] = set()
        lone = _Probe(units[0].group[0].judge, self.options.form_hold_s) if chunk.alone else None
        done: _ChunkDone | None = None
        resent = False
        try:
            stream = self.actors[index].judge.options(num_returns="streaming").remote(
                [u.group for u in units], used, lone)
            async for ref in stream:
                message = await ref
                if isinstance(message, _ChunkDone):
                    done = message
                    self._learn(message.lessons)
                    self._finish(message.stats)
                elif isinstance(message, _HoldOver):
                    self._let_go(message.judge)
                else:
                    self._perform(message, by_key, prompts, index, started)
        except self.lost_errors as exc:
            if not self.halted:
                resent = self._lost(index, chunk, [u for u in units if u.open], exc, started)
        finally:
            for unit in units:  # requests left without an answer (lost, or a stopped chunk), or failed
                if unit.open or unit.held:
                    self.loads[index] -= 1
                    unit.open, unit.held = set(), False
                self._release(unit)
            if lone is not None:
                self._lone_ended(lone.judge, done, resent)
            self.wake.set()

    # ---------------------------------------------------------------- request forms

    def _lone_ended(self, judge: str, done: _ChunkDone | None, resent: bool) -> None:
        """A held judge's lone request ended: spread the form it settled, send it alone again (its
        actor was lost), or let the judge's other requests go as they are (it taught nothing)."""
        if done is not None and judge in done.settled:
            if judge not in self.report.forms:
                self.report.forms[judge] = dict(done.lessons.get(judge, ({}, None))[0])
                self.running.add(asyncio.ensure_future(self._spread(judge)))
            else:
                self._let_go(judge)
        elif resent and judge in self.forms.learning:
            self.forms.probing.discard(judge)  # the re-sent request goes alone again
        else:
            self._let_go(judge)

    async def _spread(self, judge: str) -> None:
        """Every live actor adopts ``judge``'s settled form, then its held requests go out."""
        forms = {judge: self.report.forms[judge]}
        live = [i for i in range(len(self.actors)) if i not in self.down]
        found = await asyncio.gather(*(self.actors[i].adopt.remote(forms) for i in live), return_exceptions=True)
        for outcome in found:  # a lost actor is taught when it comes back (_probe)
            if isinstance(outcome, BaseException) and not isinstance(outcome, self.lost_errors):
                raise outcome
        log.debug(f"every Ray actor adopted the request form of {judge}: {forms[judge] or 'as asked'}")
        self._let_go(judge)

    async def _teach(self, index: int) -> None:
        """Actor ``index`` adopts every settled form (a restarted actor's backends are new)."""
        taught: set[str] = set()
        while new := {j: f for j, f in self.report.forms.items() if j not in taught}:
            await self.actors[index].adopt.remote(new)
            taught |= new.keys()

    def _let_go(self, judge: str) -> None:
        self.pending.extendleft(reversed(self.forms.release(judge)))
        self.wake.set()

    async def _probe(self, index: int) -> None:
        """Give a lost actor work again once Ray has restarted it (it may be on another node);
        give it up when it is not back within ``restart_timeout_s``."""
        try:
            info: _Ready = await asyncio.wait_for(self.actors[index].ready.remote(),
                                                  self.options.restart_timeout_s)
        except self.lost_errors as exc:
            self._give_up(index, f"it is gone for good ({type(exc).__name__})")
        except TimeoutError:
            self._give_up(index, f"Ray did not restart it within {self.options.restart_timeout_s:g} s")
        else:
            if info.error is not None:
                self._give_up(index, f"restarted on {info.host}, it could not build its judges: {info.error}")
            else:
                await self._back(index)
        self.wake.set()

    async def _back(self, index: int) -> None:
        """A restarted actor gets work again once it writes requests in the settled forms."""
        try:
            await self._teach(index)
        except self.lost_errors as exc:
            self._give_up(index, f"it was lost again as it came back ({type(exc).__name__})")
        else:
            self.down.discard(index)

    async def run(self, chunks: list[_Chunk], stop: asyncio.Event | None, unsettled: Iterable[str] = ()) -> None:
        """Hand out ``chunks`` until they are answered or the run stops; the ``unsettled`` judges
        (whose form no earlier call settled) send one request alone first."""
        self.pending.extend(chunks)
        running = self.running
        if self.report.forms:  # settled by an earlier call of this run: the new actors adopt them
            await asyncio.gather(*(self._teach(i) for i in range(len(self.actors))))
        self.forms.learning = set(unsettled) - self.report.forms.keys()
        watcher = asyncio.ensure_future(self._watch(stop)) if stop is not None else None
        try:
            while not self.halted and (running or (self.pending and not self.draining)):
                self._hand_out()
                if not running:
                    if not self.pending or self.draining:
                        break
                    if not self.probes:  # nothing can take the work that is left
                        self._halt(UNREACHABLE, "every Ray actor was lost and none came back")
                        break
                await self.wake.wait()
                self.wake.clear()
                self.probes = {p for p in self.probes if not p.done()}
                for finished in [r for r in running if r.done()]:
                    running.discard(finished)
                    finished.result()  # an error of our own or in an actor (not a death) stops the run
        finally:
            if watcher is not None:
                watcher.cancel()
            waits = [*running, *self.probes]
            for r in waits:
                r.cancel()
            await asyncio.gather(*waits, return_exceptions=True)

    def _hand_out(self) -> None:
        """Give pending chunks to actors with room, in order, as long as the spending cap allows;
        the requests of judges whose form is being learned wait (:class:`_FormHold`)."""
        while self.pending and not self.draining:
            if self.forms.holds(self.pending[0]):
                self.pending.extendleft(reversed(self.forms.split(self.pending.popleft(), self.chunk_size)))
                continue
            index = self._pick(self.pending[0])
            if index is None:
                break
            chunk = self.pending.popleft()
            units = self._units(chunk)
            if units is None:
                break
            self.loads[index] += len(units)
            self.home[chunk.prefix] = index
            self.running.add(asyncio.ensure_future(self._consume(index, chunk, units)))

    async def _watch(self, stop: asyncio.Event) -> None:
        await stop.wait()
        self._halt(INTERRUPTED, "interrupted")


def _start_actors(ray: ModuleType, specs: Sequence[JudgeSpec], settings: BackendSettings,
                  served: Mapping[int, str], options: RayOptions, *, count: int, slots: int,
                  retry: RetryPolicy, rng: random.Random, limiters: Sequence[RateLimiter | None]) -> list[Any]:
    remote = ray.remote(JudgeActor).options(
        num_cpus=options.ray_cpus_per_actor, num_gpus=options.ray_gpus_per_actor,
        max_restarts=-1, max_task_retries=0,  # restarted when lost; the driver re-sends what was lost
    )
    cpus = max(1, round(options.ray_cpus_per_actor))
    rates = [_share(limiters[i] if i < len(limiters) else None, count) for i in range(len(specs))]
    if settings.max_per_server is not None:  # a limit per server holds for the whole pool
        settings = dataclasses.replace(settings, max_per_server=max(1, settings.max_per_server // count))
    return [remote.remote(list(specs), settings, dict(served), slots, retry, rng.getrandbits(32), cpus, rates)
            for _ in range(count)]


async def _check_ready(actors: list[Any]) -> list[_Ready]:
    infos: list[_Ready] = await asyncio.gather(*(a.ready.remote() for a in actors))
    log.debug(f"Ray actors ready: {', '.join(f'{i.host} pid {i.pid}' for i in infos)}")
    for info in infos:
        if info.error is not None:
            where = f"a Ray actor on {info.host} could not build its judges: {info.error}"
            if info.spec_error:
                raise InputError(where, field="judge")
            raise RuntimeError(where)
    return infos


async def _ready_in_time(ray: ModuleType, actors: list[Any], options: RayOptions) -> list[_Ready]:
    """The actors' readiness. Every ``restart_timeout_s`` that they are not all ready, the live nodes'
    resources are compared with what the pool reserves: a pool they cannot hold (more actors, CPUs or GPUs
    than the cluster has) would wait for resources forever and is refused; one they can hold is still
    starting (a runtime environment may be installing packages on the nodes) and is waited for, saying
    so on one line, for at most :data:`READY_PERIODS` periods."""
    pending = asyncio.ensure_future(_check_ready(actors))
    limit = READY_PERIODS * options.restart_timeout_s
    try:
        for period in range(1, READY_PERIODS + 1):
            done, _ = await asyncio.wait({pending}, timeout=options.restart_timeout_s)
            if done:
                return pending.result()
            if period == READY_PERIODS:
                raise InputError(f"{len(actors)} Ray actors did not all start within {limit:g} s (10 times "
                                 "--ray-restart-timeout); see ray.log in the run directory", field="ray-actors")
            if period == 1:  # said once
                log.warning(f"waiting for {len(actors)} Ray actors to start (a runtime environment may be "
                            f"installing packages on the nodes); gives up after {limit:g} s")
            cpus, gpus = _live_resources(ray)
            if cpus < len(actors) * options.ray_cpus_per_actor or gpus < len(actors) * options.ray_gpus_per_actor:
                raise InputError(
                    f"{len(actors)} Ray actors ({options.ray_cpus_per_actor:g} CPU, {options.ray_gpus_per_actor:g} GPU "
                    f"each) did not all start within {options.restart_timeout_s:g} s; the cluster's live nodes "
                    f"have {cpus:g} CPUs and {gpus:g} GPUs: give fewer --ray-actors or a smaller "
                    "--ray-cpus-per-actor", field="ray-actors")
        raise AssertionError("unreachable")  # the last period returns or raises
    finally:
        if not pending.done():
            pending.cancel()


def _kill(ray: ModuleType, actors: list[Any]) -> None:
    for a in actors:
        try:
            ray.kill(a, no_restart=True)
        except Exception as exc:  # noqa: BLE001 - the cluster may be gone already; nothing to clean then
            log.debug(f"could not stop a Ray actor: {exc}")


def _alive_nodes(ray: ModuleType) -> int:
    return sum(1 for n in ray.nodes() if n.get("Alive"))


def _live_resources(ray: ModuleType) -> tuple[float, float]:
    """CPUs and GPUs of the nodes that are alive (what actors can still be placed on)."""
    cpus = gpus = 0.0
    for node in ray.nodes():
        if node.get("Alive"):
            res = node.get("Resources") or {}
            cpus += float(res.get("CPU", 0.0))
            gpus += float(res.get("GPU", 0.0))
    return cpus, gpus


async def execute_ray(tasks: Iterable[Task | Sequence[Task]], specs: Sequence[JudgeSpec], settings: BackendSettings,
                      store: Store, controls: SendControls = SendControls(), *, options: RayOptions = RayOptions(),
                      report: ClusterReport | None = None) -> ExecStats:
    """Send ``tasks`` (tasks, or groups of runs sent as one request) from a pool of Ray actors,
    writing every answer to ``store`` here, as :func:`~polyjudge.engine.runner.execute` does.

    ``specs`` are the run's judges in order (``task.judge_index`` indexes them);
    ``controls.concurrency`` is the number of requests in flight over the whole
    pool, split evenly between the actors, and so are the ``limiters``' rates.
    The ``budget`` is kept here. Returns the same :class:`ExecStats`, with
    ``stop_kind`` set when sending stopped early; ``report`` collects what the
    actors learned and what the pool lost.
    """
    report = report if report is not None else ClusterReport()
    options.check()
    stats = ExecStats()
    work = [as_group(t) for t in tasks]
    if not work:
        return stats
    concurrency, retry, on_update, stop = controls.concurrency, controls.retry, controls.on_update, controls.stop
    rng = controls.rng or random.Random()
    judges = {t.judge_index: t.judge for group in work for t in group}
    unknown = sorted(i for i in judges if not 0 <= i < len(specs))
    if unknown:
        raise ValueError(f"tasks name judge {unknown[0]} but only {len(specs)} judge spec(s) were given")
    on_cluster = {i for i in judges if cluster_backend(specs[i]) is not None}
    require_cluster_backends([specs[i] for i in on_cluster])
    ray = connect(options, ray_log_path(store))
    if on_cluster:
        _check_gpus(ray)
    pooled = [g for g in work if g[0].judge_index not in on_cluster]
    if pooled:
        served = {i: name for i, name in judges.items() if i not in on_cluster}
        count = options.ray_actors or max(1, _alive_nodes(ray))
        slots = max(1, math.ceil(concurrency / count))
        report.pool_started = max(report.pool_started, count)
        actors = _start_actors(ray, specs, settings, served, options, count=count, slots=slots, retry=retry,
                               rng=rng, limiters=controls.limiters)
        try:
            infos = await _ready_in_time(ray, actors, options)
            driver = _Driver(ray, actors, store, stats, slots=slots, options=options, on_update=on_update,
                             budget=controls.budget, attempts_used=controls.attempts_used, report=report)
            await driver.run(chunk_work(pooled, driver.chunk_size), stop, {j for i in infos for j in i.unsettled})
        finally:
            _kill(ray, actors)
    for index in sorted(on_cluster):
        if stats.stop_kind is None and stop is not None and stop.is_set():
            stats.stop_kind, stats.stop_reason = INTERRUPTED, "interrupted"
        if stats.stop_kind is not None:
            break
        mine = [t for g in work if g[0].judge_index == index for t in g]
        await _execute_on_cluster(ray, mine, specs[index], settings, store, stats, options=options,
                                  on_update=on_update, stop=stop)
    return stats


class RayExecutor:
    """The Ray executor behind the :class:`~polyjudge.engine.executor.Executor` seam.

    Built before the run starts, so a missing Ray (or ``ray.data.llm`` for a
    vllm judge) or a bad option is an :class:`InputError` (exit 2) before any
    run directory is touched. The driver-side ``backends`` the engine passes are
    not used to send: each actor builds its own from ``specs``.

    The engine hands over a run's tasks a bounded chunk of items at a time;
    each call starts and stops the actor pool, so the chunks given to this
    executor are large (``items_per_call``).
    """

    items_per_call = 50_000

    def __init__(self, specs: Sequence[JudgeSpec], settings: BackendSettings,
                 options: RayOptions = RayOptions()) -> None:
        options.check()
        require_ray()
        require_cluster_backends(specs)
        self.specs, self.settings, self.options = list(specs), settings, options
        self.report = ClusterReport()

    @property
    def learned(self) -> list[Learned]:
        """What the judges' backends learned on the actors (adaptations, requests per server), one entry
        per judge, read by the engine as it reads its own backends."""
        return list(self.report.learned.values())

    def adopt_forms(self, forms: Mapping[str, Mapping[str, str]]) -> None:
        """Judges whose request form an earlier run settled (judge -> what the server changed, from the shared
        cache): every actor writes their requests so from the start, none is held while it is learned again."""
        for judge, changes in forms.items():
            self.report.forms.setdefault(judge, dict(changes))

    def manifest_counts(self) -> dict[str, int]:
        """The ``ray_*`` counts of the run's manifest: actors started, lost and left, nodes lost, re-sent."""
        return self.report.counts()

    async def __call__(self, tasks: Iterable[Task | Sequence[Task]], backends: list[Backend], store: Store,
                       controls: SendControls = SendControls()) -> ExecStats:
        return await execute_ray(tasks, self.specs, self.settings, store, controls, options=self.options,
                                 report=self.report)


# --------------------------------------------------------------------------- GPU-cluster judges (vllm)


def _check_gpus(ray: ModuleType) -> None:
    if not ray.cluster_resources().get("GPU", 0):
        raise InputError("a vllm judge needs GPU nodes and this Ray cluster has none; join GPU nodes with "
                         "'ray start --address HEAD:6379' on each, or judge with llamacpp/openai instead",
                         field="judge")


def _next_row(rows: Iterator[dict[str, Any]]) -> dict[str, Any] | None:
    return next(rows, None)


async def _execute_on_cluster(ray: ModuleType, tasks: list[Task], spec: JudgeSpec, settings: BackendSettings,
                              store: Store, stats: ExecStats, *, options: RayOptions,
                              on_update: ProgressHook | None, stop: asyncio.Event | None) -> None:
    """One GPU-cluster judge's tasks through its backend's Ray Data processor: rows in, answers written
    as they stream out."""
    backend = cluster_backend(spec)
    assert backend is not None
    placement = ClusterPlacement(replicas=options.ray_actors or 1, batch_size=options.vllm_batch_size,
                                 runtime_env=options.ray_runtime_env)
    processor = backend.processor(spec, settings, placement)
    by_key = {t.key: t for t in tasks}
    rows: Iterator[dict[str, Any]] = iter(processor(ray.data.from_items(
        [backend.request_row(t.key, t.request) for t in tasks])).iter_rows())
    kind = f"{spec.backend} error"
    while (row := await asyncio.to_thread(_next_row, rows)) is not None:
        task = by_key.pop(str(row["key"]))
        store.put_prompt(task.prompt_hash, task.request)
        stats.sent += 1
        error = backend.row_error(row)
        if error is not None:
            store.put_failure(task.key, task.prompt_hash, task.judge, task.run_index, f"{kind}: {error}", 1)
            stats.failed += 1
            stats.errors[kind] = stats.errors.get(kind, 0) + 1
        else:
            store.put_result(task, backend.answer(row, task.request.max_tokens, task.judge), 1)
            stats.done += 1
        if on_update is not None:
            on_update(stats)
        if stop is not None and stop.is_set():
            stats.stop_kind, stats.stop_reason = INTERRUPTED, "interrupted"
            return


__all__ = ["ACTOR_DIED", "INSTALL_RAY", "ClusterReport", "JudgeActor", "Learned", "RayExecutor", "RayOptions",
           "chunk_work", "cluster_backend", "connect", "execute_ray", "require_cluster_backends", "require_ray"]
