"""The judging engine: plan, skip what the store already has, send the rest, parse.

This module orchestrates one run from its :class:`~polyjudge.engine.spec.RunSpec`;
the estimate (``--dry-run``), the collection of answers into a result and the
manifest live in :mod:`.estimate`, :mod:`.collect` and :mod:`.manifest`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from polyjudge.backends.build import server_counts_of
from polyjudge.data.records import Item
from polyjudge.engine.batches import export_batch, import_batch, run_batches
from polyjudge.engine.caching import (
    CacheUse,
    adopt,
    cache_lookup,
    cached_adaptations,
    item_answer_keys,
    keep,
    keep_adaptations,
    mark_synced,
    needs_backfill,
    open_cache,
    prices_remembered,
)
from polyjudge.engine.collect import (
    WALL_TIME_META,
    Usage,
    collect,
    cost_of,
    outputs_key,
    remember_outputs,
    reuse_outputs,
    seconds_of,
)
from polyjudge.engine.core_forms import adopt_remembered_forms, keep_settled_forms
from polyjudge.engine.estimate import (
    CostScenario,
    Estimate,
    OversizedPrompt,
    estimate,
    estimate_plan,
    likely_cached_tokens,
    log,
    oversized_prompts,
    per_judge,
    warn_oversized,
)
from polyjudge.engine.executor import Executor
from polyjudge.engine.manifest import Session, adaptations, build_manifest, served_changes, signature
from polyjudge.engine.plan import Plan, Task, distinct_tasks, sample_groups
from polyjudge.engine.pricing import CONTEXT_TOKENS, ModelPrice, price_table
from polyjudge.engine.progress import SpendMeter, progress_bar
from polyjudge.engine.result import RunResult
from polyjudge.engine.runner import BUDGET, INTERRUPTED, ExecStats, SendControls, execute
from polyjudge.engine.signals import Interrupts, latest_status
from polyjudge.engine.spec import RunSpec
from polyjudge.engine.spend import Budget, RateLimiter
from polyjudge.engine.store import Store

# Items planned, looked up and sent at a time: bounds memory whatever the size of the run.
ITEMS_PER_CHUNK = 2000
# From this many tasks on, answered keys are read in one scan of the store rather than looked up.
SCAN_MIN_TASKS = 50_000


@dataclass(frozen=True, slots=True)
class _Context:
    """A spec resolved against its items: the plan, the price table, context sizes and samples per request."""

    spec: RunSpec
    plan: Plan
    table: Mapping[str, ModelPrice]
    sizes: Mapping[str, int]
    per_request: Mapping[str, int]

    @property
    def in_memory(self) -> bool:
        return self.spec.store_path is None or str(self.spec.store_path) == ":memory:"


def _context(items: list[Item], spec: RunSpec) -> _Context:
    protocol, judges = spec.protocol, spec.judges
    if len(set(judges)) != len(judges):
        raise ValueError(f"each judge needs a distinct model name, got {judges}")
    plan = Plan(items, protocol, judges, runs=spec.resolved_runs(), temperature=spec.resolved_temperature(),
                seed=spec.generation.seed, reasoning_effort=spec.reasoning_effort, forms=spec.request_forms)
    sizes = {m: n for m, n in CONTEXT_TOKENS.items() if m in judges} | dict(spec.context_sizes or {})
    table = price_table(spec.prices)
    # Only an answer's first choice carries token probabilities: expected scores need one per request.
    samples = 1 if protocol.top_logprobs > 0 else spec.resolved_samples()
    return _Context(spec, plan, table, sizes, per_judge(samples, judges, spec.free_judges))


async def _close_clients(spec: RunSpec) -> None:
    for b in spec.backends:
        await b.aclose()
    for c in spec.batch_clients or ():
        await c.aclose()


async def run_async(items: list[Item], spec: RunSpec, interrupts: Interrupts | None = None) -> RunResult | Estimate:
    """Judge ``items`` as ``spec`` says (or, with ``spec.dry_run``, only estimate what that would send).

    Each distinct cache key is sent once; items that share one get the same
    answer. A signal seen by ``interrupts`` stops sending (the result then has
    ``stop_kind`` set, as when the endpoint is given up). A dry run reads an
    existing store without changing it and creates none. When ``spec.outputs``
    were written from this very store and configuration and nothing was left to
    send, they are reused (writing rewrites only the manifest). The backends and
    batch clients are closed on return.
    """
    try:
        ctx = _context(items, spec)
        if spec.dry_run:
            return _estimate(ctx)
    except BaseException:
        await _close_clients(spec)
        raise
    return await _judge(ctx, interrupts)


def _estimate(ctx: _Context) -> Estimate:
    """The dry run: what the store lacks, counted from a read-only look at it."""
    spec = ctx.spec
    cached: set[str] = set()
    if spec.store_path is not None and Path(spec.store_path).is_file():
        ro = Store(spec.store_path, readonly=True)
        try:
            cached = ro.completed_keys()
        finally:
            ro.close()
    use = _open_cache(ctx, readonly=True)
    try:
        with prices_remembered(ctx.table, use):
            found = estimate_plan(ctx.plan, cached, prices=ctx.table, free=spec.free_judges,
                                  context_sizes=ctx.sizes, samples_per_request=ctx.per_request,
                                  batch=spec.batch_clients is not None, elsewhere=cache_lookup(use))
    finally:
        if use is not None:
            use.close()
    warn_oversized(found.oversized)
    return found


def _stop_event(interrupts: Interrupts | None) -> tuple[asyncio.Event, Any]:
    """An event set by a signal (and the call that stops listening), set already when one came before."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def on_signal() -> None:  # runs in the signal handler: hand over to the loop, which may be in select()
        loop.call_soon_threadsafe(stop.set)

    unlisten = interrupts.listen(on_signal) if interrupts is not None else None
    if interrupts is not None and interrupts.requested:
        stop.set()
    return stop, unlisten


