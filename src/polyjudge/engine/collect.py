"""From the store to a result: the judgments parsed and summarised once, or a finished run's outputs reused.

A run that has nothing left to send and whose outputs were written from the
store as it is now is not parsed again (:func:`reuse_outputs`); otherwise
:func:`collect` reads every answer once, counting tokens and cost per request.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polyjudge._version import __version__
from polyjudge.data.secrets import redact
from polyjudge.engine.caching import CACHE
from polyjudge.engine.plan import Plan, key_prefix
from polyjudge.engine.pricing import ModelPrice
from polyjudge.engine.result import RunResult, StoredJudgments
from polyjudge.engine.store import (
    BATCH,
    LIVE,
    R_CACHED_PROMPT_TOKENS,
    R_CHANNEL,
    R_COMPLETION_TOKENS,
    R_JUDGE,
    R_PROMPT_TOKENS,
    R_REASONING_TOKENS,
    R_STATUS,
    R_USAGE_NOTE,
    Row,
    Store,
    StoredResponse,
)
from polyjudge.rundir import FORMAT_VERSION, JudgmentSpool, SystemRow, output_sizes


@dataclass(slots=True)
class Usage:
    """What the distinct stored answers of a run used and cost (each request once)."""

    tokens: dict[str, int]
    cost: float = 0.0
    distinct_requests: int = 0
    shared_answers: int = 0
    answered_by_batch: int = 0
    # Answers copied from the machine's shared response cache (free: paid for by an earlier run).
    answered_from_cache: int = 0
    # Answers whose usage was not taken as the server reported it (engine.spend.vet_usage), a few as examples.
    anomalies: dict[str, Any] = field(default_factory=lambda: {"requests": 0, "examples": []})
    # The tokens of each judge (each request once), so a report's per-judge rows add up to ``tokens``.
    by_judge: dict[str, dict[str, int]] = field(default_factory=dict)
    cost_by_judge: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "cost": self.cost, "distinct_requests": self.distinct_requests,
                "shared_answers": self.shared_answers, "answered_by_batch": self.answered_by_batch,
                "answered_from_cache": self.answered_from_cache, "anomalies": self.anomalies,
                "by_judge": self.by_judge, "cost_by_judge": self.cost_by_judge}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Usage:
        return cls({str(k): int(v) for k, v in d["tokens"].items()}, float(d["cost"]), int(d["distinct_requests"]),
                   int(d["shared_answers"]), int(d["answered_by_batch"]),
                   answered_from_cache=int(d.get("answered_from_cache") or 0),
                   anomalies=dict(d.get("anomalies") or {"requests": 0, "examples": []}),
                   by_judge=dict(d.get("by_judge") or {}), cost_by_judge=dict(d.get("cost_by_judge") or {}))

    def count_rows(self, answered: Sequence[Row]) -> None:
        """Add the tokens and usage anomalies of distinct answers, from their rows as read (a million of them
        when a large run is summarised)."""
        prompt = completion = cached = reasoning = by_batch = from_cache = 0
        for r in answered:
            judge = r[R_JUDGE] or ""
            p, c, channel = r[R_PROMPT_TOKENS] or 0, r[R_COMPLETION_TOKENS] or 0, r[R_CHANNEL] or LIVE
            mine = self.by_judge.get(judge)
            if mine is None:
                mine = self.by_judge[judge] = {"prompt": 0, "completion": 0}
            mine["prompt"] += p
            mine["completion"] += c
            prompt, completion = prompt + p, completion + c
            cached += r[R_CACHED_PROMPT_TOKENS] or 0
            reasoning += r[R_REASONING_TOKENS] or 0
            by_batch += channel == BATCH
            from_cache += channel == CACHE
            if r[R_USAGE_NOTE] is not None:
                self._anomaly(judge, r[R_USAGE_NOTE])
        t = self.tokens
        t["prompt"] += prompt
        t["completion"] += completion
        t["cached_prompt"] += cached
        t["reasoning"] += reasoning
        self.answered_by_batch += by_batch
        self.answered_from_cache += from_cache

    def _anomaly(self, judge: str, note: str) -> None:
        self.anomalies["requests"] += 1
        if len(self.anomalies["examples"]) < ANOMALY_EXAMPLES:
            self.anomalies["examples"].append({"judge": judge, **json.loads(note)})


OUTPUTS_META = "outputs"
WALL_TIME_META = "wall_time_s"  # the judging sessions' wall time so far, all sessions together
ANOMALY_EXAMPLES = 20


def outputs_key(plan: Plan, aggregator: str, min_runs: int, table: Mapping[str, ModelPrice]) -> str:
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


def seconds_of(text: str | None) -> float:
    """A stored wall time; an unreadable one counts as none."""
    try:
        value = float(text or 0.0)
    except ValueError:
        return 0.0
    return value if math.isfinite(value) and value >= 0 else 0.0


def reuse_outputs(plan: Plan, store: Store, store_path: Path, out_dir: Path, key: str, *, aggregator: str,
           min_runs: int) -> tuple[RunResult, Usage] | None:
    """The result of a finished run whose outputs in ``out_dir`` were written from this store as it is
    now and with this configuration (:func:`remember_outputs`), without parsing a single answer."""
    text = store.get_meta(OUTPUTS_META)
    if text is None:
        return None
    try:
        note = json.loads(text)
        if note["key"] != key or note["state"] != store.state() or note["files"] != output_sizes(out_dir):
            return None
        usage = Usage.from_json(note["usage"])
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


def item_keys(plan: Plan) -> Callable[[int], list[str]]:
    """Item ``i``'s cache keys sorted by judge, then run: :func:`~polyjudge.engine.plan.task_key` of each, with
    each judge's and run's :func:`~polyjudge.engine.plan.key_prefix` encoded once, not once per key
    (a million keys are made when a large run is summarised; tests/engine/test_summary_rows.py)."""
    names, seed = plan.key_names, plan.seed
    before = [key_prefix(names[j], r, seed + r) for j in sorted(plan.judges) for r in range(plan.runs)]
    sha256 = hashlib.sha256

    def keys(i: int) -> list[str]:
        h = plan.prompt_hash(i).encode()
        return [sha256(b + h).hexdigest() for b in before]

    return keys


def _stored_judgments(plan: Plan, store_path: Path) -> StoredJudgments:
    """The run's judgments, read back from the store on disk when iterated."""
    return StoredJudgments(plan.items, plan.judges, plan.runs, plan.protocol, item_keys(plan),
                           lambda: Store(store_path, readonly=True))


