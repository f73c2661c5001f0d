"""End to end: a key that the server echoes, or a password in --base-url, reaches no file and no output.

``polyjudge judge`` runs in-process against a scripted server; afterwards every
byte of the run directory (judgments.jsonl, store.sqlite, manifest.json, ...),
stdout/stderr, a --record file and the HTML report are searched for the secret.
Exit codes 0, 1 and 3 are all accepted: what happens on 401 is the engine's
business, only the absence of secrets is asserted here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli import cli
from tests.helpers.openai_server import Reply, ScriptedServer

KEY = "sk-proj-e2e7Q9w8E7r6T5y4U3i2O1pAsDfGhJkL"


def write_items(tmp_path: Path, n: int = 3) -> Path:
    p = tmp_path / "in.jsonl"
    p.write_text("".join(json.dumps({"src_lang": "en", "tgt_lang": "de",
                                     "src": f"Hallo {i}", "tgt": f"Hello {i}", "system": "S", "seg_id": str(i)})
                         + "\n" for i in range(n)))
    return p


def assert_nowhere(secret: str, root: Path, *texts: str) -> list[Path]:
    """The secret is in none of ``texts`` and in no file under ``root`` (raw bytes); the files seen."""
    files = [p for p in root.rglob("*") if p.is_file()]
    for path in files:
        data = path.read_bytes()
        assert secret.encode() not in data, path
        assert secret[:16].encode() not in data, path  # not even the start of it
    for text in texts:
        assert secret not in text and secret[:16] not in text
    return files


def judge_then_report(tmp_path: Path, capsys, *args: object) -> tuple[int, str]:
    out = tmp_path / "run"
    code = cli("judge", write_items(tmp_path), "--out", out, "--backend", "openai", "-m", "m",
               "--record", tmp_path / "rec.jsonl", "-c", "1", *args)
    captured = capsys.readouterr()
    texts = captured.out + captured.err
    if (out / "judgments.jsonl").exists():
        cli("report", out, "-o", tmp_path / "report.html", "--plots-dir", tmp_path / "plots")
        captured = capsys.readouterr()
        texts += captured.out + captured.err
    return code, texts


@pytest.mark.parametrize("status, body", [
    (401, json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}.", "code": "invalid_api_key"}})),
    (403, f"<html>forbidden for Bearer {KEY}</html>"),
    # a plain-text body cut at 200 characters in the middle of the key
    (400, "x" * 180 + KEY),
])
def test_key_echoed_by_the_server_is_never_written(status, body, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with ScriptedServer(lambda b: Reply(status=status, raw_body=body)) as srv:
        code, texts = judge_then_report(tmp_path, capsys, "--base-url", srv.base_url)
        assert srv.requests, "the server was never asked"
        assert srv.headers_seen[0]["Authorization"] == f"Bearer {KEY}"  # the key was really used
    assert code in (0, 1, 3), texts
    files = assert_nowhere(KEY, tmp_path, texts)
    assert any(p.name == "store.sqlite" for p in files)
    # the failure itself was recorded, with the key masked
    recorded = b"".join(p.read_bytes() for p in files if p.suffix in (".jsonl", ".json", ".sqlite", ".html"))
    assert b"[REDACTED]" in recorded


def test_key_under_a_custom_variable_name_is_masked(tmp_path, capsys, monkeypatch):
    secret = "plainsecretvalue-4711-abcdefghijkl"  # no provider shape: only its variable says it is secret
    monkeypatch.setenv("MY_LLM_ACCESS", secret)
    body = json.dumps({"error": {"message": f"bad credentials {secret}"}})
    with ScriptedServer(lambda b: Reply(status=401, raw_body=body)) as srv:
        code, texts = judge_then_report(tmp_path, capsys, "--base-url", srv.base_url, "--api-key-env", "MY_LLM_ACCESS")
        assert srv.headers_seen[0]["Authorization"] == f"Bearer {secret}"
    assert code in (0, 1, 3), texts
    assert_nowhere(secret, tmp_path, texts)


def test_password_in_base_url_is_never_written(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ScriptedServer(lambda b: json.dumps({"score": 60})) as srv:
        url = srv.base_url.replace("http://", "http://user:secretpass@")
        code, texts = judge_then_report(tmp_path, capsys, "--base-url", url)
        assert srv.headers_seen and "Authorization" in srv.headers_seen[0]  # credentials were sent as auth
    assert code in (0, 1, 3), texts
    files = assert_nowhere("secretpass", tmp_path, texts)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["judges"][0]["base_url"] == srv.base_url.replace("http://", "http://[REDACTED]@")
    assert (tmp_path / "report.html") in files
