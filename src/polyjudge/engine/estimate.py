"""What a run would send and cost before anything is sent (``--dry-run``).

Kept apart from the orchestration (:mod:`polyjudge.engine.core`) because it
reads a plan and a store's keys only: no backend, no executor, no writing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from polyjudge.data.records import Item
from polyjudge.engine.long_prompts import Blob, blob_of, common_prefix, has_long_piece
from polyjudge.engine.long_prompts import prompt_bytes as prompt_bytes_of
from polyjudge.engine.plan import Plan, Task, distinct_tasks, sample_groups, task_key
from polyjudge.engine.pricing import ModelPrice, price_table

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


# What the duration estimate assumes one request of a hosted API takes (a short judgment answer, seconds).
TYPICAL_API_LATENCY_S = 2.0


@dataclass(frozen=True, slots=True)
class DurationEstimate:
    """How long sending a run's requests would take, and what that figure rests on.

    ``seconds`` is None when nothing known bounds it (a self-hosted server or the embedded judge, whose
    pace depends on the machine): then the progress bar's ETA, measured from the first answers, says.
    """

    seconds: float | None
    basis: str

    def describe(self) -> str:
        if self.seconds is None:
            return f"duration: unknown ({self.basis})"
        return f"duration: about {_clock(self.seconds)} ({self.basis})"

    def to_dict(self) -> dict[str, Any]:
        return {"seconds": None if self.seconds is None else round(self.seconds, 1), "basis": self.basis}


def _clock(seconds: float) -> str:
    whole = max(1, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def estimate_duration(calls: int, tokens: int, *, concurrency: int, rpm: float | None = None,
                      tpm: float | None = None, measured_judges: Sequence[str] = (),
                      latency_s: float = TYPICAL_API_LATENCY_S) -> DurationEstimate:
    """The time ``calls`` requests (``tokens`` prompt and completion tokens at most) take at ``concurrency``
    in flight, ``latency_s`` each, within ``rpm``/``tpm`` per minute: the slowest of those bounds.
    With ``measured_judges`` (self-hosted or embedded) the pace is not known before they answer."""
    if measured_judges:
        return DurationEstimate(None, f"the pace of {', '.join(measured_judges)} is this machine's or its "
                                      "server's; the progress bar shows an ETA once the first answers arrive")
    if calls == 0:
        return DurationEstimate(0.0, "nothing to send")
    bounds = [(calls * latency_s / max(1, concurrency),
               f"{calls:,} requests, {concurrency} in flight at a typical {latency_s:g}s each")]
    if rpm:
        bounds.append((calls / rpm * 60.0, f"{calls:,} requests at --rpm {rpm:g}"))
    if tpm:
        bounds.append((tokens / tpm * 60.0, f"up to {tokens:,} tokens at --tpm {tpm:g}"))
    seconds, why = max(bounds)
    others = [w for b, w in bounds if w != why]
    return DurationEstimate(seconds, why + (f"; also bounded by {'; '.join(others)}" if others else ""))


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
    # Distinct requests the machine's shared response cache answers (counted in requests_cached, free).
    from_shared_cache: int = 0
    # Each judge's endpoint as the run would use it (credentials masked): "judge: URL" or "judge: embedded".
    endpoints: tuple[str, ...] = ()
    # One line per self-hosted server that takes no connection now ("unreachable: HOST:PORT ..."): the plan
    # is still made (one plans before starting it), the run refuses it.
    unreachable: tuple[str, ...] = ()
    duration: DurationEstimate | None = None

    def describe(self) -> str:
        shared_cache = f", {self.from_shared_cache} of them in the shared cache" if self.from_shared_cache else ""
        text = (f"{self.requests_to_send} requests to send ({self.requests_cached} of "
                f"{self.requests_total} already in the store{shared_cache}); about {self.prompt_tokens:,} prompt "
                f"tokens and at most {self.max_completion_tokens:,} completion tokens")
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
        if self.duration is not None:
            text += f"; {self.duration.describe()}"
        if self.endpoints:
            text += f"\nendpoints: {'; '.join(self.endpoints)}"
        for line in self.unreachable:
            text += f"\nwarning: {line}; start the server before the run (the run refuses it while it is down)"
        # One row per way (a local judge's "several samples" way is its one-per-run way), none when every way
        # is free (a local model: no price, no batch API to compare).
        priced = list({s.label: s for s in self.scenarios if s.cost_usd is not None}.values())
        if any(s.cost_usd for s in priced):
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
                "from_shared_cache": self.from_shared_cache, "scenarios": [s.to_dict() for s in self.scenarios],
                "endpoints": list(self.endpoints), "unreachable": list(self.unreachable),
                "duration": None if self.duration is None else self.duration.to_dict()}


def _prompt_bytes(task: Task) -> int:
    return prompt_bytes_of(task.request.messages)


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


def _judge_cost(price: ModelPrice, tokens_in: float, cached: int, completion: int, batch: bool,
                requests: int = 1) -> tuple[float, float]:
    """One judge's USD at most, without and with likely prompt-cache hits (a long-context tier
    chosen by the mean prompt of its ``requests``)."""
    price = price.at(tokens_in / max(requests, 1))
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
            full, with_cache = _judge_cost(prices[judge], tokens_in, cached, completion, batch, len(mine))
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
    table = price_table(prices)
    judges = list(dict.fromkeys(t.judge for t in tasks))
    size: dict[str, int] = {}
    for t in todo:
        if t.prompt_hash not in size:
            size[t.prompt_hash] = _prompt_bytes(t)
    configured = per_judge(samples_per_request, judges, free)
    most = max((len(g) for g in sample_groups(todo, 1_000_000)), default=1)
    wanted = max(configured.values(), default=1)
    alternative = wanted if wanted > 1 else min(most, 10)
    scenarios: list[CostScenario] = []
    for spr in dict.fromkeys([1, alternative]):
        for in_batch in (False, True):
            scenarios.append(_scenario(todo, per_judge(spr, judges, free), in_batch, judges, table, free, size))
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
    previous: bytes | Blob | None = None

    def add(self, runs: int, prompt_bytes: int, blob: bytes | Blob | None, blob_len: int) -> None:
        self.tasks += runs
        self.prompts_by_runs[runs] = self.prompts_by_runs.get(runs, 0) + 1
        self.bytes_by_runs[runs] = self.bytes_by_runs.get(runs, 0) + prompt_bytes
        self.repeat_cache_by_runs[runs] = self.repeat_cache_by_runs.get(runs, 0) + \
            _cacheable_tokens(blob_len, prompt_bytes)
        if blob is not None and self.previous is not None:
            self.prefix_cached += _cacheable_tokens(_shared_prefix(self.previous, blob), prompt_bytes)
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
    elsewhere: set[str] = field(default_factory=set)  # keys the lookup (the shared cache) answers
    smallest_context: float = float("inf")  # no prompt under it needs a look at each judge's context


# (judge, cache key) pairs -> the keys answered somewhere other than the run's store (the shared cache).
Lookup = Callable[[Sequence[tuple[str, str]]], Collection[str]]
# Prompts rendered ahead of their tally: enough to look their keys up in one query, few enough to hold.
_CHUNK_ITEMS, _CHUNK_BYTES = 2048, 1 << 25


@dataclass(frozen=True, slots=True)
class _Prompt:
    """One item's rendered prompt as the walk needs it: hash and sizes, no text kept."""

    index: int
    prompt_hash: str
    prompt_bytes: int
    blob: bytes | Blob | None
    blob_len: int


