"""A judge validation reaches the report as typed rows (issue 36 item 5): validate returns a frozen
SelectionReport, its JSON is written by one writer and read back by one reader, and the report's
validation section renders the typed rows (SelectionTable/SelectionPick/ClassCount) as they are.

The validations are real: ``polyjudge validate`` on a three-option rating task with a human and two
judges (one close to the humans, one always answering the same), over a β grid, several cutoffs, a
second option and the forced-choice downstream.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from polyjudge.api import ValidateConfig, validate
from polyjudge.api.reporting import ReportConfig, report
from polyjudge.cli.main import cli, main
from polyjudge.validation.results import SelectionPick, SelectionTable, ValidationResults
from polyjudge.validation.selection import read_selection, read_validation, selection_json

TASK = {"name": "tox", "options": ["Very toxic", "Toxic", "Not toxic"],
        "response_sets": [["Very toxic"], ["Toxic"], ["Not toxic"], ["Very toxic", "Toxic"],
                          ["Toxic", "Not toxic"], ["Very toxic", "Not toxic"],
                          ["Very toxic", "Toxic", "Not toxic"]]}
SETS = ["A", "B", "C", "AB", "BC", "AC", "ABC"]
VARIANTS = {"grid": {"betas": (0.0, 0.3), "taus": (0.5,)},
            "cutoffs": {"betas": (0.0, 0.2, 0.4), "taus": (0.3, 0.5, 0.7), "option": "B"},
            "soft": {"taus": (0.5,), "downstream": "soft"}}
FLAGS = {"grid": ["--beta", "0,0.3", "--tau", "0.5"],
         "cutoffs": ["--beta", "0,0.2,0.4", "--tau", "0.3,0.5,0.7", "--option", "B"],
         "soft": ["--tau", "0.5", "--downstream", "soft"]}


@pytest.fixture(scope="module")
def ratings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("ratings")
    rng = np.random.default_rng(0)
    (d / "task.json").write_text(json.dumps(TASK))
    hum, good, bad = [], [], []
    for i in range(30):
        p = rng.dirichlet([1, 1, 1])
        hum.append({"item": f"i{i}", "forced_choice": ["ABC"[x] for x in rng.choice(3, 5, p=p)]})
        good.append({"item": f"i{i}", "forced_choice": ["ABC"[x] for x in rng.choice(3, 10, p=p)],
                     "response_sets": [SETS[x] for x in rng.choice(3, 10, p=p)]})
        bad.append({"item": f"i{i}", "fc_counts": [0, 0, 10], "rs_counts": [0, 0, 10, 0, 0, 0, 0]})
    for name, rows in (("human.jsonl", hum), ("good.jsonl", good), ("bad.jsonl", bad)):
        (d / name).write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return d


def _html(path: Path) -> str:
    return re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "TIME", path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_report_is_the_same_from_the_result_in_memory_and_from_its_file(ratings, tmp_path, variant):
    d = ratings
    rep = validate(ValidateConfig(task=d / "task.json", human=d / "human.jsonl",
                                  judges=[("good", d / "good.jsonl"), ("bad", d / "bad.jsonl")],
                                  **VARIANTS[variant]))  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        rep.task = "other"  # type: ignore[misc]
    typed = rep.results()
    assert isinstance(typed, ValidationResults) and typed.selection
    assert all(isinstance(t, SelectionTable) and all(isinstance(p, SelectionPick) for p in t.picks)
               for t in typed.selection)
    # the command line writes the same bytes as the writer, and the reader gives them back
    out = tmp_path / "validation.json"
    res = CliRunner().invoke(cli, ["validate", "--task", str(d / "task.json"), "--human", str(d / "human.jsonl"),
                                   "--judge", f"good={d / 'good.jsonl'}", "--judge", f"bad={d / 'bad.jsonl'}",
                                   *FLAGS[variant], "--format", "json", "--out", str(out)])
    assert res.exit_code == 0, res.output
    text = out.read_text(encoding="utf-8")
    assert text == selection_json(rep)
    back = read_selection(json.loads(text), str(out))
    assert selection_json(back) == text
    # the rows read from the file are the rows in memory (repr: NaN != NaN in a comparison)
    assert repr(read_validation(json.loads(text), str(out))) == repr(typed)
    report([], ReportConfig(out=tmp_path / "mem.html", validation=rep))
    report([], ReportConfig(out=tmp_path / "file.html", validation=out))
    mem = _html(tmp_path / "mem.html")
    assert "Judge validation" in mem and mem.count("Judge selection (β = ") == len(typed.selection)
    assert mem == _html(tmp_path / "file.html")


@pytest.mark.parametrize("row,where", [({"consistency_loss": "a lot"}, "rows[0].consistency_loss"),
                                       ({"bias_excess": [0.1]}, "rows[0].bias_excess"),
                                       ({"tau": True}, "rows[0].tau")])
def test_a_bad_field_is_one_line_naming_the_file_and_the_place(tmp_path, capsys, row, where):
    good = {"beta": 0.0, "tau": 0.5, "definition": "hit rate", "selected": "j", "value": 0.7, "consistency": 0.8,
            "abs_bias": 0.1, "consistency_loss": 0.0, "bias_excess": 0.0}
    p = tmp_path / "validation.json"
    p.write_text(json.dumps({"task": "tox", "k": 0, "option": "A", "n_items": 3, "judges": ["j"],
                             "rows": [{**good, **row}]}))
    with pytest.raises(SystemExit) as exc:
        main(["report", "--validation", str(p), "-o", str(tmp_path / "r.html")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and err.startswith(f"polyjudge: error: {p}: {where}: ")
    assert not (tmp_path / "r.html").exists()


def test_an_older_file_without_per_judge_tables_still_reads(tmp_path):
    """A validate JSON without ``per_judge``, ``ppi`` or ``failures``: the selected judges' values come from
    the rows, and the report shows them."""
    p = tmp_path / "validation.json"
    p.write_text(json.dumps({"task": "tox", "k": 0, "option": "A", "n_items": 3, "judges": ["j", "k"], "rows": [
        {"beta": 0.0, "tau": 0.5, "definition": "hit rate", "selected": "j", "value": 0.7, "consistency": 0.8,
         "abs_bias": 0.1, "consistency_loss": -0.05, "bias_excess": 0.02}]}))
    typed = read_validation(json.loads(p.read_text()), str(p))
    consistency, bias = typed.selection
    assert dict(consistency.target_values)["j"] == 0.8 and dict(bias.target_values)["j"] == 0.1
    assert consistency.picks[0].loss == 0.05 and bias.picks[0].loss == 0.02
    report([], ReportConfig(out=tmp_path / "r.html", validation=p))
    assert "Judge selection (β = 0, τ = 0.5)" in (tmp_path / "r.html").read_text(encoding="utf-8")
