import json
import sqlite3

import pytest

from polyjudge._version import __version__
from tests.helpers.cli import cli
from tests.helpers.openai_server import Reply, ScriptedServer


def test_version(capsys):
    assert cli("--version") == 0
    assert __version__ in capsys.readouterr().out


def test_bad_input_exits_2_naming_file_line_field(tmp_path, capsys):
    p = tmp_path / "in.jsonl"
    p.write_text('{"src": "a", "tgt": "b"}\n{"src": "a", "tgt": 3.5e}\n{"tgt": "x"}\n')
    assert cli("judge", p, "--out", tmp_path / "run", "--backend", "openai", "--model", "m") == 2
    err = capsys.readouterr().err
    assert f"{p}:2" in err and "invalid JSON" in err
    p.write_text('{"src_lang": "en", "tgt_lang": "de", "src": "a", "tgt": "b"}\n{"tgt": "x"}\n')
    assert cli("judge", p, "--out", tmp_path / "run", "--backend", "openai", "--model", "m") == 2
    assert f"{p}:2, field 'src'" in capsys.readouterr().err


def test_unknown_protocol_and_bad_option_exit_2(tmp_path, capsys):
    p = tmp_path / "in.jsonl"
    p.write_text('{"src_lang": "en", "tgt_lang": "de", "src": "a", "tgt": "b"}\n')
    assert cli("judge", p, "--out", tmp_path / "r", "--protocol", "nope", "--backend", "openai", "-m", "m") == 2
    assert "unknown protocol 'nope'" in capsys.readouterr().err
    assert cli("judge", p, "--out", tmp_path / "r", "-o", "novalue", "--backend", "openai", "-m", "m") == 2


def test_judge_dry_run_then_real_then_resume(tmp_path, capsys):
    p = tmp_path / "in.tsv"
    p.write_text("src\ttgt\tsystem\tseg_id\n" + "".join(f"s{i}\tt{i}\tS{i % 2}\t{i}\n" for i in range(6)))
    with ScriptedServer(lambda b: json.dumps({"score": 70 + b["seed"]})) as srv:
        args = ["judge", p, "--out", tmp_path / "run", "--backend", "openai", "-m", "m",
                "--base-url", srv.base_url, "--runs", "2", "-q", "--lp", "en-de"]
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
    # comet-score --to_json's shape: per file, src/mt (ref when given) and the score under COMET
    assert data[h] == [{"src": "Hello.", "mt": "Hallo.", "COMET": 90.0},
                       {"src": "Bye.", "mt": "Tschüss.", "COMET": 40.0}]


# ----------------------------------------------------------------------------- issue 13: money and data

def write_items(path, n=6, texts=None):
    texts = texts or [f"t{i}" for i in range(n)]
    path.write_text("".join(json.dumps({"src_lang": "en", "tgt_lang": "de",
                                        "src": f"s{i}", "tgt": t, "seg_id": str(i), "system": f"S{i % 2}"}) + "\n"
                            for i, t in enumerate(texts)), encoding="utf-8")
    return path


def snapshot(root):
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


def test_dry_run_without_out_has_no_side_effects_and_prices_the_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    inp = write_items(tmp_path / "in.jsonl")
    before = snapshot(tmp_path)
    assert cli("judge", inp, "--judge", "openai:gpt-4o@http://127.0.0.1:9/v1", "--runs", "2", "--dry-run",
               "--format", "json") == 0
    assert snapshot(tmp_path) == before  # nothing created, not even a directory
    est = json.loads(capsys.readouterr().out)
    assert est["requests_to_send"] == 12 and est["cost_is_upper_bound"] is True
    # gpt-4o: $2.50 in, $10.00 out per million tokens; completions counted at their limit
    expected = (est["prompt_tokens"] * 2.50 + est["max_completion_tokens"] * 10.00) / 1e6
    assert est["cost_usd"] == pytest.approx(expected, abs=1e-6) and est["cost_usd"] > 0
    assert cli("judge", inp, "--judge", "openai:gpt-4o@http://127.0.0.1:9/v1", "--dry-run") == 0
    assert "estimated cost at most $" in capsys.readouterr().out
    assert cli("judge", inp, "--judge", "openai:mystery@http://127.0.0.1:9/v1", "--dry-run") == 0
    out = capsys.readouterr().out
    assert "no price known for mystery (add one with --prices)" in out and "estimated cost" not in out
    assert snapshot(tmp_path) == before
    assert cli("judge", inp, "--judge", "openai:gpt-4o@http://127.0.0.1:9/v1") == 2  # a real run needs -o
    assert "Missing option '-o' / '--out'" in capsys.readouterr().err


def test_dry_run_reads_an_existing_store_without_touching_it(tmp_path, capsys):
    inp = write_items(tmp_path / "in.jsonl")
    run = tmp_path / "run"
    with ScriptedServer(lambda b: json.dumps({"score": 50})) as srv:
        args = ["judge", inp, "-o", run, "--judge", f"openai:m@{srv.base_url}", "-q"]
        assert cli(*args, "--limit", "4") == 0
        before = snapshot(run)
        assert cli(*args, "--dry-run") == 0
        assert "2 requests to send (4 of 6 already in the store)" in capsys.readouterr().out
        assert snapshot(run) == before  # no -wal/-shm, no lock file, nothing rewritten
        assert len(srv.requests) == 4
        assert cli("judge", inp, "-o", tmp_path / "new", "--judge", f"openai:m@{srv.base_url}", "--dry-run") == 0
    assert not (tmp_path / "new").exists()