def collect(plan: Plan, store: Store, store_path: Path | None, table: Mapping[str, ModelPrice], *,
             aggregator: str, min_runs: int) -> tuple[RunResult, Usage]:
    """The run's judgments, summarised in one pass over the store (parsed once, each item aggregated
    once; with a store on disk their ``judgments.jsonl`` lines are spooled beside it as they go)."""
    items, judges, runs = plan.items, plan.judges, plan.runs
    plan.resolve(range(len(items)), None if store.readonly else store)
    keys = item_keys(plan)
    uses: dict[str, int] = {}
    for i in range(len(items)):
        h = plan.prompt_hash(i)
        uses[h] = uses.get(h, 0) + 1
    per_item = runs * len(judges)
    usage = Usage(tokens={"prompt": 0, "completion": 0, "cached_prompt": 0, "reasoning": 0},
                   distinct_requests=len(uses) * per_item,
                   shared_answers=sum(per_item for i in range(len(items)) if uses[plan.prompt_hash(i)] > 1))
    counted: set[str] = set()
    prices: dict[str, ModelPrice | None] = {}

    def on_rows(chunk: dict[int, Sequence[str]], rows: dict[str, Row]) -> None:
        answered = []
        get = rows.get
        for i, ks in chunk.items():
            h = plan.prompt_hash(i)
            if h in counted:
                continue
            counted.add(h)
            answered += [r for r in map(get, ks) if r is not None and r[R_STATUS] == "done"]
        usage.count_rows(answered)
        by_judge = usage.cost_by_judge
        for r in answered:
            judge = r[R_JUDGE] or ""
            price = prices[judge] if judge in prices else prices.setdefault(judge, table.get(judge))
            cost = 0.0  # as cost_of((s,), table), with each judge's price looked up once
            channel = r[R_CHANNEL] or LIVE
            if price is not None and channel != CACHE:
                cost += price.cost(r[R_PROMPT_TOKENS] or 0, r[R_COMPLETION_TOKENS] or 0,
                                   r[R_CACHED_PROMPT_TOKENS] or 0, batch=channel == BATCH)
            usage.cost += cost
            by_judge[judge] = by_judge.get(judge, 0.0) + cost

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


def cost_of(rows: Iterable[StoredResponse], prices: Mapping[str, ModelPrice]) -> float:
    """USD of stored answers, each at its model's price (the batch price for batch answers; answers
    copied from the shared cache cost nothing: an earlier run paid for them)."""
    total = 0.0
    for s in rows:
        price = prices.get(s.judge)
        if s.status == "done" and price is not None and s.channel != CACHE:
            total += price.cost(s.prompt_tokens, s.completion_tokens, s.cached_prompt_tokens, batch=s.channel == BATCH)
    return total
