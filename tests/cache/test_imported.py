"""Answers imported with --batch-import are marked as imported in the shared cache.

Before: an imported file's answers entered the machine's cache exactly like answers the endpoint sent,
so neither a later run that took them nor ``polyjudge cache stats`` could tell them apart. Now the
cache's ``imported`` table marks them (with the file's base name, never its folder), a later run
counts them in its manifest (``from_cache_imported``), ``cache stats`` shows how many there are,
``clear`` and ``prune`` take the marks with their entries, and a cache made before the marks gets
the table when it is next written to. The import stays under its own endpoint: a judge of the same
model on another server finds none of it.
"""

import dataclasses
import json
import sqlite3
import time

import pytest

from polyjudge.api import judge
from polyjudge.cache import APPLICATION_ID, CachedAnswer, ResponseCache, cache_dir
from polyjudge.cache.location import cache_file
from polyjudge.data.records import Item
from tests.engine.test_batch_import_checks import exported_and_answered
from tests.helpers.batch_providers import OPENAI, da
from tests.helpers.cli import cli
from tests.helpers.openai_server import ScriptedServer

OLD_SCHEMA = """
CREATE TABLE answers (scope TEXT NOT NULL, key TEXT NOT NULL, model TEXT NOT NULL, text TEXT, finish_reason TEXT,
    prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, cached_prompt_tokens INTEGER NOT NULL,
    reasoning_tokens INTEGER NOT NULL, latency_s REAL NOT NULL, reasoning TEXT, logprobs TEXT, usage_note TEXT,
    size INTEGER NOT NULL, created REAL NOT NULL, PRIMARY KEY (scope, key));
CREATE INDEX answers_created ON answers(created);
CREATE TABLE adaptations (scope TEXT NOT NULL, model TEXT NOT NULL, changes TEXT NOT NULL,
    PRIMARY KEY (scope, model));
"""


@pytest.fixture
def items():
    """Six segments of two systems, as the engine's batch tests judge them."""
    return [Item(src=f"source {seg}", tgt=f"{system} translation {seg}", src_lang="en", tgt_lang="de",
                 doc_id="d1" if seg < 3 else "d2", seg_id=str(seg), system=system)
            for system in ("A", "B") for seg in range(1, 4)]


def rows(sql):
    db = sqlite3.connect(cache_file(cache_dir(None)))
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def imported_run(items, tmp_path, srv):
    """A run answered from a batch file kept in a folder that names its user; the run's config."""
    cfg, answered = exported_and_answered(items, tmp_path, srv)
    private = tmp_path / "home-of-alice" / "client-acme"
    private.mkdir(parents=True)
    moved = answered.rename(private / "answers.jsonl")
    result = judge(items, dataclasses.replace(cfg, batch_import=str(moved)), out=tmp_path / "run")
    assert result.status_counts() == {"ok": 6}
    return cfg


def test_imported_answers_are_marked_with_the_file_name_only(items, tmp_path):
    with ScriptedServer(da) as srv:
        imported_run(items, tmp_path, srv)
        scope = f"openai@{srv.base_url}"
    entries = rows("SELECT scope, key FROM answers ORDER BY key")
    assert len(entries) == 6 and {s for s, _ in entries} == {scope}
    assert rows("SELECT scope, key FROM imported ORDER BY key") == entries
    assert {s for (s,) in rows("SELECT source FROM imported")} == {"answers.jsonl"}  # no folder, no user name
    with ResponseCache(cache_dir(None), readonly=True) as cache:
        got = cache.get_many(scope, [k for _, k in entries])
    assert {a.source for a in got.values()} == {"answers.jsonl"}


def test_a_later_run_says_how_many_cached_answers_were_imported(items, tmp_path):
    with ScriptedServer(da) as srv:
        cfg = imported_run(items, tmp_path, srv)
        later = judge(items, cfg, out=tmp_path / "later")
        assert srv.requests == []  # the export and the import sent nothing, nor did the later run
    counts = json.loads((tmp_path / "later" / "manifest.json").read_text())["counts"]
    assert counts["from_cache"] == 6 and counts["from_cache_imported"] == 6
    assert later.manifest.counts["from_cache_imported"] == 6
    from polyjudge.cli.judge_cmd import _imported  # the summary line's words for these counts

    assert _imported(later.manifest.counts) == " (6 answer(s) first imported from a batch file)"
    assert _imported({"from_cache": 6}) == ""


