"""Judging through a provider's Batch API, and the offline batch files.

:func:`run_batches` submits the tasks a run still needs as batches (split at
the provider's limits), polls them with backoff and writes every answer to
the same store live answers go to, so resuming, deduplication, parsing and
outputs do not depend on how an answer came. Before a batch is created it is
recorded in the store with its task keys, and the provider carries our tag
for it; a process killed at any point re-attaches on the next run (finding
the batch by its tag when it died between creating and recording it) and
never submits a task that sits in an open batch again. Lines that fail or
expire are retried in a new batch, or live with ``fallback="live"``, under
the same :class:`~polyjudge.engine.runner.RetryPolicy` as live requests.

:func:`export_batch` and :func:`import_batch` are the offline path for
self-hosted models (vLLM's ``run_batch`` reads and writes the same lines);
:func:`batch_status` and :func:`cancel_batches` serve ``polyjudge batch``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
import uuid
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TypeVar

from polyjudge.backends.base import BackendError
from polyjudge.backends.batch import (
    BatchClient,
    BatchInfo,
    BatchLimits,
    BatchLine,
    BatchLineFormat,
    LineResult,
    UnprovenBatches,
    batch_custom_id,
    line_format_for,
)
from polyjudge.cache.store import source_name
from polyjudge.data.chat import GenerateResult
from polyjudge.data.errors import InputError
from polyjudge.data.secrets import redact
from polyjudge.engine.caching import IMPORTED_META
from polyjudge.engine.plan import Task, sample_groups
from polyjudge.engine.runner import (
    BUDGET,
    INTERRUPTED,
    REJECTED,
    UNREACHABLE,
    ExecStats,
    RetryPolicy,
    SendControls,
    is_fatal,
    split_usage,
    store_choices,
)
from polyjudge.engine.spend import Budget, vet_usage, with_usage
from polyjudge.engine.store import BATCH, EXPORT, EXPORTED, BatchLineRow, BatchRecord, Store

log = logging.getLogger("polyjudge")
CANCELLED = ("cancelled", "cancelling", "canceled")
T = TypeVar("T")

BATCH_FALLBACKS = ("batch", "live")


@dataclass(frozen=True, slots=True)
class BatchOptions:
    """How ``--batch`` runs: where failed lines go again, the provider's limits, how often to poll.

    ``fallback``: ``"batch"`` retries failed and expired lines in a new batch,
    ``"live"`` sends them as live requests. Polling starts every
    ``poll_initial_s`` seconds and backs off by ``poll_factor`` up to ``poll_max_s``.
    """

    fallback: str = "batch"
    limits: BatchLimits = BatchLimits()
    poll_initial_s: float = 5.0
    poll_max_s: float = 300.0
    poll_factor: float = 1.5


@dataclass(slots=True)
class _Open:
    """A submitted batch this process waits for."""

    submission: str
    judge_index: int
    batch_id: str
    lines: dict[str, list[BatchLineRow]]  # custom_id -> its tasks by choice
    reserved: float = 0.0
    # Cancelled before this session re-attached to it (``polyjudge batch cancel`` between runs):
    # its unanswered lines are submitted again now instead of stopping the run.
    cancelled_before: bool = False


@dataclass(slots=True)
class _State:
    stats: ExecStats = field(default_factory=ExecStats)
    attempts: dict[str, int] = field(default_factory=dict)
    pending: list[Task] = field(default_factory=list)
    live: list[Task] = field(default_factory=list)
    open: dict[str, _Open] = field(default_factory=dict)
    single_only: set[int] = field(default_factory=set)
    held: set[str] = field(default_factory=set)  # keys of a lost submission that may exist (never sent again)
    fingerprint: str = ""  # the run's, in every custom_id it submits (_run_fingerprint)
    wait_s: float | None = None  # how often a batch that may be a lost submission is looked at (None: not waited for)
    halt: asyncio.Event | None = None  # Ctrl-C: stop waiting

    def stop(self, kind: str, reason: str) -> None:
        if self.stats.stop_kind is None:
            self.stats.stop_kind, self.stats.stop_reason = kind, reason


LiveSender = Callable[[list[Task], Mapping[str, int]], Awaitable[ExecStats]]


def new_tag() -> str:
    return f"pj-{uuid.uuid4().hex}"


FINGERPRINT_META = "batch_fingerprint"


def _run_fingerprint(store: Store) -> str:
    """The run's batch fingerprint (made once, kept in its store): every custom_id it submits carries it."""
    found = store.get_meta(FINGERPRINT_META)
    if not found:
        found = uuid.uuid4().hex[:16]
        store.set_meta(FINGERPRINT_META, found)
    return found


