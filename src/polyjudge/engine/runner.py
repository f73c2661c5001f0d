"""Sending tasks concurrently with retries, writing each answer to the store."""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from polyjudge.backends.base import Backend, BackendError
from polyjudge.data.secrets import redact
from polyjudge.engine.plan import Task
from polyjudge.engine.store import Store


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with full jitter; Retry-After is honoured when longer.

    The run gives up on the endpoint (stops sending, see :func:`execute`) after
    ``give_up_failures`` failed attempts in a row, none succeeding in between,
    over at least ``give_up_after_s`` seconds; ``None`` means every request slot
    failing twice (``2 × concurrency``, at least 4). Rate limiting (429) never counts.
    """

    max_attempts: int = 6
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    max_retry_after_s: float = 120.0
    give_up_failures: int | None = None
    give_up_after_s: float = 5.0

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        backoff = min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))
        wait: float = backoff * (0.5 + 0.5 * rng.random())
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.max_retry_after_s))
        return wait

    def failure_limit(self, concurrency: int) -> int:
        return self.give_up_failures if self.give_up_failures is not None else max(4, 2 * concurrency)


# Why sending stopped before every task was tried (ExecStats.stop_kind).
INTERRUPTED, REJECTED, UNREACHABLE = "interrupted", "rejected", "unreachable"
# Answers that no retry and no other request will change: the endpoint or the model is wrong.
FATAL_STATUSES = (401, 403, 404)
_NOT_FOUND = re.compile(r"model.*(not found|does not exist|not exist|unknown)|(unknown|invalid) model", re.I)


def is_fatal(exc: BackendError) -> bool:
    """Authentication, permission, wrong URL or unknown model: stop the whole run at once."""
    if exc.status in FATAL_STATUSES:
        return True
    return exc.status is not None and not exc.retryable and bool(_NOT_FOUND.search(str(exc)))


class _Streak:
    """Failed attempts in a row across all requests (any success resets it)."""

    def __init__(self, limit: int, min_seconds: float) -> None:
        self.limit, self.min_seconds = limit, min_seconds
        self.count, self.since = 0, 0.0

    def success(self) -> None:
        self.count = 0

    def failure(self) -> bool:
        """Count one failed attempt; True when the endpoint should be given up."""
        now = time.monotonic()
        if self.count == 0:
            self.since = now
        self.count += 1
        return self.count >= self.limit and now - self.since >= self.min_seconds


@dataclass(slots=True)
class ExecStats:
    sent: int = 0
    done: int = 0
    failed: int = 0
    retries: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    # Set when sending stopped before every task was tried: INTERRUPTED, REJECTED or UNREACHABLE.
    stop_kind: str | None = None
    stop_reason: str | None = None


ProgressHook = Callable[[ExecStats], None]


async def execute(tasks: Iterable[Task], backends: list[Backend], store: Store, *, concurrency: int,
                  retry: RetryPolicy = RetryPolicy(), on_update: ProgressHook | None = None,
                  rng: random.Random | None = None, stop: asyncio.Event | None = None) -> ExecStats:
    """Run ``tasks`` with at most ``concurrency`` requests in flight.

    A fixed pool of workers pulls from one iterator, so memory and scheduling
    cost do not grow with the number of tasks, and the planned order (prefix
    sharing) is kept.

    Sending stops early, cancelling what is in flight (those tasks stay
    unanswered and are sent on resume), when ``stop`` is set (Ctrl-C), at the
    first answer that says the request can never succeed (:func:`is_fatal`),
    or when the endpoint keeps failing (:meth:`RetryPolicy.failure_limit`)
    while tasks are still waiting to be tried (at the end of a run a few
    items that keep failing only use up their own retries).
    ``stats.stop_kind`` and ``stats.stop_reason`` say why.
    """
    stats = ExecStats()
    rng = rng or random.Random()
    todo = list(tasks)
    taken = 0  # tasks handed to a worker; fewer than len(todo) while some wait to be tried
    queue = iter(todo)
    streak = _Streak(retry.failure_limit(concurrency), retry.give_up_after_s)
    workers: list[asyncio.Task[None]] = []

    def halt(kind: str | None, reason: str | None) -> None:
        if stats.stop_kind is None:
            stats.stop_kind, stats.stop_reason = kind, reason
        me = asyncio.current_task()
        for w in workers:
            if w is not me:
                w.cancel()

    async def one(task: Task) -> None:
        backend = backends[task.judge_index]
        store.put_prompt(task.prompt_hash, task.request)
        attempt = 0
        while True:
            attempt += 1
            stats.sent += 1
            try:
                result = await backend.generate(task.request)
            except BackendError as exc:
                message = redact(str(exc)) or ""
                fatal = is_fatal(exc)
                counts = exc.retryable and exc.status != 429
                give_up = counts and streak.failure() and taken < len(todo)
                if not counts and not fatal:
                    streak.success()  # an answer came back: the endpoint is reachable
                if exc.retryable and attempt < retry.max_attempts and not fatal and not give_up:
                    stats.retries += 1
                    await asyncio.sleep(retry.delay(attempt, exc.retry_after, rng))
                    continue
                reason = f"{message} (after {attempt} attempt{'s' if attempt > 1 else ''})"
                store.put_failure(task.key, task.prompt_hash, task.judge, task.run_index, reason, attempt)
                stats.failed += 1
                kind = message.split(":")[0]
                stats.errors[kind] = stats.errors.get(kind, 0) + 1
                if fatal:
                    halt(REJECTED, f"the endpoint rejected the request: {message}")
                elif give_up:
                    what = ("is unreachable" if kind in ("connection error", "timeout")
                            else "keeps failing")
                    halt(UNREACHABLE, f"the endpoint {what}: {message} ({streak.count} attempts in a row "
                                      f"failed over {time.monotonic() - streak.since:.1f}s)")
                break
            streak.success()
            store.put_result(task.key, task.prompt_hash, task.judge, task.run_index, result, attempt)
            stats.done += 1
            break
        if on_update is not None:
            on_update(stats)

    async def worker() -> None:
        nonlocal taken
        try:
            for task in queue:
                taken += 1
                if stats.stop_kind is not None:
                    return
                await one(task)
        except asyncio.CancelledError:
            raise
        except BaseException:
            halt(None, None)  # an error of our own (e.g. the disk is full): stop everyone, re-raised below
            raise

    async def watch(event: asyncio.Event) -> None:
        await event.wait()
        halt(INTERRUPTED, "interrupted")

    watcher = asyncio.ensure_future(watch(stop)) if stop is not None else None
    workers.extend(asyncio.ensure_future(worker()) for _ in range(max(1, concurrency)))
    try:
        outcomes = await asyncio.gather(*workers, return_exceptions=True)
    finally:
        if watcher is not None:
            watcher.cancel()
    for outcome in outcomes:  # a store or backend bug must not pass silently
        if isinstance(outcome, BaseException) and not isinstance(outcome, asyncio.CancelledError):
            raise outcome
    return stats
