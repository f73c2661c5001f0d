"""Inputs given as NAME=PATH (or as a plain string click does not type as a path) are inputs too: `-o` onto
one of them is exit 2 naming it, and the file is left as it was. span-f1 --rank, error-free-eval --metric and
validate --judge/--human/--task once wrote their table over such an input (exit 0)."""

from __future__ import annotations

import json

import pytest

from tests.helpers.cli import cli
from tests.validation.test_cli import _files

GOLD = {"system": "A", "doc_id": "d", "seg_id": "1", "lp": "en-de", "hypothesis": "Das ist ein Test.",
        "spans": [{"start": 0, "end": 3, "severity": "major"}]}


def refused(capsys, path, *args) -> None:
    before = path.read_bytes()
    assert cli(*args, "-o", path) == 2
    err = capsys.readouterr().err
    assert path.name in err and "an input" in err and len(err.strip().splitlines()) == 1
    assert path.read_bytes() == before


def test_span_f1_never_writes_onto_a_ranked_prediction(tmp_path, capsys):
    for name in ("gold", "pred", "other"):
        (tmp_path / f"{name}.jsonl").write_text(json.dumps(GOLD) + "\n", encoding="utf-8")
    base = ("span-f1", "--gold", tmp_path / "gold.jsonl", "--pred", tmp_path / "pred.jsonl")
    refused(capsys, tmp_path / "other.jsonl", *base, "--rank", tmp_path / "other.jsonl", "--format", "json")
    refused(capsys, tmp_path / "other.jsonl", *base, "--rank", f"mine={tmp_path / 'other.jsonl'}")


def test_error_free_eval_never_writes_onto_a_metrics_labels(tmp_path, capsys):
    gold = tmp_path / "esa.jsonl"
    gold.write_text(json.dumps({**GOLD, "score": 92, "spans": []}) + "\n", encoding="utf-8")
    labels = tmp_path / "m.tsv"
    labels.write_text("system\tseg_id\tlabel\nA\t1\t1\n", encoding="utf-8")
    refused(capsys, labels, "error-free-eval", "-g", gold, "-m", labels)
    refused(capsys, labels, "error-free-eval", "-g", gold, "-m", f"judge={labels}", "--format", "tsv")


@pytest.mark.parametrize("target", ["good.jsonl", "human.jsonl", "task.json"])
def test_validate_never_writes_onto_a_judges_ratings_or_its_other_inputs(tmp_path, capsys, target):
    d = _files(tmp_path)
    refused(capsys, d / target, "validate", "--task", d / "task.json", "--human", d / "human.jsonl",
            "--judge", f"good={d / 'good.jsonl'}", "--judge", f"bad={d / 'bad.jsonl'}", "--format", "tsv")