def _lines_by_custom_id(rows: Sequence[BatchLineRow]) -> dict[str, list[BatchLineRow]]:
    out: dict[str, list[BatchLineRow]] = {}
    for r in rows:
        out.setdefault(r.custom_id, []).append(r)
    for lst in out.values():
        lst.sort(key=lambda r: r.choice)
    return out


def _line_rows(group: Sequence[Task], custom_id: str | None = None) -> list[BatchLineRow]:
    """The store rows of one batch line (its custom_id: the first task's key unless given)."""
    custom_id = custom_id or group[0].key
    return [BatchLineRow(custom_id, k, t.key, t.prompt_hash, t.judge, t.run_index) for k, t in enumerate(group)]


def _request_of(group: Sequence[Task], custom_id: str | None = None) -> BatchLine:
    import dataclasses

    request = group[0].request if len(group) == 1 else dataclasses.replace(group[0].request, n=len(group))
    return BatchLine(custom_id or group[0].key, request)


def split_batches(groups: Sequence[tuple[Task, ...]], client: BatchClient) -> list[list[tuple[Task, ...]]]:
    """Groups cut into batches of at most ``client.limits`` requests and bytes."""
    out: list[list[tuple[Task, ...]]] = []
    current: list[tuple[Task, ...]] = []
    size = 0
    for g in groups:
        n = client.line_size(_request_of(g))
        if current and (len(current) >= client.limits.max_requests or size + n > client.limits.max_bytes):
            out.append(current)
            current, size = [], 0
        current.append(g)
        size += n
    if current:
        out.append(current)
    return out


async def _with_retries(call: Callable[[], Awaitable[T]], retry: RetryPolicy, rng: random.Random,
                        stop: asyncio.Event | None) -> T:
    """A batch API call, retried like a live request; the last error is raised."""
    attempt = 0
    while True:
        attempt += 1
        try:
            return await call()
        except BackendError as exc:
            if not exc.retryable or is_fatal(exc) or attempt >= retry.max_attempts or (stop and stop.is_set()):
                raise
            await _sleep(retry.delay(attempt, exc.retry_after, rng), stop)


async def _sleep(seconds: float, stop: asyncio.Event | None) -> None:
    """Sleep, waking early when ``stop`` is set."""
    if stop is None:
        await asyncio.sleep(seconds)
        return
    try:
        await asyncio.wait_for(stop.wait(), timeout=seconds)
    except TimeoutError:
        pass


def _api_failure(state: _State, exc: BackendError, what: str) -> None:
    message = redact(str(exc)) or ""
    if is_fatal(exc):
        state.stop(REJECTED, f"the endpoint rejected the request: {message}")
    else:
        state.stop(UNREACHABLE, f"the batch API keeps failing ({what}): {message}")


