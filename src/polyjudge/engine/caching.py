"""The machine's shared response cache, seen from one run (see :mod:`polyjudge.cache`).

Before anything is sent, the answers the run's store lacks are looked up in
the cache and copied into the store (:func:`adopt`), marked with the channel
``cache``: the store stays the run's whole record, and the spending cap, the
cost and the summary count those answers as free. After the executor (local,
Ray or a Batch API) has answered, the new answers are read back from the
store and kept in the cache (:func:`keep`). Both use the store's own keys
(:func:`polyjudge.engine.plan.task_key`: model, messages, parameters, seed and
run index), under the judge's scope (backend and endpoint), so run r of N is
never another run's copy and two servers never answer for each other.

Only answers are kept: a failure is never an entry, and an answer the store
holds as refused, filtered, truncated or with doubtful usage is kept as what
it is (a re-run must not buy it again either). An embedded model's answers
are kept too, under its weights' SHA-256 and the settings that change them
(:data:`IDENTITY`), so other weights of the same name never answer; a replay
file is its own cache and is left out.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from polyjudge.backends.base import ANSWERS_IDENTITY as IDENTITY
from polyjudge.cache import CachedAnswer, CacheUnavailable, ResponseCache
from polyjudge.data.chat import GenerateResult, Usage
from polyjudge.data.secrets import redact, redact_url
from polyjudge.engine.plan import Plan
from polyjudge.engine.pricing import ModelPrice, PriceTable, maintained_source
from polyjudge.engine.store import (
    BATCH,
    EXPORT,
    Answerable,
    AnswerKey,
    Store,
    StoredResponse,
    logprobs_of,
    served_of,
)

log = logging.getLogger("polyjudge")

CACHE = "cache"  # the store channel of answers copied from the shared cache (cost nothing new)
SYNC_META = "shared_cache_synced"  # the cache and store state last filled from this store
IMPORTED_META = "batch_imported_from"  # the base name of the last --batch-import file loaded into the store


@dataclass(frozen=True, slots=True)
class CacheUse:
    """A run's view of the cache: the judges it serves (judge -> scope) and whether it may be read."""

    cache: ResponseCache
    scopes: Mapping[str, str]
    read: bool = True
    imported: set[str] = field(default_factory=set)  # keys adopted whose cached answer came from a batch file

    def close(self) -> None:
        self.cache.close()


class RememberedPrices:
    """What genai-prices gave for a model today, kept in the shared cache (a ``PriceMemo``).

    Loading genai-prices and its data costs a run about 0.1 s of CPU for a price it already knew
    yesterday; the cache remembers the answer under the installed version of genai-prices and the UTC
    day (prices in it change on given dates), so a new version or a new day asks it again. An entry
    that cannot be read is asked again; a cache that cannot be read or written costs only the lookup.
    """

    def __init__(self, use: CacheUse) -> None:
        self.use = use
        self.source = f"{maintained_source()} {datetime.now(UTC).date().isoformat()}"

    def get(self, model: str) -> tuple[bool, ModelPrice | None]:
        if not self.use.read:
            return False, None
        try:
            text = self.use.cache.looked_up_price(self.source, model)
            if text is None:
                return False, None
            data = json.loads(text)
            return True, None if data is None else ModelPrice.from_json(data)
        except (sqlite3.Error, ValueError, TypeError, KeyError) as exc:
            log.debug("the shared response cache's remembered price of %s could not be read (%s)", model, exc)
            return False, None

    def put(self, model: str, price: ModelPrice | None) -> None:
        try:
            self.use.cache.put_looked_up_price(self.source, model, json.dumps(None if price is None
                                                                              else price.to_json()))
        except sqlite3.Error as exc:
            log.debug("the shared response cache could not remember the price of %s (%s)", model, exc)


@contextmanager
def prices_remembered(table: Mapping[str, ModelPrice], use: CacheUse | None) -> Iterator[None]:
    """While the run has the cache open, ``table`` asks it what genai-prices gave before (:class:`RememberedPrices`)."""
    if use is None or not isinstance(table, PriceTable):
        yield
        return
    table.memo = RememberedPrices(use)
    try:
        yield
    finally:
        table.memo = None




def judge_scope(info: Mapping[str, Any] | None) -> str:
    """Where a judge's answers come from: its backend and endpoint(s), credentials masked; for an
    embedded model, its weights' digest and the settings that change answers."""
    if not info:
        return ""
    identity = info.get(IDENTITY)
    if isinstance(identity, str):
        return str(redact(identity))
    servers = info.get("servers")
    where = ",".join(str(redact_url(str(s))) for s in servers) if servers else redact_url(info.get("base_url")) or ""
    return redact(f"{info.get('backend', '')}@{where}")


