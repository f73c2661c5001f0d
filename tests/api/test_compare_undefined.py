"""compare-formats prints an undefined figure as n/a (text, TSV) and null (JSON), never an empty cell or NaN
(issue 43 item 4)."""

from __future__ import annotations

import json
import math

from polyjudge.api.compare import CompareFormatsConfig, CompareFormatsResult, FormatRow


def _result() -> CompareFormatsResult:
    # a run with no answered judgment: its failure rate is 0/0; no gold segment scored: F1 undefined
    row = FormatRow(format="mqm", run="r", path="/r", signature="s", f1=math.nan, precision=math.nan,
                    recall=math.nan, judgments=0, failed=0, missing_predictions=3, prompt_tokens=0,
                    completion_tokens=0, wall_time_s=math.nan, mean_latency_s=math.nan)
    return CompareFormatsResult(CompareFormatsConfig(runs=("/r",), gold="g.tsv"), [row])


def _cells(table: str) -> dict[str, str]:
    header, line = table.splitlines()[:2]
    return dict(zip(header.split("\t"), line.split("\t"), strict=True))


def test_tsv_says_na_for_undefined() -> None:
    cells = _cells(_result().to_tsv())
    for column in ("f1", "precision", "recall", "failure_rate", "wall_time_s", "mean_latency_s"):
        assert cells[column] == "n/a", column
    assert cells["judgments"] == "0"


def test_text_says_na_for_undefined() -> None:
    text = _result().to_text()
    row = text.splitlines()[1].split()
    assert row.count("n/a") == 6
    assert "nan" not in text.lower().replace("n/a", "")


def test_json_says_null_for_undefined() -> None:
    doc = json.loads(_result().to_json(), parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    run = doc["runs"][0]
    assert run["f1"] is None and run["failure_rate"] is None and run["wall_time_s"] is None
    assert run["judgments"] == 0
