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

from polyjudge.backends.base import Backend, BackendError
from polyjudge.data.chat import GenerateRequest, GenerateResult, Usage
from polyjudge.data.secrets import redact
from polyjudge.engine.plan import Task
from polyjudge.engine.spend import Budget, RateLimiter, vet_usage, with_usage
from polyjudge.engine.store import Answerable, Store

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


def store_choices(store: Store, group: Sequence[Answerable], result: GenerateResult, attempts: int, *,
                  channel: str = "live", usage_note: str | None = None) -> int:
    """Store choice k of ``result`` as the answer of ``group[k]``; returns how many tasks were answered
    (fewer than the group when the server returned fewer choices). ``result.usage`` is the vetted
    usage (:func:`~polyjudge.engine.spend.vet_usage`); its ``usage_note`` goes with the first choice,
    so each request's anomaly is counted once."""
    if len(group) == 1:
        t = group[0]
        store.put_result(t, result, attempts, channel=channel,
                         usage_note=usage_note)
        return 1
    choices = result.choices or (result.text,)
    answered = min(len(group), len(choices))
    usages = split_usage(result.usage, answered)
    for k in range(answered):
        t = group[k]
        finish = (result.choice_finish_reasons[k] if k < len(result.choice_finish_reasons)
                  else result.finish_reason)
        store.put_result(t, result, attempts, text=choices[k],
                         finish_reason=finish, usage=usages[k], channel=channel,
                         usage_note=usage_note if k == 0 else None)
    return answered


def as_group(work: Task | Sequence[Task]) -> tuple[Task, ...]:
    return (work,) if isinstance(work, Task) else tuple(work)


@dataclass(frozen=True, slots=True)
class SendControls:
    """How an executor sends: requests in flight, retries, progress, Ctrl-C, rate limits and the spending cap.

    ``limiters`` hold one rate limiter per judge (or none at all); ``budget`` is
    the spending cap; ``attempts_used`` counts attempts a task already had
    elsewhere (a batch) against ``retry.max_attempts``; ``rng`` draws the retry
    jitter (seeded in tests).
    """

    concurrency: int = 16
    retry: RetryPolicy = RetryPolicy()
    on_update: ProgressHook | None = None
    rng: random.Random | None = None
    stop: asyncio.Event | None = None
    limiters: Sequence[RateLimiter | None] = ()
    budget: Budget | None = None
    attempts_used: Mapping[str, int] | None = None


async def execute(tasks: Iterable[Task | Sequence[Task]], backends: list[Backend], store: Store,
                  controls: SendControls = SendControls()) -> ExecStats:
    """Run ``tasks`` with at most ``controls.concurrency`` requests in flight.

    Each element is a task or a group of runs of one prompt (samples per
    request: one request with ``n`` = the group's size). A server that
    rejects ``n`` (``BackendError.unsupported == "n"``) or returns fewer
    choices gets one request per run from then on, said once as a warning.

    A fixed pool of workers pulls from one iterator, read only as the workers
    take its elements (a lazy stream of work is prepared while what came
    before it is in flight), so memory and scheduling cost do not grow with
    the number of tasks, and the planned order (prefix sharing) is kept.

    Sending stops early, cancelling what is in flight (those tasks stay
    unanswered and are sent on resume), when ``stop`` is set (Ctrl-C), at the
    first answer that says the request can never succeed (:func:`is_fatal`),
    or when the endpoint keeps failing (:meth:`RetryPolicy.failure_limit`)
    while tasks are still waiting to be tried (at the end of a run a few
    items that keep failing only use up their own retries). With a
    ``budget``, sending stops (finishing what is in flight) before a request
    whose worst case would pass the cap. ``stats.stop_kind`` and
    ``stats.stop_reason`` say why.
    """
    return await _Sending(tasks, backends, store, controls).run()


_END = object()


class _Waiting:
    """The work no worker has taken yet, read from ``tasks`` only as it is taken (so a lazy stream of
    work is prepared while the work before it is in flight); :meth:`any_left` looks one element ahead."""

    def __init__(self, tasks: Iterable[Task | Sequence[Task]]) -> None:
        self._tasks = iter(tasks)
        self._ahead: object = _END

    def __iter__(self) -> _Waiting:
        return self

    def __next__(self) -> tuple[Task, ...]:
        ahead, self._ahead = self._ahead, _END
        work = next(self._tasks) if ahead is _END else ahead
        return as_group(work)  # type: ignore[arg-type]

    def any_left(self) -> bool:
        """Whether some work still waits to be tried."""
        if self._ahead is _END:
            self._ahead = next(self._tasks, _END)
        return self._ahead is not _END