def scopes_of(judges: Sequence[str], info: Sequence[Mapping[str, Any]] | None,
              free: Collection[str]) -> dict[str, str]:
    """The scope of each judge the cache serves: paid judges, and free ones that say what their answers
    depend on (an embedded model: its weights and settings); a replay file is its own cache."""
    entries = list(info) if info else [{}] * len(judges)
    return {j: judge_scope(e) for j, e in zip(judges, entries) if j not in free or isinstance(e.get(IDENTITY), str)}


def open_cache(folder: Path | None, judges: Sequence[str], info: Sequence[Mapping[str, Any]] | None,
               free: Collection[str], *, read: bool = True, readonly: bool = False) -> CacheUse | None:
    """The cache for a run (None without a folder or when no judge is served by it, and when it cannot
    be opened: the cache is optional, so the run warns and goes on without it)."""
    scopes = scopes_of(judges, info, free)
    if folder is None or not scopes:
        return None
    try:
        return CacheUse(ResponseCache(folder, readonly=readonly), scopes, read)
    except CacheUnavailable as exc:
        log.warning("%s; the run goes on without the shared response cache", exc)
        return None


def item_answer_keys(plan: Plan, i: int) -> list[AnswerKey]:
    """Item ``i``'s tasks as store keys, without rendering a prompt the plan knows the hash of."""
    h = plan.prompt_hash(i)
    places = [(r, j) for r in range(plan.runs) for j in plan.judges]  # Plan.keys_of's order
    return [AnswerKey(k, h, j, r) for k, (r, j) in zip(plan.keys_of(i), places)]


def _by_judge(tasks: Iterable[Answerable], scopes: Mapping[str, str]) -> dict[str, list[Answerable]]:
    out: dict[str, list[Answerable]] = {}
    for t in tasks:
        if t.judge in scopes:
            out.setdefault(t.judge, []).append(t)
    return out


def adopt(use: CacheUse | None, store: Store, wanted: Sequence[Answerable]) -> set[str]:
    """Copy the cache's answers for ``wanted`` (tasks the store lacks) into the store, in one
    transaction; the keys copied."""
    if use is None or not use.read or store.readonly or not wanted:
        return set()
    copied: set[str] = set()
    with store.transaction():
        for judge, tasks in _by_judge(wanted, use.scopes).items():
            found = _looked_up(use, judge, [t.key for t in tasks])
            for t in tasks:
                answer = found.get(t.key)
                if answer is not None and t.key not in copied:
                    _store_answer(store, t, answer)
                    copied.add(t.key)
                    if answer.source is not None:
                        use.imported.add(t.key)
    return copied


def _looked_up(use: CacheUse, judge: str, keys: Sequence[str]) -> dict[str, CachedAnswer]:
    """The cache's answers for ``keys``; a cache that cannot be read answers nothing (the run sends)."""
    try:
        return use.cache.get_many(use.scopes[judge], keys)
    except sqlite3.Error as exc:
        log.warning("the shared response cache %s could not be read (%s); sending instead", use.cache.path, exc)
        return {}


def _store_answer(store: Store, task: Answerable, a: CachedAnswer) -> None:
    """One cached answer into the run's store, as the executor would have stored it (channel ``cache``)."""
    model, fingerprint = served_of(a.served)  # what the server said answered, kept with the entry
    result = GenerateResult(text=cast(str, a.text), finish_reason=cast(str, a.finish_reason),
                            usage=Usage(a.prompt_tokens, a.completion_tokens, a.cached_prompt_tokens,
                                        a.reasoning_tokens),
                            latency_s=a.latency_s, logprobs=logprobs_of(a.logprobs), reasoning=a.reasoning,
                            model=model, system_fingerprint=fingerprint)
    store.put_result(task, result, 0, channel=CACHE, usage_note=a.usage_note)


def _entry(s: StoredResponse) -> CachedAnswer:
    return CachedAnswer(s.key, s.judge, s.text, s.finish_reason, s.prompt_tokens, s.completion_tokens,
                        s.cached_prompt_tokens, s.reasoning_tokens, s.latency_s, s.reasoning, s.logprobs,
                        s.usage_note, served=s.served)


