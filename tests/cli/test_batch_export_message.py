"""`judge --batch-export FILE` says what it did: the file it wrote, or that nothing was left to export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli import cli
from tests.helpers.openai_server import ScriptedServer


def _items(path: Path) -> Path:
    path.write_text("".join(json.dumps({"src_lang": "en", "tgt_lang": "de", "src": f"s{i}", "tgt": f"t{i}",
                                        "seg_id": str(i), "system": "S"}) + "\n" for i in range(3)),
                    encoding="utf-8")
    return path


def test_an_export_with_nothing_left_to_send_says_so_and_writes_nothing(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    inp, run, export = _items(tmp_path / "in.jsonl"), tmp_path / "run", tmp_path / "requests.jsonl"
    with ScriptedServer(lambda body: json.dumps({"score": 70})) as srv:
        judge = ["judge", inp, "-o", run, "--judge", f"openai:m@{srv.base_url}", "-q"]
        assert cli(*judge) == 0
        capsys.readouterr()
        assert cli(*judge, "--batch-export", export) == 0
    err = capsys.readouterr().err
    assert not export.exists()
    assert "; answer it" not in err
    assert f"no batch input written to {export}: every request of the run is answered already" in err


def test_an_export_with_requests_to_send_names_its_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inp, export = _items(tmp_path / "in.jsonl"), tmp_path / "requests.jsonl"
    assert cli("judge", inp, "-o", tmp_path / "run", "--judge", "openai:m@http://127.0.0.1:9/v1", "-q",
               "--batch-export", export) == 0
    assert len(export.read_text(encoding="utf-8").splitlines()) == 3
    assert f"batch input written to {export}; answer it" in capsys.readouterr().err



def test_an_import_under_openai_base_url_is_found_by_a_live_run(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Batch files are keyed under the endpoint OPENAI_BASE_URL names, as a live run is: answers imported
    through a batch file are found in the shared cache by a later live run, which then sends nothing
    (they were keyed under the official endpoint, and paid for again)."""
    import urllib.request

    inp, cache = _items(tmp_path / "in.jsonl"), tmp_path / "cache.sqlite"
    requests, results = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    with ScriptedServer(lambda body: json.dumps({"score": 70})) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        judge = ["judge", inp, "--judge", "openai:m", "-q", "--cache", cache]
        assert cli(*judge, "-o", tmp_path / "run", "--batch-export", requests) == 0
        lines = []
        for n, line in enumerate(requests.read_text(encoding="utf-8").splitlines()):
            request = json.loads(line)
            call = urllib.request.Request(srv.base_url.rstrip("/") + "/chat/completions",
                                          data=json.dumps(request["body"]).encode(),
                                          headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(call) as answer:
                body = json.load(answer)
            lines.append(json.dumps({"id": f"line-{n}", "custom_id": request["custom_id"], "error": None,
                                     "response": {"status_code": 200, "body": body}}) + "\n")
        results.write_text("".join(lines), encoding="utf-8")
        assert cli(*judge, "-o", tmp_path / "run", "--batch-import", results) == 0
        answered = len(srv.requests)
        assert cli(*judge, "-o", tmp_path / "live") == 0
        assert len(srv.requests) == answered  # every answer came from the cache