class _Sending:
    """One call of :func:`execute`: the workers, what they share and each step of sending a request."""

    def __init__(self, tasks: Iterable[Task | Sequence[Task]], backends: list[Backend], store: Store,
                 controls: SendControls) -> None:
        self.backends, self.store, self.controls = backends, store, controls
        self.retry = controls.retry
        self.stats = ExecStats()
        self.rng = controls.rng or random.Random()
        # Read as the workers take work (a run's chunks are prepared while earlier ones are in flight).
        self.queue = _Waiting(tasks)
        self.streak = _Streak(self.retry.failure_limit(controls.concurrency), self.retry.give_up_after_s)
        self.workers: list[asyncio.Task[None]] = []
        self.draining = False  # no new request goes out (the budget is used up); those in flight finish
        self.single_only: set[int] = set()  # judges whose server does not give n choices

    async def run(self) -> ExecStats:
        stop = self.controls.stop
        watcher = asyncio.ensure_future(self._watch(stop)) if stop is not None else None
        self.workers.extend(asyncio.ensure_future(self._worker()) for _ in range(max(1, self.controls.concurrency)))
        try:
            with self.store.deferring():  # one commit per turn of the event loop; each answer awaits its own
                outcomes = await asyncio.gather(*self.workers, return_exceptions=True)
        finally:
            if watcher is not None:
                watcher.cancel()
        for outcome in outcomes:  # a store or backend bug must not pass silently
            if isinstance(outcome, BaseException) and not isinstance(outcome, asyncio.CancelledError):
                raise outcome
        return self.stats

    def _halt(self, kind: str | None, reason: str | None) -> None:
        if self.stats.stop_kind is None:
            self.stats.stop_kind, self.stats.stop_reason = kind, reason
        me = asyncio.current_task()
        for w in self.workers:
            if w is not me:
                w.cancel()

    def _drain(self, kind: str, reason: str) -> None:
        self.draining = True
        if self.stats.stop_kind is None:
            self.stats.stop_kind, self.stats.stop_reason = kind, reason

    def _samples_off(self, task: Task, what: str) -> None:
        if task.judge_index in self.single_only:
            return
        self.single_only.add(task.judge_index)
        self.stats.samples_fallback[task.judge] = what
        log.warning(f"judge {task.judge}: {what}; sending one request per run instead")

    def _fail(self, group: Sequence[Task], reason: str, attempts: int) -> None:
        self.store.put_prompt(group[0].prompt_hash, group[0].request)  # with its row, as an answer's (below)
        for t in group:
            self.store.put_failure(t.key, t.prompt_hash, t.judge, t.run_index, reason, attempts)
        self.stats.failed += len(group)

    async def _one_by_one(self, group: Sequence[Task]) -> None:
        for t in group:
            await self._send((t,))

    async def _send(self, group: tuple[Task, ...]) -> None:
        """Send one request for ``group`` until it is answered, fails for good or sending stops."""
        first, budget = group[0], self.controls.budget
        limiter = self.controls.limiters[first.judge_index] if self.controls.limiters else None
        request = first.request if len(group) == 1 else dataclasses.replace(first.request, n=len(group))
        used = self.controls.attempts_used
        attempt = used.get(first.key, 0) if used else 0
        while not self.draining:
            reserved = 0.0
            if budget is not None:
                got = await budget.admit(first.judge, request)
                if got is None:
                    self._drain(BUDGET, "the spending cap (--max-cost) leaves no room for the next request")
                    return
                reserved = got
            try:
                if limiter is not None:
                    await limiter.acquire(request)
                attempt += 1
                self.stats.sent += 1
                result = await self.backends[first.judge_index].generate(request)
            except BackendError as exc:
                if budget is not None:
                    budget.settle(reserved, 0.0)  # a failed attempt is not billed
                if await self._after_error(group, exc, attempt):
                    continue
                return
            await self._after_answer(group, request, result, attempt, reserved)
            return

    async def _after_error(self, group: tuple[Task, ...], exc: BackendError, attempt: int) -> bool:
        """Handle a failed attempt; True when the request should be sent again."""
        stats, first = self.stats, group[0]
        stats.sent, stats.retries = stats.sent + exc.resends, stats.retries + exc.resends  # re-sent inside
        if len(group) > 1 and exc.unsupported == "n":
            self._samples_off(first, "the server rejected n (several samples per request)")
            await self._one_by_one(group)
            return False
        message = redact(str(exc)) or ""
        fatal = is_fatal(exc)
        counts = exc.retryable and exc.status != 429
        give_up = counts and self.streak.failure() and self.queue.any_left()
        if not counts and not fatal:
            self.streak.success()  # an answer came back: the endpoint is reachable
        if exc.retryable and attempt < self.retry.max_attempts and not fatal and not give_up:
            stats.retries += 1
            await asyncio.sleep(self.retry.delay(attempt, exc.retry_after, self.rng))
            return True
        self._fail(group, f"{message} (after {attempt} attempt{'s' if attempt > 1 else ''})", attempt)
        kind = message.split(":")[0]
        stats.errors[kind] = stats.errors.get(kind, 0) + len(group)
        if fatal and kind == "connection error":  # no such host, or a server that never took a connection
            once = f" (attempts in a row failed: {self.streak.count})" if counts else ""
            self._halt(UNREACHABLE, f"the endpoint is unreachable: {message}{once}")
        elif fatal:
            self._halt(REJECTED, f"the endpoint rejected the request: {message}")
        elif give_up:
            # Unreachable only when connections fail; a server that took them but answered too late is slow.
            what = {"connection error": "is unreachable", "timeout": "is too slow"}.get(kind, "keeps failing")
            self._halt(UNREACHABLE, f"the endpoint {what}: {message} ({self.streak.count} attempts in a row "
                                    f"failed over {time.monotonic() - self.streak.since:.1f}s)")
        return False

    async def _after_answer(self, group: tuple[Task, ...], request: GenerateRequest, result: GenerateResult,
                            attempt: int, reserved: float) -> None:
        """Store an answer (its usage vetted first, its cost settled), resending runs whose choices are missing."""
        stats, first, budget = self.stats, group[0], self.controls.budget
        self.streak.success()
        stats.sent, stats.retries = stats.sent + result.resends, stats.retries + result.resends  # re-sent inside
        vetted = vet_usage(request, result)  # server numbers are data: bounded before anything counts them
        if vetted.usage is not result.usage and vetted.usage != result.usage:  # the common case: as reported
            result = with_usage(result, vetted.usage)
        if budget is not None:
            if not vetted.anomalies:  # only plausible counts teach the prompt margin
                budget.learn(request, result.usage)
            budget.settle(reserved, budget.cost_of(first.judge, result.usage))
        # The prompt is written with its answer, in the same commit: a turn that only sends commits nothing
        # (half of a first run's commits were of prompt rows alone), and a kill -9 loses no answer more.
        self.store.put_prompt(first.prompt_hash, first.request)
        answered = store_choices(self.store, group, result, attempt, usage_note=vetted.note)
        # Kept once committed: the worker takes no other request before (a slot holds a request in flight
        # or an answer not yet committed, never both: a kill -9 costs no more than the slots in flight).
        # A worker cancelled while it waits (Ctrl-C) still has its answer committed when sending ends.
        try:
            await self.store.committed()
        finally:
            stats.done += answered
        if answered > 1:
            stats.multi_sample_requests += 1
        if answered < len(group):
            self._samples_off(first, f"n was ignored ({answered} of {len(group)} choices came back)")
            await self._one_by_one(group[answered:])

    async def _one(self, group: tuple[Task, ...]) -> None:
        if len(group) > 1 and group[0].judge_index in self.single_only:
            await self._one_by_one(group)
        else:
            await self._send(group)
        if self.controls.on_update is not None:
            self.controls.on_update(self.stats)

    async def _worker(self) -> None:
        try:
            for group in self.queue:
                if self.stats.stop_kind is not None or self.draining:
                    return
                await self._one(group)
        except asyncio.CancelledError:
            raise
        except BaseException:
            self._halt(None, None)  # an error of our own (e.g. the disk is full): stop everyone, re-raised below
            raise

    async def _watch(self, event: asyncio.Event) -> None:
        await event.wait()
        self._halt(INTERRUPTED, "interrupted")
