"""Every request and answer, kept in SQLite in the run directory.

The store is the resume cache: a task whose key is present with status
``done`` is never sent again. Rows are committed as answers arrive (WAL
mode), so a run killed at any moment loses at most the requests that were in
flight. While live requests are sent (:meth:`Store.deferring`), the answers
that arrive in one turn of the event loop are committed together at the end
of it, and a worker takes its next request only once its answer is committed
(:meth:`Store.committed`): each request slot holds either a request in flight
or an answer not yet committed, never both, so the bound is the same.

Batches submitted to a provider's Batch API are kept too (``batches`` and
``batch_lines``): which batch holds which task keys, so a run that was
killed re-attaches to its batches instead of paying for them twice.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import math
import operator
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from json.encoder import encode_basestring  # json.dumps' own escaping with ensure_ascii=False
from pathlib import Path
from typing import Any, Protocol

from polyjudge.backends.reported import as_json_text
from polyjudge.data.chat import GenerateRequest, GenerateResult, TokenLogprob, Usage
from polyjudge.data.secrets import Redactor, mask_token_rows, redact

SCHEMA = """
CREATE TABLE IF NOT EXISTS prompts (
    prompt_hash TEXT PRIMARY KEY,
    request_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    prompt_hash TEXT NOT NULL,
    judge TEXT NOT NULL,
    run_index INTEGER NOT NULL,
    status TEXT NOT NULL,            -- 'done' (an answer came back) or 'failed'
    text TEXT,
    finish_reason TEXT,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    latency_s REAL,
    error TEXT,
    attempts INTEGER NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS batches (
    submission TEXT PRIMARY KEY,     -- our id, also sent with the batch so it can be found after a crash
    provider TEXT NOT NULL,          -- the batch client ('openai'), or 'export' for --batch-export
    judge TEXT NOT NULL,
    endpoint TEXT,                   -- where it was sent (credentials masked)
    key_env TEXT,                    -- the environment variable that held the API key (never the key)
    batch_id TEXT,                   -- the provider's id, once the batch exists
    status TEXT NOT NULL,            -- 'submitting' until created, then the provider's word
    total INTEGER NOT NULL,
    completed INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    expires_at REAL,
    collected INTEGER NOT NULL DEFAULT 0,  -- 1 once its answers are in responses
    error TEXT
);
CREATE TABLE IF NOT EXISTS batch_lines (
    submission TEXT NOT NULL,
    custom_id TEXT NOT NULL,
    choice INTEGER NOT NULL,         -- choice k of the line's answer answers this task
    key TEXT NOT NULL,
    prompt_hash TEXT NOT NULL,
    judge TEXT NOT NULL,
    run_index INTEGER NOT NULL,
    PRIMARY KEY (submission, custom_id, choice)
);
CREATE INDEX IF NOT EXISTS batch_lines_key ON batch_lines(key);
CREATE TABLE IF NOT EXISTS item_prompts (
    fingerprint TEXT PRIMARY KEY,    -- an item, its document context and the prompt code (engine.plan.Plan)
    prompt_hash TEXT NOT NULL        -- the hash of the prompt it renders to
);
CREATE INDEX IF NOT EXISTS batch_lines_custom_id ON batch_lines(custom_id);
"""

# Columns added after 0.1.0; stores written before get them on open (NULL in old rows).
ADDED_COLUMNS = {"cached_prompt_tokens": "INTEGER", "reasoning_tokens": "INTEGER", "channel": "TEXT",
                 "reasoning": "TEXT", "logprobs": "TEXT", "usage_note": "TEXT",
                 # What the server said answered: JSON [served model, system_fingerprint] (NULL: it said nothing).
                 "served": "TEXT"}
LIVE, BATCH = "live", "batch"
SUBMITTING, EXPORTED, EXPORT = "submitting", "exported", "export"


class Answerable(Protocol):
    """What storing an answer needs of a task (a planned task, a stored batch line or an :class:`AnswerKey`)."""

    @property
    def key(self) -> str: ...

    @property
    def prompt_hash(self) -> str: ...

    @property
    def judge(self) -> str: ...

    @property
    def run_index(self) -> int: ...


@dataclass(frozen=True, slots=True)
class AnswerKey:
    """Where an answer goes, given by hand (tools and tests that write a store without a plan)."""

    key: str
    prompt_hash: str
    judge: str
    run_index: int


@dataclass(frozen=True, slots=True)
class StoredResponse:
    key: str
    status: str
    text: str | None
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    error: str | None
    attempts: int
    cached_prompt_tokens: int = 0
    reasoning_tokens: int = 0
    channel: str = LIVE  # 'live' or 'batch' (answered through a Batch API, priced at the batch price)
    judge: str = ""
    reasoning: str | None = None  # the model's thinking beside the answer, when its server returned it
    # The answer's token probabilities as JSON (requests that asked for top_logprobs), see logprob_json.
    logprobs: str | None = None
    # Why the counts above are not what the server reported, with what it reported (engine.spend.vet_usage).
    usage_note: str | None = None
    served: str | None = None  # what the server said answered: JSON [served model, system_fingerprint]

    @property
    def usage(self) -> Usage:
        return Usage(self.prompt_tokens, self.completion_tokens, self.cached_prompt_tokens, self.reasoning_tokens)


@dataclass(frozen=True, slots=True)
class StoredAnswer:
    """A stored answer as a drift check reads it (:meth:`Store.answers_to`)."""

    judge: str
    text: str | None
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    logprobs: str | None
    served: tuple[str | None, str | None]  # (served model, system_fingerprint)


@dataclass(frozen=True, slots=True)
class BatchLineRow:
    """One task of a submitted batch: ``choice`` of line ``custom_id``'s answer answers ``key``."""

    custom_id: str
    choice: int
    key: str
    prompt_hash: str
    judge: str
    run_index: int


@dataclass(frozen=True, slots=True)
class BatchRecord:
    """One batch of a run: as the store knows it (the provider's status as last seen), and as
    ``polyjudge batch status`` shows it (with the provider's newer status and a ``note``)."""

    submission: str
    provider: str
    judge: str
    endpoint: str | None
    key_env: str | None
    batch_id: str | None
    status: str
    total: int
    completed: int
    failed: int
    created: float
    expires_at: float | None
    collected: bool
    error: str | None
    note: str | None = None  # why the provider could not be asked, when it could not

    @property
    def open(self) -> bool:
        return not self.collected and self.provider != EXPORT

    def to_dict(self) -> dict[str, Any]:
        """What ``polyjudge batch status --format json`` prints (never the key's variable name)."""
        return {"submission": self.submission, "provider": self.provider, "judge": self.judge,
                "endpoint": self.endpoint, "batch_id": self.batch_id, "status": self.status, "total": self.total,
                "completed": self.completed, "failed": self.failed, "created": _local_time(self.created),
                "expires_at": None if self.expires_at is None else _local_time(self.expires_at),
                "collected": self.collected, "note": self.note}


def _local_time(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(seconds))


_RESPONSE_COLUMNS = ("key", "status", "text", "finish_reason", "prompt_tokens", "completion_tokens", "latency_s",
                     "error", "attempts", "cached_prompt_tokens", "reasoning_tokens", "channel", "judge",
                     "reasoning", "logprobs", "usage_note", "served")
# A row of ``_RESPONSE_COLUMNS`` as read (NULLs as SQLite gives them; :func:`_stored` gives them their defaults),
# and the place of each column in it: the bulk readers of a million answers (engine.result) use rows as they are.
Row = tuple[Any, ...]
(R_KEY, R_STATUS, R_TEXT, R_FINISH_REASON, R_PROMPT_TOKENS, R_COMPLETION_TOKENS, R_LATENCY_S, R_ERROR, R_ATTEMPTS,
 R_CACHED_PROMPT_TOKENS, R_REASONING_TOKENS, R_CHANNEL, R_JUDGE, R_REASONING, R_LOGPROBS, R_USAGE_NOTE,
 R_SERVED) = range(17)
_BATCH_COLUMNS = ("submission", "provider", "judge", "endpoint", "key_env", "batch_id", "status", "total",
                  "completed", "failed", "created", "expires_at", "collected", "error")


_INT64_MAX = 2**63 - 1


def _count(value: int) -> int:
    """A token count SQLite can hold (the engine bounds counts first; this is the last guard)."""
    if type(value) is int and 0 <= value <= _INT64_MAX:  # the usual count, as it is
        return value
    return min(max(int(value), 0), _INT64_MAX) if isinstance(value, int) else 0


def _text(value: object) -> str | None:
    return None if value is None else as_json_text(value)


def _seconds(value: float) -> float:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else 0.0


_CHUNK = 500  # keys per IN (...) query, well under SQLite's variable limit
# Rows a RowScan holds read ahead of the keys asked for (stored out of order, or not asked for at all).
SCAN_SLACK = 50_000
MMAP_BYTES = 128 << 20  # mapped pages count in the resident size: bounded well under the memory goal


def logprob_json(tokens: Sequence[TokenLogprob]) -> str:
    """Token probabilities as stored: ``[[token, logprob, [[alt, logprob], ...]], ...]``."""
    return json.dumps([[t.token, t.logprob, [list(a) for a in t.top]] for t in tokens], ensure_ascii=False)


def masked_tokens(mask: Redactor, tokens: Sequence[TokenLogprob]) -> list[TokenLogprob]:
    """``tokens`` with the secrets their joined text holds masked (:func:`~polyjudge.data.secrets.mask_tokens`)."""
    rows = mask_token_rows(mask, [[t.token, t.logprob, list(t.top)] for t in tokens])
    return [t if r[0] == t.token else TokenLogprob(r[0], t.logprob, ()) for t, r in zip(tokens, rows)]


def served_json(result: GenerateResult) -> str | None:
    """What the server said answered, as the store keeps it (None when it named no model)."""
    model, fingerprint = result.model, result.system_fingerprint
    if not isinstance(model, str):
        return None
    if type(model) is str and (fingerprint is None or type(fingerprint) is str):
        return _served_text(model, fingerprint)  # a run's answers name one server: written once
    return json.dumps([model, fingerprint], ensure_ascii=False)


@functools.lru_cache(maxsize=64)
def _served_text(model: str, fingerprint: str | None) -> str:
    return json.dumps([model, fingerprint], ensure_ascii=False)


def served_of(stored: str | None) -> tuple[str | None, str | None]:
    """(served model, system_fingerprint) of a stored ``served`` value; (None, None) for none or a damaged one."""
    try:
        model, fingerprint = json.loads(stored) if stored else (None, None)
    except (ValueError, TypeError):
        return None, None
    return (model if isinstance(model, str) else None), (fingerprint if isinstance(fingerprint, str) else None)


def logprobs_of(stored: str | None) -> tuple[TokenLogprob, ...]:
    """The tokens :func:`logprob_json` stored (none for answers stored without probabilities)."""
    if not stored:
        return ()
    return tuple(TokenLogprob(str(tok), float(lp), tuple((str(a), float(b)) for a, b in top))
                 for tok, lp, top in json.loads(stored))


def prompt_json(request: GenerateRequest) -> str:
    """A prompt as the store keeps it: the request's canonical form without its seed and ``n`` (how
    many samples one request asked for is not part of the prompt), as ``json.dumps`` writes it with
    ``ensure_ascii=False`` and ``sort_keys=True``."""
    canonical = request.canonical()
    canonical.pop("seed", None)
    canonical.pop("n", None)
    return json.dumps(canonical, ensure_ascii=False, sort_keys=True)


_OTHER_FIELDS = tuple(f.name for f in fields(GenerateRequest) if f.name not in ("messages", "seed", "n", "json_schema"))
_SCALARS = (str, int, float, bool, type(None))
_other_values = operator.attrgetter(*_OTHER_FIELDS)  # the fields' values as one tuple (there are several)
_STAND_IN = "\ue006messages\ue006"


class PromptJson:
    """:func:`prompt_json`, the same text, with the JSON around the messages written once for the
    requests that share every other field (a run's prompts differ in their messages only; the schema
    is compared by identity, as a protocol returns one object for every item): a first run writes a
    prompt per request, and encoding each whole request (its schema sorted again) cost more than the
    row's insert."""

    def __init__(self) -> None:
        # (the other fields' values, their types, the schema, the JSON before and after the messages)
        self._last: tuple[tuple[Any, ...], tuple[type, ...], Any, str, str] | None = None

    def json(self, request: GenerateRequest) -> str:
        schema = request.json_schema
        values = _other_values(request)
        kinds = tuple(map(type, values))  # 1 and 1.0 and True are equal values written differently
        last = self._last
        if last is None or last[2] is not schema or last[1] != kinds or last[0] != values:  # types first
            # The frame is written only for plain values (a kept frame's were checked when it was written).
            if not (schema is None or type(schema) is dict) or any(t not in _SCALARS for t in kinds):
                return prompt_json(request)
            frame = dataclasses.replace(request, messages=(), seed=None, n=1).canonical()
            frame.pop("seed", None)
            frame["messages"] = _STAND_IN
            head, _, tail = json.dumps(frame, ensure_ascii=False, sort_keys=True).partition(f'"{_STAND_IN}"')
            last = self._last = (values, kinds, schema, head, tail)
        body = ", ".join([f'{{"content": {encode_basestring(m.content)}, "role": {encode_basestring(m.role)}}}'
                          for m in request.messages])
        return f"{last[3]}[{body}]{last[4]}"


class Store:
    """The store of one run directory. ``readonly=True`` reads an existing store
    without changing anything on disk (``--dry-run``): with no write-ahead log
    beside it nobody is writing and the file is read as immutable (SQLite then
    creates no ``-wal``/``-shm`` files); otherwise it is opened read-only and
    sees what the writer has committed."""

    # Commits deferred to the end of the event loop's turn (see deferring()): whether answers are written
    # that way now, the open transaction's waiters (None: none is open; each waiter's own future is
    # resolved by the commit, so a waiter cancelled alone leaves the others theirs) and a commit that failed.
    # Class defaults, so a subclass without a database (the Ray relay) has them too.
    readonly = False
    _deferring = False
    _open_commit: list[asyncio.Future[None]] | None = None
    _failed_commit: BaseException | None = None

    def __init__(self, path: Path | str, *, readonly: bool = False) -> None:
        self.path = str(path)
        self.readonly = readonly
        self._known_prompts: set[str] = set()
        self._prompts = PromptJson()
        self._in_transaction = False
        self._mask: Redactor | None = None
        if readonly:
            p = Path(path)
            idle = not p.with_name(p.name + "-wal").exists()
            uri = f"{p.resolve().as_uri()}?{'immutable=1' if idle else 'mode=ro'}"
            self._db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            self._db.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
            self._columns = self._response_columns()
            return
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        # Another process (``polyjudge batch cancel``) may write at the same moment: wait, do not fail.
        self._db.execute("PRAGMA busy_timeout=10000")
        self._db.execute("PRAGMA journal_mode=WAL")
        # NORMAL: a commit survives the process being killed (not a power cut).
        self._db.execute("PRAGMA synchronous=NORMAL")
        # Reads of a large store (a run's keys looked up in bulk) through the page cache, not read() calls.
        self._db.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
        self._db.executescript(SCHEMA)
        have = self._response_columns()
        for name, kind in ADDED_COLUMNS.items():
            if name not in have:
                self._db.execute(f"ALTER TABLE responses ADD COLUMN {name} {kind}")
        self._columns = self._response_columns()

    def close(self) -> None:
        self.flush()
        self._db.close()

    @contextmanager
    def deferring(self) -> Iterator[None]:
        """Inside a running event loop: answers, failures and prompts written in one turn of the loop are
        committed together at its end (one commit instead of one per row); everything is committed on exit."""
        self._deferring = not self.readonly
        try:
            yield
        finally:
            self._deferring = False
            self.flush()

    def _begin_deferred(self) -> None:
        if not self._deferring or self._in_transaction or self._open_commit is not None:
            return
        loop = asyncio.get_running_loop()
        self._db.execute("BEGIN IMMEDIATE")
        self._open_commit = []
        loop.call_soon(self._commit_pending)

    def _commit_pending(self) -> None:
        waiting, self._open_commit = self._open_commit, None
        if waiting is None:
            return
        try:
            self._db.execute("COMMIT")
        except BaseException as exc:  # e.g. the disk is full: whoever waits for this commit fails with it
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            for waiter in waiting:
                if not waiter.done():
                    waiter.set_exception(exc)
                    waiter.exception()  # retrieved here too: flush raises it whether or not a waiter does
            self._failed_commit = exc
            return
        for waiter in waiting:
            if not waiter.done():  # a waiter cancelled while it waited (Ctrl-C) is done already
                waiter.set_result(None)

    async def committed(self) -> None:
        """Return once everything written so far is committed (at once when nothing waits)."""
        waiting = self._open_commit
        if waiting is not None:
            waiter = asyncio.get_running_loop().create_future()
            waiting.append(waiter)
            await waiter
        failed = self._failed_commit
        if failed is not None:
            raise failed

    def flush(self) -> None:
        """Commit what a deferred transaction holds now (see :meth:`deferring`)."""
        self._commit_pending()
        failed = self._failed_commit
        if failed is not None:
            self._failed_commit = None
            raise failed

    def _response_columns(self) -> set[str]:
        return {str(r[1]) for r in self._db.execute("PRAGMA table_info(responses)")}

    def _has_table(self, name: str) -> bool:
        return self._db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)).fetchone() \
            is not None

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Many writes committed at once (a batch's answers), all or none."""
        if self._in_transaction:
            yield
            return
        self.flush()
        self._db.execute("BEGIN IMMEDIATE")
        self._in_transaction = True
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        else:
            self._db.execute("COMMIT")
        finally:
            self._in_transaction = False

    def get_meta(self, name: str) -> str | None:
        """A value the session keeps about the run (e.g. what run this store belongs to)."""
        if self.readonly and not self._has_table("meta"):
            return None  # a store written before the table existed
        row = self._db.execute("SELECT value FROM meta WHERE name=?", (name,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, name: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (name, value))

    def completed_keys(self) -> set[str]:
        """Keys answered already (an answer came back, usable or not)."""
        if self.readonly and not self._has_table("responses"):
            return set()
        return {k for (k,) in self._db.execute("SELECT key FROM responses WHERE status='done'")}

    def done_among(self, keys: Sequence[str]) -> set[str]:
        """Which of ``keys`` are answered already, looked up in bulk (a run's keys a chunk at a time)."""
        out: set[str] = set()
        if self.readonly and not self._has_table("responses"):
            return out
        ordered = sorted(keys)  # neighbouring keys share index pages
        for i in range(0, len(ordered), _CHUNK):
            chunk = ordered[i:i + _CHUNK]
            out.update(k for (k,) in self._db.execute(
                f"SELECT key FROM responses WHERE status='done' AND key IN ({','.join('?' * len(chunk))})", chunk))
        return out

    def prompt_hashes_of(self, fingerprints: Sequence[str]) -> dict[str, str]:
        """The prompt hashes known for item fingerprints (see :meth:`engine.plan.Plan.resolve`)."""
        out: dict[str, str] = {}
        if self.readonly and not self._has_table("item_prompts"):
            return out
        for i in range(0, len(fingerprints), _CHUNK):
            chunk = list(fingerprints[i:i + _CHUNK])
            out.update(self._db.execute(
                f"SELECT fingerprint, prompt_hash FROM item_prompts WHERE fingerprint IN "
                f"({','.join('?' * len(chunk))})", chunk))
        return out

    def put_prompt_hashes(self, pairs: Sequence[tuple[str, str]]) -> None:
        with self.transaction():
            self._db.executemany("INSERT OR REPLACE INTO item_prompts VALUES (?, ?)", pairs)

    def state(self) -> str:
        """Changes whenever an answer is written: what the outputs were last written from."""
        if self.readonly and not self._has_table("responses"):
            return "empty"
        row = self._db.execute("SELECT COUNT(*), MAX(rowid), MAX(created), SUM(attempts) FROM responses").fetchone()
        return ":".join(str(x) for x in row)

    def get_many(self, keys: Sequence[str]) -> dict[str, StoredResponse]:
        return {k: _stored(r) for k, r in self.get_rows(keys).items()}

    def get_rows(self, keys: Sequence[str]) -> dict[str, Row]:
        """:meth:`get_many`'s rows as read (see :data:`Row`)."""
        out: dict[str, Row] = {}
        if self.readonly and not self._has_table("responses"):
            return out
        select = self._response_select()
        ordered = sorted(keys) if len(keys) > _CHUNK else list(keys)  # neighbouring keys share index pages
        for i in range(0, len(ordered), _CHUNK):
            chunk = ordered[i:i + _CHUNK]
            rows = self._db.execute(
                f"SELECT {select} FROM responses WHERE key IN ({','.join('?' * len(chunk))})", chunk)
            for r in rows:
                out[r[0]] = r
        return out

    def _response_select(self) -> str:
        return ",".join(c if c in self._columns else "NULL" for c in _RESPONSE_COLUMNS)

    def scan(self, slack: int = SCAN_SLACK) -> RowScan:
        """A reader of many keys in about the order they were stored (see :class:`RowScan`)."""
        return RowScan(self, slack)

    def _rows_in_order(self) -> sqlite3.Cursor | None:
        if self.readonly and not self._has_table("responses"):
            return None
        return self._db.execute(f"SELECT {self._response_select()} FROM responses ORDER BY rowid")

    def put_prompt(self, prompt_hash: str, request: GenerateRequest) -> None:
        """Keep the request once per prompt (runs differ only by seed): :func:`prompt_json`."""
        if prompt_hash in self._known_prompts:
            return
        self._begin_deferred()
        self._db.execute("INSERT OR IGNORE INTO prompts VALUES (?, ?)", (prompt_hash, self._prompts.json(request)))
        self._known_prompts.add(prompt_hash)

    def _masker(self) -> Redactor:
        """Known secret values only (environment, registered key variables): an answer stays byte-exact
        unless it really holds one. One snapshot per store, taken at its first answer."""
        if self._mask is None:
            self._mask = Redactor(patterns=False)
        return self._mask

    def put_result(self, task: Answerable, result: GenerateResult, attempts: int, *, text: str | None = None,
                   finish_reason: str | None = None, usage: Usage | None = None, channel: str = LIVE,
                   usage_note: str | None = None) -> None:
        """Store an answer; ``text``, ``finish_reason`` and ``usage`` replace the result's own
        (one choice of a multi-sample answer, with its share of the usage; the result's
        reasoning, which belongs to its first choice, is kept with whole answers only).

        Whatever a server sent, the write succeeds: values that are not text are kept as
        JSON text and counts beyond SQLite's integers are bounded, so an answer is never
        lost (and paid for again) because of its content."""
        key, prompt_hash, judge, run_index = task.key, task.prompt_hash, task.judge, task.run_index
        u = usage if usage is not None else result.usage
        mask = self._masker()  # the one place answers enter storage: outputs and the cache read them from here
        reasoning = mask(_text(result.reasoning)) if text is None else None
        logprobs = logprob_json(masked_tokens(mask, result.logprobs)) if text is None and result.logprobs else None
        text = mask(_text(result.text if text is None else text))
        finish_reason = mask(_text(result.finish_reason if finish_reason is None else finish_reason))
        self._begin_deferred()
        self._db.execute(
            "INSERT OR REPLACE INTO responses (key, prompt_hash, judge, run_index, status, text, finish_reason, "
            "prompt_tokens, completion_tokens, latency_s, error, attempts, created, cached_prompt_tokens, "
            "reasoning_tokens, channel, reasoning, logprobs, usage_note, served) "
            "VALUES (?,?,?,?,'done',?,?,?,?,?,NULL,?,?,?,?,?,?,?,?,?)",
            (key, prompt_hash, judge, run_index, text, finish_reason, _count(u.prompt_tokens),
             _count(u.completion_tokens), _seconds(result.latency_s), attempts, time.time(),
             _count(u.cached_prompt_tokens), _count(u.reasoning_tokens), None if channel == LIVE else channel,
             reasoning, logprobs, mask(usage_note), served_json(result)))

    def put_failure(self, key: str, prompt_hash: str, judge: str, run_index: int,
                    error: str, attempts: int) -> None:
        # A later resume tries failed requests again; a 'done' row is never replaced by a failure.
        self._begin_deferred()
        self._db.execute(
            "INSERT INTO responses (key, prompt_hash, judge, run_index, status, text, finish_reason, prompt_tokens, "
            "completion_tokens, latency_s, error, attempts, created) VALUES (?,?,?,?,'failed',NULL,NULL,0,0,0,?,?,?) "
            "ON CONFLICT(key) DO UPDATE SET error=excluded.error, attempts=responses.attempts+excluded.attempts, "
            "created=excluded.created WHERE responses.status='failed'",
            (key, prompt_hash, judge, run_index, redact(error), attempts, time.time()))

    def served_models(self, *, since: float | None = None, before: float | None = None, cached: bool | None = None,
                      ) -> dict[str, dict[tuple[str, str | None], int]]:
        """judge -> {(served model, system_fingerprint): answers} of the answers stored (``since``/``before``:
        created in that window; ``cached``: only those copied from the shared cache, or only the others),
        from what each server said (answers it said nothing about are left out)."""
        if "served" not in self._columns:
            return {}
        where, args = "served IS NOT NULL AND status='done'", list[float]()
        if cached is not None:
            where += " AND channel IS 'cache'" if cached else " AND channel IS NOT 'cache'"
        if since is not None:
            where, args = where + " AND created >= ?", [*args, since]
        if before is not None:
            where, args = where + " AND created < ?", [*args, before]
        out: dict[str, dict[tuple[str, str | None], int]] = {}
        for judge, served, n in self._db.execute(
                f"SELECT judge, served, COUNT(*) FROM responses WHERE {where} GROUP BY judge, served", args):
            model, fingerprint = served_of(served)
            if model is not None:
                found = out.setdefault(str(judge), {})
                found[(model, fingerprint)] = found.get((model, fingerprint), 0) + int(n)
        return out

    def answers_to(self, prompt_hashes: Sequence[str], *, run_index: int = 0) -> dict[str, list[StoredAnswer]]:
        """prompt hash -> every judge's stored answer (status done) of run ``run_index`` (``polyjudge drift``)."""
        out: dict[str, list[StoredAnswer]] = {}
        if self.readonly and not self._has_table("responses"):
            return out
        cols = ",".join(c if c in self._columns else "NULL" for c in ("prompt_hash", "judge", "text", "finish_reason",
                                                                       "prompt_tokens", "completion_tokens",
                                                                       "logprobs", "served"))
        for i in range(0, len(prompt_hashes), _CHUNK):
            chunk = list(prompt_hashes[i:i + _CHUNK])
            for r in self._db.execute(f"SELECT {cols} FROM responses WHERE status='done' AND run_index=? AND "
                                      f"prompt_hash IN ({','.join('?' * len(chunk))}) ORDER BY judge",
                                      [run_index, *chunk]):
                out.setdefault(r[0], []).append(StoredAnswer(str(r[1]), _text(r[2]), _text(r[3]), int(r[4] or 0),
                                                             int(r[5] or 0), r[6], served_of(r[7])))
        return out

    # ------------------------------------------------------------------------------------- batches

    def add_batch(self, submission: str, provider: str, judge: str, lines: Iterable[BatchLineRow], *,
                  endpoint: str | None = None, key_env: str | None = None, status: str = SUBMITTING) -> int:
        """Record a batch before it is sent (status 'submitting'), with every task it holds."""
        rows = list(lines)
        with self.transaction():
            self._db.execute(
                "INSERT INTO batches (submission, provider, judge, endpoint, key_env, status, total, created) "
                "VALUES (?,?,?,?,?,?,?,?)",
                (submission, provider, judge, endpoint, key_env, status,
                 len({r.custom_id for r in rows}), time.time()))
            self._db.executemany(
                "INSERT OR REPLACE INTO batch_lines VALUES (?,?,?,?,?,?,?)",
                [(submission, r.custom_id, r.choice, r.key, r.prompt_hash, r.judge, r.run_index) for r in rows])
        return len(rows)

    def update_batch(self, submission: str, *, batch_id: str | None = None, status: str | None = None,
                     completed: int | None = None, failed: int | None = None, expires_at: float | None = None,
                     collected: bool | None = None, error: str | None = None) -> None:
        """Change what is known of a batch (fields left None keep their value)."""
        changes = {"batch_id": batch_id, "status": status, "completed": completed, "failed": failed,
                   "expires_at": expires_at, "collected": None if collected is None else int(collected),
                   "error": None if error is None else redact(error)}
        sets = {k: v for k, v in changes.items() if v is not None}
        if not sets:
            return
        self._db.execute(f"UPDATE batches SET {', '.join(f'{k}=?' for k in sets)} WHERE submission=?",
                         (*sets.values(), submission))

    def drop_batch(self, submission: str) -> None:
        """Forget a batch that was never created at the provider (its tasks go out again)."""
        with self.transaction():
            self._db.execute("DELETE FROM batch_lines WHERE submission=?", (submission,))
            self._db.execute("DELETE FROM batches WHERE submission=?", (submission,))

    def batches(self, *, open_only: bool = False) -> list[BatchRecord]:
        """Batches in submission order; ``open_only``: those whose answers are not collected yet
        (exports excluded: nothing was sent)."""
        if self.readonly and not self._has_table("batches"):
            return []
        where = f" WHERE collected=0 AND provider != '{EXPORT}'" if open_only else ""
        rows = self._db.execute(f"SELECT {','.join(_BATCH_COLUMNS)} FROM batches{where} ORDER BY created, rowid")
        return [BatchRecord(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], bool(r[12]),
                         r[13]) for r in rows]

    def batch_lines(self, submission: str) -> list[BatchLineRow]:
        rows = self._db.execute("SELECT custom_id, choice, key, prompt_hash, judge, run_index FROM batch_lines "
                                "WHERE submission=? ORDER BY rowid", (submission,))
        return [BatchLineRow(r[0], r[1], r[2], r[3], r[4], r[5]) for r in rows]

    def lines_for_custom_id(self, custom_id: str) -> list[BatchLineRow]:
        """The tasks a custom_id answers, from its latest batch or export."""
        if self.readonly and not self._has_table("batch_lines"):
            return []
        row = self._db.execute("SELECT submission FROM batch_lines WHERE custom_id=? ORDER BY rowid DESC LIMIT 1",
                               (custom_id,)).fetchone()
        if row is None:
            return []
        rows = self._db.execute("SELECT custom_id, choice, key, prompt_hash, judge, run_index FROM batch_lines "
                                "WHERE submission=? AND custom_id=? ORDER BY choice", (row[0], custom_id))
        return [BatchLineRow(r[0], r[1], r[2], r[3], r[4], r[5]) for r in rows]


__all__ = ["BATCH", "LIVE", "BatchLineRow", "BatchRecord", "Row", "Store", "StoredResponse"]


def _stored(r: Sequence[Any]) -> StoredResponse:
    """A row of ``_RESPONSE_COLUMNS`` as read, with its defaults."""
    return StoredResponse(r[0], r[1], r[2], r[3], r[4] or 0, r[5] or 0, r[6] or 0.0, r[7], r[8],
                          r[9] or 0, r[10] or 0, r[11] or LIVE, r[12] or "", r[13], r[14], r[15],
                          r[R_SERVED] if len(r) > R_SERVED else None)  # rows made before the column: none


class RowScan:
    """:meth:`Store.get_many` for a reader that asks for every key of a run, chunk by chunk, in about
    the order the answers were stored (a run's items in input order): one sequential pass over the
    table instead of a point lookup per key (a million lookups in a large store cost about five times
    the pass). Rows read ahead of the keys asked for wait in a buffer of at most ``slack`` rows; a key
    the pass has not reached when the buffer is full (an answer stored far out of order, a row the
    run does not hold) is looked up by key, so the answer is always :meth:`Store.get_many`'s."""

    def __init__(self, store: Store, slack: int) -> None:
        self._store, self._slack = store, slack
        self._cursor = store._rows_in_order()
        self._rows = None if self._cursor is None else iter(self._cursor)
        self._ahead: dict[str, Row] = {}
        self._looked_up: set[str] = set()  # keys served by lookup: the pass skips their rows

    def get_many(self, keys: Sequence[str]) -> dict[str, StoredResponse]:
        return {k: _stored(r) for k, r in self.get_rows(keys).items()}

    def get_rows(self, keys: Sequence[str]) -> dict[str, Row]:
        """:meth:`get_many`'s rows as read (see :data:`Row`)."""
        out: dict[str, Row] = {}
        ahead, missing = self._ahead, set()
        for k in keys:
            s = ahead.pop(k, None)
            if s is not None:
                out[k] = s
            elif k not in out:
                missing.add(k)
        rows, looked_up = self._rows, self._looked_up
        while missing and rows is not None and len(ahead) < self._slack:
            r = next(rows, None)
            if r is None:
                self.close()
                break
            k = r[0]
            if k in missing:
                out[k] = r
                missing.discard(k)
            elif k in looked_up:
                looked_up.discard(k)
            else:
                ahead[k] = r
        if missing:
            found = self._store.get_rows(list(missing))
            out.update(found)
            if self._rows is not None:
                looked_up.update(found)
        return out

    def close(self) -> None:
        if self._cursor is not None:
            self._cursor.close()
            self._cursor = self._rows = None
