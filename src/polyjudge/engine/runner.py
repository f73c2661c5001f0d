"""Sending tasks concurrently with retries, writing each answer to the store.

A unit of work is one task or, with samples per request, several runs of
one prompt sent as one request with ``n`` choices (choice k answers the k-th
task). Rate limits (:class:`~polyjudge.engine.spend.RateLimiter`) and the
spending cap (:class:`~polyjudge.engine.spend.Budget`) are applied to every
attempt."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from polyjudge.backends.base import Backend, BackendError, GenerateResult, Usage
from polyjudge.data.secrets import redact
from polyjudge.engine.plan import Task
from polyjudge.engine.spend import Budget, RateLimiter, vet_usage, with_usage
from polyjudge.engine.store import Store

log = logging.getLogger("polyjudge")


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
# The spending cap (--max-cost) leaves no room for the next request; in-flight ones were finished.
BUDGET = "budget"
# Answers that no retry and no other request will change: the key, the account (402: payment
# required, no credit left), the endpoint or the model is wrong.
FATAL_STATUSES = (401, 402, 403, 404)
_NOT_FOUND = re.compile(r"model.*(not found|does not exist|not exist|unknown)|(unknown|invalid) model", re.I)


def is_fatal(exc: BackendError) -> bool:
    """Authentication, payment, permission, wrong URL or unknown model: stop the whole run at once.

    A 429 that is not retryable is an exhausted quota (``insufficient_quota``), not a rate limit:
    like a 402, no wait refills it.
    """
    if getattr(exc, "fatal", False) or exc.status in FATAL_STATUSES or (exc.status == 429 and not exc.retryable):
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
    # Set when sending stopped before every task was tried: INTERRUPTED, REJECTED, UNREACHABLE or BUDGET.
    stop_kind: str | None = None
    stop_reason: str | None = None
    # Requests that answered several runs at once (samples per request).
    multi_sample_requests: int = 0
    # Judges whose server rejected or ignored ``n``, with what it did (they got one request per run).
    samples_fallback: dict[str, str] = field(default_factory=dict)

    def add(self, other: ExecStats) -> None:
        """Fold in the stats of a later phase (live retries after a batch)."""
        self.sent += other.sent
        self.done += other.done
        self.failed += other.failed
        self.retries += other.retries
        for k, v in other.errors.items():
            self.errors[k] = self.errors.get(k, 0) + v
        if self.stop_kind is None:
            self.stop_kind, self.stop_reason = other.stop_kind, other.stop_reason
        self.multi_sample_requests += other.multi_sample_requests
        self.samples_fallback.update(other.samples_fallback)


ProgressHook = Callable[[ExecStats], None]


def split_usage(usage: Usage, parts: int) -> list[Usage]:
    """One request's usage shared among its ``parts`` choices, so the shares add up to what was billed."""

    def share(total: int) -> list[int]:
        base, extra = divmod(total, parts)
        return [base + (1 if k < extra else 0) for k in range(parts)]

    columns = zip(share(usage.prompt_tokens), share(usage.completion_tokens),
                  share(usage.cached_prompt_tokens), share(usage.reasoning_tokens))
    return [Usage(p, c, cp, r) for p, c, cp, r in columns]


class Answerable(Protocol):
    """What storing an answer needs of a task (a planned :class:`Task` or a stored batch line)."""

    @property
    def key(self) -> str: ...

    @property
    def prompt_hash(self) -> str: ...

    @property
    def judge(self) -> str: ...

    @property
    def run_index(self) -> int: ...


def store_choices(store: Store, group: Sequence[Answerable], result: GenerateResult, attempts: int, *,
                  channel: str = "live", usage_note: str | None = None) -> int:
    """Store choice k of ``result`` as the answer of ``group[k]``; returns how many tasks were answered
    (fewer than the group when the server returned fewer choices). ``result.usage`` is the vetted
    usage (:func:`~polyjudge.engine.spend.vet_usage`); its ``usage_note`` goes with the first choice,
    so each request's anomaly is counted once."""
    if len(group) == 1:
        t = group[0]
        store.put_result(t.key, t.prompt_hash, t.judge, t.run_index, result, attempts, channel=channel,
                         usage_note=usage_note)
        return 1
    choices = result.choices or (result.text,)
    answered = min(len(group), len(choices))
    usages = split_usage(result.usage, answered)
    for k in range(answered):
        t = group[k]
        finish = (result.choice_finish_reasons[k] if k < len(result.choice_finish_reasons)
                  else result.finish_reason)
        store.put_result(t.key, t.prompt_hash, t.judge, t.run_index, result, attempts, text=choices[k],
                         finish_reason=finish, usage=usages[k], channel=channel,
                         usage_note=usage_note if k == 0 else None)
    return answered


def as_group(work: Task | Sequence[Task]) -> tuple[Task, ...]:
    return (work,) if isinstance(work, Task) else tuple(work)