def _open_cache(ctx: _Context, *, readonly: bool = False) -> CacheUse | None:
    """The shared response cache for this run (None when the spec names none)."""
    spec = ctx.spec
    return open_cache(None if spec.cache_path is None else Path(spec.cache_path), spec.judges, spec.judge_info,
                      spec.free_judges, read=spec.cache_read, readonly=readonly)


@dataclass(frozen=True, slots=True)
class _Sent:
    """What a session's sending did: executor stats, judgments found in the store and in the shared
    cache, and whether anything was left to send."""

    stats: ExecStats
    from_store: int
    from_cache: int
    pending: bool


async def _judge(ctx: _Context, interrupts: Interrupts | None) -> RunResult:
    """Send what the store (and the shared cache) lacks, then read the result back and describe it."""
    spec, started = ctx.spec, time.time()
    store = Store(":memory:" if ctx.in_memory else spec.store_path)  # type: ignore[arg-type]
    unlisten, use = None, None
    try:
        use = _open_cache(ctx)
        with prices_remembered(ctx.table, use):  # genai-prices asked only of models it did not answer before
            memory = adopt_remembered_forms(use, spec.backends, spec.request_forms)
            if memory.adopted and (seed := getattr(spec.executor, "adopt_forms", None)) is not None:
                seed(memory.adopted)  # an executor whose workers build their own backends (Ray) adopts them too
            stop, unlisten = _stop_event(interrupts)
            _finish_on_second_signal(ctx, interrupts, started)
            sent = await _send(ctx, store, stop, use)
            keep_settled_forms(use, spec.backends, spec.request_forms, memory)
            stats = sent.stats
            result, usage = _result(ctx, store, stats, sent.pending)
            # An executor whose workers build their own backends (Ray) stands in for what they learned.
            knowing = [*spec.backends, *getattr(spec.executor, "learned", ())]
            adapted = adaptations(store, knowing, cached_adaptations(use) if sent.from_cache else None)
            keep_adaptations(use, adapted)
            served = store.served_models()
            for line in served_changes(store, started):
                log.warning(line)
            result.server_counts = {b.model: counts for b in knowing if (counts := server_counts_of(b))}
            session_wall = time.time() - started
            wall = session_wall + seconds_of(store.get_meta(WALL_TIME_META))
            if not store.readonly:
                store.set_meta(WALL_TIME_META, repr(wall))
    except BaseException:
        if interrupts is not None:
            interrupts.finish_with(None)
        raise
    finally:
        if unlisten is not None:
            unlisten()
        if use is not None:
            use.close()
        store.close()
        await _close_clients(spec)
    _note_stop(result, stats, usage, spec.budget.max_cost)
    session = Session(stats, sent.from_store, usage, adapted, wall, session_wall, sent.from_cache, served)
    result.manifest = build_manifest(ctx.plan, spec, result, session, ctx.table)
    if use is not None and use.imported:  # of from_cache: answers a --batch-import file gave an earlier run
        result.manifest.counts["from_cache_imported"] = len(use.imported)
    if interrupts is not None and spec.outputs is not None and not ctx.in_memory:
        # Until the session writes the files (asyncio.run may first wait for an embedded model's generation
        # to end), a second signal writes this result.
        interrupts.finish_with(lambda: _write_result(result, spec.outputs))  # type: ignore[arg-type]
    return result


