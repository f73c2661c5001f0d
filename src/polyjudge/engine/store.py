"""Every request and answer, kept in SQLite in the run directory.

The store is the resume cache: a task whose key is present with status
``done`` is never sent again. Rows are committed one by one as answers
arrive (WAL mode), so a run killed at any moment loses at most the requests
that were in flight.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from polyjudge.backends.base import GenerateRequest, GenerateResult
from polyjudge.data.secrets import redact

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
"""


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


class Store:
    """The store of one run directory. ``readonly=True`` reads an existing store
    without changing anything on disk (``--dry-run``): with no write-ahead log
    beside it nobody is writing and the file is read as immutable (SQLite then
    creates no ``-wal``/``-shm`` files); otherwise it is opened read-only and
    sees what the writer has committed."""

    def __init__(self, path: Path | str, *, readonly: bool = False) -> None:
        self.path = str(path)
        self.readonly = readonly
        self._known_prompts: set[str] = set()
        if readonly:
            p = Path(path)
            idle = not p.with_name(p.name + "-wal").exists()
            uri = f"{p.resolve().as_uri()}?{'immutable=1' if idle else 'mode=ro'}"
            self._db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            return
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        # NORMAL: a commit survives the process being killed (not a power cut).
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        self._db.close()

    def _has_table(self, name: str) -> bool:
        return self._db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)).fetchone() \
            is not None

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

    def get_many(self, keys: list[str]) -> dict[str, StoredResponse]:
        out: dict[str, StoredResponse] = {}
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            rows = self._db.execute(
                "SELECT key,status,text,finish_reason,prompt_tokens,completion_tokens,latency_s,error,attempts "
                f"FROM responses WHERE key IN ({','.join('?' * len(chunk))})", chunk)
            for r in rows:
                out[r[0]] = StoredResponse(r[0], r[1], r[2], r[3], r[4] or 0, r[5] or 0, r[6] or 0.0, r[7], r[8])
        return out

    def put_prompt(self, prompt_hash: str, request: GenerateRequest) -> None:
        """Keep the request once per prompt (runs differ only by seed)."""
        if prompt_hash in self._known_prompts:
            return
        canonical = request.canonical()
        canonical.pop("seed", None)
        self._db.execute("INSERT OR IGNORE INTO prompts VALUES (?, ?)",
                         (prompt_hash, json.dumps(canonical, ensure_ascii=False, sort_keys=True)))
        self._known_prompts.add(prompt_hash)

    def put_result(self, key: str, prompt_hash: str, judge: str, run_index: int,
                   result: GenerateResult, attempts: int) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO responses VALUES (?,?,?,?,'done',?,?,?,?,?,NULL,?,?)",
            (key, prompt_hash, judge, run_index, result.text, result.finish_reason,
             result.usage.prompt_tokens, result.usage.completion_tokens, result.latency_s,
             attempts, time.time()))

    def put_failure(self, key: str, prompt_hash: str, judge: str, run_index: int,
                    error: str, attempts: int) -> None:
        # A later resume tries failed requests again; a 'done' row is never replaced by a failure.
        self._db.execute(
            "INSERT INTO responses VALUES (?,?,?,?,'failed',NULL,NULL,0,0,0,?,?,?) "
            "ON CONFLICT(key) DO UPDATE SET error=excluded.error, attempts=responses.attempts+excluded.attempts, "
            "created=excluded.created WHERE responses.status='failed'",
            (key, prompt_hash, judge, run_index, redact(error), attempts, time.time()))
