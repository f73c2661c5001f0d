"""The campaign folder and its SQLite store.

A campaign is a folder polyjudge owns (kind ``annotation campaign``, recorded
in ``.polyjudge-owned.json`` like every output folder, see
:mod:`polyjudge.rundir.ownership`), made with mode 0700 because the store holds
the annotators' secret tokens. ``campaign.sqlite`` is in WAL mode with
``synchronous=FULL``: an annotation is on disk when its transaction commits, so
a server killed with ``kill -9`` loses nothing it acknowledged. The file
carries SQLite's ``application_id`` (:data:`APPLICATION_ID`) and
``user_version``; any other file at its place is refused, never written.

One process owns a campaign at a time (``init`` while it makes it, ``serve``
while it runs): an exclusive ``flock`` on ``.polyjudge.lock``, dropped by the
kernel however the process ends. ``status`` and ``export`` only read (WAL
readers never block the writer), so they work while the server runs.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from polyjudge.annotate.schemes import Scheme, get_scheme
from polyjudge.data.errors import InputError
from polyjudge.data.rating_task import RatingTask
from polyjudge.rundir.ownership import OwnedDir, check_out_path, claim, read_record

APPLICATION_ID = 0x504A4143  # "PJAC": polyjudge annotation campaign (PRAGMA application_id)
SCHEMA_VERSION = 2
# Versions this code opens: 1 (no item_meta table: no document positions, checks or suggestions) and 2.
READABLE_VERSIONS = (1, 2)
DB_NAME = "campaign.sqlite"
DB_FILES = (DB_NAME, f"{DB_NAME}-wal", f"{DB_NAME}-shm", f"{DB_NAME}-journal")
KIND = "annotation campaign"
LOCK_FILE = ".polyjudge.lock"

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE items (
    id INTEGER PRIMARY KEY,            -- 0-based order of the items as read
    item_id TEXT NOT NULL UNIQUE,      -- the key exports and ratings use (see campaign.item_key)
    src TEXT NOT NULL, tgt TEXT NOT NULL,
    src_lang TEXT NOT NULL, tgt_lang TEXT NOT NULL,
    system TEXT NOT NULL, doc_id TEXT NOT NULL, seg_id TEXT NOT NULL,
    judge_score REAL,                  -- the judge run's score (sampled campaigns), else NULL
    sampled INTEGER NOT NULL           -- 1: shown to annotators; 0: judged only (PPI's unlabelled items)
);
CREATE TABLE annotators (name TEXT PRIMARY KEY, token TEXT NOT NULL UNIQUE, ord INTEGER NOT NULL);
CREATE TABLE assignments (
    annotator TEXT NOT NULL REFERENCES annotators(name),
    position INTEGER NOT NULL,
    item INTEGER NOT NULL REFERENCES items(id),
    PRIMARY KEY (annotator, position), UNIQUE (annotator, item)
);
CREATE TABLE annotations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    annotator TEXT NOT NULL REFERENCES annotators(name),
    item INTEGER NOT NULL REFERENCES items(id),
    version INTEGER NOT NULL,          -- 1, 2, ...: earlier versions are the history, the newest counts
    body TEXT NOT NULL,                -- JSON: spans, no_error, score, choice, choices
    created REAL NOT NULL,
    UNIQUE (annotator, item, version)
);
"""
# Version 2: what an item carries beyond its texts. Absent from version-1 stores, which read as
# "no position known, no attention check, no suggestion".
SCHEMA_V2 = """
CREATE TABLE item_meta (
    item INTEGER PRIMARY KEY REFERENCES items(id),
    doc_pos INTEGER,                   -- 1-based position of the segment in its document, NULL: unknown
    check_kind TEXT NOT NULL DEFAULT '',  -- '', 'bad' (an injected error) or 'repeat' (an item shown again)
    check_of INTEGER REFERENCES items(id),  -- the item an attention check copies
    injected TEXT,                     -- JSON [start, end]: the code points of tgt the injected error changed
    prefill TEXT                       -- JSON list of the AI's suggested spans, NULL: shown without
);
"""


