"""The dry run's "USD by way of sending" rows: each way once, and none for a local model (issue 33: the embedded
judge's dry run printed its rows twice with --runs 2, and batch rows although a local model has no batch API)."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyjudge.cli.main import main

DEMO = Path(__file__).resolve().parents[2] / "src" / "polyjudge" / "examples" / "demo_ende.jsonl"


def _dry_run(capsys, *args: str) -> str:
    with pytest.raises(SystemExit) as exc:
        main(["judge", str(DEMO), "--dry-run", "--runs", "2", *args])
    got = capsys.readouterr()
    assert exc.value.code == 0, got.err
    return got.out + got.err


def test_a_local_judge_has_no_ways_of_sending_to_compare(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("POLYJUDGE_CACHE", str(tmp_path / "cache"))
    (tmp_path / "rec.jsonl").write_text("", encoding="utf-8")
    text = _dry_run(capsys, "--judge", "replay:" + str(tmp_path / "rec.jsonl"))
    assert "by way of sending" not in text and "batch" not in text


def test_an_api_judge_lists_each_way_once(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("POLYJUDGE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    text = _dry_run(capsys, "--judge", "openai:gpt-4o-mini@http://127.0.0.1:9/v1")
    rows = [ln.split("  ")[1] for ln in text.splitlines() if ln.startswith("  ") and "requests" in ln]
    assert "by way of sending" in text and len(rows) == len(set(rows)) == 4, rows
