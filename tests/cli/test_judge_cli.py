import json

import pytest

from polyjudge._version import __version__
from polyjudge.cli.main import main
from tests.helpers.openai_server import ScriptedServer


def cli(*argv):
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in argv])
    return exc.value.code


def test_version(capsys):
    assert cli("--version") == 0
    assert __version__ in capsys.readouterr().out


def test_bad_input_exits_2_naming_file_line_field(tmp_path, capsys):
    p = tmp_path / "in.jsonl"
    p.write_text('{"src": "a", "tgt": "b"}\n{"src": "a", "tgt": 3.5e}\n{"tgt": "x"}\n')
    assert cli("judge", p, "--out", tmp_path / "run", "--backend", "openai", "--model", "m") == 2
    err = capsys.readouterr().err
    assert f"{p}:2" in err and "invalid JSON" in err
    p.write_text('{"src": "a", "tgt": "b"}\n{"tgt": "x"}\n')
    assert cli("judge", p, "--out", tmp_path / "run", "--backend", "openai", "--model", "m") == 2
    assert f"{p}:2, field 'src'" in capsys.readouterr().err


def test_unknown_protocol_and_bad_option_exit_2(tmp_path, capsys):
    p = tmp_path / "in.jsonl"
    p.write_text('{"src": "a", "tgt": "b"}\n')
    assert cli("judge", p, "--out", tmp_path / "r", "--protocol", "nope", "--backend", "openai", "-m", "m") == 2
    assert "unknown protocol 'nope'" in capsys.readouterr().err
    assert cli("judge", p, "--out", tmp_path / "r", "-o", "novalue", "--backend", "openai", "-m", "m") == 2


def test_judge_dry_run_then_real_then_resume(tmp_path, capsys):
    p = tmp_path / "in.tsv"
    p.write_text("src\ttgt\tsystem\tseg_id\n" + "".join(f"s{i}\tt{i}\tS{i % 2}\t{i}\n" for i in range(6)))
    with ScriptedServer(lambda b: json.dumps({"score": 70 + b["seed"]})) as srv:
        args = ["judge", p, "--out", tmp_path / "run", "--backend", "openai", "-m", "m",
                "--base-url", srv.base_url, "--runs", "2", "-q"]
        assert cli(*args, "--dry-run") == 0
        assert "12 requests to send" in capsys.readouterr().out and not srv.requests
        assert cli(*args, "--limit", "4") == 0
        assert len(srv.requests) == 8
        out = capsys.readouterr()
        assert "S0\t70.5000\t2" in out.out and "signature: da|judge:m|" in out.err
        assert cli(*args) == 0
        assert len(srv.requests) == 12  # only the two new items were sent
    seg = (tmp_path / "run" / "segments.tsv").read_text().splitlines()
    assert len(seg) == 7


def test_score_like_comet(tmp_path, capsys):
    (tmp_path / "s.txt").write_text("Hello.\nBye.\n")
    (tmp_path / "h.txt").write_text("Hallo.\nTschüss.\n")
    with ScriptedServer(lambda b: json.dumps({"score": 90 if "Hallo" in b["messages"][-1]["content"] else 40})) as srv:
        code = cli("score", "-s", tmp_path / "s.txt", "-t", tmp_path / "h.txt", "--src-lang", "en", "--tgt-lang", "de",
                   "--backend", "openai", "-m", "m", "--base-url", srv.base_url, "-q", "--to-json", tmp_path / "o.json")
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    h = str(tmp_path / "h.txt")
    assert lines == [f"{h}\tSegment 0\tscore: 90.0000", f"{h}\tSegment 1\tscore: 40.0000", f"{h}\tscore: 65.0000"]
    data = json.loads((tmp_path / "o.json").read_text())
    assert [r["score"] for r in data[h]] == [90.0, 40.0]
