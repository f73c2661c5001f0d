"""``polyjudge cache stats|prune|clear`` on a cache filled by a real run against the scripted server."""

import json
import sqlite3
import time

import pytest

from tests.helpers.cli import cli
from tests.helpers.openai_server import ScriptedServer


@pytest.fixture
def filled(tmp_path):
    """A cache holding 8 answers of model m (4 items x 2 runs) from one scripted server."""
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"src": f"s{i}", "tgt": f"t{i}", "system": "A", "seg_id": str(i),
                                       "src_lang": "en", "tgt_lang": "de"}) + "\n" for i in range(4)))
    with ScriptedServer(lambda b: json.dumps({"score": 60 + b["seed"]})) as srv:
        assert cli("judge", inp, "-o", tmp_path / "run", "--judge", f"openai:m@{srv.base_url}", "--runs", "2",
                   "-q") == 0  # the default location: POLYJUDGE_CACHE
        scope = f"openai@{srv.base_url}"
    return scope


def test_stats_in_every_format(filled, capsys, monkeypatch, tmp_path):
    capsys.readouterr()
    assert cli("cache", "stats", "--format", "json") == 0
    stats = json.loads(capsys.readouterr().out)
    answer_bytes = len(json.dumps({"score": 60})) * 4 + len(json.dumps({"score": 61})) * 4
    assert stats["entries"] == 8 and stats["answer_bytes"] == answer_bytes
    assert stats["models"] == [{"scope": filled, "model": "m", "entries": 8, "answer_bytes": answer_bytes,
                                "imported": 0}]
    assert stats["imported"] == 0  # answered by the endpoint, none imported from a batch file
    assert stats["file_bytes"] > 0 and stats["oldest"] and stats["path"].endswith("responses.sqlite")
    assert cli("cache", "stats", "--format", "tsv") == 0
    assert capsys.readouterr().out.splitlines() == ["scope\tmodel\tentries\tanswer_bytes\timported",
                                                    f"{filled}\tm\t8\t{answer_bytes}\t0"]
    assert cli("cache", "stats") == 0
    assert "entries: 8  answers: 104 B" in capsys.readouterr().out
    assert cli("cache", "stats", "--format", "tsv", "-o", tmp_path / "stats.tsv") == 0
    assert (tmp_path / "stats.tsv").read_text().startswith("scope\tmodel")


def test_stats_of_no_cache_creates_nothing(tmp_path, capsys):
    assert cli("cache", "stats", "--cache", tmp_path / "nothing", "--format", "json") == 0
    assert json.loads(capsys.readouterr().out)["entries"] == 0
    assert not (tmp_path / "nothing").exists()


def test_prune_older_than_and_clear(filled, capsys, monkeypatch):
    import os
    from pathlib import Path

    db_path = Path(os.environ["POLYJUDGE_CACHE"]) / "responses.sqlite"
    db = sqlite3.connect(db_path)
    db.execute("UPDATE answers SET created=? WHERE rowid IN (SELECT rowid FROM answers LIMIT 3)",
               (time.time() - 40 * 86_400,))
    db.commit()
    db.close()
    assert cli("cache", "prune", "--older-than", "30") == 0
    assert "removed 3 entries; 5 left" in capsys.readouterr().err
    assert cli("cache", "prune", "--max-size", "1") == 0  # smaller than any SQLite file: everything goes
    assert "removed 5 entries; 0 left" in capsys.readouterr().err
    assert cli("cache", "clear") == 0
    assert "removed 0 entries" in capsys.readouterr().err


def test_prune_and_clear_exit_2_on_bad_input(filled, capsys):
    assert cli("cache", "prune") == 2
    assert "--older-than DAYS and/or --max-size SIZE" in capsys.readouterr().err
    assert cli("cache", "prune", "--max-size", "lots") == 2
    err = capsys.readouterr().err
    assert "max-size" in err and "not a size" in err and "Traceback" not in err
    assert cli("cache", "prune", "--older-than", "-1") == 2
    assert cli("cache", "clear") == 0
    assert "removed 8 entries" in capsys.readouterr().err
