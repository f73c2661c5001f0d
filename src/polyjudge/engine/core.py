"""The judging engine: plan, skip what the store already has, send the rest, parse."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import platform
import time
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from polyjudge._version import __version__
from polyjudge.backends.base import Backend
from polyjudge.backends.batch import BatchClient
from polyjudge.backends.build import adaptations_of, server_counts_of
from polyjudge.data.records import Item
from polyjudge.data.secrets import redact, redact_url
from polyjudge.engine.batches import BatchOptions, export_batch, import_batch, run_batches
from polyjudge.engine.executor import Executor
from polyjudge.engine.plan import Plan, Task, distinct_tasks, sample_groups, task_key
from polyjudge.engine.pricing import CONTEXT_TOKENS, DEFAULT_PRICES, ModelPrice
from polyjudge.engine.progress import progress_bar
from polyjudge.engine.result import RunResult, StoredJudgments
from polyjudge.engine.runner import BUDGET, ExecStats, RetryPolicy, execute
from polyjudge.engine.signals import Interrupts
from polyjudge.engine.spend import Budget, RateLimiter
from polyjudge.engine.store import BATCH, Store, StoredResponse
from polyjudge.protocols.base import JudgeProtocol
from polyjudge.rundir import FORMAT_VERSION, JudgmentSpool, Manifest, RunConfig, SystemRow, output_sizes

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
class CostScenario:
    """What the requests still to send would cost one way of sending them (``--dry-run``).

    ``cost_usd`` is an upper bound (every prompt token at the input price,
    every completion at its token limit); ``cost_usd_cached`` credits the
    prompt tokens the provider's prompt cache would likely serve
    (``cached_prompt_tokens``: prefixes of 1,024 tokens or more shared with
    the judge's previous request, in steps of 128, as OpenAI caches; none
    for batches, whose requests run in no predictable order). Both are None
    when no judge has a price.
    """

    samples_per_request: int
    batch: bool
    requests: int  # HTTP requests (or batch lines) after grouping runs into samples per request
    prompt_tokens: int
    cached_prompt_tokens: int
    max_completion_tokens: int
    cost_usd: float | None
    cost_usd_cached: float | None

    @property
    def label(self) -> str:
        how = "one request per run" if self.samples_per_request == 1 else \
            f"{self.samples_per_request} samples per request"
        return f"{how}, {'batch' if self.batch else 'live'}"

    def to_dict(self) -> dict[str, Any]:
        return {"samples_per_request": self.samples_per_request, "batch": self.batch, "requests": self.requests,
                "prompt_tokens": self.prompt_tokens, "cached_prompt_tokens": self.cached_prompt_tokens,
                "max_completion_tokens": self.max_completion_tokens, "cost_usd": self.cost_usd,
                "cost_usd_cached": self.cost_usd_cached}


@dataclass(frozen=True, slots=True)
class Estimate:
    """What a run would cost before sending anything (``--dry-run``).

    ``requests_to_send`` counts distinct requests (tasks sharing a cache key
    are sent once; ``shared`` judgments are answered by another item's
    request). ``cost_usd`` is an upper bound for the run as configured:
    prompt tokens are estimated from the text and every completion is
    counted at its token limit. It covers the judges with a known price
    (local backends are free); ``unpriced`` lists the others, and it is None
    when no judge has a price. ``scenarios`` price the same requests live
    and batched, one request per run and several samples per request.
    """

    requests_total: int
    requests_cached: int
    requests_to_send: int
    prompt_tokens: int  # approximate: UTF-8 bytes / 4 (characters / 4 for English)
    max_completion_tokens: int
    cost_usd: float | None = None
    unpriced: tuple[str, ...] = ()
    oversized: tuple[OversizedPrompt, ...] = ()
    shared: int = 0
    calls: int = 0  # HTTP requests (or batch lines) as configured
    cached_prompt_tokens: int = 0
    samples_per_request: int = 1
    batch: bool = False
    scenarios: tuple[CostScenario, ...] = ()

    def describe(self) -> str:
        text = (f"{self.requests_to_send} requests to send ({self.requests_cached} of "
                f"{self.requests_total} already in the store); about {self.prompt_tokens:,} prompt tokens "
                f"and at most {self.max_completion_tokens:,} completion tokens")
        if self.shared:
            text += f"; {self.shared} judgment(s) answered by a request another item also sends"
        if self.calls != self.requests_to_send:
            text += f"; {self.calls} HTTP requests with {self.samples_per_request} samples per request"
        if self.cost_usd is not None:
            text += (f"; estimated cost at most ${self.cost_usd:,.4f} (an upper bound: every completion "
                     "counted at its token limit)")
        if self.unpriced:
            text += f"; no price known for {', '.join(self.unpriced)} (add one with --prices)"
        if self.oversized:
            text += f"; {len(self.oversized)} prompt(s) exceed the model's context (see the warnings)"
        priced = [s for s in self.scenarios if s.cost_usd is not None]
        if priced:
            text += "\nUSD by way of sending (at most; with likely prompt-cache hits):"
            width = max(len(s.label) for s in priced)
            for s in priced:
                share = s.cached_prompt_tokens / s.prompt_tokens if s.prompt_tokens else 0.0
                text += (f"\n  {s.label.ljust(width)}  {s.requests:>9,} requests  {s.prompt_tokens:>13,} prompt tokens "
                         f"({share:.0%} cached)  ${s.cost_usd:,.4f}  (${s.cost_usd_cached:,.4f})")
        return text

    def to_dict(self) -> dict[str, Any]:
        return {"requests_total": self.requests_total, "requests_cached": self.requests_cached,
                "requests_to_send": self.requests_to_send, "prompt_tokens": self.prompt_tokens,
                "max_completion_tokens": self.max_completion_tokens, "cost_usd": self.cost_usd,
                "cost_is_upper_bound": True, "unpriced": list(self.unpriced),
                "oversized": [{"item_index": o.item_index, "judge": o.judge, "prompt_tokens": o.prompt_tokens,
                               "max_tokens": o.max_tokens, "context_tokens": o.context_tokens, "where": o.where}
                              for o in self.oversized],
                "shared": self.shared, "calls": self.calls, "cached_prompt_tokens": self.cached_prompt_tokens,
                "samples_per_request": self.samples_per_request, "batch": self.batch,
                "scenarios": [s.to_dict() for s in self.scenarios]}


def _prompt_bytes(task: Task) -> int:
    return sum(len(m.content.encode("utf-8", "surrogatepass")) for m in task.request.messages)


# OpenAI's prompt cache: prompts of at least this many tokens, matched in steps of this many.
CACHE_MIN_TOKENS, CACHE_STEP_TOKENS = 1024, 128


def _prompt_blob(task: Task) -> bytes:
    return b"\x00".join(m.role.encode() + b"\x01" + m.content.encode("utf-8", "surrogatepass")
                        for m in task.request.messages)


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the common prefix: equal chunks skipped at C speed (doubling), then a binary
    search inside the first unequal one, so the work is linear in the prefix, not n log n."""
    n = min(len(a), len(b))
    lo, step = 0, 4096
    while lo < n:
        hi = min(n, lo + step)
        if a[lo:hi] != b[lo:hi]:
            break
        lo, step = hi, step * 2
    else:
        return n
    while lo < hi:  # the mismatch is in [lo, hi)
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _cacheable_tokens(prefix: int, prompt_bytes: int) -> int:
    """Prompt tokens a provider's cache serves for a shared prefix of ``prefix`` bytes (0 below 1,024 tokens)."""
    tokens = min(prefix, prompt_bytes) // 4
    return tokens // CACHE_STEP_TOKENS * CACHE_STEP_TOKENS if tokens >= CACHE_MIN_TOKENS else 0