def test_prompts_over_the_context_are_warned_about_naming_the_item(tmp_path, capsys):
    huge = "word " * 120_000  # 600 kB: about 150,000 tokens, over gpt-4o's 128,000
    inp = write_items(tmp_path / "in.jsonl", texts=["short", huge, "fine"])
    assert cli("judge", inp, "--judge", "openai:gpt-4o@http://127.0.0.1:9/v1", "--dry-run") == 0
    out = capsys.readouterr()
    warnings = [x for x in out.err.splitlines() if x.startswith("polyjudge: warning:")]
    assert len(warnings) == 1
    assert f"item 2 at {inp}:2 (system S1, segment 1): prompt of about 1" in warnings[0]
    assert "exceeds the context of gpt-4o (128,000 tokens)" in warnings[0]
    assert "1 prompt(s) exceed the model's context" in out.out
    # a real run warns before sending, too
    with ScriptedServer(lambda b: json.dumps({"score": 50})) as srv:
        assert cli("judge", inp, "-o", tmp_path / "run", "--judge", f"openai:gpt-4o@{srv.base_url}", "-q") == 0
    assert "polyjudge: warning: item 2 at" in capsys.readouterr().err


def test_run_directory_of_another_config_is_refused_unless_restart(tmp_path, capsys):
    inp = write_items(tmp_path / "in.jsonl")
    run = tmp_path / "run"
    with ScriptedServer(lambda b: json.dumps({"score": 50})) as srv:
        args = ["judge", inp, "-o", run, "--judge", f"openai:m@{srv.base_url}", "-q"]
        assert cli(*args) == 0
        before = snapshot(run)
        capsys.readouterr()
        assert cli(*args, "-T", "0.7") == 2
        err = capsys.readouterr().err
        assert err.startswith(f"polyjudge: error: {run}: holds a run with another configuration (temperature 0.0 "
                              "there, 0.7 now); give --restart")
        assert len(err.splitlines()) == 1 and snapshot(run) == before and len(srv.requests) == 6
        assert cli(*args, "--seed", "3") == 2
        assert "seed 0 there, 3 now" in capsys.readouterr().err
        assert cli(*args, "--runs", "2") == 0  # more runs of the same config: resumed and extended
        assert len(srv.requests) == 12
        assert cli(*args, "--runs", "2", "--aggregate", "median") == 0  # another aggregate: nothing sent
        assert len(srv.requests) == 12
        assert cli(*args, "-T", "0.7", "--restart") == 0  # started over: everything sent again
        assert len(srv.requests) == 18
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["config"]["temperature"] == 0.7 and manifest["config"]["runs"] == 1


def test_run_directory_without_manifest_is_checked_against_its_store(tmp_path, capsys):
    inp = write_items(tmp_path / "in.jsonl")
    run = tmp_path / "run"
    with ScriptedServer(lambda b: json.dumps({"score": 50})) as srv:
        args = ["judge", inp, "-o", run, "--judge", f"openai:m@{srv.base_url}", "-q"]
        assert cli(*args) == 0
        (run / "manifest.json").unlink()  # as after kill -9 before the first write
        assert cli(*args, "-p", "pointwise") == 2
    assert "protocol \"da\" there, \"pointwise\" now" in capsys.readouterr().err


def test_rejected_endpoint_exits_3_with_counts_and_one_error_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-abcdefghijklmnop123456")
    inp = write_items(tmp_path / "in.jsonl", n=20)

    def refuse(body):  # a server that echoes the key it refused
        return Reply(status=401, raw_body=json.dumps({"error": {"message": "bad key sk-live-abcdefghijklmnop123456"}}))

    with ScriptedServer(refuse) as srv:
        code = cli("judge", inp, "-o", tmp_path / "run", "--judge", f"openai:m@{srv.base_url}", "-c", "2", "-q")
        assert len(srv.requests) <= 2
    assert code == 3
    out = capsys.readouterr()
    errors = [x for x in out.err.splitlines() if x.startswith("polyjudge: error:")]
    assert len(errors) == 1 and errors[0].startswith("polyjudge: error: the endpoint rejected the request: HTTP 401")
    assert "not run: " in out.err and out.out == ""  # (the scripted server may log dropped connections)
    assert "sk-live-abcdefghijklmnop123456" not in out.err
    for name in ("judgments.jsonl", "manifest.json", "store.sqlite"):
        assert b"abcdefghijklmnop123456" not in (tmp_path / "run" / name).read_bytes(), name


