"""The shared response cache: one SQLite file every run directory of the machine reads and fills.

An entry is one answer, found by the run store's own key (model, messages,
parameters, seed and run index, see :func:`polyjudge.engine.plan.task_key`)
under the *scope* it came from (the backend and its endpoint, credentials
masked), so two servers that both call their model ``default`` never answer
for each other. Entries are written once and never replaced: the first
answer paid for is the one every later run gets.

Several processes may read and fill the cache at once: the file is in WAL
mode, each fill is one transaction (all of it or none of it, also after
``kill -9``), and a writer waits for another (busy timeout) instead of
failing. Failures are never entries: the engine only offers answers.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from polyjudge.cache.location import cache_file
from polyjudge.data.errors import InputError
from polyjudge.data.secrets import Redactor, redact

SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    scope TEXT NOT NULL,               -- backend and endpoint that answered (credentials masked)
    key TEXT NOT NULL,                 -- the run store's key of the request (engine.plan.task_key)
    model TEXT NOT NULL,
    text TEXT,
    finish_reason TEXT,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cached_prompt_tokens INTEGER NOT NULL,
    reasoning_tokens INTEGER NOT NULL,
    latency_s REAL NOT NULL,
    reasoning TEXT,
    logprobs TEXT,
    usage_note TEXT,
    size INTEGER NOT NULL,             -- bytes of the entry's texts: what --max-size counts
    created REAL NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX IF NOT EXISTS answers_created ON answers(created);
CREATE TABLE IF NOT EXISTS adaptations (
    scope TEXT NOT NULL,
    model TEXT NOT NULL,
    changes TEXT NOT NULL,             -- JSON {parameter: what the backend sent instead}, as run manifests show it
    PRIMARY KEY (scope, model)
);
"""
SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 60_000  # another process filling the cache: wait for it rather than fail
COMPACT_WAIT_MS = 2_000  # compacting is optional: never make a judging process wait long for it
_SCHEMA_NAMES = frozenset(re.findall(r"CREATE (?:TABLE|INDEX) IF NOT EXISTS (\w+)", SCHEMA))  # what a made cache holds
_CHUNK = 500  # keys per IN (...) query, well under SQLite's variable limit
_COLUMNS = ("key", "model", "text", "finish_reason", "prompt_tokens", "completion_tokens", "cached_prompt_tokens",
            "reasoning_tokens", "latency_s", "reasoning", "logprobs", "usage_note", "created")


@dataclass(frozen=True, slots=True)
class CachedAnswer:
    """One answer as the cache keeps it: what the run store needs to hold it again, usage included."""

    key: str
    model: str
    text: str | None
    finish_reason: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    reasoning_tokens: int = 0
    latency_s: float = 0.0
    reasoning: str | None = None
    logprobs: str | None = None
    usage_note: str | None = None
    created: float = 0.0

    def size(self) -> int:
        return sum(len(t.encode("utf-8", "surrogatepass"))
                   for t in (self.text, self.reasoning, self.logprobs, self.usage_note) if t)


@dataclass(frozen=True, slots=True)
class ModelCount:
    scope: str
    model: str
    entries: int
    answer_bytes: int


@dataclass(frozen=True, slots=True)
class CacheStats:
    """What ``polyjudge cache stats`` shows."""

    path: Path
    entries: int
    answer_bytes: int
    file_bytes: int
    oldest: float | None
    newest: float | None
    models: tuple[ModelCount, ...]