def likely_cached_tokens(groups: Sequence[Sequence[Task]]) -> int:
    """Prompt tokens a provider's prompt cache would likely serve when ``groups`` are sent in order:
    the prefix each request shares with the same judge's previous one, from 1,024 tokens on,
    in steps of 128 (how OpenAI caches)."""
    previous: dict[int, bytes] = {}
    blobs: dict[str, bytes] = {}
    total = 0
    for g in groups:
        t = g[0]
        blob = blobs.get(t.prompt_hash)
        if blob is None:
            blob = blobs[t.prompt_hash] = _prompt_blob(t)
        before = previous.get(t.judge_index)
        if before is not None:
            total += _cacheable_tokens(_common_prefix(before, blob), _prompt_bytes(t))
        previous[t.judge_index] = blob
    return total


def _judge_cost(price: ModelPrice, tokens_in: float, cached: int, completion: int, batch: bool) -> tuple[float, float]:
    """One judge's USD at most, without and with likely prompt-cache hits."""
    share = (1.0 - price.batch_discount) if batch else 1.0
    full = (tokens_in * price.input + completion * price.output) / 1e6 * share
    cached_in = min(float(cached), tokens_in)
    cached_price = price.input if price.cached_input is None else price.cached_input
    with_cache = ((tokens_in - cached_in) * price.input + cached_in * cached_price
                  + completion * price.output) / 1e6 * share
    return full, with_cache


def _scenario(todo: Sequence[Task], per_request: Mapping[str, int], batch: bool, judges: Sequence[str],
              prices: Mapping[str, ModelPrice], free: Collection[str], size: Mapping[str, int]) -> CostScenario:
    groups = sample_groups(todo, per_request)
    cost: float | None = None
    cost_cached: float | None = None
    cached_total = 0
    for judge in judges:
        mine = [g for g in groups if g[0].judge == judge]
        cached = 0 if batch else likely_cached_tokens(mine)
        cached_total += cached
        if judge in prices:
            tokens_in = sum(size[g[0].prompt_hash] for g in mine) / 4
            completion = sum(t.request.max_tokens for g in mine for t in g)
            full, with_cache = _judge_cost(prices[judge], tokens_in, cached, completion, batch)
            cost, cost_cached = (cost or 0.0) + full, (cost_cached or 0.0) + with_cache
        elif judge in free:
            cost, cost_cached = cost or 0.0, cost_cached or 0.0
    sizes = list(per_request.values())
    return CostScenario(
        samples_per_request=max(sizes) if sizes else 1, batch=batch, requests=len(groups),
        prompt_tokens=sum(size[g[0].prompt_hash] for g in groups) // 4, cached_prompt_tokens=cached_total,
        max_completion_tokens=sum(t.request.max_tokens for t in todo),
        cost_usd=None if cost is None else round(cost, 6),
        cost_usd_cached=None if cost_cached is None else round(cost_cached, 6))


def estimate(tasks: list[Task], cached: set[str], *, prices: Mapping[str, ModelPrice | Any] | None = None,
             free: Collection[str] = (), oversized: Sequence[OversizedPrompt] = (),
             samples_per_request: int | Mapping[str, int] = 1, batch: bool = False) -> Estimate:
    """Requests, tokens and (for priced or ``free`` judges) an upper bound of the cost of ``tasks``
    not yet in ``cached``, one request per distinct cache key; with the cost of the other ways of
    sending them (live or batch, one request per run or several samples per request)."""
    todo_all = [t for t in tasks if t.key not in cached]
    todo = distinct_tasks(todo_all)
    table = {m: ModelPrice.of(p) for m, p in (prices if prices is not None else DEFAULT_PRICES).items()}
    judges = list(dict.fromkeys(t.judge for t in tasks))
    size: dict[str, int] = {}
    for t in todo:
        if t.prompt_hash not in size:
            size[t.prompt_hash] = _prompt_bytes(t)
    configured = _per_judge(samples_per_request, judges, free)
    most = max((len(g) for g in sample_groups(todo, 1_000_000)), default=1)
    wanted = max(configured.values(), default=1)
    alternative = wanted if wanted > 1 else min(most, 10)
    scenarios: list[CostScenario] = []
    for spr in dict.fromkeys([1, alternative]):
        for in_batch in (False, True):
            scenarios.append(_scenario(todo, _per_judge(spr, judges, free), in_batch, judges, table, free, size))
    mine = _scenario(todo, configured, batch, judges, table, free, size)
    unpriced = tuple(j for j in judges if j not in table and j not in free)
    return Estimate(len(tasks), len(tasks) - len(todo_all), len(todo), mine.prompt_tokens,
                    mine.max_completion_tokens, mine.cost_usd, unpriced, tuple(oversized),
                    shared=len(todo_all) - len(todo), calls=mine.requests,
                    cached_prompt_tokens=mine.cached_prompt_tokens, samples_per_request=wanted, batch=batch,
                    scenarios=tuple(scenarios))


