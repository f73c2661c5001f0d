"""A run directory written by polyjudge 0.1.0 reads through RunDir and renders as a report.

``tests/fixtures/run-0.1.0`` was made by the 0.1.0 code (``polyjudge judge``,
protocol ``da``, judges ``m1`` and ``m2`` behind a scripted OpenAI-compatible
server, 2 runs, 24 items, 4 unparseable answers); only ``store.sqlite`` was
left out. Expected values are read from its files with ``json``/``csv`` here,
not through polyjudge.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from polyjudge.aggregate.rrwa import COMPARISON
from polyjudge.analysis import aggregate_table
from polyjudge.cli.main import cli
from polyjudge.rundir import RunDir

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run-0.1.0"


def _lines() -> list[dict]:
    return [json.loads(x) for x in (RUN / "judgments.jsonl").read_text(encoding="utf-8").splitlines() if x]


def _tsv(name: str) -> list[dict[str, str]]:
    with (RUN / name).open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def test_manifest_of_format_0():
    rd = RunDir.open(RUN)
    m = rd.manifest
    assert rd.format_version == 0 and m.format_version == 0
    assert m.prices == {}  # 0.1.0 did not record prices
    assert m.protocol == "da" and m.config.runs == 2 and m.config.aggregator == "mean"
    assert m.versions["polyjudge"] == "0.1.0"
    assert m.cost_usd == 0.0 and m.wall_time_s > 0


def test_judges_runs_and_items():
    rd = RunDir.open(RUN)
    lines = _lines()
    assert rd.judges == ["m1", "m2"]
    assert rd.n_runs == 2 == max(r["run_index"] for r in lines) + 1
    assert len(rd.items) == 24 == len(_tsv("segments.tsv"))
    assert rd.items[1].system == "B" and rd.items[1].tgt  # texts come from items.jsonl
    assert len(rd.judgments) == len(lines) == 96
    assert sum(not j.ok for j in rd.judgments) == sum(r["status"] != "ok" for r in lines) == 4


@pytest.mark.parametrize("judge", ["m1", "m2"])
def test_run_scores_match_the_judgments(judge):
    rs = RunDir.open(RUN).run_scores(judge)
    assert rs.scores.shape == (24, 2)
    expected = np.full((24, 2), np.nan)
    for r in _lines():
        if r["judge"] == judge and r["status"] == "ok":
            expected[r["item_index"], r["run_index"]] = r["score"]
    np.testing.assert_array_equal(rs.scores, expected)
    assert rs.systems == [row["system"] for row in _tsv("segments.tsv")]


def test_stored_aggregates_equal_a_recomputation():
    rd = RunDir.open(RUN)
    assert rd.aggregate_names() == list(COMPARISON)
    stored = _tsv("aggregates.tsv")
    for judge in rd.judges:
        table = aggregate_table(rd.run_scores(judge).scores, COMPARISON)
        rows = [r for r in stored if r["judge"] == judge]
        for name in COMPARISON:
            got = rd.aggregate_scores(judge, name)
            want = [math.nan if r[name] == "" else float(r[name]) for r in rows]
            np.testing.assert_array_equal(got, want)
            # written rounded to 6 decimals
            np.testing.assert_allclose(table[name], want, atol=5e-7, equal_nan=True)


def test_final_scores_are_the_segments_column():
    rd = RunDir.open(RUN)
    rows = _tsv("segments.tsv")
    np.testing.assert_array_equal(rd.final_scores(), [float(r["score"]) for r in rows])
    np.testing.assert_array_equal(rd.final_scores("m2"), [float(r["score:m2"]) for r in rows])


def test_report_renders_it(tmp_path):
    out = tmp_path / "report.html"
    res = CliRunner().invoke(cli, ["report", str(RUN), "-o", str(out), "--bootstrap", "200"])
    assert res.exit_code == 0, res.output
    html = out.read_text(encoding="utf-8")
    for title in ("Summary", "Score distributions", "System ranking", "Variability across runs"):
        assert f"<h2>{title} " in html
    assert "$0.0000" in html  # the cost the manifest recorded
    assert "92 ok, 4 failed" in html