@dataclass(frozen=True, slots=True)
class ItemRow:
    """One item of a campaign, as stored."""

    id: int
    item_id: str
    src: str
    tgt: str
    src_lang: str
    tgt_lang: str
    system: str
    doc_id: str
    seg_id: str
    judge_score: float | None = None
    sampled: bool = True
    doc_pos: int | None = None  # 1-based position in its document (the input's, or its own doc_pos field)
    check: str = ""  # "bad" or "repeat": an attention check (copy of item check_of), never a result
    check_of: int | None = None
    injected: tuple[int, int] | None = None  # the part of tgt a "bad" check's injected error changed
    prefill: tuple[dict[str, Any], ...] | None = None  # the AI's suggested spans (None: shown without)

    def to_json(self) -> dict[str, Any]:
        """What the page gets (an attention check looks like any item: its kind is not sent)."""
        return {"item_id": self.item_id, "src": self.src, "tgt": self.tgt, "src_lang": self.src_lang,
                "tgt_lang": self.tgt_lang, "system": self.system, "doc_id": self.doc_id, "seg_id": self.seg_id,
                "doc_pos": self.doc_pos}


@dataclass(frozen=True, slots=True)
class Annotation:
    """The newest (or one historic) version of one annotator's annotation of one item."""

    annotator: str
    item: int
    version: int
    body: dict[str, Any]
    created: float


@dataclass(frozen=True, slots=True)
class CampaignInfo:
    name: str
    scheme: Scheme
    task: RatingTask | None
    per_item: int
    sampling: dict[str, Any]
    guidelines: str = ""  # Markdown shown in the page (annotate init --guidelines)
    checks: dict[str, Any] | None = None  # {"rate": R, "seed": S}: attention checks were inserted
    prefill: dict[str, Any] | None = None  # {"run": NAME, "share": F}: items carry the AI's suggestions


class CampaignInUse(InputError):
    """Another process holds the campaign (exit 2)."""


def is_campaign(path: str | Path) -> bool:
    """True when ``path`` is a folder holding a polyjudge campaign store (by its application_id)."""
    db = Path(path) / DB_NAME
    if not Path(path).is_dir() or db.is_symlink() or not db.is_file():
        return False
    try:
        con = sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True)
        try:
            return bool(con.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID)
        finally:
            con.close()
    except sqlite3.Error:
        return False


class CampaignLock:
    """``with CampaignLock(folder):`` holds the campaign exclusively (CampaignInUse at once otherwise)."""

    def __init__(self, folder: Path) -> None:
        self.folder, self._fd = folder, -1

    def __enter__(self) -> CampaignLock:
        if sys.platform == "win32":  # no flock: unguarded
            return self
        import fcntl

        path = self.folder / LOCK_FILE
        if path.is_symlink():
            raise InputError("is a symlink; polyjudge does not write through symlinks", path=str(path))
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            held = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            who = f"process {held}" if held.isdigit() else "another process"
            raise CampaignInUse(f"{self.folder} is in use by {who} (a server?); stop it first") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd < 0:
            return
        import fcntl

        fd, self._fd = self._fd, -1
        try:
            os.ftruncate(fd, 0)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def check_new_campaign(path: str | Path) -> Path:
    """``path`` can become a new campaign folder: not a symlink (``serve``, ``status`` and ``export`` refuse
    one, and polyjudge never writes through one), not a file, not a campaign already (InputError, exit 2)."""
    if Path(path).is_symlink():
        raise InputError("is a symlink; polyjudge does not write through symlinks (give the campaign folder "
                         "itself)", path=os.fspath(path), field="CAMPAIGN")
    root = check_out_path(path, "CAMPAIGN")
    if is_campaign(root):
        raise InputError("already holds a campaign; give a new folder (or serve this one)", path=str(root))
    return root


def claim_campaign(path: str | Path) -> OwnedDir:
    """Take ``path`` as a new campaign folder (created with mode 0700): new or empty, else exit 2."""
    root = check_new_campaign(path)
    if not root.exists():
        root.mkdir(mode=0o700, parents=True)
    owned = claim(root, KIND, names=DB_FILES, flag="CAMPAIGN")
    os.chmod(root, 0o700)
    owned.record(DB_FILES)  # SQLite creates them itself: recorded before it does
    return owned


