"""The judging engine: plan, skip what the store already has, send the rest, parse."""

from __future__ import annotations

import asyncio
import logging
import platform
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from polyjudge._version import __version__
from polyjudge.backends.base import Backend
from polyjudge.data.records import Item
from polyjudge.data.secrets import redact, redact_url
from polyjudge.engine.plan import Task, plan_tasks
from polyjudge.engine.pricing import CONTEXT_TOKENS, DEFAULT_PRICES, cost_usd
from polyjudge.engine.progress import progress_bar
from polyjudge.engine.result import Judgment, RunResult, judgment_from
from polyjudge.engine.runner import ExecStats, RetryPolicy, execute
from polyjudge.engine.signals import Interrupts
from polyjudge.engine.store import Store
from polyjudge.protocols.base import JudgeProtocol
from polyjudge.rundir import Manifest, RunConfig

# Warnings (prompts over a model's context) go here; the CLI prints them as "polyjudge: warning: ...".
log = logging.getLogger("polyjudge")


@dataclass(frozen=True, slots=True)
class OversizedPrompt:
    """A request whose prompt (estimated) and completion limit exceed its model's context."""

    item_index: int
    judge: str
    prompt_tokens: int
    max_tokens: int
    context_tokens: int
    where: str  # the item, as a person finds it in the input

    def describe(self) -> str:
        return (f"{self.where}: prompt of about {self.prompt_tokens:,} tokens plus up to {self.max_tokens:,} "
                f"completion tokens exceeds the context of {self.judge} ({self.context_tokens:,} tokens)")


@dataclass(frozen=True, slots=True)
class Estimate:
    """What a run would cost before sending anything (``--dry-run``).

    ``cost_usd`` is an upper bound: prompt tokens are estimated from the text
    and every completion is counted at its token limit. It covers the judges
    with a known price (local backends are free); ``unpriced`` lists the others,
    and it is None when no judge has a price.
    """

    requests_total: int
    requests_cached: int
    requests_to_send: int
    prompt_tokens: int  # approximate: UTF-8 bytes / 4 (characters / 4 for English)
    max_completion_tokens: int
    cost_usd: float | None = None
    unpriced: tuple[str, ...] = ()
    oversized: tuple[OversizedPrompt, ...] = ()

    def describe(self) -> str:
        text = (f"{self.requests_to_send} requests to send ({self.requests_cached} of "
                f"{self.requests_total} already in the store); about {self.prompt_tokens:,} prompt tokens "
                f"and at most {self.max_completion_tokens:,} completion tokens")
        if self.cost_usd is not None:
            text += (f"; estimated cost at most ${self.cost_usd:,.4f} (an upper bound: every completion "
                     "counted at its token limit)")
        if self.unpriced:
            text += f"; no price known for {', '.join(self.unpriced)} (add one with --prices)"
        if self.oversized:
            text += f"; {len(self.oversized)} prompt(s) exceed the model's context (see the warnings)"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {"requests_total": self.requests_total, "requests_cached": self.requests_cached,
                "requests_to_send": self.requests_to_send, "prompt_tokens": self.prompt_tokens,
                "max_completion_tokens": self.max_completion_tokens, "cost_usd": self.cost_usd,
                "cost_is_upper_bound": True, "unpriced": list(self.unpriced),
                "oversized": [{"item_index": o.item_index, "judge": o.judge, "prompt_tokens": o.prompt_tokens,
                               "max_tokens": o.max_tokens, "context_tokens": o.context_tokens, "where": o.where}
                              for o in self.oversized]}


def _prompt_bytes(task: Task) -> int:
    return sum(len(m.content.encode("utf-8", "surrogatepass")) for m in task.request.messages)