def _write_result(result: RunResult, out: Path) -> str:
    result.write(out)
    return (f"polyjudge: stopped now; {result.answered_count()} of {len(result.judgments)} judgments stored "
            f"and written to {out}; re-run the same command to resume")


def _finish_on_second_signal(ctx: _Context, interrupts: Interrupts | None, started: float) -> None:
    """While sending and reading the answers back, a second Ctrl-C writes the run's files from the store
    before it ends the process (then :func:`_judge`'s result, until the session writes it)."""
    if interrupts is None or ctx.in_memory or ctx.spec.outputs is None:
        return
    interrupts.finish_with(lambda: _write_stored(ctx, started))


def _write_stored(ctx: _Context, started: float) -> str:
    """The run's files written from what the store holds now, read through a connection of its own (the
    engine's may be in the middle of a transaction); what is not answered is written ``pending``."""
    spec, out = ctx.spec, ctx.spec.outputs
    assert out is not None and spec.store_path is not None
    store = Store(spec.store_path, readonly=True)
    try:
        result, usage = collect(ctx.plan, store, Path(spec.store_path), ctx.table,
                                aggregator=spec.resolved_aggregator(), min_runs=spec.generation.min_runs)
        wall = time.time() - started
        prior = seconds_of(store.get_meta(WALL_TIME_META))
    finally:
        store.close()
    latest = latest_status()
    stats = dataclasses.replace(latest if isinstance(latest, ExecStats) else ExecStats(), stop_kind=INTERRUPTED,
                                stop_reason="interrupted (a second signal)")
    _note_stop(result, stats, usage, spec.budget.max_cost)
    result.manifest = build_manifest(ctx.plan, spec, result, Session(stats, 0, usage, {}, prior + wall, wall),
                                     ctx.table)
    return _write_result(result, out)


async def _send(ctx: _Context, store: Store, stop: asyncio.Event, use: CacheUse | None) -> _Sent:
    """Send what the store and the shared cache lack, through any executor or the Batch API path;
    the answers received are kept in the cache as each executor call returns."""
    if ctx.spec.goes_by_batch:
        sent = await _send_materialised(ctx, store, stop, use)
    else:
        sent = await _send_streamed(ctx, store, stop, ctx.spec.executor or execute, use)
    mark_synced(use, store)
    return sent


def _result(ctx: _Context, store: Store, stats: ExecStats, pending: bool) -> tuple[RunResult, Usage]:
    """The run's result: a finished run's outputs reused when nothing was sent, else parsed from the store."""
    spec, aggregator = ctx.spec, ctx.spec.resolved_aggregator()
    key = None if ctx.in_memory else outputs_key(ctx.plan, aggregator, spec.generation.min_runs, ctx.table)
    store_path = None if ctx.in_memory else Path(spec.store_path)  # type: ignore[arg-type]
    reused = None
    if spec.outputs is not None and store_path is not None and key is not None \
            and not pending and stats.done + stats.failed == 0:
        reused = reuse_outputs(ctx.plan, store, store_path, spec.outputs, key, aggregator=aggregator,
                               min_runs=spec.generation.min_runs)
    result, usage = reused if reused is not None else \
        collect(ctx.plan, store, store_path, ctx.table, aggregator=aggregator, min_runs=spec.generation.min_runs)
    if key is not None:
        result.outputs_note = (key, usage.to_json())
    return result, usage


def _note_stop(result: RunResult, stats: ExecStats, usage: Usage, max_cost: float | None) -> None:
    """Why sending stopped (with what the cap left when it was the budget), and samples fallbacks."""
    stop_reason = stats.stop_reason
    cost = usage.cost
    if stats.stop_kind == BUDGET and max_cost is not None:
        stop_reason = (f"{stop_reason}: ${cost:.4f} spent, ${max(0.0, max_cost - cost):.4f} left of the "
                       f"${max_cost:.4f} cap")
    result.stop_kind, result.stop_reason, result.max_cost = stats.stop_kind, stop_reason, max_cost
    result.samples_fallback = dict(stats.samples_fallback)


def _chunks(seq: Sequence[int], size: int) -> Iterator[Sequence[int]]:
    for i in range(0, len(seq), size):
        yield seq[i:i + size]