async def run_batches(tasks: Sequence[Task], clients: Sequence[BatchClient], store: Store,
                      controls: SendControls = SendControls(), *, per_request: int | Mapping[str, int] = 1,
                      options: BatchOptions = BatchOptions(), live: LiveSender | None = None) -> ExecStats:
    """Answer ``tasks`` (distinct, not in the store) through each judge's batch client (``clients[judge_index]``).

    Batches recorded in the store and not collected yet are re-attached
    first; their tasks are never submitted again. Sending stops (leaving
    open batches to a later run) when ``stop`` is set or the batch API
    rejects us or keeps failing; with a ``budget`` no line is submitted
    whose worst case (at the batch price) would pass the cap. ``controls.concurrency``
    and ``controls.limiters`` are for live requests and not used here.
    """
    retry, stop, budget, on_update = controls.retry, controls.stop, controls.budget, controls.on_update
    rng = controls.rng or random.Random()
    state = _State(fingerprint=_run_fingerprint(store), wait_s=options.poll_initial_s, halt=stop)
    by_key = {t.key: t for t in tasks}
    judge_index = {t.judge: t.judge_index for t in tasks}
    for i, c in enumerate(clients):
        judge_index.setdefault(c.model, i)

    def size_for(judge: str) -> int:
        if judge_index.get(judge) in state.single_only:
            return 1
        return per_request.get(judge, 1) if isinstance(per_request, Mapping) else per_request

    await _reattach(state, clients, store, judge_index, by_key, budget, retry, rng, stop, options.poll_initial_s)
    in_flight = {r.key for o in state.open.values() for rows in o.lines.values() for r in rows} | state.held
    state.pending = [t for t in tasks if t.key not in in_flight]
    delay = 0.0 if state.open else options.poll_initial_s  # batches from before may have ended: look at once
    while True:
        if stop is not None and stop.is_set():
            state.stop(INTERRUPTED, "interrupted")
        if state.stats.stop_kind in (INTERRUPTED, REJECTED, UNREACHABLE):
            break
        if state.pending and state.stats.stop_kind is None:
            todo, state.pending = state.pending, []
            groups = sample_groups(todo, {j: size_for(j) for j in judge_index})
            await _submit_all(state, groups, clients, store, budget, retry, rng)
            delay = delay and options.poll_initial_s  # re-attached batches (delay 0) are still looked at at once
            continue
        if not state.open:
            break
        await _sleep(delay, stop)
        delay = min(options.poll_max_s, max(delay, options.poll_initial_s / options.poll_factor) * options.poll_factor)
        for o in list(state.open.values()):
            if stop is not None and stop.is_set():
                break
            client = clients[o.judge_index]
            try:
                info = await _with_retries(partial(client.status, o.batch_id), retry, rng, stop)
                store.update_batch(o.submission, status=info.status, completed=info.completed, failed=info.failed,
                                   expires_at=info.expires_at)
                if not info.ended:
                    continue
                results = await _with_retries(partial(client.results, info), retry, rng, stop)
            except BackendError as exc:
                if stop is not None and stop.is_set():
                    state.stop(INTERRUPTED, "interrupted")
                else:
                    _api_failure(state, exc, f"polling batch {o.batch_id}")
                break
            left = _collect(state, o, info, results, store, by_key, budget, retry, options)
            del state.open[o.submission]
            if left:
                _cancelled_lines(state, o, left, by_key)
            if on_update is not None:
                on_update(state.stats)
    if state.live and live is not None and state.stats.stop_kind is None:
        retried = await live(state.live, dict(state.attempts))
        state.stats.add(retried)
    elif state.live:  # stopped before the live retries: they stay failed in the store, retried on resume
        state.stats.failed += len(state.live)
    return state.stats


async def _reattach(state: _State, clients: Sequence[BatchClient], store: Store, judge_index: Mapping[str, int],
                    by_key: Mapping[str, Task], budget: Budget | None, retry: RetryPolicy, rng: random.Random,
                    stop: asyncio.Event | None, wait_s: float) -> None:
    for row in store.batches(open_only=True):
        index = judge_index.get(row.judge)
        if index is None or index >= len(clients):
            continue  # another judge's batch: left alone
        client = clients[index]
        batch_id = row.batch_id
        if batch_id is None:  # the process died while submitting: did the provider create it?
            try:
                known = {r.batch_id for r in store.batches() if r.batch_id}
                expected = {r.custom_id for r in store.batch_lines(row.submission)}
                found = await _with_retries(partial(_find, client, row, known, expected, wait_s, stop), retry, rng,
                                            stop)
            except UnprovenBatches as exc:
                log.warning(_unproven_note(row, exc))
                state.held |= {r.key for r in store.batch_lines(row.submission)}
                continue
            except BackendError as exc:
                _api_failure(state, exc, "looking for a batch submitted before")
                return
            if found is None:
                store.drop_batch(row.submission)
                continue
            store.update_batch(row.submission, batch_id=found.batch_id, status=found.status,
                               expires_at=found.expires_at)
            batch_id = found.batch_id
        lines = _lines_by_custom_id(store.batch_lines(row.submission))
        reserved = 0.0
        if budget is not None:
            for rows in lines.values():
                task = by_key.get(rows[0].key)
                if task is not None:
                    cost = budget.worst_case(task.judge, _request_of([task] * len(rows)).request, batch=True)
                    budget.reserved += cost
                    reserved += cost
        state.open[row.submission] = _Open(row.submission, index, batch_id, lines, reserved,
                                           cancelled_before=row.status in CANCELLED)
    if state.open:
        log.info(f"re-attached to {len(state.open)} open batch(es) of this run")


