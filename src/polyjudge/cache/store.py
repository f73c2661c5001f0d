"""The shared response cache: one SQLite file every run directory of the machine reads and fills.

An entry is one answer, found by the run store's own key (model, messages,
parameters, seed and run index, see :func:`polyjudge.engine.plan.task_key`)
under the *scope* it came from (the backend and its endpoint, credentials
masked), so two servers that both call their model ``default`` never answer
for each other. Entries are written once and never replaced: the first
answer paid for is the one every later run gets. An entry made from a
``--batch-import`` file rather than by the endpoint is marked as imported
(table ``imported``, with the file's base name), so a later run and
``polyjudge cache stats`` can tell it; a cache made before the marks gets
the table when a writer opens it (its entries were never imported).

Several processes may read and fill the cache at once: the file is in WAL
mode, each fill is one transaction (all of it or none of it, also after
``kill -9``), and a writer waits for another (busy timeout) instead of
failing. Failures are never entries: the engine only offers answers.

The file is polyjudge's or it is left alone: a cache carries SQLite's
``application_id`` (:data:`APPLICATION_ID`) and ``user_version``, is made
whole in a temporary file and linked into place (never seen half made), and
any other file at its place (another program's database, a symbolic link, a
zero-byte or damaged file) is refused before anything is written to it. A
cache of an earlier version (no mark yet, but exactly this schema) is
recognised and marked. A cache that cannot be opened at all (a read-only
folder, a full volume) raises :class:`CacheUnavailable`: a run warns and
goes on without it.
"""

from __future__ import annotations

import json
import os
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
from polyjudge.data.secrets import Redactor, mask_token_rows, redact

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
CREATE TABLE IF NOT EXISTS forms (
    scope TEXT NOT NULL,
    model TEXT NOT NULL,
    form TEXT NOT NULL,                -- the judge's request form token ("" for the default form: backends.form)
    changes TEXT NOT NULL,             -- JSON {parameter: how} of the form the server settled ({}: taken as asked)
    created REAL NOT NULL,
    PRIMARY KEY (scope, model, form)
);
CREATE TABLE IF NOT EXISTS prices (
    source TEXT NOT NULL,              -- the price table asked and the day (UTC) it was asked for
    model TEXT NOT NULL,
    price TEXT NOT NULL,               -- JSON of the price it gave (engine.pricing.ModelPrice), or null
    PRIMARY KEY (source, model)
);
CREATE TABLE IF NOT EXISTS served (
    scope TEXT NOT NULL,               -- what the server said answered an entry (same scope and key):
    key TEXT NOT NULL,                 -- JSON [served model, system_fingerprint] (engine.store.served_json)
    served TEXT NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE TABLE IF NOT EXISTS imported (
    scope TEXT NOT NULL,               -- an entry of answers that came from a --batch-import file, not from the
    key TEXT NOT NULL,                 -- endpoint itself (same scope and key as the entry)
    source TEXT NOT NULL,              -- the file's base name (never its folder: that names users and projects)
    created REAL NOT NULL,             -- the entry's own created: a mark outliving its entry never marks another
    PRIMARY KEY (scope, key)
);
"""
SCHEMA_VERSION = 1
APPLICATION_ID = 0x504A5243  # "PJRC": polyjudge response cache, in the SQLite header (PRAGMA application_id)
BUSY_TIMEOUT_MS = 60_000  # another process filling the cache: wait for it rather than fail
COMPACT_WAIT_MS = 2_000  # compacting is optional: never make a judging process wait long for it
_SCHEMA_NAMES = frozenset(re.findall(r"CREATE (?:TABLE|INDEX) IF NOT EXISTS (\w+)", SCHEMA))  # what a made cache holds
_CHUNK = 500  # keys per IN (...) query, well under SQLite's variable limit
_COLUMNS = ("key", "model", "text", "finish_reason", "prompt_tokens", "completion_tokens", "cached_prompt_tokens",
            "reasoning_tokens", "latency_s", "reasoning", "logprobs", "usage_note", "created")
_MARKED = "i.scope = a.scope AND i.key = a.key AND i.created = a.created"  # an imported mark of its own entry
_ORPHANS = ("DELETE FROM imported WHERE NOT EXISTS (SELECT 1 FROM answers a WHERE a.scope = imported.scope "
            "AND a.key = imported.key AND a.created = imported.created)")
SOURCE_CHARS = 200  # the longest file name an imported mark keeps


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
    source: str | None = None  # the batch file's name when the answer was imported from one (read back only)
    served: str | None = None  # what the server said answered (JSON [model, system_fingerprint]), when it said

    def size(self) -> int:
        return sum(len(t.encode("utf-8", "surrogatepass"))
                   for t in (self.text, self.reasoning, self.logprobs, self.usage_note) if t)


@dataclass(frozen=True, slots=True)
class ModelCount:
    scope: str
    model: str
    entries: int
    answer_bytes: int
    imported: int = 0  # of ``entries``, those imported from a batch output file


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
    imported: int = 0  # of ``entries``, those imported from a batch output file (``--batch-import``)


class CacheUnavailable(InputError):
    """The cache cannot be opened or made (no permission, a read-only or full volume): a run warns
    and goes on without it; ``polyjudge cache`` commands report it like any bad input."""


def _refused(path: Path, why: str) -> InputError:
    return InputError(f"cannot use the response cache: it {why}; polyjudge leaves it as it is (give another "
                      "--cache PATH, or --no-cache)",
                      path=str(path), field="cache")


def _layout(db: sqlite3.Connection) -> dict[str, tuple[str, ...]]:
    """The tables of a database and their columns, in order (SQLite's own tables left out)."""
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table' "
                                        "AND name NOT LIKE 'sqlite_%'")]
    return {t: tuple(str(c[1]) for c in db.execute(f'PRAGMA table_info("{t}")')) for t in tables}