@dataclass(slots=True)
class _Progress:
    """What the progress bar reads (done and failed so far), over several executor calls."""

    done: int = 0
    failed: int = 0


@dataclass(slots=True)
class _Survey:
    """The first pass of a streamed run: what the store and the shared cache answer and what is left to send."""

    from_store: int = 0
    from_cache: int = 0
    pending_items: list[int] = dataclasses.field(default_factory=list)
    pending_tasks: int = 0
    spent: float = 0.0
    answered_all: set[str] | None = None


def _from_cache(plan: Plan, store: Store, use: CacheUse | None, chunk: Sequence[int], done: Collection[str],
                backfill: bool) -> set[str]:
    """The keys of ``chunk`` the store lacks and the shared cache answers (copied into the store);
    with ``backfill`` the chunk's answers already in the store are offered to the cache first."""
    if use is None:
        return set()
    if backfill:
        keep(use, store, [k for i in chunk for k in plan.keys_of(i) if k in done])
    wanted = {a.key: a for i in chunk for a in item_answer_keys(plan, i) if a.key not in done}
    return adopt(use, store, list(wanted.values()))


def _survey(ctx: _Context, store: Store, use: CacheUse | None) -> _Survey:
    """Every item's keys (prompt hashes from the store's fingerprint table, rendering only new items),
    which are answered (by the store, else by the shared cache), what the answered ones cost, and the
    prompts over their model's context."""
    plan, spec = ctx.plan, ctx.spec
    # A large run reads the store's answered keys in one sequential scan (far cheaper than looking up
    # each key); a small one looks its own keys up, a chunk at a time.
    found = _Survey(answered_all=store.completed_keys() if plan.n_tasks >= SCAN_MIN_TASKS else None)
    first: set[str] = set()  # prompt hashes seen: later items with the same prompt send nothing
    oversized: list[OversizedPrompt] = []
    backfill = needs_backfill(use, store)
    for chunk in _chunks(plan.order, ITEMS_PER_CHUNK):
        plan.resolve(chunk, store)
        keys = {i: plan.keys_of(i) for i in chunk}
        done: set[str] = found.answered_all if found.answered_all is not None else \
            store.done_among([k for ks in keys.values() for k in ks])
        adopted = _from_cache(plan, store, use, chunk, done, backfill)
        done |= adopted
        if spec.budget.max_cost is not None:
            new = [k for i in chunk if plan.prompt_hash(i) not in first for k in keys[i]]
            found.spent += cost_of(store.get_many(new).values(), ctx.table)
        for i in chunk:  # (a first run's store and cache answer nothing: no key to look for)
            answered = sum(1 for k in keys[i] if k in done) if done else 0
            from_cache = sum(1 for k in keys[i] if k in adopted) if adopted else 0
            found.from_store += answered - from_cache
            found.from_cache += from_cache
            if answered == len(keys[i]):
                continue
            found.pending_items.append(i)
            h = plan.prompt_hash(i)
            if h not in first:
                found.pending_tasks += len(keys[i]) - answered
                first.add(h)
            if ctx.sizes:
                oversized += oversized_prompts([t for t in plan.tasks_of(i) if t.key not in done],
                                               plan.items, ctx.sizes)
        first.update(plan.prompt_hash(i) for i in chunk)
    warn_oversized(oversized)
    return found


def _spending(ctx: _Context, spent: float) -> tuple[list[RateLimiter | None], Budget | None]:
    """Each judge's rate limiter (none without --rpm/--tpm) and the spending cap (None without --max-cost)."""
    spec = ctx.spec
    limiters: list[RateLimiter | None] = [RateLimiter(spec.budget.rpm, spec.budget.tpm) for _ in spec.backends] \
        if (spec.budget.rpm or spec.budget.tpm) else []
    # Shown on the progress bar (tokens and USD so far): a meter is kept without a cap when the bar is shown.
    budget: Budget | None = SpendMeter(spec.budget.max_cost, ctx.table, spent=spent, free=spec.free_judges) \
        if spec.budget.max_cost is not None or spec.execution.progress else None
    return limiters, budget


def _meter(budget: Budget | None) -> SpendMeter | None:
    return budget if isinstance(budget, SpendMeter) else None