async def _submit_all(state: _State, groups: Sequence[tuple[Task, ...]], clients: Sequence[BatchClient],
                      store: Store, budget: Budget | None, retry: RetryPolicy, rng: random.Random) -> None:
    per_judge: dict[int, list[tuple[Task, ...]]] = {}
    for g in groups:
        per_judge.setdefault(g[0].judge_index, []).append(g)
    for index, mine in per_judge.items():
        client = clients[index]
        for chunk in split_batches(mine, client):
            if state.stats.stop_kind is not None:
                return
            reserved = 0.0
            fitting: list[tuple[Task, ...]] = []
            for g in chunk:
                if budget is not None:
                    got = budget.reserve(g[0].judge, _request_of(g).request, batch=True)
                    if got is None:
                        state.stop(BUDGET, "the spending cap (--max-cost) leaves no room for the next batch line")
                        break
                    reserved += got
                fitting.append(g)
            if fitting:
                await _submit(state, fitting, index, client, store, reserved, budget, retry, rng)


async def _submit(state: _State, groups: list[tuple[Task, ...]], index: int, client: BatchClient, store: Store,
                  reserved: float, budget: Budget | None, retry: RetryPolicy, rng: random.Random) -> None:
    """Record, then create one batch. Ctrl-C never cuts a submission in half: it is recorded either way."""
    tag = new_tag()
    # Each custom_id carries the run's fingerprint: a listed batch proves itself the run's by its requests.
    ids = [batch_custom_id(state.fingerprint, g[0].key) for g in groups]
    rows = [r for g, cid in zip(groups, ids) for r in _line_rows(g, cid)]
    for g in groups:
        store.put_prompt(g[0].prompt_hash, g[0].request)
    key_env = getattr(client, "api_key_env", None)
    # Recorded before it is sent: a process killed from here on finds the batch again by its tag.
    store.add_batch(tag, _provider(client), groups[0][0].judge, rows, endpoint=client.endpoint,
                    key_env=key_env if isinstance(key_env, str) else None)
    lines = [_request_of(g, cid) for g, cid in zip(groups, ids)]
    attempt = 0
    while True:
        attempt += 1
        try:
            info = await client.submit(lines, tag)
            break
        except BackendError as exc:
            # Never submit again blindly: the batch may exist although its answer was lost.
            try:
                row = next(r for r in store.batches(open_only=True) if r.submission == tag)
                known = {r.batch_id for r in store.batches() if r.batch_id}
                found = await _with_retries(partial(_find, client, row, known, {r.custom_id for r in rows},
                                                    state.wait_s, state.halt), retry, rng, None)
            except (BackendError, UnprovenBatches):
                # Unknown whether it exists: keep the record; the next run looks for it again.
                _api_failure(state, exc, "submitting a batch")
                return
            if found is not None:
                info = found
                break
            if not exc.retryable or is_fatal(exc) or attempt >= retry.max_attempts:
                store.drop_batch(tag)
                if budget is not None:
                    budget.settle(reserved, 0.0)
                state.pending.extend(t for g in groups for t in g)
                _api_failure(state, exc, "submitting a batch")
                return
            await asyncio.sleep(retry.delay(attempt, exc.retry_after, rng))
    store.update_batch(tag, batch_id=info.batch_id, status=info.status, expires_at=info.expires_at)
    state.open[tag] = _Open(tag, index, info.batch_id, _lines_by_custom_id(rows), reserved)
    state.stats.sent += len(lines)


async def _find(client: BatchClient, row: BatchRecord, known: Collection[str], expected: Collection[str],
                wait_s: float | None = None, stop: asyncio.Event | None = None) -> BatchInfo | None:
    """The provider's batch of a submission whose creation answer was lost, proven by its requests: a
    listed batch is the submission's only when its requests' custom_ids are ``expected`` (the recorded
    ones, which carry the submission's fingerprint). None when no listed batch can be it (it was never
    created); :class:`UnprovenBatches` when some might be but cannot be told yet (nothing is adopted).
    With ``wait_s`` those are looked at again every ``wait_s`` seconds (growing) until they can be told,
    as the run would wait for its own batch, unless ``stop`` is set."""
    listed = getattr(client, "candidates", None)
    read = getattr(client, "request_ids", None)
    if not callable(listed) or not callable(read):  # a client that cannot show its requests: by its tag
        return await client.find(row.submission)
    found: list[BatchInfo] = await (listed(row.submission, row.total, row.created, known)
                                    if getattr(client, "find_recorded", None) else listed(row.submission))
    want, told = frozenset(expected), False
    while True:
        unproven: list[BatchInfo] = []
        left: list[BatchInfo] = []  # in their order: one that proves itself waits for the likelier ones
        for info in found:
            ids = await read(info)
            if ids is None:
                unproven.append(info)
                left.append(info)
            elif ids == want:
                if not unproven:
                    return info
                left.append(info)
        if not unproven:
            return None
        if wait_s is None or (stop is not None and stop.is_set()):
            raise UnprovenBatches(unproven)
        if not told:
            log.warning(f"waiting for {UnprovenBatches(unproven)} to end: it may be the lost batch of submission "
                        f"{row.submission} and is adopted only if its requests prove it (Ctrl-C leaves it untouched)")
            told = True
        await _sleep(wait_s, stop)
        wait_s = min(60.0, wait_s * 1.5)
        found = [await client.status(info.batch_id) for info in left]


