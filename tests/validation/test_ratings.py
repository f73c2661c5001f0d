"""Reading ratings from a run directory: ok answers count, failures are counted, bad answers name their line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from polyjudge.data.errors import InputError
from polyjudge.validation.ratings import read_ratings
from polyjudge.validation.task import RatingTask

TASK = RatingTask.build(["good", "bad"], "all")


def _run(tmp_path, rows):
    run = tmp_path / "run"
    run.mkdir()
    (run / "judgments.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


def test_run_directory_ratings(tmp_path):
    rows = [{"item_index": 0, "system": "A", "seg_id": "1", "run_index": 0, "judge": "m", "status": "ok",
             "annotation": {"option": "good", "letter": "A"}},
            {"item_index": 0, "system": "A", "seg_id": "1", "run_index": 1, "judge": "m", "status": "ok",
             "annotation": {"set": ["good", "bad"], "letters": "AB"}},
            {"item_index": 1, "run_index": 0, "judge": "m", "status": "ok",
             "annotation": {"option": "bad", "letter": "B", "item_id": "x7"}},
            {"item_index": 1, "run_index": 1, "judge": "m", "status": "truncated", "annotation": None}]
    counts = read_ratings(_run(tmp_path, rows), TASK)
    # keys: system:seg_id where no item_id was given, else the annotation's item_id
    assert counts.name == "run" and counts.items == ["A:1", "x7"]
    np.testing.assert_array_equal(counts.fc, [[1, 0], [0, 1]])
    np.testing.assert_array_equal(counts.rs, [[0, 0, 1], [0, 0, 0]])
    assert counts.failures == 1 and counts.failure_reasons == {"truncated": 1}


def test_run_directory_bad_answer_names_its_line(tmp_path):
    rows = [{"item_index": 0, "run_index": 0, "judge": "m", "status": "ok", "annotation": {"option": "good"}},
            {"item_index": 1, "run_index": 0, "judge": "m", "status": "ok", "annotation": {"score": 3}}]
    run = _run(tmp_path, rows)
    with pytest.raises(InputError) as err:
        read_ratings(run, TASK)
    assert err.value.path == str(run / "judgments.jsonl") and err.value.line == 2
    assert err.value.field == "annotation"