async def _send_streamed(ctx: _Context, store: Store, stop: asyncio.Event, send: Executor,
                         use: CacheUse | None) -> _Sent:
    """Send what the store and the shared cache lack, a bounded chunk of items at a time.

    After :func:`_survey`, the items with work left are rendered and their
    tasks handed to the executor chunk by chunk, so no more than one chunk of
    prompts is ever held. The local executor takes the chunks as one stream,
    each prepared as its workers reach it (no request slot waits at a chunk's
    end for the slowest answer of the chunk); an executor that asks for calls
    of its own size (``items_per_call``: Ray) gets one call per chunk. What
    was answered is kept in the shared cache as each chunk is done (whichever
    executor sent it).
    """
    spec = ctx.spec
    survey = _survey(ctx, store, use)
    stats = ExecStats()
    if not survey.pending_items:
        return _Sent(stats, survey.from_store, survey.from_cache, False)
    limiters, budget = _spending(ctx, survey.spent)
    per_call = getattr(send, "items_per_call", None)
    size = int(per_call or ITEMS_PER_CHUNK)
    chunks = _chunks(survey.pending_items, size)
    sent: set[str] = set()
    seen = _Progress()
    with progress_bar(survey.pending_tasks, enabled=spec.execution.progress, meter=_meter(budget)) as update:
        if per_call is None:
            controls = SendControls(concurrency=spec.execution.concurrency, retry=spec.execution.retry,
                                    on_update=update, stop=stop, limiters=limiters, budget=budget)
            kept = _Kept(use, store)
            stats = await send(_stream(ctx, store, chunks, sent, survey.answered_all, kept), list(spec.backends),
                               store, controls)
            kept.finish()
            return _Sent(stats, survey.from_store, survey.from_cache, True)
        for chunk in chunks:
            if stats.stop_kind is not None:
                break
            work = _chunk_work(ctx, store, chunk, sent, survey.answered_all)
            if not work:
                continue
            base = _Progress(stats.done, stats.failed)

            def hook(part: ExecStats, base: _Progress = base) -> None:
                seen.done, seen.failed = base.done + part.done, base.failed + part.failed
                update(seen)

            controls = SendControls(concurrency=spec.execution.concurrency, retry=spec.execution.retry,
                                    on_update=hook, stop=stop,
                                    limiters=limiters, budget=budget)
            part = await send(work, list(spec.backends), store, controls)
            stats.add(part)
            keep(use, store, [t.key for t in _flat(work)])
    return _Sent(stats, survey.from_store, survey.from_cache, True)


class _Kept:
    """The shared cache filled chunk by chunk while one stream of chunks is sent: when a chunk is
    reached, the answers of the chunk before the last one are kept (its requests left at least a
    chunk ago), and whatever was not answered then is kept when sending ends."""

    def __init__(self, use: CacheUse | None, store: Store) -> None:
        self.use, self.store = use, store
        self.handed: list[list[str]] = []  # keys of the chunks handed out and not kept yet, oldest first
        self.late: list[str] = []  # keys of kept chunks that had no answer yet

    def handing(self, keys: list[str]) -> None:
        """The workers reach a chunk with these keys."""
        if self.use is None:
            return
        self.handed.append(keys)
        if len(self.handed) > 2:
            older = self.handed.pop(0)
            done = self.store.done_among(older)
            keep(self.use, self.store, [k for k in older if k in done])
            self.late += [k for k in older if k not in done]

    def finish(self) -> None:
        if self.use is not None:
            keep(self.use, self.store, [*self.late, *(k for keys in self.handed for k in keys)])


def _stream(ctx: _Context, store: Store, chunks: Iterator[Sequence[int]], sent: set[str],
            answered_all: set[str] | None, kept: _Kept) -> Iterator[Task | tuple[Task, ...]]:
    """The work of every chunk in turn, each prepared when the workers reach it."""
    for chunk in chunks:
        work = _chunk_work(ctx, store, chunk, sent, answered_all)
        if work:
            kept.handing([t.key for t in _flat(work)])
            yield from work


def _flat(work: Sequence[Task] | Sequence[tuple[Task, ...]]) -> list[Task]:
    return [t for w in work for t in (w if isinstance(w, tuple) else (w,))]