def _unproven_note(row: BatchRecord, exc: UnprovenBatches) -> str:
    return (f"submission {row.submission} of {row.judge} ({row.total} requests) was cut off before its batch id "
            f"was recorded; the provider lists {exc} that may be it but cannot be proven this run's until it "
            "has ended: neither adopted nor cancelled, and its requests are not sent again. Resume once it has "
            "ended (its requests are checked then), or look at it at the provider and cancel it there if it is "
            "this run's ('polyjudge batch status RUN_DIR' shows this run's batches)")


def _provider(client: BatchClient) -> str:
    name = getattr(type(client), "name", None)
    return name if isinstance(name, str) else type(client).__name__


def _cancelled_lines(state: _State, o: _Open, left: Sequence[BatchLineRow], by_key: Mapping[str, Task]) -> None:
    """The unanswered lines of a cancelled batch are pending, never failures: submitted again at once when
    the batch was cancelled between runs, else the run stops (the user cancelled it) and a re-run resumes."""
    tasks = [by_key[r.key] for r in left if r.key in by_key]
    if o.cancelled_before:
        state.pending.extend(tasks)
        return
    log.warning(f"batch {o.batch_id} was cancelled: {len(left)} of its requests were not answered and are "
                "left pending (not failed); re-run the same command to send them again")
    state.stop(INTERRUPTED, f"batch {o.batch_id} was cancelled")


def _collect(state: _State, o: _Open, info: BatchInfo, results: Sequence[LineResult], store: Store,
             by_key: Mapping[str, Task], budget: Budget | None, retry: RetryPolicy,
             options: BatchOptions) -> list[BatchLineRow]:
    """Write an ended batch's answers and failures to the store; queue what is retried. Returns the
    lines a cancelled batch left unanswered: nothing is stored for them, so they stay pending."""
    stats = state.stats
    found = {r.custom_id: r for r in results}
    cancelled = info.status in CANCELLED
    unanswered: list[BatchLineRow] = []
    spent = 0.0
    with store.transaction():
        for custom_id, rows in o.lines.items():
            for r in rows:
                state.attempts[r.key] = state.attempts.get(r.key, 0) + 1
            attempts = state.attempts[rows[0].key]
            outcome = found.get(custom_id)
            if outcome is not None and outcome.result is not None:
                planned = by_key.get(rows[0].key)
                request = None if planned is None else replace(planned.request, n=len(rows))
                vetted = vet_usage(request, outcome.result)
                result = with_usage(outcome.result, vetted.usage)
                answered = store_choices(store, rows, result, attempts, channel=BATCH, usage_note=vetted.note)
                stats.done += answered
                if answered > 1:
                    stats.multi_sample_requests += 1
                if budget is not None:
                    spent += budget.cost_of(rows[0].judge, result.usage, batch=True)
                if answered < len(rows):
                    _samples_off(state, rows[0].judge, o.judge_index,
                                 f"n was ignored ({answered} of {len(rows)} choices came back)")
                    for r in rows[answered:]:
                        _again(state, r, by_key, options, retried=False)
                continue
            if cancelled:
                unanswered.extend(rows)
                continue
            if outcome is not None and outcome.error is not None:
                error = outcome.error
            else:
                why = f"; {'; '.join(info.errors)}" if info.errors else ""
                error = BackendError(f"no answer for this line (batch {info.status}{why})", retryable=True)
            if len(rows) > 1 and error.unsupported == "n":
                _samples_off(state, rows[0].judge, o.judge_index, "the server rejected n (several samples per request)")
                for r in rows:
                    _again(state, r, by_key, options, retried=False)
                continue
            message = redact(str(error)) or ""
            reason = f"{message} (after {attempts} attempt{'s' if attempts > 1 else ''}, batch {o.batch_id})"
            for r in rows:
                store.put_failure(r.key, r.prompt_hash, r.judge, r.run_index, reason, 1)
            if error.retryable and not is_fatal(error) and attempts < retry.max_attempts \
                    and all(r.key in by_key for r in rows):
                for r in rows:
                    _again(state, r, by_key, options, retried=True)
                continue
            stats.failed += len(rows)
            kind = message.split(":")[0]
            stats.errors[kind] = stats.errors.get(kind, 0) + len(rows)
        store.update_batch(o.submission, status=info.status, completed=info.completed, failed=info.failed,
                           collected=True)
    if budget is not None:
        budget.settle(o.reserved, spent)
    return unanswered