def test_live_answers_are_not_marked_and_a_live_run_counts_none(items, tmp_path):
    with ScriptedServer(da) as srv:
        cfg = OPENAI.config(srv, runs=1)
        judge(items, cfg, out=tmp_path / "live")
        again = judge(items, cfg, out=tmp_path / "again")
    assert again.manifest.counts["from_cache"] == 6 and "from_cache_imported" not in again.manifest.counts
    assert rows("SELECT COUNT(*) FROM imported") == [(0,)]


def test_an_import_stays_under_its_own_endpoint(items, tmp_path):
    with ScriptedServer(da) as one, ScriptedServer(da) as two:
        imported_run(items, tmp_path, one)
        other = judge(items, OPENAI.config(two, runs=1), out=tmp_path / "other")  # openai:m@URL2
        assert len(two.requests) == 6 and one.requests == []
        scopes = (f"openai@{one.base_url}", f"openai@{two.base_url}")
    assert other.manifest.counts["from_cache"] == 0 and "from_cache_imported" not in other.manifest.counts
    per_scope = dict(rows("SELECT a.scope, COUNT(i.key) FROM answers a LEFT JOIN imported i "
                          "ON i.scope = a.scope AND i.key = a.key GROUP BY a.scope"))
    assert per_scope == {scopes[0]: 6, scopes[1]: 0}


def test_cache_stats_show_the_imported_entries_in_every_format(items, tmp_path, capsys):
    with ScriptedServer(da) as srv:
        imported_run(items, tmp_path, srv)
        judge(items, OPENAI.config(srv, runs=2), out=tmp_path / "live")  # run 2 is new: 6 live answers
        scope = f"openai@{srv.base_url}"
    capsys.readouterr()
    assert cli("cache", "stats", "--format", "json") == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["entries"] == 12 and stats["imported"] == 6
    assert [(m["scope"], m["entries"], m["imported"]) for m in stats["models"]] == [(scope, 12, 6)]
    assert cli("cache", "stats", "--format", "tsv") == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split("\t")[-1] == "imported" and row.split("\t")[-1] == "6"
    assert cli("cache", "stats") == 0
    text = capsys.readouterr().out
    assert "imported from batch files: 6" in text and "12 entries" in text and "6 imported" in text


def test_clear_and_prune_leave_no_orphan_marks(items, tmp_path, capsys):
    with ScriptedServer(da) as srv:
        imported_run(items, tmp_path, srv)
    assert rows("SELECT COUNT(*) FROM imported") == [(6,)]
    assert cli("cache", "prune", "--max-size", "1") == 0  # the oldest entries go, every one here
    assert rows("SELECT COUNT(*) FROM answers") == [(0,)] and rows("SELECT COUNT(*) FROM imported") == [(0,)]
    with ScriptedServer(da) as srv:
        imported_run(items, tmp_path / "again", srv)
    assert cli("cache", "prune", "--older-than", "0") == 0
    assert rows("SELECT COUNT(*) FROM answers") == [(0,)] and rows("SELECT COUNT(*) FROM imported") == [(0,)]
    with ScriptedServer(da) as srv:
        imported_run(items, tmp_path / "third", srv)
    assert cli("cache", "clear") == 0
    assert rows("SELECT COUNT(*) FROM answers") == [(0,)] and rows("SELECT COUNT(*) FROM imported") == [(0,)]


def test_a_mark_left_by_an_earlier_polyjudge_never_marks_a_new_answer(tmp_path):
    """An earlier polyjudge removes entries without their marks; a live answer stored later under the
    same key is not taken for an imported one, and the next removal drops the orphan."""
    folder = tmp_path / "c"
    with ResponseCache(folder) as cache:
        cache.put_many("s", [CachedAnswer("k", "m", "from a file", "stop")], source="/home/alice/answers.jsonl")
        cache.put_many("s", [CachedAnswer("gone", "m", "live", "stop")])
    db = sqlite3.connect(cache_file(folder))
    db.execute("DELETE FROM answers WHERE key='k'")  # what an earlier version's clear or prune did
    db.commit()
    db.close()
    time.sleep(0.01)
    with ResponseCache(folder) as cache:
        assert cache.put_many("s", [CachedAnswer("k", "m", "live", "stop")]) == 1
        assert cache.get_many("s", ["k"])["k"].source is None
        assert cache.stats().imported == 0
        cache.remove_older_than(3600)  # removes nothing, and the orphan mark with it
    assert sqlite3.connect(cache_file(folder)).execute("SELECT COUNT(*) FROM imported").fetchone() == (0,)


