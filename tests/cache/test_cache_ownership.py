"""The cache is polyjudge's file or nothing (issue 34, item 4).

Another program's database, a symbolic link, a zero-byte or damaged file at
the cache's place is refused with one line and left byte for byte as it was;
a cache of an earlier version is recognised and marked; a damaged page makes
the dry run count every request as to send; a cache that cannot be opened
is a warning and the run goes on; ``--cache`` inside a run directory is
refused at once.
"""

import json
import sqlite3

import pytest

import polyjudge.cache.store as store_module
from polyjudge.cache import ResponseCache
from tests.helpers.cli import cli
from tests.helpers.openai_server import ScriptedServer

# What the cache's table looked like before the mark (the schema of version 1 as written then).
EARLIER_SCHEMA = store_module.SCHEMA


def write_items(path, n=6):
    path.write_text("".join(json.dumps({"src": f"source {i}", "tgt": f"translation {i}", "system": "S",
                                        "seg_id": str(i), "src_lang": "en", "tgt_lang": "de"}) + "\n"
                            for i in range(n)))
    return path


def score(body):
    return json.dumps({"score": 70})


def foreign_cache(folder):
    """Another program's SQLite file, with a table ``answers`` of its own and 70 rows."""
    folder.mkdir()
    db = sqlite3.connect(folder / "responses.sqlite")
    db.execute("CREATE TABLE answers (id INTEGER PRIMARY KEY, question TEXT, answer TEXT, created REAL)")
    db.executemany("INSERT INTO answers (question, answer, created) VALUES (?, ?, ?)",
                   [(f"q{i}", f"a{i}", float(i)) for i in range(70)])
    db.commit()
    db.close()
    return folder / "responses.sqlite"


def one_error_line(err):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def judge_args(tmp_path, srv, cache, out="run", *more):
    return ["judge", write_items(tmp_path / "in.jsonl"), "-o", tmp_path / out, "--judge",
            f"openai:m@{srv.base_url}", "-q", "--cache", cache, *more]


def test_cache_clear_leaves_another_programs_database_alone(tmp_path, capsys):
    db = foreign_cache(tmp_path / "c")
    before = db.read_bytes()
    for command in (["clear"], ["prune", "--older-than", "0"], ["stats"]):
        assert cli("cache", *command, "--cache", tmp_path / "c") == 2, command
        line = one_error_line(capsys.readouterr().err)
        assert "not a polyjudge response cache" in line and "responses.sqlite" in line
    assert db.read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["responses.sqlite"]


def test_judge_never_adopts_another_programs_database(tmp_path, capsys):
    db = foreign_cache(tmp_path / "c")
    before = db.read_bytes()
    with ScriptedServer(score) as srv:
        assert cli(*judge_args(tmp_path, srv, tmp_path / "c")) == 2
        assert srv.requests == []
    assert "not a polyjudge response cache" in one_error_line(capsys.readouterr().err)
    assert db.read_bytes() == before  # no table added, not switched to WAL
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["responses.sqlite"]


def test_a_dangling_symlink_is_never_written_through(tmp_path, capsys):
    (tmp_path / "c").mkdir()
    target = tmp_path / "elsewhere" / "db.sqlite"
    target.parent.mkdir()
    (tmp_path / "c" / "responses.sqlite").symlink_to(target)
    with ScriptedServer(score) as srv:
        assert cli(*judge_args(tmp_path, srv, tmp_path / "c")) == 2
    assert "symbolic link" in one_error_line(capsys.readouterr().err)
    assert not target.exists()
    assert cli("cache", "clear", "--cache", tmp_path / "c") == 2
    assert "symbolic link" in one_error_line(capsys.readouterr().err)
    assert not target.exists()


@pytest.mark.parametrize("content", [b"", b"garbage, not SQLite " * 300])
def test_zero_byte_or_damaged_file_is_named_as_the_cache(tmp_path, capsys, content):
    (tmp_path / "c").mkdir()
    db = tmp_path / "c" / "responses.sqlite"
    db.write_bytes(content)
    for command in (["stats"], ["prune", "--older-than", "1"], ["clear"]):
        assert cli("cache", *command, "--cache", tmp_path / "c") == 2, command
        line = one_error_line(capsys.readouterr().err)
        assert "response cache" in line and "responses.sqlite" in line, line
        assert "store database" not in line and "no such table" not in line, line
    assert db.read_bytes() == content
    with ScriptedServer(score) as srv:
        assert cli(*judge_args(tmp_path, srv, tmp_path / "c")) == 2
    one_error_line(capsys.readouterr().err)
    assert db.read_bytes() == content