def test_failure_rate_exit_code_and_counts(tmp_path, capsys):
    inp = write_items(tmp_path / "in.jsonl", n=10)

    def responder(body):
        return Reply(status=400) if "t3" in body["messages"][-1]["content"] else json.dumps({"score": 50})

    with ScriptedServer(responder) as srv:
        args = ["judge", inp, "-o", tmp_path / "run", "--judge", f"openai:m@{srv.base_url}", "-q"]
        assert cli(*args, "--max-failure-rate", "0.05") == 3
        out = capsys.readouterr()
        assert ("failed judgments: 1 of 10 (10.0%; allowed: 5%): request 1, refused 0, parse 0, truncated 0"
                in out.err)
        assert out.err.strip().splitlines()[-1].startswith(
            "polyjudge: error: 1 of 10 judgments failed (10.0%: request 1, refused 0, parse 0, truncated 0), "
            "more than the allowed share 0.05")
        assert cli(*args) == 0  # within the default 0.1; the failed request is tried again
        assert "failed judgments: 1 of 10 (10.0%; allowed: 10%): request 1," in capsys.readouterr().err
        assert cli(*args, "--max-failure-rate", "2") == 2


@pytest.mark.parametrize("protocol", ["da", "tsa"])
def test_a_run_whose_answers_all_fail_to_parse_exits_3(tmp_path, capsys, protocol):
    """Issue 43: every answer unparseable used to exit 0 (ok: 0, an empty systems table); the outputs
    are still written, and the summary says which kind of failure counted."""
    inp = write_items(tmp_path / "in.jsonl", n=6)
    with ScriptedServer(lambda body: "I cannot rate this.") as srv:
        args = ["judge", inp, "-o", tmp_path / "run", "--protocol", protocol,
                "--judge", f"openai:m@{srv.base_url}", "-q"]
        code = cli(*args)
        sent = len(srv.requests)
        assert cli(*args, "--max-failure-rate", "1") == 0  # a limit that allows it: 0, nothing sent again
        assert len(srv.requests) == sent
    assert code == 3
    err = capsys.readouterr().err
    assert "failed judgments: 6 of 6 (100.0%; allowed: 10%): request 0, refused 0, parse 6, truncated 0" in err
    assert ("polyjudge: error: 6 of 6 judgments failed (100.0%: request 0, refused 0, parse 6, truncated 0), more "
            "than the allowed share 0.1 (--max-failure-rate)") in err
    lines = (tmp_path / "run" / "judgments.jsonl").read_text().splitlines()
    assert len(lines) == 6 and all(json.loads(x)["status"] == "parse_failed" for x in lines)


def test_refused_and_truncated_answers_count_by_kind(tmp_path, capsys):
    inp = write_items(tmp_path / "in.jsonl", n=4)

    def responder(body):
        user = body["messages"][-1]["content"]
        if "t0" in user:
            return Reply(content="", finish_reason="content_filter")
        if "t1" in user:
            return Reply(content='{"score": 5', finish_reason="length")
        return json.dumps({"score": 50})

    with ScriptedServer(responder) as srv:
        code = cli("judge", inp, "-o", tmp_path / "run", "--judge", f"openai:m@{srv.base_url}", "-q",
                   "--max-failure-rate", "0.25")
    assert code == 3
    assert "request 0, refused 1, parse 0, truncated 1" in capsys.readouterr().err


def test_credentials_in_the_base_url_never_reach_the_manifest(tmp_path):
    inp = write_items(tmp_path / "in.jsonl", n=2)
    with ScriptedServer(lambda b: json.dumps({"score": 50})) as srv:
        url = srv.base_url.replace("http://", "http://alice:pw-secret-123@")
        assert cli("judge", inp, "-o", tmp_path / "run", "--judge", f"openai:m@{url}", "-q") == 0
    manifest = (tmp_path / "run" / "manifest.json").read_text()
    assert "pw-secret-123" not in manifest and "127.0.0.1" in manifest


@pytest.mark.parametrize("exc, code, line", [
    (OSError(28, "No space left on device", "/data/run/segments.tsv"), 1,
     "polyjudge: error: /data/run/segments.tsv: No space left on device"),
    (sqlite3.OperationalError("database or disk is full"), 1,
     "polyjudge: error: the run's store database failed: database or disk is full"),
    (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), 2,
     "polyjudge: error: input is not valid UTF-8 (invalid start byte at byte 0)"),
], ids=["disk-full", "sqlite", "utf8"])
def test_system_errors_are_one_line_without_traceback(tmp_path, monkeypatch, capsys, exc, code, line):
    import polyjudge.cli.judge_cmd as judge_cmd

    def fail(*a, **k):
        raise exc

    monkeypatch.setattr(judge_cmd, "api_judge", fail)
    inp = write_items(tmp_path / "in.jsonl", n=1)
    assert cli("judge", inp, "-o", tmp_path / "run", "--judge", "openai:m@http://127.0.0.1:9/v1") == code
    assert capsys.readouterr().err.strip().splitlines() == [line]


def test_out_that_is_a_file_exits_2(tmp_path, capsys):
    inp = write_items(tmp_path / "in.jsonl", n=1)
    (tmp_path / "f").write_text("x")
    assert cli("judge", inp, "-o", tmp_path / "f", "--judge", "openai:m@http://127.0.0.1:9/v1") == 2
    assert "is not a directory" in capsys.readouterr().err