def keep(use: CacheUse | None, store: Store, keys: Iterable[str], *, imported_from: str | Path | None = None) -> int:
    """Keep in the cache the answers the store holds for ``keys`` (failures and answers that came
    from the cache are left out); how many entries were new. ``imported_from``: the answers came
    from this batch output file, not from the endpoint, and their new entries are marked so."""
    if use is None:
        return 0
    rows = store.get_many(list(dict.fromkeys(keys)))
    by_scope: dict[tuple[str, str | None], list[CachedAnswer]] = {}
    source = _imports_of(store, rows.values(), imported_from)
    for s in rows.values():
        if s.status == "done" and s.channel != CACHE and s.judge in use.scopes:
            by_scope.setdefault((use.scopes[s.judge], source(s)), []).append(_entry(s))
    try:
        return sum(use.cache.put_many(scope, answers, source=where) for (scope, where), answers in by_scope.items())
    except sqlite3.Error as exc:  # the run's store has them: the run goes on, only later runs pay again
        log.warning("the shared response cache %s could not keep %d answer(s) (%s); the run directory keeps "
                    "them", use.cache.path, len(rows), exc)
        return 0


def _imports_of(store: Store, rows: Iterable[StoredResponse],
                imported_from: str | Path | None) -> Callable[[StoredResponse], str | None]:
    """Which batch file each answer was imported from (None: the endpoint answered it). Without
    ``imported_from`` (answers offered again from the store: a session killed before it filled the
    cache, an import made with --no-cache), a batch answer no batch this run sent asked for came from
    a file, named by the store's note of the last import."""
    if imported_from is not None:
        return lambda s: str(imported_from) if s.channel == BATCH else None
    if not any(s.channel == BATCH for s in rows):
        return lambda s: None
    sent = {line.key for b in store.batches() if b.provider != EXPORT for line in store.batch_lines(b.submission)}
    name = store.get_meta(IMPORTED_META) or "?"
    return lambda s: name if s.channel == BATCH and s.key not in sent else None


def cached_adaptations(use: CacheUse | None) -> dict[str, dict[str, str]]:
    """What each judge's backend changed in the requests whose answers the cache holds (a run that
    takes answers from the cache sends nothing, so its backends learn nothing themselves)."""
    if use is None or not use.read:
        return {}
    try:
        found = {j: use.cache.adaptations(scope, j) for j, scope in use.scopes.items()}
    except sqlite3.Error:
        return {}
    return {j: a for j, a in found.items() if a}


def keep_adaptations(use: CacheUse | None, adapted: Mapping[str, Mapping[str, str]]) -> None:
    """Record in the cache what each judge's backend changed in its requests (see the manifest's judges)."""
    if use is None:
        return
    try:
        for judge, changes in adapted.items():
            if judge in use.scopes and changes:
                use.cache.put_adaptations(use.scopes[judge], judge, changes)
    except sqlite3.Error as exc:
        log.warning("the shared response cache %s could not keep what the backends adapted (%s)",
                    use.cache.path, exc)


def _sync_mark(use: CacheUse, store: Store) -> str:
    return json.dumps([str(use.cache.path), store.state(), sorted(use.scopes.items())])


def needs_backfill(use: CacheUse | None, store: Store) -> bool:
    """Whether the store may hold answers the cache never got (a session killed before it filled the
    cache, a run judged with --no-cache): then the answers found in the store are offered too."""
    return use is not None and not store.readonly and store.get_meta(SYNC_META) != _sync_mark(use, store)


def mark_synced(use: CacheUse | None, store: Store) -> None:
    """Note that every answer of the store as it is now was offered to the cache."""
    if use is not None and not store.readonly:
        store.set_meta(SYNC_META, _sync_mark(use, store))


def cache_lookup(use: CacheUse | None) -> Callable[[Sequence[tuple[str, str]]], set[str]] | None:
    """What the dry run asks the cache: which of these (judge, key) pairs it would answer
    (None when the cache is not read or holds nothing for these judges)."""
    if use is None or not use.read:
        return None
    problem = use.cache.problem()  # a damaged page may hide answers the real run then pays for
    if problem is not None:
        log.warning("the shared response cache %s is damaged (%s): no answer is counted from it, every "
                    "request is counted as to send", use.cache.path, problem)
        return None
    scopes = {judge: scope for judge, scope in use.scopes.items() if use.cache.holds_any(scope)}
    if not scopes:
        return None

    def lookup(pairs: Sequence[tuple[str, str]]) -> set[str]:
        by_judge: dict[str, list[str]] = {}
        for judge, key in pairs:
            if judge in scopes:
                by_judge.setdefault(judge, []).append(key)
        found: set[str] = set()
        for judge, keys in by_judge.items():
            found |= use.cache.has_many(scopes[judge], keys)
        return found

    return lookup


__all__ = ["CACHE", "CacheUse", "adopt", "cached_adaptations", "cache_lookup", "item_answer_keys", "judge_scope",
           "keep", "keep_adaptations", "mark_synced", "needs_backfill", "open_cache", "scopes_of"]