async def execute(tasks: Iterable[Task | Sequence[Task]], backends: list[Backend], store: Store, *,
                  concurrency: int, retry: RetryPolicy = RetryPolicy(), on_update: ProgressHook | None = None,
                  rng: random.Random | None = None, stop: asyncio.Event | None = None,
                  limiters: Sequence[RateLimiter | None] = (), budget: Budget | None = None,
                  attempts_used: Mapping[str, int] | None = None) -> ExecStats:
    """Run ``tasks`` with at most ``concurrency`` requests in flight.

    Each element is a task or a group of runs of one prompt (samples per
    request: one request with ``n`` = the group's size). A server that
    rejects ``n`` (``BackendError.unsupported == "n"``) or returns fewer
    choices gets one request per run from then on, said once as a warning.

    A fixed pool of workers pulls from one iterator, so memory and scheduling
    cost do not grow with the number of tasks, and the planned order (prefix
    sharing) is kept.

    Sending stops early, cancelling what is in flight (those tasks stay
    unanswered and are sent on resume), when ``stop`` is set (Ctrl-C), at the
    first answer that says the request can never succeed (:func:`is_fatal`),
    or when the endpoint keeps failing (:meth:`RetryPolicy.failure_limit`)
    while tasks are still waiting to be tried (at the end of a run a few
    items that keep failing only use up their own retries). With a
    ``budget``, sending stops (finishing what is in flight) before a request
    whose worst case would pass the cap. ``limiters`` (one per judge, or
    empty) hold the request and token rates. ``attempts_used`` counts
    attempts a task already had elsewhere (a batch) against
    ``retry.max_attempts``. ``stats.stop_kind`` and ``stats.stop_reason`` say why.
    """
    stats = ExecStats()
    rng = rng or random.Random()
    todo = [as_group(t) for t in tasks]
    taken = 0  # tasks handed to a worker; fewer than len(todo) while some wait to be tried
    queue = iter(todo)
    streak = _Streak(retry.failure_limit(concurrency), retry.give_up_after_s)
    workers: list[asyncio.Task[None]] = []
    draining = False  # no new request goes out (the budget is used up); those in flight finish
    single_only: set[int] = set()  # judges whose server does not give n choices

    def halt(kind: str | None, reason: str | None) -> None:
        if stats.stop_kind is None:
            stats.stop_kind, stats.stop_reason = kind, reason
        me = asyncio.current_task()
        for w in workers:
            if w is not me:
                w.cancel()

    def drain(kind: str, reason: str) -> None:
        nonlocal draining
        draining = True
        if stats.stop_kind is None:
            stats.stop_kind, stats.stop_reason = kind, reason

    def samples_off(task: Task, what: str) -> None:
        if task.judge_index in single_only:
            return
        single_only.add(task.judge_index)
        stats.samples_fallback[task.judge] = what
        log.warning(f"judge {task.judge}: {what}; sending one request per run instead")

    def fail(group: Sequence[Task], reason: str, attempts: int) -> None:
        for t in group:
            store.put_failure(t.key, t.prompt_hash, t.judge, t.run_index, reason, attempts)
        stats.failed += len(group)

    async def send(group: tuple[Task, ...]) -> None:
        first = group[0]
        backend = backends[first.judge_index]
        limiter = limiters[first.judge_index] if limiters else None
        request = first.request if len(group) == 1 else dataclasses.replace(first.request, n=len(group))
        store.put_prompt(first.prompt_hash, first.request)
        attempt = attempts_used.get(first.key, 0) if attempts_used else 0
        while True:
            if draining:
                return
            reserved = 0.0
            if budget is not None:
                got = await budget.admit(first.judge, request)
                if got is None:
                    drain(BUDGET, "the spending cap (--max-cost) leaves no room for the next request")
                    return
                reserved = got
            try:
                if limiter is not None:
                    await limiter.acquire(request)
                attempt += 1
                stats.sent += 1
                result = await backend.generate(request)
            except BackendError as exc:
                stats.sent, stats.retries = stats.sent + exc.resends, stats.retries + exc.resends  # re-sent inside
                if budget is not None:
                    budget.settle(reserved, 0.0)  # a failed attempt is not billed
                if len(group) > 1 and exc.unsupported == "n":
                    samples_off(first, "the server rejected n (several samples per request)")
                    for t in group:
                        await send((t,))
                    return
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
                fail(group, reason, attempt)
                kind = message.split(":")[0]
                stats.errors[kind] = stats.errors.get(kind, 0) + len(group)
                if fatal:
                    halt(REJECTED, f"the endpoint rejected the request: {message}")
                elif give_up:
                    # Unreachable only when connections fail; a server that took them but answered too late is slow.
                    what = {"connection error": "is unreachable", "timeout": "is too slow"}.get(kind, "keeps failing")
                    halt(UNREACHABLE, f"the endpoint {what}: {message} ({streak.count} attempts in a row "
                                      f"failed over {time.monotonic() - streak.since:.1f}s)")
                return
            streak.success()
            stats.sent, stats.retries = stats.sent + result.resends, stats.retries + result.resends  # re-sent inside
            vetted = vet_usage(request, result)  # server numbers are data: bounded before anything counts them
            result = with_usage(result, vetted.usage)
            if budget is not None:
                if not vetted.anomalies:  # only plausible counts teach the prompt margin
                    budget.learn(request, result.usage)
                budget.settle(reserved, budget.cost_of(first.judge, result.usage))
            answered = store_choices(store, group, result, attempt, usage_note=vetted.note)
            stats.done += answered
            if answered > 1:
                stats.multi_sample_requests += 1
            if answered < len(group):
                samples_off(first, f"n was ignored ({answered} of {len(group)} choices came back)")
                for t in group[answered:]:
                    await send((t,))
            return

    async def one(group: tuple[Task, ...]) -> None:
        if len(group) > 1 and group[0].judge_index in single_only:
            for t in group:
                await send((t,))
        else:
            await send(group)
        if on_update is not None:
            on_update(stats)

    async def worker() -> None:
        nonlocal taken
        try:
            for group in queue:
                taken += 1
                if stats.stop_kind is not None or draining:
                    return
                await one(group)
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