def _schema_layout() -> dict[str, tuple[str, ...]]:
    mem = sqlite3.connect(":memory:")
    try:
        mem.executescript(SCHEMA)
        return _layout(mem)
    finally:
        mem.close()


_LAYOUT = _schema_layout()  # the tables and columns a cache made by SCHEMA holds


def _is_earlier_cache(db: sqlite3.Connection) -> bool:
    """An unmarked file is an earlier polyjudge's cache when its tables are exactly this schema's
    (the ``adaptations`` and ``imported`` tables came later and may be missing)."""
    found = _layout(db)
    return "answers" in found and all(_LAYOUT.get(t) == cols for t, cols in found.items())


def _check_place(path: Path) -> bool:
    """Whether a file is at ``path`` (refusing a symbolic link, a non-regular or a zero-byte file)."""
    if path.is_symlink():
        raise _refused(path, "is a symbolic link, not a response cache (a cache is never written through one)")
    if not path.exists():
        return False
    if not path.is_file():
        raise _refused(path, "is not a regular file, so not a response cache")
    if path.stat().st_size == 0:
        raise _refused(path, "is an empty file, not a response cache")
    return True


def _make(path: Path) -> None:
    """A new cache at ``path``, whole: made in a temporary file beside it, then linked into place
    (another process making it at the same moment wins, and its file is used)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{random.getrandbits(32):08x}.new")
    try:
        db = sqlite3.connect(str(tmp), isolation_level=None)
        try:
            db.execute(f"PRAGMA application_id={APPLICATION_ID}")
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)
        finally:
            db.close()
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links: the rename is all but atomic
            if not path.exists() and not path.is_symlink():
                os.replace(tmp, path)
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + "-wal"), tmp.with_name(tmp.name + "-shm")):
            leftover.unlink(missing_ok=True)


def _masked_logprobs(mask: Redactor, stored: str | None) -> str | None:
    """Token probabilities (JSON rows) with the secrets their joined tokens spell masked; rows that are
    not the engine's shape are kept only when they hold no secret at all."""
    if not stored or not mask.secrets:
        return stored
    try:
        rows = json.loads(stored)
        clean = mask_token_rows(mask, rows)
    except (ValueError, TypeError, IndexError, KeyError):
        return mask(stored)
    return stored if clean == rows else json.dumps(clean, ensure_ascii=False)


