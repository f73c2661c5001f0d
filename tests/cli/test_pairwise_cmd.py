"""``polyjudge pairwise`` end to end against the scripted local server."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from polyjudge.api import pairwise as api_pairwise
from polyjudge.cli.main import cli, main
from polyjudge.studies.pairwise import PairwiseConfig
from tests.helpers.openai_server import ScriptedServer
from tests.studies.test_pairwise_study import biased_responder, judge_for, make_items

TABLES = ("pairwise.tsv", "systems-bt.tsv", "systems-bt.sys.score", "pairwise-seg.tsv", "position.json",
          "pairwise.json")


def write_input(path, n_segments=6):
    path.write_text("".join(json.dumps(it.to_dict()) + "\n" for it in make_items(n_segments)), encoding="utf-8")
    return path


def invoke(*args):
    return CliRunner().invoke(cli, ["pairwise", *args], catch_exceptions=False)


def test_pairwise_prints_the_ranking_and_writes_what_the_api_writes(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    src = write_input(tmp_path / "in.jsonl")
    with ScriptedServer(biased_responder(0.3)) as srv:
        judge = ["--judge", f"openai:m@{srv.base_url}", "-q"]
        text = invoke(str(src), "-o", str(tmp_path / "cli"), "--bootstrap", "100", "--seed", "3", *judge)
        assert text.exit_code == 0, text.output
        tsv = invoke(str(src), "-o", str(tmp_path / "cli"), "--bootstrap", "100", "--seed", "3", "--format", "tsv",
                     *judge)
        as_json = invoke(str(src), "-o", str(tmp_path / "cli"), "--bootstrap", "100", "--seed", "3",
                         "--format", "json", *judge)
        api = api_pairwise(src, PairwiseConfig(judge=judge_for(srv, seed=3), seed=3, n_boot=100), tmp_path / "api")
    lines = text.stdout.splitlines()
    assert lines[0].split() == ["rank", "system", "score", "ci_low", "ci_high", "win_rate", "comparisons"]
    assert [line.split()[1] for line in lines[1:5]] == ["best", "good", "fair", "poor"]
    assert any("position-inconsistent" in line for line in lines)
    assert tsv.stdout == (tmp_path / "cli" / "systems-bt.tsv").read_text() == api.to_tsv()
    assert json.loads(as_json.stdout) == json.loads((tmp_path / "cli" / "pairwise.json").read_text())
    for name in TABLES:
        assert (tmp_path / "cli" / name).read_bytes() == (tmp_path / "api" / name).read_bytes(), name
    assert (tmp_path / "cli" / "run" / "judgments.jsonl").is_file()
    assert (tmp_path / "cli" / "position-bias.svg").is_file()


def test_sampled_pairs(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    src = write_input(tmp_path / "in.jsonl", 5)
    with ScriptedServer(biased_responder(0.0)) as srv:
        res = invoke(str(src), "-o", str(tmp_path / "out"), "--pairs", "2", "--bootstrap", "0", "--format", "json",
                     "--judge", f"openai:m@{srv.base_url}", "-q")
        assert res.exit_code == 0, res.output
        assert len(srv.requests) == 5 * 2 * 2
    doc = json.loads(res.stdout)
    assert doc["n_pairs"] == 10 and doc["settings"]["pairs"] == 2 and doc["settings"]["n_boot"] == 0
    assert all(r["ci_low"] is None for r in doc["ranking"])


def _main(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in argv])
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_bad_input_exits_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    src = write_input(tmp_path / "in.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"src": "s", "tgt": "t", "seg_id": "1"}) + "\n")
    judge = ["--judge", "openai:m@http://127.0.0.1:9/v1", "-q"]
    for args, message in (([bad, "-o", tmp_path / "o1"], "bad.jsonl:1, field 'system': pairwise comparison needs"),
                          ([src, "-o", tmp_path / "o2", "-p", "da"], "needs the 'pairwise' protocol, not 'da'"),
                          ([src, "-o", tmp_path / "o3", "--protocol-option", "ties=1"], "unknown option 'ties'"),
                          ([src, "-o", tmp_path / "o4", "--human", tmp_path / "nope.tsv"], "nope.tsv"),
                          ([src, *judge], "Missing option '-o' / '--out'")):
        code, out, err = _main(["pairwise", *args, *judge], capsys)
        assert code == 2 and out == "" and message in err, (args, err)
    assert not any((tmp_path / f"o{k}").exists() for k in range(1, 5))  # refused before anything was judged
