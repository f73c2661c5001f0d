"""Sending tasks concurrently with retries, writing each answer to the store."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from polyjudge.backends.base import Backend, BackendError
from polyjudge.engine.plan import Task
from polyjudge.engine.store import Store


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with full jitter; Retry-After is honoured when longer."""

    max_attempts: int = 6
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    max_retry_after_s: float = 120.0

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        backoff = min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))
        wait: float = backoff * (0.5 + 0.5 * rng.random())
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.max_retry_after_s))
        return wait


@dataclass(slots=True)
class ExecStats:
    sent: int = 0
    done: int = 0
    failed: int = 0
    retries: int = 0
    errors: dict[str, int] = field(default_factory=dict)


ProgressHook = Callable[[ExecStats], None]


async def execute(tasks: Iterable[Task], backends: list[Backend], store: Store, *, concurrency: int,
                  retry: RetryPolicy = RetryPolicy(), on_update: ProgressHook | None = None,
                  rng: random.Random | None = None) -> ExecStats:
    """Run ``tasks`` with at most ``concurrency`` requests in flight.

    A fixed pool of workers pulls from one iterator, so memory and scheduling
    cost do not grow with the number of tasks, and the planned order (prefix
    sharing) is kept.
    """
    stats = ExecStats()
    rng = rng or random.Random()
    queue = iter(tasks)

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
                if exc.retryable and attempt < retry.max_attempts:
                    stats.retries += 1
                    await asyncio.sleep(retry.delay(attempt, exc.retry_after, rng))
                    continue
                reason = f"{exc} (after {attempt} attempt{'s' if attempt > 1 else ''})"
                store.put_failure(task.key, task.prompt_hash, task.judge, task.run_index, reason, attempt)
                stats.failed += 1
                kind = str(exc).split(":")[0]
                stats.errors[kind] = stats.errors.get(kind, 0) + 1
                break
            store.put_result(task.key, task.prompt_hash, task.judge, task.run_index, result, attempt)
            stats.done += 1
            break
        if on_update is not None:
            on_update(stats)

    async def worker() -> None:
        for task in queue:
            await one(task)

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    return stats
