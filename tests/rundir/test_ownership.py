"""rundir.ownership and rundir.clash: which files are polyjudge's, and outputs that are inputs."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from polyjudge.data.errors import InputError
from polyjudge.engine.store import Store
from polyjudge.rundir import OWNED_RECORD, RunDir, RunDirLock, claim_run_dir, clear_run
from polyjudge.rundir.clash import Target, file_target, input_target, refuse_clashes, run_dir_target
from polyjudge.rundir.ownership import atomic_write, check_out_path, claim, claim_study, read_record

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "run-0.1.0"


def record(folder: Path) -> dict:
    return json.loads((folder / OWNED_RECORD).read_text())


def test_a_new_folder_is_recorded_with_its_store_before_sqlite_creates_it(tmp_path):
    owned = claim_run_dir(tmp_path / "run")
    assert record(tmp_path / "run") == {"kind": "judge run", "files": sorted(
        ["store.sqlite", "store.sqlite-journal", "store.sqlite-shm", "store.sqlite-wal"])}
    assert owned.owns("store.sqlite") and not owned.owns("segments.tsv")


def test_the_0_1_0_fixture_is_adopted_file_by_file_and_stays_readable(tmp_path):
    run = tmp_path / "old"
    shutil.copytree(FIXTURE, run)
    (run / "mtme" / "COMET.seg.score").write_text("user\n")
    (run / "notes.txt").write_text("user\n")
    owned = claim_run_dir(run)
    assert owned.files >= {"manifest.json", "judgments.jsonl", "segments.tsv", "systems.tsv", "items.jsonl",
                           "aggregates.tsv", "mtme/polyjudge-da.seg.score", "mtme/polyjudge-da.sys.score"}
    assert not owned.owns("mtme/COMET.seg.score") and not owned.owns("notes.txt")
    assert len(RunDir.open(run).judgments) == len(RunDir.open(FIXTURE).judgments)
    clear_run(run)  # --restart on it: polyjudge's files go, the user's stay
    assert sorted(p.relative_to(run).as_posix() for p in run.rglob("*") if p.is_file()) == [
        OWNED_RECORD, "mtme/COMET.seg.score", "notes.txt"]


def test_a_store_without_polyjudges_tables_is_never_adopted(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "judgments.jsonl").write_text("")
    con = sqlite3.connect(run / "store.sqlite")
    con.execute("CREATE TABLE responses (x)")  # a name in common is not enough
    con.commit()
    con.close()
    with pytest.raises(InputError, match="store.sqlite: is not polyjudge's file"):
        claim_run_dir(run)
    assert (run / "store.sqlite").is_file()
    ours = tmp_path / "ours"
    ours.mkdir()
    (ours / "judgments.jsonl").write_text("")
    Store(ours / "store.sqlite").close()
    assert claim_run_dir(ours).owns("store.sqlite")


def test_another_kind_of_polyjudge_folder_is_refused(tmp_path):
    claim(tmp_path / "h", "human-mqm", names=("segments.tsv",))
    with pytest.raises(InputError, match="holds a polyjudge human-mqm folder, not a judge run one"):
        claim_run_dir(tmp_path / "h")
    with pytest.raises(InputError, match="damaged"):
        (tmp_path / "h" / OWNED_RECORD).write_text("{")
        claim_run_dir(tmp_path / "h")


def test_a_study_folder_of_an_earlier_version_is_adopted_by_its_marker(tmp_path):
    study = tmp_path / "study"
    study.mkdir()
    (study / "probe.json").write_text("{}")
    (study / "probe.tsv").write_text("old")
    (study / "cond-a").mkdir()  # a condition's run directory
    owned = claim_study(study, "probe study", ("probe.tsv", "probe.json", "agreement.tsv"), "probe.json")
    assert owned.files == {"probe.tsv", "probe.json", "agreement.tsv"}
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "probe.tsv").write_text("mine")
    with pytest.raises(InputError, match="holds 'probe.tsv'"):
        claim_study(tmp_path / "other", "probe study", ("probe.tsv", "probe.json"), "probe.json")


def test_out_paths_that_cannot_be_folders(tmp_path):
    (tmp_path / "f").write_text("x")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    for bad, why in (("", "is empty"), (tmp_path / "dangling", "dangling symlink"),
                     (tmp_path / "dangling" / "a", "dangling symlink"), (tmp_path / "f" / "a" / "b", "is a file"),
                     (tmp_path / "f", "is not a directory")):
        with pytest.raises(InputError, match=why):
            check_out_path(bad)
    assert sorted(os.listdir(tmp_path)) == ["dangling", "f"]


def test_atomic_write_never_follows_a_symlink_and_leaves_nothing_on_failure(tmp_path):
    target, victim = tmp_path / "out.txt", tmp_path / "victim.txt"
    victim.write_text("keep")
    (tmp_path / "out.txt.tmp").symlink_to(victim)  # the old fixed temporary name, planted
    atomic_write(target, ["new"])
    assert target.read_text() == "new" and victim.read_text() == "keep"

    def boom():
        yield "part"
        raise RuntimeError("disk gone")

    with pytest.raises(RuntimeError):
        atomic_write(target, boom())
    assert target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt", "out.txt.tmp", "victim.txt"]


def test_leftovers_of_a_killed_write_go_only_with_the_lock_held(tmp_path):
    run = tmp_path / "run"
    claim_run_dir(run)
    for name in (".judgments-abc123.tmp", ".manifest.json-x1y2z3.tmp", "segments.tsv.tmp", "mine.tmp",
                 ".mine-abcdef.tmp"):
        (run / name).write_text("x")
    with RunDirLock(run):
        pass
    left = sorted(p.name for p in run.iterdir())
    assert left == [".mine-abcdef.tmp", OWNED_RECORD, "mine.tmp"]
    assert read_record(run) is not None


def test_clashes_by_path_symlink_and_hard_link(tmp_path):
    src = tmp_path / "in.tsv"
    src.write_text("x")
    os.link(src, tmp_path / "hard.tsv")
    (tmp_path / "soft.tsv").symlink_to(src)
    for out in ("in.tsv", "hard.tsv", "./sub/../in.tsv"):
        with pytest.raises(InputError, match="would overwrite .*in.tsv \\(--human, an input\\)"):
            refuse_clashes(file_target("-o/--out", tmp_path / out), file_target("--human", src))
    with pytest.raises(InputError, match="is a symlink"):
        refuse_clashes(file_target("-o/--out", tmp_path / "soft.tsv"), [])
    refuse_clashes(file_target("-o/--out", tmp_path / "new.tsv"), file_target("--human", src))  # no clash


def test_a_run_directory_input_clashes_through_its_own_files(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    inputs = input_target("RUN_DIR", run)
    assert inputs[0].names is not None and "mtme/polyjudge-da.seg.score" in inputs[0].names
    for name in ("store.sqlite", "segments.tsv", "mtme/polyjudge-da.seg.score"):
        with pytest.raises(InputError, match="RUN_DIR, an input"):
            refuse_clashes(file_target("-o/--out", run / name), inputs)
    refuse_clashes(file_target("-o/--out", run / "report.html"), inputs)
    with pytest.raises(InputError, match="another output"):
        refuse_clashes([*run_dir_target("-o/--out", tmp_path / "new"),
                        Target("--record", str(tmp_path / "new" / "store.sqlite"))], [])


def test_a_file_output_into_missing_folders_creates_them(tmp_path, capsys):
    """Issue 43: ``-o`` into a missing folder exited 1 naming the internal temporary file."""
    from tests.helpers.cli import cli

    out = tmp_path / "missing" / "deeper" / "schema.json"
    assert cli("study", "schema", "-o", out) == 0
    assert json.loads(out.read_text(encoding="utf-8")) and os.listdir(out.parent) == ["schema.json"]
    assert ".tmp" not in capsys.readouterr().err


def test_atomic_write_names_the_target_not_its_temporary_file(tmp_path):
    from polyjudge.rundir.ownership import atomic_write

    (tmp_path / "afile").write_text("x")
    with pytest.raises(OSError) as exc:
        atomic_write(tmp_path / "afile" / "out.tsv", ["a\n"])
    assert exc.value.filename == str(tmp_path / "afile" / "out.tsv")
    atomic_write(tmp_path / "new" / "out.tsv", ["a\n"])
    assert (tmp_path / "new" / "out.tsv").read_text() == "a\n"
