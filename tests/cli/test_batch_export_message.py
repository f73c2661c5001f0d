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