def open_folder(path: str | Path) -> Path:
    """An existing campaign folder (InputError naming it otherwise)."""
    root = Path(path)
    if root.is_symlink():
        raise InputError("is a symlink; give the campaign folder itself", path=str(root))
    if not root.is_dir():
        raise InputError("no such campaign folder", path=str(root))
    rec = read_record(root)
    if rec is None or rec.kind != KIND or not is_campaign(root):
        raise InputError("is not a polyjudge annotation campaign (make one with 'annotate init')", path=str(root))
    return root


def _connect(db: Path, *, readonly: bool = False) -> sqlite3.Connection:
    if db.is_symlink():
        raise InputError("is a symlink, not a campaign store", path=str(db))
    uri = f"{db.absolute().as_uri()}?mode={'ro' if readonly else 'rw'}"
    con = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False, timeout=30)
    con.execute("PRAGMA busy_timeout=30000")
    if not readonly:
        con.execute("PRAGMA synchronous=FULL")
    if con.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
        con.close()
        raise InputError("is not a polyjudge campaign store", path=str(db))
    version = con.execute("PRAGMA user_version").fetchone()[0]
    if version not in READABLE_VERSIONS:
        con.close()
        raise InputError(f"campaign store version {version}, this polyjudge reads {SCHEMA_VERSION}", path=str(db))
    return con


def create_store(owned: OwnedDir, info: CampaignInfo, items: Sequence[ItemRow],
                 annotators: Sequence[tuple[str, str]], assignments: dict[str, list[int]]) -> None:
    """Write a new store into the claimed folder: made whole in a temporary file, then renamed."""
    target = owned.check_writable(DB_NAME)
    tmp = owned.path / f".{DB_NAME}-{os.getpid()}{time.time_ns() % 10**9}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    os.close(fd)
    try:
        con = sqlite3.connect(str(tmp), isolation_level=None)
        try:
            con.execute(f"PRAGMA application_id={APPLICATION_ID}")
            con.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            con.executescript(SCHEMA + SCHEMA_V2)
            con.execute("BEGIN")
            meta = {"name": info.name, "scheme": info.scheme.name, "per_item": str(info.per_item),
                    "task": json.dumps(info.task.to_dict()) if info.task else "",
                    "sampling": json.dumps(info.sampling), "created": repr(time.time()),
                    "guidelines": info.guidelines, "checks": json.dumps(info.checks),
                    "prefill": json.dumps(info.prefill)}
            con.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
            con.executemany("INSERT INTO items VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                            [(it.id, it.item_id, it.src, it.tgt, it.src_lang, it.tgt_lang, it.system, it.doc_id,
                              it.seg_id, it.judge_score, int(it.sampled)) for it in items])
            con.executemany("INSERT INTO item_meta VALUES (?, ?, ?, ?, ?, ?)",
                            [(it.id, it.doc_pos, it.check, it.check_of,
                              None if it.injected is None else json.dumps(list(it.injected)),
                              None if it.prefill is None else json.dumps(list(it.prefill), ensure_ascii=False))
                             for it in items])
            con.executemany("INSERT INTO annotators VALUES (?, ?, ?)",
                            [(name, token, k) for k, (name, token) in enumerate(annotators)])
            con.executemany("INSERT INTO assignments VALUES (?, ?, ?)",
                            [(name, pos, item) for name, queue in assignments.items()
                             for pos, item in enumerate(queue)])
            con.execute("COMMIT")
            con.execute("PRAGMA journal_mode=WAL")
        finally:
            con.close()
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


