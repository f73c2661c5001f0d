"""PPI++ from too few labels is n/a, not ``1.000 [1.000, 1.000] (n=2)`` (issue 43, item 4)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from polyjudge.cli.validate_cmd import validate
from polyjudge.validation import ppi
from polyjudge.validation.ppi import ppi_mean
from tests.validation.test_cli import TASK


def test_two_labels_give_no_estimate_and_no_interval():
    r = ppi_mean(np.ones(2), np.ones(2), np.array([1.0, 0.0, 1.0]))
    assert math.isnan(r.estimate) and math.isnan(r.lower) and math.isnan(r.upper)
    assert math.isnan(r.classical_lower) and (r.n_labelled, r.n_unlabelled) == (2, 3)


def test_an_interval_needs_six_labels_and_some_spread():
    rng = np.random.default_rng(0)
    fu = (rng.random(50) < 0.5).astype(float)
    five = ppi_mean(np.array([1.0, 0, 1, 0, 1]), np.array([1.0, 0, 1, 1, 1]), fu)
    assert np.isfinite(five.estimate) and math.isnan(five.lower) and math.isnan(five.upper)
    assert five.classical == pytest.approx(0.6)
    six = ppi_mean(np.array([1.0, 0, 1, 0, 1, 1]), np.array([1.0, 0, 1, 1, 1, 0]), fu)
    assert six.n_labelled == ppi.MIN_INTERVAL_LABELLED and six.lower < six.estimate < six.upper
    flat = ppi_mean(np.ones(8), np.ones(8), np.ones(20))  # no spread anywhere: se = 0
    assert flat.estimate == 1.0 and math.isnan(flat.lower) and math.isnan(flat.classical_upper)


def _files(tmp_path, n_items):
    rng = np.random.default_rng(0)
    (tmp_path / "task.json").write_text(json.dumps(TASK))
    hum, judge = [], []
    for i in range(n_items):
        hum.append({"item": f"i{i}", "forced_choice": ["C"] * 5})  # every human says "Not toxic"
        judge.append({"item": f"i{i}", "forced_choice": ["C"] * 10,
                      "response_sets": [["C", "BC"][int(x)] for x in rng.random(10) < 0.2]})
    (tmp_path / "human.jsonl").write_text("\n".join(json.dumps(r) for r in hum) + "\n")
    (tmp_path / "good.jsonl").write_text("\n".join(json.dumps(r) for r in judge) + "\n")
    return ["--task", str(tmp_path / "task.json"), "--human", str(tmp_path / "human.jsonl"),
            "--judge", f"good={tmp_path / 'good.jsonl'}", "--beta", "0", "--tau", "0.5"]


def test_validate_prints_na_for_ppi_from_two_labels(tmp_path):
    args = _files(tmp_path, 10)  # --ppi-fraction 0.2 of 10 items: 2 labelled
    r = CliRunner().invoke(validate, args)
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if "PPI++ with good" in x)
    assert "n=2" in line and "[1.000, 1.000]" not in line and "n/a" in line and "nan" not in line
    r = CliRunner().invoke(validate, [*args, "--format", "json"])
    got = json.loads(r.output)["ppi"]
    block = next(iter(got.values()))["good"]
    assert block["estimate"] is None and block["lower"] is None and block["n_labelled"] == 2