def _chunk_work(ctx: _Context, store: Store, chunk: Sequence[int], sent: set[str],
                answered_all: set[str] | None) -> list[Task] | list[tuple[Task, ...]]:
    """The tasks of ``chunk`` still to send (each prompt once, across chunks), grouped into samples
    per request when a judge asks for several."""
    plan = ctx.plan
    tasks: list[Task] = []
    for i in chunk:
        if plan.prompt_hash(i) in sent:
            continue  # an earlier chunk sent this prompt
        tasks += plan.tasks_of(i)
    sent.update(plan.prompt_hash(i) for i in chunk)
    # Keys of this chunk change only when this chunk is sent: the first pass's answer holds.
    done = answered_all if answered_all is not None else store.done_among([t.key for t in tasks])
    todo = distinct_tasks([t for t in tasks if t.key not in done])
    if todo and any(n > 1 for n in ctx.per_request.values()):
        return sample_groups(todo, ctx.per_request)
    return todo


def _judge_backends(spec: RunSpec) -> list[str | None]:
    """Each judge's backend name (by judge index), which chooses its batch file's line format."""
    return [info.get("backend") for info in spec.judge_info or ()]


async def _send_materialised(ctx: _Context, store: Store, stop: asyncio.Event, use: CacheUse | None) -> _Sent:
    """The Batch API paths (send, export, import): every task planned at once; the shared cache is
    read before a batch is built and filled from what the batch (or the imported file) answered."""
    spec, plan = ctx.spec, ctx.plan
    tasks = plan.tasks()
    keys = list(dict.fromkeys(t.key for t in tasks))
    cached = store.completed_keys()
    if needs_backfill(use, store):
        keep(use, store, [k for k in keys if k in cached])
    adopted = adopt(use, store, distinct_tasks([t for t in tasks if t.key not in cached]))
    cached |= adopted
    todo_all = [t for t in tasks if t.key not in cached]
    todo = distinct_tasks(todo_all)
    warn_oversized(oversized_prompts(todo_all, plan.items, ctx.sizes))
    stats = ExecStats()
    if spec.execution.batch_import is not None:
        counts = import_batch(spec.execution.batch_import, store, tasks, _judge_backends(spec))
        stats.done, stats.failed = counts.answered, counts.failed
    elif spec.execution.batch_export is not None:
        if todo:
            export_batch(sample_groups(todo, ctx.per_request), spec.execution.batch_export, store,
                         _judge_backends(spec))
    elif todo and spec.batch_clients is not None:
        spent = cost_of(store.get_many(keys).values(), ctx.table) if spec.budget.max_cost is not None else 0.0
        stats = await _send_batches(ctx, store, stop, todo, spent)
    keep(use, store, [t.key for t in todo], imported_from=spec.execution.batch_import)
    from_cache = sum(1 for t in tasks if t.key in adopted)
    return _Sent(stats, len(tasks) - len(todo_all) - from_cache, from_cache, True)


async def _send_batches(ctx: _Context, store: Store, stop: asyncio.Event, todo: list[Task],
                        spent: float) -> ExecStats:
    """Send ``todo`` through the judges' Batch APIs, failed lines retried live when the options say so."""
    spec, per_request = ctx.spec, ctx.per_request
    limiters, budget = _spending(ctx, spent)
    assert spec.batch_clients is not None
    with progress_bar(len(todo), enabled=spec.execution.progress, meter=_meter(budget)) as update:
        async def live(retry_tasks: list[Task], used: Mapping[str, int]) -> ExecStats:
            controls = SendControls(concurrency=spec.execution.concurrency, retry=spec.execution.retry,
                                    on_update=update, stop=stop,
                                    limiters=limiters, budget=budget, attempts_used=used)
            return await execute(sample_groups(retry_tasks, per_request), list(spec.backends), store, controls)

        controls = SendControls(retry=spec.execution.retry, stop=stop, budget=budget, on_update=update)
        fallback = live if spec.execution.batch_options.fallback == "live" else None
        return await run_batches(todo, spec.batch_clients, store, controls, per_request=per_request,
                                 options=spec.execution.batch_options, live=fallback)


def run(items: list[Item], protocol: Any, backends: Sequence[Any], *, interrupts: Interrupts | None = None,
        **settings: Any) -> RunResult:
    """Synchronous :func:`run_async` for code and tests that hold a protocol and backends: ``settings``
    are :class:`RunSpec` fields (checked by its constructor). Not for use inside a running event loop."""
    spec = RunSpec.of(protocol, backends, **settings)
    out = asyncio.run(run_async(items, spec, interrupts))
    assert isinstance(out, RunResult)
    return out


__all__ = ["ITEMS_PER_CHUNK", "CostScenario", "Estimate", "OversizedPrompt", "RunSpec", "estimate", "estimate_plan",
           "likely_cached_tokens", "oversized_prompts", "remember_outputs", "run", "run_async", "signature",
           "warn_oversized"]