def _request_sizes(messages: Sequence[Any]) -> tuple[int, bytes | Blob | None, int]:
    """(prompt bytes, blob for prefix matching or None when too short to be cached, blob length)."""
    if has_long_piece(messages):
        blob = blob_of(messages)
        return prompt_bytes_of(messages), blob, len(blob)
    encoded = [(m.role.encode(), m.content.encode("utf-8", "surrogatepass")) for m in messages]
    prompt_bytes = sum(len(c) for _, c in encoded)
    blob_len = sum(len(r) + 1 + len(c) for r, c in encoded) + max(0, len(encoded) - 1)
    if blob_len // 4 < CACHE_MIN_TOKENS:  # no prefix of it can reach the cache's minimum
        return prompt_bytes, None, blob_len
    return prompt_bytes, b"\x00".join(r + b"\x01" + c for r, c in encoded), blob_len


def _shared_prefix(a: bytes | Blob, b: bytes | Blob) -> int:
    """Common prefix of two prompt blobs (long pieces held by both are not compared byte by byte)."""
    if isinstance(a, bytes) and isinstance(b, bytes):
        return _common_prefix(a, b)
    return common_prefix(a if isinstance(a, Blob) else Blob((a,)), b if isinstance(b, Blob) else Blob((b,)),
                         _common_prefix)


def _rendered(plan: Plan) -> Iterator[list[_Prompt]]:
    """The plan's prompts in planned order, each rendered once, in chunks (the text is dropped)."""
    chunk: list[_Prompt] = []
    held = 0
    for i in plan.order:
        messages, prompt_hash = plan.prompt(i)
        size, blob, blob_len = _request_sizes(messages)
        chunk.append(_Prompt(i, prompt_hash, size, blob, blob_len))
        held += len(blob) if isinstance(blob, bytes) else 0
        if len(chunk) >= _CHUNK_ITEMS or held >= _CHUNK_BYTES:
            yield chunk
            chunk, held = [], 0
    if chunk:
        yield chunk