def estimate(tasks: list[Task], cached: set[str], *, prices: Mapping[str, tuple[float, float]] | None = None,
             free: Collection[str] = (), oversized: Sequence[OversizedPrompt] = ()) -> Estimate:
    """Requests, tokens and (for priced or ``free`` judges) an upper bound of the cost of ``tasks``
    not yet in ``cached``."""
    todo = [t for t in tasks if t.key not in cached]
    size: dict[str, int] = {}
    for t in todo:
        if t.prompt_hash not in size:
            size[t.prompt_hash] = _prompt_bytes(t)
    prompt_tokens = sum(size[t.prompt_hash] for t in todo) // 4
    prices = prices if prices is not None else DEFAULT_PRICES
    cost: float | None = None
    unpriced: list[str] = []
    for judge in dict.fromkeys(t.judge for t in tasks):
        mine = [t for t in todo if t.judge == judge]
        if judge in prices:
            inp, out = prices[judge]
            tokens_in = sum(size[t.prompt_hash] for t in mine) / 4
            cost = (cost or 0.0) + (tokens_in * inp + sum(t.request.max_tokens for t in mine) * out) / 1e6
        elif judge in free:
            cost = cost or 0.0
        else:
            unpriced.append(judge)
    return Estimate(len(tasks), len(tasks) - len(todo), len(todo), prompt_tokens,
                    sum(t.request.max_tokens for t in todo), None if cost is None else round(cost, 6),
                    tuple(unpriced), tuple(oversized))


def _where(index: int, item: Item) -> str:
    ids = ", ".join(f"{k} {v}" for k, v in (("system", item.system), ("doc", item.doc_id), ("segment", item.seg_id))
                    if v is not None)
    origin = f" at {item.origin}" if item.origin else ""
    return f"item {index + 1}{origin}" + (f" ({ids})" if ids else "")


def oversized_prompts(tasks: Sequence[Task], items: Sequence[Item],
                      context_sizes: Mapping[str, int]) -> list[OversizedPrompt]:
    """Each (item, judge) whose estimated prompt plus completion limit exceeds the judge's context."""
    out: list[OversizedPrompt] = []
    seen: set[tuple[int, str]] = set()
    for t in tasks:
        limit = context_sizes.get(t.judge)
        if limit is None or (t.item_index, t.judge) in seen:
            continue
        seen.add((t.item_index, t.judge))
        tokens = _prompt_bytes(t) // 4
        if tokens + t.request.max_tokens > limit:
            out.append(OversizedPrompt(t.item_index, t.judge, tokens, t.request.max_tokens, limit,
                                       _where(t.item_index, items[t.item_index])))
    return out


MAX_WARNINGS = 20


def warn_oversized(found: Sequence[OversizedPrompt]) -> None:
    """One warning per oversized request (the first :data:`MAX_WARNINGS`, then a count)."""
    for o in found[:MAX_WARNINGS]:
        log.warning(o.describe())
    if len(found) > MAX_WARNINGS:
        log.warning(f"... and {len(found) - MAX_WARNINGS} more prompts over their model's context")


def signature(protocol: JudgeProtocol, judges: list[str], runs: int, aggregator: str,
              temperature: float) -> str:
    """One line that says how the numbers were made, in the style of sacrebleu."""
    parts = [protocol.name, f"judge:{'+'.join(judges)}", f"prompt:{protocol.template_hash}",
             f"runs:{runs}", f"agg:{aggregator}", f"T:{temperature:g}"]
    parts += [f"{k}:{v}" for k, v in protocol.signature_fields().items()]
    parts.append(f"version:{__version__}")
    return "|".join(parts)