def test_a_cache_made_before_the_marks_is_read_and_given_the_table(tmp_path):
    for app in (APPLICATION_ID, 0):  # a marked version-1 cache, and an unmarked one of before the marks
        folder = tmp_path / f"old-{app}"
        folder.mkdir()
        db = sqlite3.connect(cache_file(folder))
        db.executescript(OLD_SCHEMA)
        db.execute(f"PRAGMA application_id={app}")
        db.execute("PRAGMA user_version=1" if app else "PRAGMA user_version=0")
        db.execute("INSERT INTO answers VALUES ('s', 'k', 'm', 't', 'stop', 1, 1, 0, 0, 0.1, NULL, NULL, NULL, 1, ?)",
                   (time.time(),))
        db.commit()
        db.close()
        with ResponseCache(folder, readonly=True) as cache:  # a look changes nothing
            assert cache.get_many("s", ["k"])["k"].source is None and cache.stats().imported == 0
        with ResponseCache(folder) as cache:
            assert cache.get_many("s", ["k"])["k"].text == "t"
            cache.put_many("s", [CachedAnswer("k2", "m", "t2", "stop")], source="b.jsonl")
            assert cache.stats().imported == 1 and cache.stats().entries == 2
        db = sqlite3.connect(cache_file(folder))
        assert db.execute("PRAGMA user_version").fetchone() == (1,)
        assert db.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,)
        assert db.execute("SELECT key, source FROM imported").fetchall() == [("k2", "b.jsonl")]
        db.close()


def test_the_mark_names_no_folder_and_no_secret(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "zz-not-a-real-key-4711")
    with ResponseCache(tmp_path / "c") as cache:
        for n, path in enumerate([r"C:\Users\alice\answers.jsonl", "/home/bob/out-zz-not-a-real-key-4711.jsonl"]):
            cache.put_many("s", [CachedAnswer(f"k{n}", "m", "t", "stop")], source=path)
        sources = sorted(a.source or "" for a in cache.get_many("s", ["k0", "k1"]).values())
    assert sources == ["answers.jsonl", "out-[REDACTED].jsonl"]
    assert b"zz-not-a-real-key-4711" not in (tmp_path / "c" / "responses.sqlite").read_bytes()


def test_an_import_made_without_the_cache_is_marked_when_offered_later(items, tmp_path):
    """--batch-import with --no-cache, then the same run directory with the cache: the store's answers
    are offered to the cache (backfill), the imported ones marked."""
    with ScriptedServer(da) as srv:
        cfg, answered = exported_and_answered(items, tmp_path, srv)
        judge(items, dataclasses.replace(cfg, batch_import=str(answered), use_cache=False), out=tmp_path / "run")
        assert rows("SELECT COUNT(*) FROM answers") == [(0,)]
        judge(items, cfg, out=tmp_path / "run")  # nothing to send: the store's answers fill the cache
        assert rows("SELECT COUNT(*) FROM answers") == [(6,)]
        later = judge(items, cfg, out=tmp_path / "later")
        assert srv.requests == []
    assert {s for (s,) in rows("SELECT source FROM imported")} == {"answers.jsonl"}
    assert later.manifest.counts["from_cache_imported"] == 6


def test_answers_a_sent_batch_brought_are_never_marked(items, tmp_path):
    with ScriptedServer(da) as srv:
        judge(items, OPENAI.batched(srv, runs=1, use_cache=False), out=tmp_path / "quiet")  # through the Batch API
        assert not cache_file(cache_dir(None)).exists()
        judge(items, OPENAI.batched(srv, runs=1), out=tmp_path / "quiet")  # the store's answers fill the cache
    assert rows("SELECT COUNT(*) FROM answers") == [(6,)] and rows("SELECT COUNT(*) FROM imported") == [(0,)]