def _again(state: _State, row: BatchLineRow, by_key: Mapping[str, Task], options: BatchOptions, *,
           retried: bool) -> None:
    task = by_key.get(row.key)
    if task is None:
        return
    if retried:
        state.stats.retries += 1
    (state.live if options.fallback == "live" and retried else state.pending).append(task)


def _samples_off(state: _State, judge: str, index: int, what: str) -> None:
    if index in state.single_only:
        return
    state.single_only.add(index)
    state.stats.samples_fallback[judge] = what
    log.warning(f"judge {judge}: {what}; sending one request per run instead")


# --------------------------------------------------------------------------- offline files

def export_batch(groups: Sequence[tuple[Task, ...]], path: str | Path, store: Store,
                 backends: Sequence[str | None] = ()) -> int:
    """Write the batch input JSONL of ``groups`` (``custom_id`` = the first task's key) and remember
    which tasks each line answers, so :func:`import_batch` can load its output. Returns the line count.

    ``backends`` names each judge's backend (by judge index), whose declared batch format writes its
    lines (``backends.batch.line_format_for``; the default format for a judge not named)."""
    rows = [r for g in groups for r in _line_rows(g)]
    for g in groups:
        store.put_prompt(g[0].prompt_hash, g[0].request)
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for g in groups:
            line = _request_of(g)
            lines = _line_format(backends, g[0].judge_index)
            record = lines.request_line(g[0].judge, line.custom_id, line.request)
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    tmp.replace(target)
    store.add_batch(new_tag(), EXPORT, groups[0][0].judge if groups else "", rows, endpoint=str(target),
                    status=EXPORTED)
    return len(groups)


@dataclass(frozen=True, slots=True)
class ImportCounts:
    answered: int = 0  # tasks answered by the file
    failed: int = 0  # tasks whose line is an error
    skipped: int = 0  # tasks already answered in the store (kept)


def _line_format(backends: Sequence[str | None], judge_index: int) -> type[BatchLineFormat]:
    """The batch line format of judge ``judge_index`` (the default one when its backend is not named)."""
    return line_format_for(backends[judge_index] if 0 <= judge_index < len(backends) else None)


def import_batch(path: str | Path, store: Store, tasks: Sequence[Task],
                 backends: Sequence[str | None] = ()) -> ImportCounts:
    """Load a batch output JSONL (OpenAI's or vLLM ``run_batch``'s) into the store.

    Every line is checked before anything is written: a line that is not an
    output line, whose ``custom_id`` names no request of this run (from an
    export of this run or a task key) or was already given by an earlier line,
    or whose answer names another model than the judge's (a dated snapshot of
    it is the judge's) raises :class:`InputError` naming the line. Usage is
    vetted as a live answer's (:func:`spend.vet_usage` with the request the line
    answers), so a file cannot report more than the request allows. The file's
    lines are read in the batch format of the run's first judge (``backends``
    as for :func:`export_batch`): one file answers one provider's batch.
    """
    parsed = _parsed_lines(path, store, tasks, backends)
    by_key = {t.key: t for t in tasks}
    done = store.completed_keys()
    answered = failed = skipped = 0
    with store.transaction():
        for rows, outcome in parsed:
            todo = [r for r in rows if r.key not in done]
            skipped += len(rows) - len(todo)
            if outcome.result is not None:
                answered += _put_imported(store, rows, todo, outcome.result, by_key)
                continue
            error = outcome.error or BackendError("no answer", retryable=True)
            for r in todo:
                store.put_failure(r.key, r.prompt_hash, r.judge, r.run_index, f"{redact(str(error))} (batch file)", 1)
            failed += len(todo)
        store.set_meta(IMPORTED_META, source_name(path))  # the shared cache marks these answers with it
    return ImportCounts(answered, failed, skipped)