def _versions() -> dict[str, str]:
    out = {"polyjudge": __version__, "python": platform.python_version()}
    for pkg in ("httpx", "xllamacpp", "numpy"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def _clean_judge_info(info: dict[str, Any]) -> dict[str, Any]:
    """A manifest judge entry without credentials (in a base URL or anywhere else)."""
    return {k: (redact_url(v) if k == "base_url" else redact(v)) if isinstance(v, str) else v
            for k, v in info.items()}


async def run_async(items: list[Item], protocol: JudgeProtocol, backends: list[Backend], *,
                    runs: int | None = None, temperature: float | None = None,
                    aggregator: str | None = None, concurrency: int = 16,
                    store_path: Path | str | None = None, seed: int = 0, progress: bool = False,
                    retry: RetryPolicy = RetryPolicy(), prices: dict[str, tuple[float, float]] | None = None,
                    judge_info: list[dict[str, Any]] | None = None, dry_run: bool = False,
                    min_runs: int = 1, interrupts: Interrupts | None = None,
                    context_sizes: Mapping[str, int] | None = None,
                    free_judges: Collection[str] = ()) -> RunResult | Estimate:
    """Judge ``items`` (or, with ``dry_run``, only estimate what that would send).

    ``context_sizes`` (judge -> tokens, added to :data:`CONTEXT_TOKENS`) drive the
    warnings about prompts a model cannot take; ``free_judges`` are local judges
    the cost estimate counts as free. A signal seen by ``interrupts`` stops sending
    (the result then has ``stop_kind`` set, as when the endpoint is given up).
    A dry run reads an existing store without changing it and creates none.
    """
    runs = protocol.default_runs if runs is None else runs
    temperature = protocol.default_temperature if temperature is None else temperature
    aggregator = aggregator or protocol.default_aggregator
    judges = [b.model for b in backends]
    if len(set(judges)) != len(judges):
        raise ValueError(f"each judge needs a distinct model name, got {judges}")
    tasks = plan_tasks(items, protocol, judges, runs=runs, temperature=temperature, seed=seed)
    sizes = {m: n for m, n in CONTEXT_TOKENS.items() if m in judges} | dict(context_sizes or {})
    prices = prices if prices is not None else DEFAULT_PRICES
    started = time.time()
    if dry_run:
        try:
            cached: set[str] = set()
            if store_path is not None and Path(store_path).is_file():
                ro = Store(store_path, readonly=True)
                try:
                    cached = ro.completed_keys()
                finally:
                    ro.close()
            todo = [t for t in tasks if t.key not in cached]
            over = oversized_prompts(todo, items, sizes)
            warn_oversized(over)
            return estimate(tasks, cached, prices=prices, free=free_judges, oversized=over)
        finally:
            for b in backends:
                await b.aclose()
    store = Store(store_path if store_path is not None else ":memory:")
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def on_signal() -> None:  # runs in the signal handler: hand over to the loop, which may be in select()
        loop.call_soon_threadsafe(stop.set)

    unlisten = interrupts.listen(on_signal) if interrupts is not None else None
    try:
        if interrupts is not None and interrupts.requested:
            stop.set()
        cached = store.completed_keys()
        todo = [t for t in tasks if t.key not in cached]
        warn_oversized(oversized_prompts(todo, items, sizes))
        stats = ExecStats()
        if todo:
            with progress_bar(len(todo), enabled=progress) as update:
                stats = await execute(todo, backends, store, concurrency=concurrency, retry=retry,
                                      on_update=update, stop=stop)
        stored = store.get_many([t.key for t in tasks])
    finally:
        if unlisten is not None:
            unlisten()
        store.close()
        for b in backends:
            await b.aclose()
    judgments: list[Judgment] = [judgment_from(t, stored.get(t.key), protocol, items[t.item_index])
                                 for t in tasks]
    judgments.sort(key=lambda j: (j.item_index, j.judge, j.run_index))
    result = RunResult(items, judges, protocol, runs, aggregator, judgments, min_runs=min_runs,
                       stop_kind=stats.stop_kind, stop_reason=stats.stop_reason)
    tokens = {"prompt": sum(j.usage.prompt_tokens for j in judgments),
              "completion": sum(j.usage.completion_tokens for j in judgments)}
    cost = sum(cost_usd(prices, j.judge, j.usage.prompt_tokens, j.usage.completion_tokens)
               for j in judgments)
    result.manifest = Manifest(
        signature=signature(protocol, judges, runs, aggregator, temperature),
        protocol=protocol.name,
        config=RunConfig(runs=runs, temperature=temperature, aggregator=aggregator, concurrency=concurrency,
                         seed=seed, min_runs=min_runs, max_tokens=protocol.max_tokens,
                         use_context=protocol.options.use_context, prompt_template=protocol.options.template,
                         protocol_options=protocol.options.extra),
        template_hash=protocol.template_hash,
        judges=[_clean_judge_info(j) for j in judge_info] if judge_info else [{"model": m} for m in judges],
        versions=_versions(),
        counts={"items": len(items), "judgments": len(judgments),
                "sent_this_session": stats.done + stats.failed,
                "from_store": len(tasks) - len(todo), "retries": stats.retries,
                **{f"status_{k}": v for k, v in result.status_counts().items()}},
        failures={redact(k) or k: n for k, n in result.failures().items()},
        tokens=tokens,
        cost_usd=round(cost, 6),
        # The prices this run was charged with, so a report never re-prices it with other defaults.
        prices={m: prices[m] for m in judges if m in prices},
        wall_time_s=round(time.time() - started, 3),
        created=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    )
    return result


def run(items: list[Item], protocol: JudgeProtocol, backends: list[Backend], **kwargs: Any) -> RunResult:
    """Synchronous :func:`run_async` (not for use inside a running event loop)."""
    out = asyncio.run(run_async(items, protocol, backends, **kwargs))
    assert isinstance(out, RunResult)
    return out