def test_an_earlier_cache_is_recognised_and_marked(tmp_path):
    (tmp_path / "c").mkdir()
    db = sqlite3.connect(tmp_path / "c" / "responses.sqlite")
    db.executescript(EARLIER_SCHEMA.split("CREATE TABLE IF NOT EXISTS adaptations")[0])  # before adaptations came
    db.execute("PRAGMA user_version=1")
    db.execute("INSERT INTO answers VALUES ('s', 'k', 'm', 'kept', 'stop', 1, 1, 0, 0, 0.1, NULL, NULL, NULL, 4, 1.0)")
    db.commit()
    db.close()
    with ResponseCache(tmp_path / "c") as cache:
        assert cache.get_many("s", ["k"])["k"].text == "kept"
    db = sqlite3.connect(tmp_path / "c" / "responses.sqlite")
    assert db.execute("PRAGMA application_id").fetchone()[0] == store_module.APPLICATION_ID
    db.close()


def test_a_new_cache_carries_the_mark(tmp_path):
    with ResponseCache(tmp_path / "c"):
        pass
    db = sqlite3.connect(tmp_path / "c" / "responses.sqlite")
    assert db.execute("PRAGMA application_id").fetchone()[0] == store_module.APPLICATION_ID
    assert db.execute("PRAGMA user_version").fetchone()[0] == store_module.SCHEMA_VERSION
    db.close()


def damage_a_table_page(path):
    """Overwrite one page of the ``answers`` table itself (the key index stays readable)."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    pages = [p for (p,) in db.execute("SELECT pageno FROM dbstat WHERE name='answers' AND pagetype='leaf'")]
    db.close()
    with open(path, "r+b") as f:
        f.seek((pages[-1] - 1) * page_size)
        f.write(b"\xff" * page_size)


def test_the_dry_run_does_not_count_answers_a_damaged_cache_cannot_give(tmp_path, capsys):
    with ScriptedServer(lambda body: json.dumps({"score": 70, "pad": "x" * 600})) as srv:
        assert cli(*judge_args(tmp_path, srv, tmp_path / "c", "first", "--runs", "2")) == 0
        damage_a_table_page(tmp_path / "c" / "responses.sqlite")
        capsys.readouterr()
        assert cli(*judge_args(tmp_path, srv, tmp_path / "c", "second", "--runs", "2", "--dry-run")) == 0
        captured = capsys.readouterr()
        assert "12 requests to send" in captured.out, captured.out
        assert "in the shared cache" not in captured.out
        assert "damaged" in captured.err
        damaged = (tmp_path / "c" / "responses.sqlite").read_bytes()
        # The real run does as the dry run said: it sends everything, and never writes to the damaged file.
        assert cli(*judge_args(tmp_path, srv, tmp_path / "c", "second", "--runs", "2")) == 0
        assert len(srv.requests) == 24
    assert "damaged" in capsys.readouterr().err
    assert (tmp_path / "c" / "responses.sqlite").read_bytes() == damaged


def test_a_cache_that_cannot_be_opened_is_a_warning(tmp_path, capsys, monkeypatch):
    """A read-only or full cache volume (SQLite cannot open or make the file): the run judges without it."""
    real_connect = sqlite3.connect

    def refusing(target, *a, **kw):
        if "responses.sqlite" in str(target):
            raise sqlite3.OperationalError("unable to open database file")
        return real_connect(target, *a, **kw)

    monkeypatch.setattr(store_module.sqlite3, "connect", refusing)
    with ScriptedServer(score) as srv:
        assert cli(*judge_args(tmp_path, srv, tmp_path / "c")) == 0
        assert len(srv.requests) == 6
    err = capsys.readouterr().err
    assert "without the shared response cache" in err
    assert (tmp_path / "run" / "judgments.jsonl").is_file()


@pytest.mark.parametrize("where", ["run", "run/cache"])
def test_cache_inside_the_run_directory_is_refused_at_once(tmp_path, capsys, where):
    with ScriptedServer(score) as srv:
        assert cli(*judge_args(tmp_path, srv, tmp_path / where)) == 2
        assert srv.requests == []
    assert "run directory" in one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "run").exists()
