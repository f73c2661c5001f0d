"""Planning: items × runs × judges -> tasks with stable cache keys."""

from __future__ import annotations

import dataclasses
import hashlib
import json
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
