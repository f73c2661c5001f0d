"""Output edges through the real CLI: folders holding the user's files, symlinks, commands
pointed at their own inputs, empty and impossible paths, and a closed output pipe.

Every refusal is exit 2 with one line naming the file, before anything is sent; the
user's files are compared byte for byte afterwards.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.cli import cli
from tests.helpers.openai_server import ScriptedServer

ROOT = Path(__file__).resolve().parents[2]
MQM_HEADER = "system\tdoc\tdoc_id\tseg_id\trater\tsource\ttarget\tcategory\tseverity\n"


def items_file(path: Path, n: int = 4) -> Path:
    path.write_text("".join(json.dumps({"src_lang": "en", "tgt_lang": "de",
                                        "src": f"s{i}", "tgt": f"t{i}", "seg_id": str(i // 2), "system": f"S{i % 2}"})
                            + "\n" for i in range(n)), encoding="utf-8")
    return path


@pytest.fixture
def server():
    with ScriptedServer(lambda b: json.dumps({"score": 60})) as srv:
        yield srv


def judge_args(inp: Path, out: object, srv: ScriptedServer, *extra: object) -> list[object]:
    return ["judge", inp, "-o", out, "--backend", "openai", "-m", "m", "--base-url", srv.base_url, "-q", *extra]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def user_store(path: Path) -> bytes:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE orders (id INTEGER, total REAL)")
    con.execute("INSERT INTO orders VALUES (1, 9.5)")
    con.commit()
    con.close()
    return path.read_bytes()


# --------------------------------------------------------------------------- folders with the user's files

def test_a_folder_of_the_users_files_is_refused_and_left_alone(tmp_path, server, capsys):
    inp = items_file(tmp_path / "in.jsonl")
    mine = tmp_path / "mine"
    mine.mkdir()
    for name, text in (("spans.tsv", "my spans\n"), ("merged.jsonl", "{}\n"), ("aggregates.tsv", "a\n"),
                       ("manifest.json", '{"name": "my web app"}\n')):
        (mine / name).write_text(text)
    before = snapshot(mine)
    assert cli(*judge_args(inp, mine, server)) == 2
    err = capsys.readouterr().err
    assert "not a polyjudge judge run folder" in err and "aggregates.tsv" in err and "Traceback" not in err
    assert snapshot(mine) == before and sorted(os.listdir(mine)) == sorted(before)
    assert not server.requests


@pytest.mark.parametrize("restart", [False, True])
def test_the_users_store_sqlite_is_never_adopted_or_deleted(tmp_path, server, capsys, restart):
    inp = items_file(tmp_path / "in.jsonl")
    folder = tmp_path / "db"
    folder.mkdir()
    before = user_store(folder / "store.sqlite")
    assert cli(*judge_args(inp, folder, server, *(["--restart"] if restart else []))) == 2
    assert "store.sqlite" in capsys.readouterr().err
    assert (folder / "store.sqlite").read_bytes() == before and not server.requests


def test_foreign_store_in_a_run_directory_is_refused_even_with_restart(tmp_path, server, capsys):
    inp = items_file(tmp_path / "in.jsonl")
    run = tmp_path / "run"
    assert cli(*judge_args(inp, run, server)) == 0
    for name in ("store.sqlite", "store.sqlite-wal", "store.sqlite-shm"):
        (run / name).unlink(missing_ok=True)
    (run / ".polyjudge-owned.json").unlink()  # as a run written before ownership was recorded
    before = user_store(run / "store.sqlite")  # the user's database where polyjudge's was
    sent = len(server.requests)
    assert cli(*judge_args(inp, run, server, "--restart")) == 2
    assert "store.sqlite: is not polyjudge's file" in capsys.readouterr().err
    assert (run / "store.sqlite").read_bytes() == before and len(server.requests) == sent


def test_users_files_inside_a_run_directory_survive_resume_and_restart(tmp_path, server):
    inp = items_file(tmp_path / "in.jsonl")
    run = tmp_path / "run"
    assert cli(*judge_args(inp, run, server)) == 0
    (run / "mtme" / "COMET-refA.seg.score").write_text("S0\t0.5\n")
    (run / "notes.txt").write_text("keep me\n")
    assert cli(*judge_args(inp, run, server)) == 0  # a plain resume
    assert cli(*judge_args(inp, run, server, "-p", "gemba-esa", "--restart",  # another protocol (the da server's
                           "--max-failure-rate", "1")) == 0                   # answers do not parse as its)
    assert (run / "mtme" / "COMET-refA.seg.score").read_text() == "S0\t0.5\n"
    assert (run / "notes.txt").read_text() == "keep me\n"
    assert not list((run / "mtme").glob("polyjudge-da*"))  # polyjudge's own stale scores did go


def test_a_users_file_under_a_name_polyjudge_writes_is_refused(tmp_path, server, capsys):
    inp = items_file(tmp_path / "in.jsonl")
    run = tmp_path / "run"
    assert cli(*judge_args(inp, run, server)) == 0
    (run / "spans.tsv").write_text("mine\n")  # da writes no spans: the rewrite must not delete it ...
    assert cli(*judge_args(inp, run, server)) == 2  # ... and it is named at once
    assert "spans.tsv: is not polyjudge's file" in capsys.readouterr().err
    assert (run / "spans.tsv").read_text() == "mine\n"


def test_symlinked_mtme_is_refused_and_the_linked_files_survive(tmp_path, server, capsys):
    inp = items_file(tmp_path / "in.jsonl")
    run, repo = tmp_path / "run", tmp_path / "repo"
    assert cli(*judge_args(inp, run, server)) == 0
    repo.mkdir()
    (repo / "polyjudge-da-src.seg.score").write_text("theirs\n")
    (repo / "other.seg.score").write_text("other\n")
    for p in (run / "mtme").iterdir():
        p.unlink()
    (run / "mtme").rmdir()
    (run / "mtme").symlink_to(repo, target_is_directory=True)
    before = snapshot(repo)
    assert cli(*judge_args(inp, run, server)) == 2
    assert "mtme: is a symlink" in capsys.readouterr().err
    assert snapshot(repo) == before


def test_a_symlinked_output_file_is_refused_not_followed(tmp_path, server, capsys):
    inp = items_file(tmp_path / "in.jsonl")
    run = tmp_path / "run"
    assert cli(*judge_args(inp, run, server)) == 0
    elsewhere = tmp_path / "elsewhere.tsv"
    elsewhere.write_text("precious\n")
    (run / "segments.tsv").unlink()
    (run / "segments.tsv").symlink_to(elsewhere)
    assert cli(*judge_args(inp, run, server)) == 2
    assert "segments.tsv: is a symlink" in capsys.readouterr().err
    assert elsewhere.read_text() == "precious\n"


# --------------------------------------------------------------------------- impossible paths

def test_empty_dangling_and_through_a_file_out_paths_exit_2(tmp_path, server, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    inp = items_file(tmp_path / "in.jsonl")
    assert cli(*judge_args(inp, "", server)) == 2
    assert "is empty" in capsys.readouterr().err
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    assert cli(*judge_args(inp, tmp_path / "dangling", server)) == 2
    assert "dangling symlink" in capsys.readouterr().err
    assert cli(*judge_args(inp, tmp_path / "dangling" / "run", server)) == 2
    assert "dangling symlink" in capsys.readouterr().err
    assert cli(*judge_args(inp, inp / "run", server)) == 2
    assert "which is a file, not a folder" in capsys.readouterr().err
    assert not server.requests and sorted(os.listdir(tmp_path)) == ["dangling", "in.jsonl"]


# --------------------------------------------------------------------------- commands and their own inputs

def test_judge_into_the_folder_of_its_input_is_refused(tmp_path, server, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    inp = items_file(tmp_path / "segments.tsv")
    inp.write_text("src\ttgt\tsystem\tseg_id\ns\tt\tA\t1\n")
    before = inp.read_bytes()
    assert cli(*judge_args(inp, ".", server)) == 2
    assert inp.read_bytes() == before and not server.requests
    capsys.readouterr()
    run = tmp_path / "run"
    assert cli(*judge_args(items_file(tmp_path / "in.jsonl"), run, server)) == 0
    before = (run / "items.jsonl").read_bytes()
    assert cli(*judge_args(run / "items.jsonl", run, server)) == 2  # its own items file as input
    err = capsys.readouterr().err
    assert f"{run / 'items.jsonl'}" in err and "an input" in err
    assert (run / "items.jsonl").read_bytes() == before


@pytest.mark.parametrize("flag", ["--record", "--batch-export"])
def test_record_and_batch_export_onto_the_input_are_refused(tmp_path, server, capsys, flag):
    inp = items_file(tmp_path / "in.jsonl")
    before = inp.read_bytes()
    assert cli(*judge_args(inp, tmp_path / "run", server, flag, inp)) == 2
    assert "an input" in capsys.readouterr().err
    assert inp.read_bytes() == before and not server.requests
    assert cli(*judge_args(inp, tmp_path / "run", server, flag, tmp_path / "run" / "store.sqlite")) == 2
    assert "another output" in capsys.readouterr().err


def test_a_hard_link_to_the_input_is_the_same_file(tmp_path, server, capsys):
    inp = items_file(tmp_path / "in.jsonl")
    os.link(inp, tmp_path / "alias.jsonl")
    assert cli(*judge_args(inp, tmp_path / "run", server, "--record", tmp_path / "alias.jsonl")) == 2
    assert "alias.jsonl" in capsys.readouterr().err and not server.requests


def test_score_to_json_onto_the_translations_is_refused(tmp_path, server, capsys):
    (tmp_path / "s.txt").write_text("Hello.\n")
    (tmp_path / "t.txt").write_text("Hallo.\n")
    assert cli("score", "-s", tmp_path / "s.txt", "-t", tmp_path / "t.txt", "--src-lang", "en", "--tgt-lang", "de",
               "--backend", "openai", "-m", "m", "--base-url", server.base_url, "-q",
               "--to-json", tmp_path / "t.txt") == 2
    assert "-t/--translations" in capsys.readouterr().err
    assert (tmp_path / "t.txt").read_text() == "Hallo.\n" and not server.requests


@pytest.fixture
def run_dir(tmp_path, server):
    run = tmp_path / "run"
    assert cli(*judge_args(items_file(tmp_path / "in.jsonl"), run, server)) == 0
    return run


def test_report_onto_the_runs_store_is_refused(run_dir, capsys):
    before = (run_dir / "store.sqlite").read_bytes()
    assert cli("report", run_dir, "-o", run_dir / "store.sqlite") == 2
    err = capsys.readouterr().err
    assert "store.sqlite" in err and "RUN_DIR" in err
    assert (run_dir / "store.sqlite").read_bytes() == before


def test_meta_eval_onto_its_human_scores_is_refused(tmp_path, run_dir, capsys):
    human = tmp_path / "h.tsv"
    human.write_text("system\tseg_id\tscore\nS0\t0\t1\nS1\t1\t2\nS0\t2\t3\nS1\t3\t4\n")
    before = human.read_bytes()
    assert cli("meta-eval", "--human", human, "--metric", f"j={run_dir}", "-o", human) == 2
    assert "--human" in capsys.readouterr().err and human.read_bytes() == before
    assert cli("meta-eval", "--human", human, "--metric", f"j={run_dir}", "-o", run_dir / "segments.tsv") == 2
    assert "--metric j" in capsys.readouterr().err


def test_span_f1_write_tsv_onto_the_gold_is_refused(tmp_path, capsys):
    gold = tmp_path / "gold.tsv"
    gold.write_text(MQM_HEADER + "A\td\t1\t1\tr1\ts\tt <v>x</v>\tAccuracy/Mistranslation\tMajor\n")
    before = gold.read_bytes()
    assert cli("span-f1", "--gold", gold, "--pred", gold, "--write-tsv", gold) == 2
    assert "--gold" in capsys.readouterr().err and gold.read_bytes() == before
    assert cli("span-f1", "--gold", gold, "--pred", gold, "--write-tsv", tmp_path / "p.tsv") == 0


def test_human_mqm_over_a_judge_run_is_refused(tmp_path, run_dir, capsys):
    tsv = tmp_path / "h.tsv"
    tsv.write_text(MQM_HEADER + "A\td\t1\t1\tr1\ts\tt\tNo-error\tNo-error\n")
    before = snapshot(run_dir)
    assert cli("human-mqm", tsv, "-O", run_dir) == 2
    assert "judge run" in capsys.readouterr().err
    assert snapshot(run_dir) == before
    assert cli("human-mqm", tsv, "-O", tmp_path / "h") == 0
    assert cli("human-mqm", tsv, "-O", tmp_path / "h") == 0  # its own folder again
    assert cli("human-mqm", tmp_path / "h" / "segments.tsv", "-O", tmp_path / "h") == 2


def test_variability_onto_a_runs_file_is_refused(run_dir, capsys):
    before = (run_dir / "segments.tsv").read_bytes()
    assert cli("variability", run_dir, "-O", run_dir / "segments.tsv") == 2
    assert (run_dir / "segments.tsv").read_bytes() == before


# --------------------------------------------------------------------------- leftovers

def test_leftover_temporary_files_are_removed_on_the_next_run(tmp_path, server):
    inp = items_file(tmp_path / "in.jsonl")
    run = tmp_path / "run"
    assert cli(*judge_args(inp, run, server)) == 0
    ours = [".judgments-k3j2h1x0.tmp", ".segments.tsv-a8d7f6e5.tmp", "segments.tsv.tmp",
            "mtme/.polyjudge-da-src.seg.score-1a2b3c4d.tmp"]
    theirs = ["notes.tmp", ".my-editor-swap.tmp", "report.tmp", "mtme/.COMET.seg.score-1a2b3c4d.tmp"]
    for name in ours + theirs:
        (run / name).write_text("partial")
    assert cli(*judge_args(inp, run, server)) == 0
    assert [n for n in ours if (run / n).exists()] == []
    assert all((run / n).read_text() == "partial" for n in theirs)


# --------------------------------------------------------------------------- messages

def test_a_closed_output_pipe_ends_quietly(tmp_path):
    tsv = tmp_path / "big.tsv"
    tsv.write_text(MQM_HEADER + "".join(f"S{i}\td\t1\t1\tr1\ts\tt\tNo-error\tNo-error\n" for i in range(20000)))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.Popen([sys.executable, "-m", "polyjudge.cli.main", "human-mqm", str(tsv)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # what `| head -1` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert first.startswith(b"# MQM error points") and err == ""


def test_help_texts_are_not_cut_and_name_spec_options(capsys):
    assert cli("judge", "--help") == 0
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    assert "BACKEND[:MODEL][?OPTIONS][@URL[,URL...]]" in flat
    assert "openai:MODEL[?OPTIONS][@BASE_URL[,BASE_URL...]]." in flat


def test_report_plots_dir_holding_the_users_files_is_refused(tmp_path, run_dir, capsys):
    plots = tmp_path / "paper"
    plots.mkdir()
    (plots / "main.tex").write_text("\\documentclass{article}\n")
    assert cli("report", run_dir, "-o", tmp_path / "r.html", "--plots-dir", plots) == 2
    assert "main.tex" in capsys.readouterr().err
    assert sorted(os.listdir(plots)) == ["main.tex"]
    assert cli("report", run_dir, "-o", tmp_path / "r.html", "--plots-dir", tmp_path / "plots") == 0
    assert cli("report", run_dir, "-o", tmp_path / "r.html", "--plots-dir", tmp_path / "plots") == 0  # again
    assert list((tmp_path / "plots").glob("*.svg"))


def test_an_empty_output_file_path_exits_2(run_dir, capsys):
    assert cli("variability", run_dir, "-O", "") == 2
    assert "is empty" in capsys.readouterr().err
