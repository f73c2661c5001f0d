"""Planning: items × runs × judges -> tasks with stable cache keys."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from polyjudge.backends.base import GenerateRequest
from polyjudge.data.records import Item, document_contexts
from polyjudge.protocols.base import JudgeProtocol


@dataclass(frozen=True, slots=True)
class Task:
    item_index: int
    run_index: int
    judge_index: int
    judge: str
    request: GenerateRequest
    prompt_hash: str
    key: str


def prompt_hash(request: GenerateRequest) -> str:
    d = request.canonical()
    d.pop("seed", None)
    blob = json.dumps(d, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def plan_tasks(items: list[Item], protocol: JudgeProtocol, judges: list[str], *, runs: int,
               temperature: float, seed: int) -> list[Task]:
    """One task per (item, run, judge).

    Tasks are ordered document by document, then item, run and judge, so that
    requests sharing a prompt prefix (the same document context) run together
    and a local server can reuse its KV cache. Run ``r`` gets seed ``seed + r``:
    each run is its own sample, and the same run is reproducible.
    """
    contexts = document_contexts(items)
    doc_rank: dict[str | None, int] = {}
    for it in items:
        doc_rank.setdefault(it.doc_id, len(doc_rank))
    order = sorted(range(len(items)),
                   key=lambda i: (doc_rank[items[i].doc_id] if items[i].doc_id is not None else len(doc_rank) + i, i))
    tasks: list[Task] = []
    for i in order:
        item = items[i]
        messages = tuple(protocol.messages(item, contexts[i]))
        schema = protocol.output_schema(item)
        base = GenerateRequest(messages=messages, temperature=temperature,
                               max_tokens=protocol.max_tokens, seed=None, json_schema=schema)
        phash = prompt_hash(base)
        for r in range(runs):
            request = dataclasses.replace(base, seed=seed + r)
            for j, judge in enumerate(judges):
                tasks.append(Task(i, r, j, judge, request, phash, task_key(judge, r, seed + r, phash)))
    return tasks


def task_key(judge: str, run_index: int, seed: int, phash: str) -> str:
    """Cache key: the canonical request (via its hash), the judge and the run index.

    The run index is part of the key so that run 3 of 10 is its own sample,
    never a cached copy of run 1.
    """
    return hashlib.sha256(f"{judge}\x00{run_index}\x00{seed}\x00{phash}".encode()).hexdigest()


def distinct_tasks(tasks: Iterable[Task]) -> list[Task]:
    """The first task of each cache key, in planned order: one request per distinct key.

    Items with the same prompt (identical translations from different
    systems, repeated segments) share their keys; the others are answered
    from the store by the same answer.
    """
    seen: set[str] = set()
    out: list[Task] = []
    for t in tasks:
        if t.key not in seen:
            seen.add(t.key)
            out.append(t)
    return out


def sample_groups(tasks: Iterable[Task], per_request: int | Mapping[str, int]) -> list[tuple[Task, ...]]:
    """Runs of one prompt and judge, at most ``per_request`` (per judge, when a mapping) to a group.

    A group is sent as one request with ``n`` = its size; choice k answers
    its k-th task, which keeps its own cache key. Groups keep the planned
    order of their first task (a prompt's runs stay together).
    """
    groups: dict[tuple[int, str], list[Task]] = {}
    for t in tasks:
        groups.setdefault((t.judge_index, t.prompt_hash), []).append(t)
    out: list[tuple[Task, ...]] = []
    for members in groups.values():
        size = per_request.get(members[0].judge, 1) if isinstance(per_request, Mapping) else per_request
        size = max(1, size)
        members.sort(key=lambda t: t.run_index)
        out += [tuple(members[i:i + size]) for i in range(0, len(members), size)]
    return out