def _transient(exc: sqlite3.OperationalError) -> bool:
    """A lock another process holds for a moment, worth trying again (not a damaged or foreign file)."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _file_bytes(db: Path) -> int:
    """The database with its write-ahead log: what the cache keeps on disk (the small ``-shm`` index
    beside them is shared memory, rebuilt by SQLite, and not counted)."""
    return sum(p.stat().st_size for p in (db, db.with_name(db.name + "-wal")) if p.is_file())


class ResponseCache:
    """The cache in ``folder`` (created on first use unless ``readonly``; a read-only look at a
    folder without a cache sees an empty one and creates nothing)."""

    def __init__(self, folder: Path, *, readonly: bool = False) -> None:
        self.folder = folder
        self.path = cache_file(folder)
        self.readonly = readonly
        self._db: sqlite3.Connection | None = None
        try:
            self._open()
        except (sqlite3.Error, OSError) as exc:
            if self._db is not None:
                self._db.close()
            raise InputError(f"cannot use the response cache: {redact(str(exc))} (give another --cache PATH, "
                             "or --no-cache)", path=str(self.path), field="cache") from None

    def _open(self) -> None:
        if self.readonly:
            if not self.path.is_file():
                return
            self._db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None,
                                       check_same_thread=False)
            self._db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            self._db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # a damaged file fails here
            return
        if self.folder.exists() and not self.folder.is_dir():
            raise NotADirectoryError(f"{self.folder} is not a folder")
        self.folder.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        pause = 0.005
        while True:
            try:
                self._db = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
                self._prepare()
                return
            except sqlite3.OperationalError as exc:
                if self._db is not None:
                    self._db.close()
                    self._db = None
                if not _transient(exc) or time.monotonic() + pause > deadline:
                    raise
            time.sleep(pause * (1 + random.random()))
            pause = min(pause * 2, 0.25)

    def _prepare(self) -> None:
        """WAL mode and the schema on a fresh connection. Two processes creating the cache at once
        can each hold a shared lock while asking for the exclusive one the switch to WAL needs;
        SQLite then fails one of them at once ("database is locked", no busy wait) to break the
        deadlock, and :meth:`_open` tries again."""
        assert self._db is not None
        self._db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        if str(self._db.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
            self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # a commit survives the process being killed
        made = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master")}
        if made >= _SCHEMA_NAMES:
            return  # made before, by this process or another: nothing to write
        with self._transaction():
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    self._db.execute(statement)
            self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write, all or nothing; ``BEGIN IMMEDIATE`` takes the one writer's place (or waits for it)."""
        assert self._db is not None
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # ------------------------------------------------------------------------------ reading and filling

    def get_many(self, scope: str, keys: Sequence[str]) -> dict[str, CachedAnswer]:
        """The entries of ``keys`` under ``scope`` that the cache holds."""
        out: dict[str, CachedAnswer] = {}
        if self._db is None:
            return out
        ordered = sorted(set(keys))
        for i in range(0, len(ordered), _CHUNK):
            chunk = ordered[i:i + _CHUNK]
            rows = self._db.execute(f"SELECT {','.join(_COLUMNS)} FROM answers WHERE scope=? AND key IN "
                                    f"({','.join('?' * len(chunk))})", (scope, *chunk))
            for r in rows:
                out[r[0]] = CachedAnswer(*r)
        return out

    def holds_any(self, scope: str) -> bool:
        """Whether the cache has any answer under ``scope`` (the dry run skips looking up keys otherwise)."""
        if self._db is None:
            return False
        return self._db.execute("SELECT 1 FROM answers WHERE scope=? LIMIT 1", (scope,)).fetchone() is not None

    def has_many(self, scope: str, keys: Sequence[str]) -> set[str]:
        """Which of ``keys`` the cache holds under ``scope`` (the dry run's count)."""
        out: set[str] = set()
        if self._db is None:
            return out
        ordered = sorted(set(keys))
        for i in range(0, len(ordered), _CHUNK):
            chunk = ordered[i:i + _CHUNK]
            out.update(k for (k,) in self._db.execute(
                f"SELECT key FROM answers WHERE scope=? AND key IN ({','.join('?' * len(chunk))})",
                (scope, *chunk)))
        return out

    def put_many(self, scope: str, answers: Sequence[CachedAnswer]) -> int:
        """Keep ``answers`` (in one transaction); entries already there are kept as they are.
        Every text is masked of the environment's secrets first. Returns how many were new."""
        if not answers or self.readonly or self._db is None:
            return 0
        mask = Redactor(patterns=False)  # known secret values only: an answer stays byte-exact otherwise
        scope = redact(scope)
        rows = []
        now = time.time()
        for a in answers:
            clean = CachedAnswer(a.key, mask(a.model), mask(a.text), mask(a.finish_reason), a.prompt_tokens,
                                 a.completion_tokens, a.cached_prompt_tokens, a.reasoning_tokens, a.latency_s,
                                 mask(a.reasoning), a.logprobs, mask(a.usage_note))
            rows.append((scope, clean.key, clean.model, clean.text, clean.finish_reason, clean.prompt_tokens,
                         clean.completion_tokens, clean.cached_prompt_tokens, clean.reasoning_tokens,
                         clean.latency_s, clean.reasoning, clean.logprobs, clean.usage_note, clean.size(), now))
        with self._transaction() as db:
            before = db.total_changes
            db.executemany("INSERT OR IGNORE INTO answers (scope, key, model, text, finish_reason, prompt_tokens, "
                           "completion_tokens, cached_prompt_tokens, reasoning_tokens, latency_s, reasoning, "
                           "logprobs, usage_note, size, created) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
            return db.total_changes - before

    def adaptations(self, scope: str, model: str) -> dict[str, str]:
        """What the backend changed in requests to ``model`` at ``scope`` (reasoning models: the token
        field, temperature), as recorded by the runs whose answers the cache holds."""
        if self._db is None or not self._has_adaptations():
            return {}
        row = self._db.execute("SELECT changes FROM adaptations WHERE scope=? AND model=?",
                               (scope, model)).fetchone()
        try:
            loaded = json.loads(row[0]) if row else {}
        except ValueError:
            return {}
        return {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}

    def put_adaptations(self, scope: str, model: str, changes: Mapping[str, str]) -> None:
        """Add ``changes`` to what is known of ``model`` at ``scope``."""
        if not changes or self.readonly or self._db is None:
            return
        scope = redact(scope)
        with self._transaction() as db:
            merged = self.adaptations(scope, model) | {str(k): redact(str(v)) for k, v in changes.items()}
            db.execute("INSERT OR REPLACE INTO adaptations VALUES (?, ?, ?)",
                       (scope, redact(model), json.dumps(merged, sort_keys=True)))

    def _has_adaptations(self) -> bool:
        assert self._db is not None
        return self._db.execute("SELECT 1 FROM sqlite_master WHERE name='adaptations'").fetchone() is not None

    # ------------------------------------------------------------------------------ keeping it bounded

    def stats(self) -> CacheStats:
        """Entries, bytes and ages, per model."""
        if self._db is None:
            return CacheStats(self.path, 0, 0, 0, None, None, ())
        n, size, oldest, newest = self._db.execute(
            "SELECT COUNT(*), COALESCE(SUM(size), 0), MIN(created), MAX(created) FROM answers").fetchone()
        models = tuple(ModelCount(str(s), str(m), int(c), int(b)) for s, m, c, b in self._db.execute(
            "SELECT scope, model, COUNT(*), COALESCE(SUM(size), 0) FROM answers GROUP BY scope, model "
            "ORDER BY scope, model"))
        return CacheStats(self.path, int(n), int(size), _file_bytes(self.path), oldest, newest, models)

    def remove_older_than(self, seconds: float) -> int:
        """Forget entries stored more than ``seconds`` ago."""
        if self._db is None:
            return 0
        with self._transaction() as db:
            return db.execute("DELETE FROM answers WHERE created < ?", (time.time() - seconds,)).rowcount

    def remove_oldest(self, answer_bytes: int) -> int:
        """Forget the oldest entries until at least ``answer_bytes`` of answers are gone (one at least)."""
        if self._db is None or answer_bytes <= 0:
            return 0
        with self._transaction() as db:
            cut, freed = None, 0
            for rowid, size in db.execute("SELECT rowid, size FROM answers ORDER BY created, rowid"):
                cut, freed = (rowid, size), freed + size
                if freed >= answer_bytes:
                    break
            if cut is None:
                return 0
            created = db.execute("SELECT created FROM answers WHERE rowid=?", (cut[0],)).fetchone()[0]
            return db.execute("DELETE FROM answers WHERE created < ? OR (created = ? AND rowid <= ?)",
                              (created, created, cut[0])).rowcount

    def clear(self) -> int:
        """Forget every entry."""
        if self._db is None:
            return 0
        with self._transaction() as db:
            if self._has_adaptations():
                db.execute("DELETE FROM adaptations")
            return db.execute("DELETE FROM answers").rowcount

    def compact(self) -> bool:
        """Give the freed pages back to the file system; False when another process holds the cache
        (the pages are then reused by later entries instead)."""
        if self._db is None:
            return False
        self._db.execute(f"PRAGMA busy_timeout={COMPACT_WAIT_MS}")
        try:
            self._db.execute("VACUUM")
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.OperationalError:
            return False
        finally:
            self._db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        return True

    def file_bytes(self) -> int:
        return _file_bytes(self.path)


__all__ = ["CacheStats", "CachedAnswer", "ModelCount", "ResponseCache"]