def _parsed_lines(path: str | Path, store: Store, tasks: Sequence[Task],
                  backends: Sequence[str | None]) -> list[tuple[list[BatchLineRow], LineResult]]:
    """Every line of a batch output file with the store rows it answers; InputError for a bad line."""
    from polyjudge.data.readers import iter_jsonl

    parse_output_line = _line_format(backends, 0).parse_output_line
    if not Path(path).is_file():
        raise InputError("batch output file not found", path=str(path))
    by_key = {t.key: t for t in tasks}
    parsed: list[tuple[list[BatchLineRow], LineResult]] = []
    seen: dict[str, int] = {}
    for n, obj in iter_jsonl(path):
        try:
            outcome = parse_output_line(obj)
        except ValueError as exc:
            raise InputError(str(exc), path=str(path), line=n) from None
        if outcome.custom_id in seen:
            raise InputError(f"custom_id '{outcome.custom_id[:80]}' is answered twice (first on line "
                             f"{seen[outcome.custom_id]}): which answer is the batch's cannot be told",
                             path=str(path), line=n, field="custom_id")
        seen[outcome.custom_id] = n
        rows = store.lines_for_custom_id(outcome.custom_id)
        if not rows and outcome.custom_id in by_key:
            rows = _line_rows([by_key[outcome.custom_id]])
        if not rows:
            raise InputError(f"custom_id '{outcome.custom_id[:80]}' names no request of this run", path=str(path),
                             line=n, field="custom_id")
        answered_by = outcome.result.model if outcome.result is not None else None
        if answered_by is not None and not same_model(answered_by, rows[0].judge):
            raise InputError(f"answered by model '{redact(answered_by)[:80]}', not by the judge "
                             f"'{rows[0].judge}' of custom_id '{outcome.custom_id[:80]}'", path=str(path), line=n,
                             field="model")
        parsed.append((rows, outcome))
    return parsed


_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})")


def same_model(answered_by: str, judge: str) -> bool:
    """True when a body's ``model`` is the judge's: the same name, or a dated snapshot of it
    (``gpt-4o-mini-2024-07-18`` for ``gpt-4o-mini``, ``claude-3-5-haiku-20241022`` for ``claude-3-5-haiku``)."""
    if answered_by == judge:
        return True
    return answered_by.startswith(judge) and _SNAPSHOT.fullmatch(answered_by[len(judge):]) is not None


def _put_imported(store: Store, rows: Sequence[BatchLineRow], todo: Sequence[BatchLineRow], result: GenerateResult,
                  by_key: Mapping[str, Task]) -> int:
    """An imported answer into the store for ``todo`` (its rows not answered yet), its usage vetted
    against the request it answers (as a live answer's); how many tasks it answered."""
    task = by_key.get(rows[0].key)
    request = None
    if task is not None:
        request = task.request if len(rows) == 1 else replace(task.request, n=len(rows))
    vetted = vet_usage(request, result)  # a file's numbers are server data too
    result = with_usage(result, vetted.usage)
    choices = result.choices or (result.text,)
    usages = split_usage(result.usage, min(len(rows), len(choices)))
    answered = 0
    for r in todo:
        if r.choice >= len(choices):
            continue  # the server gave fewer choices: that run stays unanswered
        finish = (result.choice_finish_reasons[r.choice] if r.choice < len(result.choice_finish_reasons)
                  else result.finish_reason)
        store.put_result(r, result, 1, text=choices[r.choice], finish_reason=finish, usage=usages[r.choice],
                         channel=BATCH, usage_note=vetted.note if r.choice == 0 else None)
        answered += 1
    return answered


# --------------------------------------------------------------------------- polyjudge batch status / cancel

def _record(row: BatchRecord, info: BatchInfo | None = None, note: str | None = None) -> BatchRecord:
    """The store's record, updated with what the provider said (or why it could not be asked)."""
    if info is None:
        return replace(row, note=note or row.error)
    return replace(row, batch_id=info.batch_id, status=info.status, total=info.total or row.total,
                   completed=info.completed, failed=info.failed,
                   expires_at=info.expires_at if info.expires_at is not None else row.expires_at, note=note)


