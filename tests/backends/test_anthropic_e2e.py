"""`polyjudge judge --judge anthropic:MODEL@URL`, end to end and in-process, against the scripted server."""

import json

from tests.helpers.anthropic_server import AnthropicServer, MReply
from tests.helpers.cli import cli
from tests.helpers.openai_server import ScriptedServer


def items(tmp_path, n=6):
    p = tmp_path / "in.jsonl"
    p.write_text("".join(json.dumps({"src": f"Quelle {i}", "tgt": f"target {i}", "src_lang": "de", "tgt_lang": "en",
                                     "seg_id": str(i), "system": f"S{i % 2}"}) + "\n" for i in range(n)),
                 encoding="utf-8")
    return p


def score_of(body):
    """System S0 gets 80, S1 gets 40, read from the prompt the judge was sent."""
    text = body["messages"][-1]["content"]
    seg = next(i for i in range(6) if f"target {i}" in text)
    return 80 if seg % 2 == 0 else 40


def test_judge_with_an_anthropic_judge(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-e2e-key-0123456789")
    with AnthropicServer(lambda b: json.dumps({"score": score_of(b)})) as srv:
        code = cli("judge", items(tmp_path), "--out", tmp_path / "run", "--judge", f"anthropic:claude-x@{srv.base_url}",
                   "--runs", "2", "--temperature", "0.5", "-q")  # at 0, two runs of a seedless judge are one
    assert code == 0
    assert len(srv.requests) == 12
    assert all(b["tool_choice"]["type"] == "tool" and b["max_tokens"] > 0 for b in srv.requests)
    assert all(h.get("x-api-key") == "sk-ant-e2e-key-0123456789" for h in srv.headers_seen)
    systems = (tmp_path / "run" / "systems.tsv").read_text().splitlines()
    assert systems[1].startswith("S0\t80") and systems[2].startswith("S1\t40")
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["judges"] == [{"backend": "anthropic", "model": "claude-x", "base_url": srv.base_url}]
    assert manifest["counts"]["status_ok"] == 12
    on_disk = "".join(p.read_text(errors="replace") for p in (tmp_path / "run").rglob("*") if p.is_file())
    assert "sk-ant-e2e-key-0123456789" not in on_disk
    assert "signature: da|judge:claude-x|" in capsys.readouterr().err


def test_a_panel_of_an_anthropic_and_an_openai_judge(tmp_path):
    with AnthropicServer(lambda b: json.dumps({"score": score_of(b)})) as claude, \
            ScriptedServer(lambda b: json.dumps({"score": score_of(b) - 10})) as gpt:
        code = cli("judge", items(tmp_path), "--out", tmp_path / "run",
                   "--judge", f"anthropic:claude-x@{claude.base_url}", "--judge", f"openai:gpt-x@{gpt.base_url}", "-q")
    assert code == 0
    header = (tmp_path / "run" / "segments.tsv").read_text().splitlines()[0].split("\t")
    assert "score:claude-x" in header and "score:gpt-x" in header


def test_a_truncated_answer_and_a_bad_key_are_reported(tmp_path, capsys):
    with AnthropicServer(lambda b: MReply('{"sc', stop_reason="max_tokens")) as srv:
        code = cli("judge", items(tmp_path), "--out", tmp_path / "run", "--judge", f"anthropic:claude-x@{srv.base_url}",
                   "--runs", "1", "-q")
    # Issue 43: truncated answers count against --max-failure-rate like failed requests (they used to exit 0)
    assert code == 3 and "request 0, refused 0, parse 0, truncated " in capsys.readouterr().err
    lines = [json.loads(x) for x in (tmp_path / "run" / "judgments.jsonl").read_text().splitlines()]
    assert {x["status"] for x in lines} == {"truncated"} and {x["finish_reason"] for x in lines} == {"length"}
    with AnthropicServer(lambda b: MReply(status=401, error_message="invalid x-api-key")) as srv:
        code = cli("judge", items(tmp_path), "--out", tmp_path / "run2", "--judge",
                   f"anthropic:claude-x@{srv.base_url}", "-q")
        sent = len(srv.requests)
    assert code == 3 and sent <= 16
    assert "HTTP 401: authentication_error: invalid x-api-key" in capsys.readouterr().err
