"""``polyjudge rerank``: the command's outputs, its dry run and its refusals (exit 2)."""

from __future__ import annotations

import json

from tests.helpers.cli import cli
from tests.helpers.openai_server import ScriptedServer

ROWS = [{"src": "Der Hund bellt.", "candidates": ["The dog barks.", "The dog is barking.", "The dog barks.",
                                                  "A hound bays."], "ref": "The dog barks."},
        {"src": "Es regnet.", "candidates": ["It rains.", "It is raining.", "Raining it is."], "ref": "It is raining."}]


def candidates(tmp_path):
    path = tmp_path / "cands.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return path


def test_mbr_with_chrf_writes_the_choice_the_matrix_and_the_gains(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli("rerank", candidates(tmp_path), "--method", "mbr", "--utility", "chrf", "-o", out) == 0
    printed = capsys.readouterr().out
    assert "MBR with chrF: 2 sources, 7 candidates; 13 distinct requests (the plain method: 18)" in printed
    assert "chrF vs references (held out)" in printed and "self-reward" in printed
    chosen = [json.loads(line) for line in (out / "chosen.jsonl").read_text().splitlines()]
    assert [(c["chosen"], c["translation"]) for c in chosen] == [(1, "The dog barks."), (2, "It is raining.")]
    matrix = json.loads((out / "scores.jsonl").read_text().splitlines()[0])["matrix"]
    assert len(matrix) == 4 and matrix[0][0] is None and matrix[0][2] == 100.0
    assert cli("rerank", candidates(tmp_path), "--method", "mbr", "--utility", "chrf", "-o", out, "--format",
               "tsv") == 0
    assert capsys.readouterr().out.splitlines()[1] == "1\t1\t51.2975\tThe dog barks."


def test_the_dry_run_says_n_squared_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with ScriptedServer(lambda body: '{"score": 50}') as srv:
        code = cli("rerank", candidates(tmp_path), "--method", "mbr", "--dry-run", "--judge",
                   f"openai:m@{srv.base_url}", "--src-lang", "de", "--tgt-lang", "en")
        assert srv.completed == []
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "about N² requests per source" in printed and "13 requests (at most 7 for one source)" in printed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cands.jsonl"]


def test_refusals_exit_2_with_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    path = candidates(tmp_path)
    for args, said in ((["--method", "qe", "--utility", "chrf", "-o", tmp_path / "o"], "MBR utility"),
                       (["--method", "mbr", "--protocol", "mqm", "--dry-run"], "never shows the judge a reference")):
        assert cli("rerank", path, *args) == 2
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1, err
    assert cli("rerank", path, "--utility", "chrf", "--method", "mbr") == 2
    assert "Missing option '-o'" in capsys.readouterr().err