def _store_of(run_dir: str | Path, *, readonly: bool) -> Store:
    from polyjudge.rundir import STORE

    path = Path(run_dir) / STORE
    if not path.is_file():
        raise InputError("no store.sqlite here: not a run directory (or nothing was judged yet)", path=str(run_dir))
    return Store(path, readonly=readonly)


def _client_for(row: BatchRecord, api_key_env: str | None, base_url: str | None, timeout: float,
                ) -> BatchClient:
    from polyjudge.backends.batch import batch_client_for
    from polyjudge.backends.registry import BackendSettings, JudgeSpec

    spec = JudgeSpec(row.provider, row.judge, base_url or row.endpoint)
    settings = BackendSettings(api_key_env=api_key_env or row.key_env or "OPENAI_API_KEY", timeout=timeout)
    return batch_client_for(spec, settings)


def _custom_ids(store: Store, rows: Sequence[BatchRecord]) -> dict[str, set[str]]:
    """The recorded custom_ids of each submission whose batch id was never recorded (to prove it by)."""
    return {r.submission: {x.custom_id for x in store.batch_lines(r.submission)} for r in rows if not r.batch_id}


async def _ask(rows: Sequence[BatchRecord], *, cancel: bool, api_key_env: str | None, base_url: str | None,
               timeout: float, custom_ids: Mapping[str, Collection[str]],
               ) -> list[tuple[BatchRecord, BatchInfo | None, str | None]]:
    out: list[tuple[BatchRecord, BatchInfo | None, str | None]] = []
    known = {r.batch_id for r in rows if r.batch_id}
    for row in rows:
        if row.collected or row.provider == EXPORT:
            out.append((row, None, None))
            continue
        try:
            client = _client_for(row, api_key_env, base_url, timeout)
        except ValueError as exc:
            out.append((row, None, f"cannot ask the provider: {exc}"))
            continue
        try:
            batch_id = row.batch_id
            if batch_id is None:
                try:
                    found = await _find(client, row, known, custom_ids.get(row.submission, ()))
                except UnprovenBatches as exc:
                    out.append((row, None, _unproven_note(row, exc)))
                    continue
                if found is None:
                    out.append((row, None, "never created at the provider (submission interrupted)"))
                    continue
                batch_id = found.batch_id
            info = await (client.cancel(batch_id) if cancel and row.status not in ("cancelling", "cancelled")
                          else client.status(batch_id))
            out.append((row, info, None))
        except BackendError as exc:
            out.append((row, None, f"cannot ask the provider: {redact(str(exc))}"))
        finally:
            await client.aclose()
    return out


def batch_status(run_dir: str | Path, *, refresh: bool = True, api_key_env: str | None = None,
                 base_url: str | None = None, timeout: float = 30.0) -> list[BatchRecord]:
    """Every batch of ``run_dir`` with its counts; with ``refresh`` the open ones are asked at the
    provider (nothing in the run directory changes, so it works while a run is in progress)."""
    store = _store_of(run_dir, readonly=True)
    try:
        rows = store.batches()
        ids = _custom_ids(store, rows)
    finally:
        store.close()
    if not refresh:
        return [_record(r) for r in rows]
    asked = asyncio.run(_ask(rows, cancel=False, api_key_env=api_key_env, base_url=base_url, timeout=timeout,
                             custom_ids=ids))
    return [_record(row, info, note) for row, info, note in asked]


def cancel_batches(run_dir: str | Path, *, api_key_env: str | None = None, base_url: str | None = None,
                   timeout: float = 30.0) -> list[BatchRecord]:
    """Cancel every open batch of ``run_dir`` at its provider; their unanswered lines stay pending
    (never failures) and are sent again when the run is resumed."""
    store = _store_of(run_dir, readonly=False)
    try:
        rows = [r for r in store.batches() if r.provider != EXPORT and not r.collected]
        asked = asyncio.run(_ask(rows, cancel=True, api_key_env=api_key_env, base_url=base_url, timeout=timeout,
                                 custom_ids=_custom_ids(store, rows)))
        for row, info, _ in asked:
            if info is not None:
                store.update_batch(row.submission, batch_id=info.batch_id, status=info.status,
                                   completed=info.completed, failed=info.failed)
    finally:
        store.close()
    return [_record(row, info, note) for row, info, note in asked]


__all__ = ["BATCH_FALLBACKS", "BatchOptions", "BatchRecord", "ImportCounts", "batch_status", "cancel_batches",
           "export_batch", "import_batch", "run_batches", "split_batches"]
