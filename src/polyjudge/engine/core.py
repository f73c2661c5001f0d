"""The judging engine: plan, skip what the store already has, send the rest, parse."""

from __future__ import annotations

import asyncio
import platform
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from polyjudge._version import __version__
from polyjudge.backends.base import Backend
from polyjudge.data.records import Item
from polyjudge.engine.plan import Task, plan_tasks
from polyjudge.engine.pricing import DEFAULT_PRICES, cost_usd
from polyjudge.engine.progress import progress_bar
from polyjudge.engine.result import Judgment, RunResult, judgment_from
from polyjudge.engine.runner import ExecStats, RetryPolicy, execute
from polyjudge.engine.store import Store
from polyjudge.protocols.base import JudgeProtocol
from polyjudge.rundir import Manifest, RunConfig


@dataclass(frozen=True, slots=True)
class Estimate:
    """What a run would cost before sending anything (``--dry-run``)."""

    requests_total: int
    requests_cached: int
    requests_to_send: int
    prompt_tokens: int  # approximate: characters / 4
    max_completion_tokens: int

    def describe(self) -> str:
        return (f"{self.requests_to_send} requests to send ({self.requests_cached} of "
                f"{self.requests_total} already in the store); about {self.prompt_tokens:,} prompt tokens "
                f"and at most {self.max_completion_tokens:,} completion tokens")


def estimate(tasks: list[Task], cached: set[str]) -> Estimate:
    todo = [t for t in tasks if t.key not in cached]
    chars: dict[str, int] = {}
    for t in todo:
        if t.prompt_hash not in chars:
            chars[t.prompt_hash] = sum(len(m.content) for m in t.request.messages)
    prompt_tokens = sum(chars[t.prompt_hash] for t in todo) // 4
    return Estimate(len(tasks), len(tasks) - len(todo), len(todo), prompt_tokens,
                    sum(t.request.max_tokens for t in todo))


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


async def run_async(items: list[Item], protocol: JudgeProtocol, backends: list[Backend], *,
                    runs: int | None = None, temperature: float | None = None,
                    aggregator: str | None = None, concurrency: int = 16,
                    store_path: Path | str | None = None, seed: int = 0, progress: bool = False,
                    retry: RetryPolicy = RetryPolicy(), prices: dict[str, tuple[float, float]] | None = None,
                    judge_info: list[dict[str, Any]] | None = None, dry_run: bool = False,
                    min_runs: int = 1) -> RunResult | Estimate:
    runs = protocol.default_runs if runs is None else runs
    temperature = protocol.default_temperature if temperature is None else temperature
    aggregator = aggregator or protocol.default_aggregator
    judges = [b.model for b in backends]
    if len(set(judges)) != len(judges):
        raise ValueError(f"each judge needs a distinct model name, got {judges}")
    tasks = plan_tasks(items, protocol, judges, runs=runs, temperature=temperature, seed=seed)
    store = Store(store_path if store_path is not None else ":memory:")
    started = time.time()
    try:
        cached = store.completed_keys()
        if dry_run:
            return estimate(tasks, cached)
        todo = [t for t in tasks if t.key not in cached]
        stats = ExecStats()
        if todo:
            with progress_bar(len(todo), enabled=progress) as update:
                stats = await execute(todo, backends, store, concurrency=concurrency, retry=retry,
                                      on_update=update)
        stored = store.get_many([t.key for t in tasks])
    finally:
        store.close()
        for b in backends:
            await b.aclose()
    judgments: list[Judgment] = [judgment_from(t, stored.get(t.key), protocol, items[t.item_index])
                                 for t in tasks]
    judgments.sort(key=lambda j: (j.item_index, j.judge, j.run_index))
    result = RunResult(items, judges, protocol, runs, aggregator, judgments, min_runs=min_runs)
    prices = prices if prices is not None else DEFAULT_PRICES
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
        judges=judge_info or [{"model": m} for m in judges],
        versions=_versions(),
        counts={"items": len(items), "judgments": len(judgments),
                "sent_this_session": stats.done + stats.failed,
                "from_store": len(tasks) - len(todo), "retries": stats.retries,
                **{f"status_{k}": v for k, v in result.status_counts().items()}},
        failures=result.failures(),
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