def _transient(exc: sqlite3.OperationalError) -> bool:
    """A lock another process holds for a moment, worth trying again (not a damaged or foreign file)."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def source_name(path: str | Path) -> str:
    """What an imported mark says of the file the answers came from: its base name, secrets masked.
    Never the folder: the cache is shared by every run of the machine and its folders name users,
    clients and projects; the name is enough to tell which of a run's files it was."""
    name = re.split(r"[\\/]", str(path))[-1]  # a Windows path's folders too, on any system
    return redact(name)[:SOURCE_CHARS] or "?"


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
        except (sqlite3.Error, OSError, InputError) as exc:
            if self._db is not None:
                self._db.close()
                self._db = None
            if isinstance(exc, InputError):
                raise
            raise CacheUnavailable(f"cannot use the response cache: {redact(str(exc))} (give another --cache "
                                   "PATH, or --no-cache)", path=str(self.path), field="cache") from None

    def _open(self) -> None:
        if self.readonly:
            if not _check_place(self.path):
                return
            self._db = sqlite3.connect(f"{self.path.absolute().as_uri()}?mode=ro", uri=True, isolation_level=None,
                                       check_same_thread=False)
            self._db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            self._identify()
            return
        if self.folder.exists() and not self.folder.is_dir():
            raise NotADirectoryError(f"{self.folder} is not a folder")
        self.folder.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        pause = 0.005
        while True:
            try:
                if not _check_place(self.path):
                    _make(self.path)  # then what is there: this cache, or another process's made at once
                    _check_place(self.path)
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
        self._identify()
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

    def _identify(self) -> None:
        """Refuse a file that is not a polyjudge cache (before anything is written to it); mark an
        earlier polyjudge's cache (writable opens only)."""
        assert self._db is not None
        try:
            app = int(self._db.execute("PRAGMA application_id").fetchone()[0])
            version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
            earlier = app == 0 and _is_earlier_cache(self._db)
        except sqlite3.OperationalError:  # a lock (tried again), no permission, a read-only or full volume
            raise
        except sqlite3.DatabaseError as exc:  # "file is not a database", "database disk image is malformed"
            raise _refused(self.path, f"is damaged or not an SQLite database ({exc})") from None
        if app == APPLICATION_ID and version > SCHEMA_VERSION:
            raise _refused(self.path, f"was made by a newer polyjudge (cache version {version}, this one "
                                      f"reads {SCHEMA_VERSION})")
        if app != APPLICATION_ID and not earlier:
            raise _refused(self.path, "is not a polyjudge response cache (another program's file?)")
        problem = None if self.readonly else self.problem()  # about 0.1 s per 80 MB of cache
        if problem is not None:  # never written to: a run goes on without it
            raise CacheUnavailable(f"the response cache is damaged ({problem}); polyjudge leaves it as it is "
                                   "(move it away to start a new cache)", path=str(self.path), field="cache")
        if app != APPLICATION_ID and not self.readonly:
            with self._transaction() as db:
                db.execute(f"PRAGMA application_id={APPLICATION_ID}")
                db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def problem(self) -> str | None:
        """What SQLite's quick check finds wrong with the file (None when it is sound, or absent):
        a cache with a damaged page may still answer some lookups and fail others."""
        if self._db is None:
            return None
        try:
            found = [str(r[0]) for r in self._db.execute("PRAGMA quick_check(3)")]
        except sqlite3.DatabaseError as exc:
            return str(exc)
        return None if found == ["ok"] else "; ".join(found)

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
        marked = self._has_imported()  # a cache of an earlier version opened read-only has no marks
        source, marks = ("i.source", f"LEFT JOIN imported i ON {_MARKED}") if marked else ("NULL", "")
        served, said = (("s.served", " LEFT JOIN served s ON s.scope = a.scope AND s.key = a.key")
                        if self._has_table("served") else ("NULL", ""))
        ordered = sorted(set(keys))
        for i in range(0, len(ordered), _CHUNK):
            chunk = ordered[i:i + _CHUNK]
            rows = self._db.execute(f"SELECT {','.join('a.' + c for c in _COLUMNS)}, {source}, {served} FROM "
                                    f"answers a {marks}{said} WHERE a.scope=? AND a.key IN "
                                    f"({','.join('?' * len(chunk))})",
                                    (scope, *chunk))
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

    def put_many(self, scope: str, answers: Sequence[CachedAnswer], *, source: str | Path | None = None) -> int:
        """Keep ``answers`` (in one transaction); entries already there are kept as they are.
        Every text is masked of the environment's secrets first. With ``source`` (the batch output
        file they were imported from) the new entries are marked as imported, with the file's base
        name (:func:`source_name`). Returns how many were new."""
        if not answers or self.readonly or self._db is None:
            return 0
        mask = Redactor(patterns=False)  # known secret values only: an answer stays byte-exact otherwise
        scope = redact(scope)
        rows = []
        now = time.time()
        for a in answers:
            clean = CachedAnswer(a.key, mask(a.model), mask(a.text), mask(a.finish_reason), a.prompt_tokens,
                                 a.completion_tokens, a.cached_prompt_tokens, a.reasoning_tokens, a.latency_s,
                                 mask(a.reasoning), _masked_logprobs(mask, a.logprobs), mask(a.usage_note))
            rows.append((scope, clean.key, clean.model, clean.text, clean.finish_reason, clean.prompt_tokens,
                         clean.completion_tokens, clean.cached_prompt_tokens, clean.reasoning_tokens,
                         clean.latency_s, clean.reasoning, clean.logprobs, clean.usage_note, clean.size(), now))
        with self._transaction() as db:
            before = db.total_changes
            db.executemany("INSERT OR IGNORE INTO answers (scope, key, model, text, finish_reason, prompt_tokens, "
                           "completion_tokens, cached_prompt_tokens, reasoning_tokens, latency_s, reasoning, "
                           "logprobs, usage_note, size, created) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
            added = db.total_changes - before
            db.executemany("INSERT OR IGNORE INTO served (scope, key, served) VALUES (?,?,?)",
                           [(scope, a.key, mask(a.served)) for a in answers if a.served])
            if source is not None and added:  # only entries made now: one already there keeps what it is
                db.executemany("INSERT OR REPLACE INTO imported (scope, key, source, created) SELECT scope, key, ?, "
                               "created FROM answers WHERE scope=? AND key=? AND created=?",
                               [(source_name(source), scope, r[1], now) for r in rows])
            return added

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

    def settled_form(self, scope: str, model: str, form: str) -> dict[str, str] | None:
        """How the server at ``scope`` settled the requests of ``model`` written in request form ``form``
        (what the backend changed, ``{}`` when it took them as asked), or None when no run learned it."""
        if self._db is None or not self._has_table("forms"):
            return None
        row = self._db.execute("SELECT changes FROM forms WHERE scope=? AND model=? AND form=?",
                               (redact(scope), redact(model), form)).fetchone()
        try:
            loaded = json.loads(row[0]) if row else None
        except ValueError:
            return None
        return {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else None

    def put_settled_form(self, scope: str, model: str, form: str, changes: Mapping[str, str]) -> None:
        """Remember how the server at ``scope`` settled ``model``'s requests of request form ``form``
        (replacing what an earlier run learned: the server may have changed since)."""
        if self.readonly or self._db is None:
            return
        with self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO forms VALUES (?, ?, ?, ?, ?)",
                       (redact(scope), redact(model), form,
                        json.dumps({str(k): redact(str(v)) for k, v in changes.items()}, sort_keys=True),
                        time.time()))

    def looked_up_price(self, source: str, model: str) -> str | None:
        """The JSON text of what the price table ``source`` gave for ``model`` (``"null"``: it lacks the
        model), or None when no run asked it."""
        if self._db is None or not self._has_table("prices"):
            return None
        row = self._db.execute("SELECT price FROM prices WHERE source=? AND model=?",
                               (source, redact(model))).fetchone()
        return str(row[0]) if row else None

    def put_looked_up_price(self, source: str, model: str, price: str) -> None:
        """Remember what ``source`` gave for ``model``; what other sources (another version of the table,
        another day) gave is forgotten, so the table holds one day's lookups at most."""
        if self.readonly or self._db is None:
            return
        with self._transaction() as db:
            db.execute("DELETE FROM prices WHERE source != ?", (source,))
            db.execute("INSERT OR REPLACE INTO prices VALUES (?, ?, ?)", (source, redact(model), price))

    def _has_table(self, name: str) -> bool:
        assert self._db is not None
        return self._db.execute("SELECT 1 FROM sqlite_master WHERE name=?", (name,)).fetchone() is not None

    def _has_adaptations(self) -> bool:
        assert self._db is not None
        return self._db.execute("SELECT 1 FROM sqlite_master WHERE name='adaptations'").fetchone() is not None

    def _has_imported(self) -> bool:
        """Whether the file has the imported marks' table (a cache of an earlier version opened
        read-only may not: nothing in it was marked)."""
        assert self._db is not None
        return self._db.execute("SELECT 1 FROM sqlite_master WHERE name='imported'").fetchone() is not None

    # ------------------------------------------------------------------------------ keeping it bounded

    def stats(self) -> CacheStats:
        """Entries, bytes and ages, per model."""
        if self._db is None:
            return CacheStats(self.path, 0, 0, 0, None, None, ())
        n, size, oldest, newest = self._db.execute(
            "SELECT COUNT(*), COALESCE(SUM(size), 0), MIN(created), MAX(created) FROM answers").fetchone()
        marked, marks = ("i.key IS NOT NULL", f"LEFT JOIN imported i ON {_MARKED}") if self._has_imported() \
            else ("0", "")
        models = tuple(ModelCount(str(s), str(m), int(c), int(b), int(k)) for s, m, c, b, k in self._db.execute(
            f"SELECT a.scope, a.model, COUNT(*), COALESCE(SUM(a.size), 0), COALESCE(SUM({marked}), 0) FROM answers a "
            f"{marks} GROUP BY a.scope, a.model ORDER BY a.scope, a.model"))
        return CacheStats(self.path, int(n), int(size), _file_bytes(self.path), oldest, newest, models,
                          sum(m.imported for m in models))

    def remove_older_than(self, seconds: float) -> int:
        """Forget entries stored more than ``seconds`` ago."""
        if self._db is None:
            return 0
        with self._transaction() as db:
            removed = db.execute("DELETE FROM answers WHERE created < ?", (time.time() - seconds,)).rowcount
            self._drop_orphan_marks()
            return removed

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
            removed = db.execute("DELETE FROM answers WHERE created < ? OR (created = ? AND rowid <= ?)",
                                 (created, created, cut[0])).rowcount
            self._drop_orphan_marks()
            return removed

    def clear(self) -> int:
        """Forget every entry."""
        if self._db is None:
            return 0
        with self._transaction() as db:
            if self._has_adaptations():
                db.execute("DELETE FROM adaptations")
            for table in ("forms", "prices"):
                if self._has_table(table):
                    db.execute(f"DELETE FROM {table}")
            removed = db.execute("DELETE FROM answers").rowcount
            self._drop_orphan_marks()
            return removed

    def _drop_orphan_marks(self) -> None:
        """Forget the imported marks whose entry is gone (inside the caller's transaction); an earlier
        polyjudge that removed entries left theirs, and they go at the next removal."""
        assert self._db is not None
        if self._has_imported():
            self._db.execute(_ORPHANS)
        if self._has_table("served"):
            self._db.execute("DELETE FROM served WHERE NOT EXISTS (SELECT 1 FROM answers a WHERE "
                             "a.scope = served.scope AND a.key = served.key)")

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


__all__ = ["APPLICATION_ID", "CacheStats", "CacheUnavailable", "CachedAnswer", "ModelCount", "ResponseCache",
           "source_name"]