class CampaignStore:
    """An open campaign store: reads, and (not ``readonly``) saves annotations."""

    def __init__(self, folder: str | Path, *, readonly: bool = False) -> None:
        self.folder = open_folder(folder)
        self.db = _connect(self.folder / DB_NAME, readonly=readonly)
        meta = dict(self.db.execute("SELECT key, value FROM meta"))
        task = _task(meta.get("task", ""))
        self.info = CampaignInfo(meta["name"], get_scheme(meta["scheme"]), task, int(meta["per_item"]),
                                 json.loads(meta.get("sampling") or "{}"), meta.get("guidelines", ""),
                                 json.loads(meta.get("checks") or "null"), json.loads(meta.get("prefill") or "null"))
        extra = self._item_meta()
        self.items = [_item_row(r, extra.get(int(r[0]))) for r in self.db.execute(
            "SELECT id, item_id, src, tgt, src_lang, tgt_lang, system, doc_id, seg_id, judge_score, sampled "
            "FROM items ORDER BY id")]

    def _item_meta(self) -> dict[int, Sequence[Any]]:
        """item -> its item_meta row (none in a version-1 store)."""
        if not self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'item_meta'").fetchone():
            return {}
        return {int(r[0]): r for r in self.db.execute(
            "SELECT item, doc_pos, check_kind, check_of, injected, prefill FROM item_meta")}

    @property
    def results(self) -> list[ItemRow]:
        """The items whose annotations are results: shown to annotators, not attention checks."""
        return [it for it in self.items if it.sampled and not it.check]

    def close(self) -> None:
        self.db.close()

    def annotators(self) -> list[tuple[str, str]]:
        """(name, token) in the campaign's order."""
        return [(str(n), str(t)) for n, t in self.db.execute("SELECT name, token FROM annotators ORDER BY ord")]

    def queues(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {n: [] for n, _ in self.annotators()}
        for name, item in self.db.execute("SELECT annotator, item FROM assignments ORDER BY annotator, position"):
            out[name].append(int(item))
        return out

    def latest(self, annotator: str | None = None) -> dict[tuple[str, int], Annotation]:
        """The newest version of every annotation (of one annotator, or all)."""
        sql = ("SELECT a.annotator, a.item, a.version, a.body, a.created FROM annotations a JOIN "
               "(SELECT annotator, item, MAX(version) v FROM annotations GROUP BY annotator, item) m "
               "ON a.annotator = m.annotator AND a.item = m.item AND a.version = m.v")
        rows = self.db.execute(sql + (" WHERE a.annotator = ?" if annotator else ""),
                               (annotator,) if annotator else ())
        return {(r[0], int(r[1])): Annotation(r[0], int(r[1]), int(r[2]), json.loads(r[3]), float(r[4]))
                for r in rows}

    def active_seconds(self) -> dict[tuple[str, int], float]:
        """(annotator, item) -> active seconds added up over every saved version that recorded a time."""
        out: dict[tuple[str, int], float] = {}
        for name, item, body in self.db.execute("SELECT annotator, item, body FROM annotations"):
            ms = json.loads(body).get("active_ms")
            if isinstance(ms, int | float) and not isinstance(ms, bool):
                out[(name, int(item))] = out.get((name, int(item)), 0.0) + ms / 1000
        return out

    def history_count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM annotations").fetchone()[0])

    def save(self, annotator: str, item: int, body: dict[str, Any]) -> int:
        """Store a new version of ``annotator``'s annotation of ``item``; committed (on disk) on return."""
        text = json.dumps(body, ensure_ascii=False, sort_keys=True)
        with self._transaction():
            row = self.db.execute("SELECT COALESCE(MAX(version), 0) FROM annotations WHERE annotator = ? "
                                  "AND item = ?", (annotator, item)).fetchone()
            version = int(row[0]) + 1
            self.db.execute("INSERT INTO annotations (annotator, item, version, body, created) VALUES (?,?,?,?,?)",
                            (annotator, item, version, text, time.time()))
        return version

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")


def _item_row(r: Sequence[Any], m: Sequence[Any] | None) -> ItemRow:
    row = ItemRow(int(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), str(r[5]), str(r[6]), str(r[7]),
                  str(r[8]), None if r[9] is None else float(r[9]), bool(r[10]))
    if m is None:
        return row
    injected = json.loads(m[4]) if m[4] else None
    return replace(row, doc_pos=None if m[1] is None else int(m[1]), check=str(m[2] or ""),
                   check_of=None if m[3] is None else int(m[3]),
                   injected=None if injected is None else (int(injected[0]), int(injected[1])),
                   prefill=None if m[5] is None else tuple(json.loads(m[5])))


def _task(text: str) -> RatingTask | None:
    if not text:
        return None
    raw = json.loads(text)
    return RatingTask.build([o["label"] for o in raw["options"]], raw["response_sets"], name=raw["name"],
                            instruction=raw["instruction"], letters=tuple(raw["letters"]),
                            descriptions=tuple(o["description"] for o in raw["options"]))


__all__ = ["APPLICATION_ID", "DB_NAME", "KIND", "Annotation", "CampaignInUse", "CampaignInfo", "CampaignLock",
           "CampaignStore", "ItemRow", "check_new_campaign", "claim_campaign", "create_store", "is_campaign",
           "open_folder"]