def _keys(plan: Plan, prompt: _Prompt) -> list[list[str]]:
    """An item's cache keys, by run then judge."""
    return [[task_key(plan.key_names[judge], r, plan.seed + r, prompt.prompt_hash) for judge in plan.judges]
            for r in range(plan.runs)]


def _walk_plan(plan: Plan, cached: Collection[str], context_sizes: Mapping[str, int],
               elsewhere: Lookup | None = None) -> _PlanWalk:
    """One streamed pass in planned order: each item's prompt is rendered once and dropped, so
    memory holds a chunk of prompt sizes and no task list (what :func:`estimate` builds). Keys
    missing from ``cached`` are looked up ``elsewhere`` a chunk at a time."""
    walk = _PlanWalk(tallies={j: _JudgeTally() for j in plan.judges},
                     smallest_context=min((context_sizes[j] for j in plan.judges if j in context_sizes),
                                          default=float("inf")))
    seen: set[str] = set()
    everything = [[True] * len(plan.judges) for _ in range(plan.runs)]
    for chunk in _rendered(plan):
        # Keys are only computed to be looked up: with nothing stored and no lookup, none is.
        keys = {p.index: _keys(plan, p) for p in chunk} if cached or elsewhere is not None else {}
        found: Collection[str] = ()
        if elsewhere is not None:
            found = set(elsewhere([(judge, row[k]) for rows in keys.values() for row in rows
                                   for k, judge in enumerate(plan.judges) if row[k] not in cached]))
            walk.elsewhere |= found
        for prompt in chunk:
            todo = [[key not in cached and key not in found for key in row] for row in keys[prompt.index]] \
                if keys else everything
            _tally(walk, plan, prompt, todo, seen, context_sizes)
    return walk


def _tally(walk: _PlanWalk, plan: Plan, prompt: _Prompt, todo: list[list[bool]], seen: set[str],
           context_sizes: Mapping[str, int]) -> None:
    """Count one item's tasks still to send (``todo``, by run then judge) into ``walk``."""
    walk.total += plan.runs * len(plan.judges)
    n_item = sum(map(sum, todo))
    if n_item == 0:
        return
    walk.pending += n_item
    tokens, max_tokens = prompt.prompt_bytes // 4, plan.protocol.max_tokens
    if tokens + max_tokens > walk.smallest_context:
        _note_oversized(walk, prompt.index, plan, todo, tokens, max_tokens, context_sizes)
    if prompt.prompt_hash in seen:
        return
    seen.add(prompt.prompt_hash)
    walk.distinct += n_item
    for k, judge in enumerate(plan.judges):
        runs = sum(row[k] for row in todo)
        if runs:
            walk.most = max(walk.most, runs)
            walk.tallies[judge].add(runs, prompt.prompt_bytes, prompt.blob, prompt.blob_len)


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
            full, with_cache = _judge_cost(prices[judge], b / 4, cached, tally.tasks * max_tokens, batch, n)
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
                  samples_per_request: int | Mapping[str, int] = 1, batch: bool = False,
                  elsewhere: Lookup | None = None) -> Estimate:
    """:func:`estimate` of a whole plan in one streamed pass (``--dry-run``): the same Estimate
    (oversized prompts included), in memory linear in the items and time linear in the prompts.
    Keys not in ``cached`` that ``elsewhere`` answers (the shared cache) count as answered."""
    walk = _walk_plan(plan, cached, context_sizes or {}, elsewhere)
    table = price_table(prices)
    judges, max_tokens = plan.judges, plan.protocol.max_tokens
    configured = per_judge(samples_per_request, judges, free)
    wanted = max(configured.values(), default=1)
    alternative = wanted if wanted > 1 else min(walk.most, 10)
    scenarios = [_walk_scenario(walk, per_judge(spr, judges, free), in_batch, judges, table, free, max_tokens)
                 for spr in dict.fromkeys([1, alternative]) for in_batch in (False, True)]
    mine = _walk_scenario(walk, configured, batch, judges, table, free, max_tokens)
    unpriced = tuple(j for j in judges if j not in table and j not in free)
    return Estimate(walk.total, walk.total - walk.pending, walk.distinct, mine.prompt_tokens,
                    mine.max_completion_tokens, mine.cost_usd, unpriced, tuple(walk.oversized),
                    shared=walk.pending - walk.distinct, calls=mine.requests,
                    cached_prompt_tokens=mine.cached_prompt_tokens, samples_per_request=wanted, batch=batch,
                    scenarios=tuple(scenarios), from_shared_cache=len(walk.elsewhere))


def per_judge(samples: int | Mapping[str, int], judges: Sequence[str], free: Collection[str]) -> dict[str, int]:
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
