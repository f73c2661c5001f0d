"""``annotate init``: the folder, the annotators and their queues; bad input exits 2 with one line."""

from __future__ import annotations

import sqlite3
from collections import Counter

import pytest

from polyjudge.annotate.campaign import deal
from polyjudge.annotate.store import APPLICATION_ID, CampaignStore
from tests.annotate.campaign_helpers import write_items
from tests.helpers.cli import cli


def _init(tmp_path, *args):
    items = write_items(tmp_path / "items.tsv", 8)
    return cli("annotate", "init", tmp_path / "camp", "--items", items, *args)


def test_the_store_is_marked_as_polyjudges_and_private(tmp_path):
    assert _init(tmp_path, "--scheme", "mqm", "--annotators", "3", "--per-item", "2") == 0
    db = tmp_path / "camp" / "campaign.sqlite"
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()
    store = CampaignStore(tmp_path / "camp", readonly=True)
    names = [n for n, _ in store.annotators()]
    queues = store.queues()
    store.close()
    assert names == ["annotator-1", "annotator-2", "annotator-3"]
    seen = Counter(i for q in queues.values() for i in q)
    assert set(seen.values()) == {2} and len(seen) == 8  # every item twice, never twice to one annotator
    assert sorted(len(q) for q in queues.values()) == [5, 5, 6]


def test_deal_is_even_and_never_gives_one_annotator_an_item_twice():
    queues = deal(list(range(10)), ["a", "b", "c", "d"], 3)
    assert all(len(set(q)) == len(q) for q in queues.values())
    assert sorted(len(q) for q in queues.values()) == [7, 7, 8, 8]


@pytest.mark.parametrize(("args", "message"), [
    (("--scheme", "mqm", "--annotators", "2", "--per-item", "3"), "--per-item must be 1..2"),
    (("--scheme", "mqm", "--annotators", "0"), "give 1 to 1000 annotators"),
    (("--scheme", "mqm", "--annotators", "ana,ana"), "named twice"),
    (("--scheme", "mqm", "--annotators", "ana,<b>x</b>"), "annotator name"),
    (("--scheme", "da", "--sample", "3"), "give --sample N and --by together"),
    (("--scheme", "da", "--sample", "3", "--by", "ppi"), "needs the judge's run directory"),
    (("--scheme", "mqm", "--task", "task.json"), "task file not found"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, args, message):
    assert _init(tmp_path, *args) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "camp" / "campaign.sqlite").exists()


def test_a_folder_of_the_users_files_a_symlink_and_a_foreign_store_are_refused(tmp_path, capsys):
    items = write_items(tmp_path / "items.tsv", 4)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine", encoding="utf-8")
    assert cli("annotate", "init", mine, "--items", items, "--scheme", "da") == 2
    assert "not empty and not a polyjudge" in capsys.readouterr().err and (mine / "notes.txt").read_text() == "mine"
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    assert cli("annotate", "init", tmp_path / "link", "--items", items, "--scheme", "da") == 2
    assert not (tmp_path / "elsewhere").exists()
    other = tmp_path / "other"
    other.mkdir()
    sqlite3.connect(other / "campaign.sqlite").execute("CREATE TABLE t (x)").connection.close()
    for command in (("serve", other, "--port", "0"), ("status", other), ("export", other, "--to", "ratings",
                                                                       "-o", tmp_path / "r.tsv")):
        assert cli("annotate", *command) == 2
        assert "not a polyjudge annotation campaign" in capsys.readouterr().err


def test_a_task_is_only_for_rating_schemes_and_read_from_its_file(tmp_path, capsys):
    task = tmp_path / "task.json"
    task.write_text('{"name": "t", "instruction": "Which?", "options": ["yes", "no"], "response_sets": "all"}',
                    encoding="utf-8")
    assert _init(tmp_path, "--scheme", "mqm", "--task", task) == 2
    assert "a task is for forced-choice and response-set" in capsys.readouterr().err
    assert _init(tmp_path, "--scheme", "response-set", "--task", task) == 0
    store = CampaignStore(tmp_path / "camp", readonly=True)
    assert store.info.task is not None and store.info.task.options == ("yes", "no")
    assert store.info.task.instruction == "Which?"
    store.close()


@pytest.mark.parametrize("sample", [(), ("--sample", "2", "--by", "ppi", "--run")])
def test_init_through_a_symlink_is_refused_before_anything_is_built(tmp_path, capsys, sample):
    """A symlink to an empty folder: exit 2 in one line, and the folder it names stays empty (it used to get a
    whole campaign, then the links failed with 'is a symlink')."""
    items = write_items(tmp_path / "items.tsv", 4)
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    extra = (*sample, tmp_path / "no-such-run") if sample else ()
    assert cli("annotate", "init", tmp_path / "link", "--items", items, "--scheme", "mqm", *extra) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1
    assert "is a symlink" in captured.err and "Traceback" not in captured.err
    assert list(real.iterdir()) == [] and (tmp_path / "link").is_symlink()