@dataclass(slots=True)
class _JudgeTally:
    """One judge's distinct requests still to send, tallied by how many runs each prompt has to send
    (groups of ``s`` samples per request follow from that count for every ``s`` at the end)."""

    tasks: int = 0
    prompts_by_runs: dict[int, int] = field(default_factory=dict)
    bytes_by_runs: dict[int, int] = field(default_factory=dict)
    repeat_cache_by_runs: dict[int, int] = field(default_factory=dict)  # a prompt's own repeats hit the cache
    prefix_cached: int = 0  # tokens shared with the judge's previous prompt
    previous: bytes | None = None

    def add(self, runs: int, prompt_bytes: int, blob: bytes | None, blob_len: int) -> None:
        self.tasks += runs
        self.prompts_by_runs[runs] = self.prompts_by_runs.get(runs, 0) + 1
        self.bytes_by_runs[runs] = self.bytes_by_runs.get(runs, 0) + prompt_bytes
        self.repeat_cache_by_runs[runs] = self.repeat_cache_by_runs.get(runs, 0) + \
            _cacheable_tokens(blob_len, prompt_bytes)
        if blob is not None and self.previous is not None:
            self.prefix_cached += _cacheable_tokens(_common_prefix(self.previous, blob), prompt_bytes)
        self.previous = blob

    def sent(self, size: int) -> tuple[int, int, int]:
        """(requests, prompt bytes, likely cached tokens) with ``size`` samples per request."""
        requests = sum(n * -(-runs // size) for runs, n in self.prompts_by_runs.items())
        sent_bytes = sum(b * -(-runs // size) for runs, b in self.bytes_by_runs.items())
        cached = self.prefix_cached + sum(c * (-(-runs // size) - 1) for runs, c in self.repeat_cache_by_runs.items())
        return requests, sent_bytes, cached


@dataclass(slots=True)
class _PlanWalk:
    """What one pass over a plan finds: counts, per-judge tallies and the prompts over a context."""

    total: int = 0
    pending: int = 0  # tasks not in the store (shared keys counted each time)
    distinct: int = 0
    most: int = 1
    tallies: dict[str, _JudgeTally] = field(default_factory=dict)
    oversized: list[OversizedPrompt] = field(default_factory=list)


def _request_sizes(messages: Sequence[Any]) -> tuple[int, bytes | None, int]:
    """(prompt bytes, blob for prefix matching or None when too short to be cached, blob length)."""
    encoded = [(m.role.encode(), m.content.encode("utf-8", "surrogatepass")) for m in messages]
    prompt_bytes = sum(len(c) for _, c in encoded)
    blob_len = sum(len(r) + 1 + len(c) for r, c in encoded) + max(0, len(encoded) - 1)
    if blob_len // 4 < CACHE_MIN_TOKENS:  # no prefix of it can reach the cache's minimum
        return prompt_bytes, None, blob_len
    return prompt_bytes, b"\x00".join(r + b"\x01" + c for r, c in encoded), blob_len


def _walk_plan(plan: Plan, cached: Collection[str], context_sizes: Mapping[str, int]) -> _PlanWalk:
    """One streamed pass in planned order: each item's prompt is rendered once and dropped, so
    memory holds one prompt at a time and no task list (what :func:`estimate` builds)."""
    walk = _PlanWalk(tallies={j: _JudgeTally() for j in plan.judges})
    seen: set[str] = set()
    max_tokens = plan.protocol.max_tokens
    everything = [[True] * len(plan.judges) for _ in range(plan.runs)]
    for i in plan.order:
        request = plan.request(i)
        h = plan.prompt_hash(i)
        # Keys are only looked up in the store: with nothing stored, none is computed.
        todo = [[task_key(judge, r, plan.seed + r, h) not in cached for judge in plan.judges]
                for r in range(plan.runs)] if cached else everything
        walk.total += plan.runs * len(plan.judges)
        n_item = sum(map(sum, todo))
        if n_item == 0:
            continue
        walk.pending += n_item
        prompt_bytes, blob, blob_len = _request_sizes(request.messages)
        _note_oversized(walk, i, plan, todo, prompt_bytes // 4, max_tokens, context_sizes)
        if h in seen:
            continue
        seen.add(h)
        walk.distinct += n_item
        for k, judge in enumerate(plan.judges):
            runs = sum(row[k] for row in todo)
            if runs:
                walk.most = max(walk.most, runs)
                walk.tallies[judge].add(runs, prompt_bytes, blob, blob_len)
    return walk


def _note_oversized(walk: _PlanWalk, i: int, plan: Plan, todo: Sequence[Sequence[bool]], tokens: int,
                    max_tokens: int, context_sizes: Mapping[str, int]) -> None:
    """Item ``i``'s judges whose context its prompt overflows, in the order :func:`oversized_prompts` gives."""
    noted: set[str] = set()
    for row in todo:
        for k, judge in enumerate(plan.judges):
            limit = context_sizes.get(judge)
            if not row[k] or limit is None or judge in noted:
                continue
            noted.add(judge)
            if tokens + max_tokens > limit:
                walk.oversized.append(OversizedPrompt(i, judge, tokens, max_tokens, limit, _where(i, plan.items[i])))


def _walk_scenario(walk: _PlanWalk, sizes: Mapping[str, int], batch: bool, judges: Sequence[str],
                   prices: Mapping[str, ModelPrice], free: Collection[str], max_tokens: int) -> CostScenario:
    """:func:`_scenario` from a walk's tallies: the same numbers without the task list."""
    cost: float | None = None
    cost_cached: float | None = None
    requests = sent_bytes = cached_total = 0
    for judge in judges:
        tally = walk.tallies[judge]
        n, b, cached = tally.sent(sizes[judge])
        cached = 0 if batch else cached
        requests, sent_bytes, cached_total = requests + n, sent_bytes + b, cached_total + cached
        if judge in prices:
            full, with_cache = _judge_cost(prices[judge], b / 4, cached, tally.tasks * max_tokens, batch)
            cost, cost_cached = (cost or 0.0) + full, (cost_cached or 0.0) + with_cache
        elif judge in free:
            cost, cost_cached = cost or 0.0, cost_cached or 0.0
    values = list(sizes.values())
    return CostScenario(
        samples_per_request=max(values) if values else 1, batch=batch, requests=requests,
        prompt_tokens=sent_bytes // 4, cached_prompt_tokens=cached_total,
        max_completion_tokens=walk.distinct * max_tokens,
        cost_usd=None if cost is None else round(cost, 6),
        cost_usd_cached=None if cost_cached is None else round(cost_cached, 6))


def estimate_plan(plan: Plan, cached: Collection[str], *, prices: Mapping[str, ModelPrice | Any] | None = None,
                  free: Collection[str] = (), context_sizes: Mapping[str, int] | None = None,
                  samples_per_request: int | Mapping[str, int] = 1, batch: bool = False) -> Estimate:
    """:func:`estimate` of a whole plan in one streamed pass (``--dry-run``): the same Estimate
    (oversized prompts included), in memory linear in the items and time linear in the prompts."""
    walk = _walk_plan(plan, cached, context_sizes or {})
    table = {m: ModelPrice.of(p) for m, p in (prices if prices is not None else DEFAULT_PRICES).items()}
    judges, max_tokens = plan.judges, plan.protocol.max_tokens
    configured = _per_judge(samples_per_request, judges, free)
    wanted = max(configured.values(), default=1)
    alternative = wanted if wanted > 1 else min(walk.most, 10)
    scenarios = [_walk_scenario(walk, _per_judge(spr, judges, free), in_batch, judges, table, free, max_tokens)
                 for spr in dict.fromkeys([1, alternative]) for in_batch in (False, True)]
    mine = _walk_scenario(walk, configured, batch, judges, table, free, max_tokens)
    unpriced = tuple(j for j in judges if j not in table and j not in free)
    return Estimate(walk.total, walk.total - walk.pending, walk.distinct, mine.prompt_tokens,
                    mine.max_completion_tokens, mine.cost_usd, unpriced, tuple(walk.oversized),
                    shared=walk.pending - walk.distinct, calls=mine.requests,
                    cached_prompt_tokens=mine.cached_prompt_tokens, samples_per_request=wanted, batch=batch,
                    scenarios=tuple(scenarios))


def _per_judge(samples: int | Mapping[str, int], judges: Sequence[str], free: Collection[str]) -> dict[str, int]:
    """Samples per request of each judge (local judges always get one request per run)."""
    if isinstance(samples, Mapping):
        return {j: max(1, samples.get(j, 1)) for j in judges}
    return {j: 1 if j in free else max(1, samples) for j in judges}


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
              temperature: float, adaptations: Mapping[str, Mapping[str, str]] | None = None,
              reasoning_effort: str | None = None) -> str:
    """One line that says how the numbers were made, in the style of sacrebleu.

    ``adaptations`` (judge -> what its backend changed in the requests its server
    rejected, e.g. ``max_tokens`` sent as ``max_completion_tokens``) adds one
    ``adapted:JUDGE=PARAM,...`` part per judge that adapted; none otherwise.
    """
    parts = [protocol.name, f"judge:{'+'.join(judges)}", f"prompt:{protocol.template_hash}",
             f"runs:{runs}", f"agg:{aggregator}", f"T:{temperature:g}"]
    parts += [f"{k}:{v}" for k, v in protocol.signature_fields().items()]
    if reasoning_effort is not None:
        parts.append(f"effort:{reasoning_effort}")
    for judge in judges:
        changed = (adaptations or {}).get(judge)
        if changed:
            parts.append(f"adapted:{judge}={','.join(sorted(changed))}")
    parts.append(f"version:{__version__}")
    return "|".join(parts)


def _versions() -> dict[str, str]:
    out = {"polyjudge": __version__, "python": platform.python_version()}
    for pkg in ("aiohttp", "xllamacpp", "numpy"):
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
                    retry: RetryPolicy = RetryPolicy(), prices: Mapping[str, ModelPrice | Any] | None = None,
                    judge_info: list[dict[str, Any]] | None = None, dry_run: bool = False,
                    min_runs: int = 1, interrupts: Interrupts | None = None,
                    context_sizes: Mapping[str, int] | None = None,
                    free_judges: Collection[str] = (), samples_per_request: int | Mapping[str, int] = 1,
                    max_cost: float | None = None, rpm: float | None = None, tpm: float | None = None,
                    batch_clients: Sequence[BatchClient] | None = None, batch_options: BatchOptions = BatchOptions(),
                    batch_export: Path | str | None = None,
                    batch_import: Path | str | None = None, reasoning_effort: str | None = None,
                    executor: Executor | None = None, outputs: Path | None = None) -> RunResult | Estimate:
    """Judge ``items`` (or, with ``dry_run``, only estimate what that would send).

    Each distinct cache key is sent once; items that share one get the same
    answer. ``context_sizes`` (judge -> tokens, added to :data:`CONTEXT_TOKENS`)
    drive the warnings about prompts a model cannot take; ``free_judges`` are
    local judges the cost estimate counts as free. A signal seen by
    ``interrupts`` stops sending (the result then has ``stop_kind`` set, as
    when the endpoint is given up). A dry run reads an existing store without
    changing it and creates none.

    ``samples_per_request`` (per judge when a mapping) asks for that many
    choices per request, each stored as its own run. ``max_cost`` (USD, the
    whole run including earlier sessions) stops sending before the cap could
    be passed (``stop_kind`` "budget"); ``rpm``/``tpm`` limit each judge's
    requests and tokens per minute. With ``batch_clients`` (one per judge)
    the tasks go through the judges' Batch APIs (:func:`run_batches`).
    ``batch_export`` writes the batch input file instead of sending;
    ``batch_import`` loads a batch output file into the store and sends nothing.
    ``outputs`` is the run directory the result will be written to: when its
    outputs were written from this very store and configuration and nothing
    was left to send, they are reused (writing rewrites only the manifest).
    """
    runs = protocol.default_runs if runs is None else runs
    temperature = protocol.default_temperature if temperature is None else temperature
    aggregator = aggregator or protocol.default_aggregator
    judges = [b.model for b in backends]
    if len(set(judges)) != len(judges):
        raise ValueError(f"each judge needs a distinct model name, got {judges}")
    plan = Plan(items, protocol, judges, runs=runs, temperature=temperature, seed=seed,
                reasoning_effort=reasoning_effort)
    sizes = {m: n for m, n in CONTEXT_TOKENS.items() if m in judges} | dict(context_sizes or {})
    table: dict[str, ModelPrice] = {m: ModelPrice.of(p)
                                    for m, p in (prices if prices is not None else DEFAULT_PRICES).items()}
    if protocol.top_logprobs > 0:
        # Only an answer's first choice carries token probabilities: expected scores need one per request.
        samples_per_request = 1
    per_request = _per_judge(samples_per_request, judges, free_judges)
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
            found = estimate_plan(plan, cached, prices=table, free=free_judges, context_sizes=sizes,
                                  samples_per_request=per_request, batch=batch_clients is not None)
            warn_oversized(found.oversized)
            return found
        finally:
            for b in backends:
                await b.aclose()
            for c in batch_clients or ():
                await c.aclose()
    in_memory = store_path is None or str(store_path) == ":memory:"
    store = Store(":memory:" if in_memory else store_path)  # type: ignore[arg-type]
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def on_signal() -> None:  # runs in the signal handler: hand over to the loop, which may be in select()
        loop.call_soon_threadsafe(stop.set)

    unlisten = interrupts.listen(on_signal) if interrupts is not None else None
    try:
        if interrupts is not None and interrupts.requested:
            stop.set()
        pending = True
        if batch_import is not None or batch_export is not None or batch_clients is not None:
            stats, from_store = await _send_materialised(
                plan, store, backends, sizes=sizes, table=table, per_request=per_request, concurrency=concurrency,
                retry=retry, progress=progress, stop=stop, max_cost=max_cost, rpm=rpm, tpm=tpm,
                batch_clients=batch_clients, batch_options=batch_options, batch_export=batch_export,
                batch_import=batch_import)
        else:
            stats, from_store, pending = await _send_streamed(
                plan, store, backends, sizes=sizes, table=table, per_request=per_request, concurrency=concurrency,
                retry=retry, progress=progress, stop=stop, max_cost=max_cost, rpm=rpm, tpm=tpm,
                send=executor or execute)
        key = None if in_memory else _outputs_key(plan, aggregator, min_runs, table)
        reused = None
        if outputs is not None and key is not None and not pending and stats.done + stats.failed == 0:
            reused = _reuse(plan, store, Path(store_path), outputs, key,  # type: ignore[arg-type]
                            aggregator=aggregator, min_runs=min_runs)
        if reused is not None:
            result, usage = reused
        else:
            result, usage = _collect(plan, store, None if in_memory else Path(store_path),  # type: ignore[arg-type]
                                     table, aggregator=aggregator, min_runs=min_runs)
        if key is not None:
            result.outputs_note = (key, usage.to_json())
        # An executor whose workers build their own backends (Ray) stands in for what they learned.
        knowing = [*backends, *getattr(executor, "learned", ())]
        adapted = _adaptations(store, knowing)
        result.server_counts = {b.model: counts for b in knowing if (counts := server_counts_of(b))}
        session_wall = time.time() - started
        wall = session_wall + _seconds_of(store.get_meta(WALL_TIME_META))
        if not store.readonly:
            store.set_meta(WALL_TIME_META, repr(wall))
    finally:
        if unlisten is not None:
            unlisten()
        store.close()
        for b in backends:
            await b.aclose()
        for c in batch_clients or ():
            await c.aclose()
    stop_reason = stats.stop_reason
    cost = usage.cost
    if stats.stop_kind == BUDGET and max_cost is not None:
        stop_reason = (f"{stop_reason}: ${cost:.4f} spent, ${max(0.0, max_cost - cost):.4f} left of the "
                       f"${max_cost:.4f} cap")
    result.stop_kind, result.stop_reason, result.max_cost = stats.stop_kind, stop_reason, max_cost
    result.samples_fallback = dict(stats.samples_fallback)
    result.manifest = Manifest(
        signature=signature(protocol, judges, runs, aggregator, temperature, adapted, reasoning_effort),
        protocol=protocol.name,
        config=RunConfig(runs=runs, temperature=temperature, aggregator=aggregator, concurrency=concurrency,
                         seed=seed, min_runs=min_runs, max_tokens=protocol.max_tokens,
                         use_context=protocol.options.use_context, prompt_template=protocol.options.template,
                         protocol_options=protocol.options.extra),
        template_hash=protocol.template_hash,
        judges=_with_adaptations([_clean_judge_info(j) for j in judge_info] if judge_info
                                 else [{"model": m} for m in judges], judges, adapted),
        versions=_versions(),
        counts={"items": len(items), "judgments": len(result.judgments),
                "sent_this_session": stats.done + stats.failed,
                "from_store": from_store, "retries": stats.retries,
                **{f"status_{k}": v for k, v in result.status_counts().items()},
                "distinct_requests": usage.distinct_requests,
                "shared_answers": usage.shared_answers,
                "answered_by_batch": usage.answered_by_batch,
                "multi_sample_requests": stats.multi_sample_requests,
                **_executor_counts(executor)},
        failures={redact(k) or k: n for k, n in result.failures().items()},
        # Tokens and cost of each request once: what the provider billed, however many items it answered.
        tokens=usage.tokens,
        cost_usd=round(cost, 6),
        # The prices this run was charged with, so a report never re-prices it with other defaults.
        prices={m: table[m].pair() for m in judges if m in table},
        wall_time_s=round(wall, 3),  # every session of the run (this one's is wall_time_s_session)
        created=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        unknown={"wall_time_s_session": round(session_wall, 3), "tokens_by_judge": usage.by_judge,
                 "cost_by_judge": {k: round(v, 6) for k, v in usage.cost_by_judge.items()},
                 "usage_anomalies": usage.anomalies},
    )
    return result


ADAPTATIONS_META = "adaptations"


def _executor_counts(executor: Executor | None) -> dict[str, int]:
    """An executor's own manifest counts (Ray: actors and nodes lost, requests re-sent); none for the local one."""
    counts = getattr(executor, "manifest_counts", None)
    return dict(counts()) if callable(counts) else {}


def _adaptations(store: Store, backends: Sequence[Backend]) -> dict[str, dict[str, str]]:
    """What each judge's backend changed in its requests (OpenAI reasoning models: the token field,
    temperature), in this session or an earlier one of the same run (kept in the store)."""
    found: dict[str, dict[str, str]] = {}
    text = store.get_meta(ADAPTATIONS_META)
    if text:
        try:
            loaded = json.loads(text)
            found = {str(j): {str(k): str(v) for k, v in a.items()} for j, a in loaded.items()}
        except (ValueError, AttributeError):
            found = {}
    before = json.dumps(found, sort_keys=True)
    for b in backends:
        now = adaptations_of(b)
        if now:
            found.setdefault(b.model, {}).update(now)
    if not store.readonly and json.dumps(found, sort_keys=True) != before:
        store.set_meta(ADAPTATIONS_META, json.dumps(found, sort_keys=True))
    return found


def _with_adaptations(info: list[dict[str, Any]], judges: Sequence[str],
                      adapted: Mapping[str, Mapping[str, str]]) -> list[dict[str, Any]]:
    """Manifest judge entries, each with its ``adaptations`` when its backend made some."""
    for entry, judge in zip(info, judges):
        if adapted.get(judge):
            entry["adaptations"] = {k: redact(v) or v for k, v in sorted(adapted[judge].items())}
    return info


# Items planned, looked up and sent at a time: bounds memory whatever the size of the run.
ITEMS_PER_CHUNK = 2000
# From this many tasks on, answered keys are read in one scan of the store rather than looked up.
SCAN_MIN_TASKS = 50_000


def _chunks(seq: Sequence[int], size: int) -> Iterator[Sequence[int]]:
    for i in range(0, len(seq), size):
        yield seq[i:i + size]


@dataclass(slots=True)
class _Progress:
    """What the progress bar reads (done and failed so far), over several executor calls."""

    done: int = 0
    failed: int = 0


async def _send_streamed(plan: Plan, store: Store, backends: list[Backend], *, sizes: Mapping[str, int],
                         table: Mapping[str, ModelPrice], per_request: Mapping[str, int], concurrency: int,
                         retry: RetryPolicy, progress: bool, stop: asyncio.Event, max_cost: float | None,
                         rpm: float | None, tpm: float | None, send: Executor) -> tuple[ExecStats, int, bool]:
    """Send what the store lacks, a bounded chunk of items at a time; (stats, judgments from the store,
    whether anything was left to send).

    A first pass finds every item's keys (prompt hashes from the store's
    fingerprint table, rendering only new items) and which are answered; the
    second renders the items with work left and hands their tasks to the
    executor chunk by chunk, so no more than one chunk of prompts is ever held.
    """
    from_store = 0
    pending_items: list[int] = []
    pending_tasks = 0
    first: set[str] = set()  # prompt hashes seen: later items with the same prompt send nothing
    oversized: list[OversizedPrompt] = []
    spent = 0.0
    # A large run reads the store's answered keys in one sequential scan (far cheaper than looking up
    # each key); a small one looks its own keys up, a chunk at a time.
    answered_all = store.completed_keys() if plan.n_tasks >= SCAN_MIN_TASKS else None
    for chunk in _chunks(plan.order, ITEMS_PER_CHUNK):
        plan.resolve(chunk, store)
        keys = {i: plan.keys_of(i) for i in chunk}
        done = answered_all if answered_all is not None else \
            store.done_among([k for ks in keys.values() for k in ks])
        if max_cost is not None:
            new = [k for i in chunk if plan.prompt_hash(i) not in first for k in keys[i]]
            spent += _cost(store.get_many(new).values(), table)
        for i in chunk:
            answered = sum(1 for k in keys[i] if k in done)
            from_store += answered
            if answered == len(keys[i]):
                continue
            pending_items.append(i)
            h = plan.prompt_hash(i)
            if h not in first:
                pending_tasks += len(keys[i]) - answered
                first.add(h)
            if sizes:
                oversized += oversized_prompts([t for t in plan.tasks_of(i) if t.key not in done],
                                               plan.items, sizes)
        first.update(plan.prompt_hash(i) for i in chunk)
    warn_oversized(oversized)
    stats = ExecStats()
    if not pending_items:
        return stats, from_store, False
    budget = Budget(max_cost, table, spent=spent) if max_cost is not None else None
    limiters = [RateLimiter(rpm, tpm) for _ in backends] if (rpm or tpm) else []
    # Only what is used goes beyond the executor seam's keywords (engine.executor.Executor).
    extra: dict[str, Any] = {}
    if limiters:
        extra["limiters"] = limiters
    if budget is not None:
        extra["budget"] = budget
    size = int(getattr(send, "items_per_call", ITEMS_PER_CHUNK))
    sent: set[str] = set()
    seen = _Progress()
    with progress_bar(pending_tasks, enabled=progress) as update:
        for chunk in _chunks(pending_items, size):
            if stats.stop_kind is not None:
                break
            tasks: list[Task] = []
            for i in chunk:
                h = plan.prompt_hash(i)
                if h in sent:
                    continue  # an earlier chunk sent this prompt
                tasks += plan.tasks_of(i)
            sent.update(plan.prompt_hash(i) for i in chunk)
            # Keys of this chunk change only when this chunk is sent: the first pass's answer holds.
            done = answered_all if answered_all is not None else store.done_among([t.key for t in tasks])
            todo = distinct_tasks([t for t in tasks if t.key not in done])
            if not todo:
                continue
            work: list[Task] | list[tuple[Task, ...]] = todo
            if any(n > 1 for n in per_request.values()):
                work = sample_groups(todo, per_request)
            base = _Progress(stats.done, stats.failed)

            def hook(part: ExecStats, base: _Progress = base) -> None:
                seen.done, seen.failed = base.done + part.done, base.failed + part.failed
                update(seen)

            part = await send(work, backends, store, concurrency=concurrency, retry=retry, on_update=hook,
                              stop=stop, **extra)
            stats.add(part)
    return stats, from_store, True


async def _send_materialised(plan: Plan, store: Store, backends: list[Backend], *, sizes: Mapping[str, int],
                             table: Mapping[str, ModelPrice], per_request: Mapping[str, int], concurrency: int,
                             retry: RetryPolicy, progress: bool, stop: asyncio.Event, max_cost: float | None,
                             rpm: float | None, tpm: float | None, batch_clients: Sequence[BatchClient] | None,
                             batch_options: BatchOptions, batch_export: Path | str | None,
                             batch_import: Path | str | None) -> tuple[ExecStats, int]:
    """The Batch API paths (send, export, import): every task planned at once."""
    tasks = plan.tasks()
    keys = list(dict.fromkeys(t.key for t in tasks))
    cached = store.completed_keys()
    todo_all = [t for t in tasks if t.key not in cached]
    todo = distinct_tasks(todo_all)
    warn_oversized(oversized_prompts(todo_all, plan.items, sizes))
    stats = ExecStats()
    budget = None
    if max_cost is not None:
        budget = Budget(max_cost, table, spent=_cost(store.get_many(keys).values(), table))
    if batch_import is not None:
        counts = import_batch(batch_import, store, tasks)
        stats.done, stats.failed = counts.answered, counts.failed
    elif batch_export is not None:
        if todo:
            export_batch(sample_groups(todo, per_request), batch_export, store)
    elif todo and batch_clients is not None:
        limiters = [RateLimiter(rpm, tpm) for _ in backends] if (rpm or tpm) else []
        with progress_bar(len(todo), enabled=progress) as update:
            async def live(retry_tasks: list[Task], used: Mapping[str, int]) -> ExecStats:
                return await execute(sample_groups(retry_tasks, per_request), backends, store,
                                     concurrency=concurrency, retry=retry, on_update=update, stop=stop,
                                     limiters=limiters, budget=budget, attempts_used=used)

            stats = await run_batches(todo, batch_clients, store, per_request=per_request,
                                      options=batch_options, retry=retry, stop=stop, budget=budget,
                                      on_update=update,
                                      live=live if batch_options.fallback == "live" else None)
    return stats, len(tasks) - len(todo_all)


@dataclass(slots=True)
class _Usage:
    """What the distinct stored answers of a run used and cost (each request once)."""

    tokens: dict[str, int]
    cost: float = 0.0
    distinct_requests: int = 0
    shared_answers: int = 0
    answered_by_batch: int = 0
    # Answers whose usage was not taken as the server reported it (engine.spend.vet_usage), a few as examples.
    anomalies: dict[str, Any] = field(default_factory=lambda: {"requests": 0, "examples": []})
    # The tokens of each judge (each request once), so a report's per-judge rows add up to ``tokens``.
    by_judge: dict[str, dict[str, int]] = field(default_factory=dict)
    cost_by_judge: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "cost": self.cost, "distinct_requests": self.distinct_requests,
                "shared_answers": self.shared_answers, "answered_by_batch": self.answered_by_batch,
                "anomalies": self.anomalies, "by_judge": self.by_judge, "cost_by_judge": self.cost_by_judge}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> _Usage:
        return cls({str(k): int(v) for k, v in d["tokens"].items()}, float(d["cost"]), int(d["distinct_requests"]),
                   int(d["shared_answers"]), int(d["answered_by_batch"]),
                   dict(d.get("anomalies") or {"requests": 0, "examples": []}), dict(d.get("by_judge") or {}),
                   dict(d.get("cost_by_judge") or {}))

    def count(self, answered: Sequence[StoredResponse]) -> None:
        """Add the tokens and usage anomalies of distinct answers."""
        t = self.tokens
        for s in answered:
            mine = self.by_judge.setdefault(s.judge, {"prompt": 0, "completion": 0})
            mine["prompt"] += s.prompt_tokens
            mine["completion"] += s.completion_tokens
            t["prompt"] += s.prompt_tokens
            t["completion"] += s.completion_tokens
            t["cached_prompt"] += s.cached_prompt_tokens
            t["reasoning"] += s.reasoning_tokens
            self.answered_by_batch += s.channel == BATCH
            if s.usage_note is not None:
                self.anomalies["requests"] += 1
                if len(self.anomalies["examples"]) < ANOMALY_EXAMPLES:
                    self.anomalies["examples"].append({"judge": s.judge, **json.loads(s.usage_note)})


OUTPUTS_META = "outputs"
WALL_TIME_META = "wall_time_s"  # the judging sessions' wall time so far, all sessions together
ANOMALY_EXAMPLES = 20


def _outputs_key(plan: Plan, aggregator: str, min_runs: int, table: Mapping[str, ModelPrice]) -> str:
    """Everything the outputs of a run depend on besides its store: items, prompts, runs, aggregation, prices."""
    items = hashlib.sha256()
    for i in range(len(plan.items)):
        items.update(plan.fingerprint(i).encode())
    p = plan.protocol
    blob = json.dumps({"format": FORMAT_VERSION, "version": __version__, "items": items.hexdigest(),
                       "prompts": plan.identity(), "judges": plan.judges, "runs": plan.runs, "seed": plan.seed,
                       "aggregator": aggregator, "min_runs": min_runs, "protocol": p.name,
                       "signature": p.signature_fields(),
                       "prices": {m: table[m].to_json() for m in plan.judges if m in table}},
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _seconds_of(text: str | None) -> float:
    """A stored wall time; an unreadable one counts as none."""
    try:
        value = float(text or 0.0)
    except ValueError:
        return 0.0
    return value if math.isfinite(value) and value >= 0 else 0.0


def _reuse(plan: Plan, store: Store, store_path: Path, out_dir: Path, key: str, *, aggregator: str,
           min_runs: int) -> tuple[RunResult, _Usage] | None:
    """The result of a finished run whose outputs in ``out_dir`` were written from this store as it is
    now and with this configuration (:func:`remember_outputs`), without parsing a single answer."""
    text = store.get_meta(OUTPUTS_META)
    if text is None:
        return None
    try:
        note = json.loads(text)
        if note["key"] != key or note["state"] != store.state() or note["files"] != output_sizes(out_dir):
            return None
        usage = _Usage.from_json(note["usage"])
        systems = [SystemRow(str(r[0]), None if r[1] is None else float(r[1]), int(r[2]), int(r[3]))
                   for r in note["systems"]]
        status = {str(k): int(v) for k, v in note["status"].items()}
        failures = {str(k): int(v) for k, v in note["failures"].items()}
    except (ValueError, KeyError, TypeError, IndexError, OSError):
        return None  # an older or damaged note: write the outputs again
    result = RunResult(list(plan.items), plan.judges, plan.protocol, plan.runs, aggregator,
                       _stored_judgments(plan, store_path), min_runs=min_runs)
    result.reuse_outputs(out_dir, status, failures, systems)
    return result, usage


def remember_outputs(store_path: Path, out_dir: Path, result: RunResult) -> None:
    """Note in the store that ``out_dir`` now holds ``result``'s outputs, written from the store as it
    is: the next session with nothing to send reuses them instead of parsing every answer again."""
    if result.outputs_note is None:
        return
    key, usage = result.outputs_note
    store = Store(store_path)
    try:
        note = {"key": key, "state": store.state(), "files": output_sizes(out_dir), "usage": usage,
                "status": result.status_counts(),
                "failures": {redact(k) or k: n for k, n in result.failures().items()},
                "systems": [[r.system, r.score, r.n_segments, r.n_unscored] for r in result.system_rows()]}
        store.set_meta(OUTPUTS_META, json.dumps(note, sort_keys=True))
    finally:
        store.close()


def _stored_judgments(plan: Plan, store_path: Path) -> StoredJudgments:
    """The run's judgments, read back from the store on disk when iterated."""
    order, runs, seed = sorted(plan.judges), plan.runs, plan.seed

    def keys(i: int) -> list[str]:
        h = plan.prompt_hash(i)
        return [task_key(j, r, seed + r, h) for j in order for r in range(runs)]

    return StoredJudgments(plan.items, plan.judges, runs, plan.protocol, keys,
                           lambda: Store(store_path, readonly=True))


def _collect(plan: Plan, store: Store, store_path: Path | None, table: Mapping[str, ModelPrice], *,
             aggregator: str, min_runs: int) -> tuple[RunResult, _Usage]:
    """The run's judgments, summarised in one pass over the store (parsed once, each item aggregated
    once; with a store on disk their ``judgments.jsonl`` lines are spooled beside it as they go)."""
    items, judges, runs, seed = plan.items, plan.judges, plan.runs, plan.seed
    plan.resolve(range(len(items)), None if store.readonly else store)
    order = sorted(judges)

    def keys(i: int) -> list[str]:
        h = plan.prompt_hash(i)
        return [task_key(j, r, seed + r, h) for j in order for r in range(runs)]

    uses: dict[str, int] = {}
    for i in range(len(items)):
        h = plan.prompt_hash(i)
        uses[h] = uses.get(h, 0) + 1
    per_item = runs * len(judges)
    usage = _Usage(tokens={"prompt": 0, "completion": 0, "cached_prompt": 0, "reasoning": 0},
                   distinct_requests=len(uses) * per_item,
                   shared_answers=sum(per_item for i in range(len(items)) if uses[plan.prompt_hash(i)] > 1))
    counted: set[str] = set()

    def on_rows(chunk: dict[int, Sequence[str]], rows: dict[str, StoredResponse]) -> None:
        answered = []
        for i, ks in chunk.items():
            h = plan.prompt_hash(i)
            if h in counted:
                continue
            counted.add(h)
            answered += [s for s in (rows.get(k) for k in ks) if s is not None and s.status == "done"]
        usage.count(answered)
        for s in answered:
            cost = _cost((s,), table)
            usage.cost += cost
            usage.cost_by_judge[s.judge] = usage.cost_by_judge.get(s.judge, 0.0) + cost

    if store_path is None:  # an in-memory store: small runs, kept as a list
        lazy = StoredJudgments(items, judges, runs, plan.protocol, keys, lambda: store, close_store=False)
        judgments = [jd for _, js in lazy.by_item(store, on_rows) for jd in js]
        result = RunResult(list(items), judges, plan.protocol, runs, aggregator, judgments, min_runs=min_runs)
        result.summarise()
        return result, usage
    lazy = _stored_judgments(plan, store_path)
    result = RunResult(list(items), judges, plan.protocol, runs, aggregator, lazy, min_runs=min_runs)
    spool = JudgmentSpool(store_path.parent)
    try:
        result.summarise(spool, store=store, on_rows=on_rows)
    except BaseException:
        spool.discard()
        raise
    return result, usage


def _cost(rows: Iterable[StoredResponse], prices: Mapping[str, ModelPrice]) -> float:
    """USD of stored answers, each at its model's price (the batch price for batch answers)."""
    total = 0.0
    for s in rows:
        price = prices.get(s.judge)
        if s.status == "done" and price is not None:
            total += price.cost(s.prompt_tokens, s.completion_tokens, s.cached_prompt_tokens, batch=s.channel == BATCH)
    return total


def run(items: list[Item], protocol: JudgeProtocol, backends: list[Backend], **kwargs: Any) -> RunResult:
    """Synchronous :func:`run_async` (not for use inside a running event loop)."""
    out = asyncio.run(run_async(items, protocol, backends, **kwargs))
    assert isinstance(out, RunResult)
    return out
