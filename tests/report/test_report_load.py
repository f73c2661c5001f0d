"""Reading run directories: texts from any of three places, spans, strict errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from polyjudge.data.errors import InputError
from polyjudge.report.load import Span, extract_spans, load_run
from tests.report.fixtures import build_run


@pytest.mark.parametrize("texts_in", ["segments", "items", "judgments"])
def test_texts_found_wherever_recorded(tmp_path, texts_in):
    d = build_run(tmp_path, texts_in=texts_in, n_items=6)
    run = load_run(d)
    assert len(run.segments) == 6
    assert all(s.tgt for s in run.segments)
    assert run.segments[1].system == "sysB"


def test_no_texts_recorded(tmp_path):
    run = load_run(build_run(tmp_path, texts_in="none", n_items=4))
    assert all(s.tgt is None for s in run.segments)


def test_judgments_and_score_matrix(tmp_path):
    d = build_run(tmp_path, n_items=10, n_runs=4, judges=("a", "b"))
    run = load_run(d)
    assert len(run.judgments) == 10 * 4 * 2
    assert run.n_runs == 4 and run.judges == ["a", "b"]
    m = run.score_matrix("a")
    assert m.shape == (10, 4)
    # Independent reading of the same file: failed judgments are NaN, ok ones their score.
    for line in (d / "judgments.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec["judge"] != "a":
            continue
        v = m[rec["item_index"], rec["run_index"]]
        if rec["status"] == "ok":
            assert v == rec["score"]
        else:
            assert np.isnan(v)
    assert run.signature.startswith("polyjudge:")
    assert run.protocol == "tsa" and run.aggregator == "mean" and run.wall_time_s == 12.5


def test_extract_spans_code_points():
    ann = {"spans": [{"start": 4, "end": 5, "severity": "Major", "category": "acc"},
                     {"start": 2, "end": 2, "severity": "minor", "category": "omission",
                      "description": "missing word"}]}
    assert extract_spans(ann) == [Span(4, 5, "major", "acc", ""), Span(2, 2, "minor", "omission", "missing word")]
    assert extract_spans([{"severity": "major", "category": "x"}]) is None  # MQM errors without positions
    assert extract_spans({"score": 3}) is None
    assert extract_spans([]) == []


def test_bad_json_line_names_file_and_line(tmp_path):
    d = build_run(tmp_path, n_items=3)
    p = d / "judgments.jsonl"
    lines = p.read_text().splitlines()
    lines.insert(2, "{not json")
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as e:
        load_run(d)
    assert e.value.line == 3 and e.value.path.endswith("judgments.jsonl")


def test_missing_field_and_missing_file(tmp_path):
    d = build_run(tmp_path, n_items=3)
    (d / "judgments.jsonl").write_text('{"status": "ok"}\n')
    with pytest.raises(InputError) as e:
        load_run(d)
    assert e.value.field == "item_index"
    (d / "judgments.jsonl").unlink()
    with pytest.raises(InputError):
        load_run(d)
    with pytest.raises(InputError):
        load_run(tmp_path / "nope")
