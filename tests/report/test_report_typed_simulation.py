"""The synthetic experiments (``polyjudge simulate``) reach the report as typed rows (issue 36 item 5):
SimRun, BudgetRow and PrevalenceRow, the same from a result in memory and from the JSON the command wrote.

The simulations are real (small grids of the Guerdan et al. experiment, with the budget and prevalence
analyses)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from polyjudge.api import SimConfig
from polyjudge.api.reporting import ReportConfig, report
from polyjudge.api.validation import AmbiguityLevels, BudgetGrid, simulate, write_simulation_report
from polyjudge.cli.main import main
from polyjudge.validation.simulation_results import BudgetRow, PrevalenceRow, SimRun, read_simulation


def _html(path: Path) -> str:
    return re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "TIME", path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("n_configs,budget,prevalence", [(2, True, True), (7, False, False), (1, False, True)])
def test_the_report_is_the_same_from_the_result_in_memory_and_from_its_file(tmp_path, n_configs, budget,
                                                                          prevalence):
    result = simulate([SimConfig(n_items=20, n_judges=4, gamma_judge=1.0 - i / 2, taus=(0.5,))
                       for i in range(n_configs)], seeds=2,
                      budget=BudgetGrid(items=(20, 30), ratings=(1, 2)) if budget else None,
                      prevalence=AmbiguityLevels((0.0, 0.5)) if prevalence else None)
    typed = result.results()
    assert len(typed.runs) == n_configs and all(isinstance(r, SimRun) for r in typed.runs)
    assert all(isinstance(r, BudgetRow) for r in typed.budget) and bool(typed.budget) == budget
    assert all(isinstance(r, PrevalenceRow) for r in typed.prevalence) and bool(typed.prevalence) == prevalence
    path = tmp_path / "simulation.json"
    path.write_text(result.to_json() + "\n", encoding="utf-8")  # what `simulate --format json` writes
    assert repr(read_simulation(json.loads(path.read_text(encoding="utf-8")), str(path))) == repr(typed)
    report([], ReportConfig(out=tmp_path / "mem.html", simulation=result))
    report([], ReportConfig(out=tmp_path / "file.html", simulation=path))
    write_simulation_report(result, tmp_path / "own.html", title="polyjudge report: study outputs")
    mem = _html(tmp_path / "mem.html")
    assert "Judge validation: synthetic experiments" in mem
    assert mem == _html(tmp_path / "file.html") == _html(tmp_path / "own.html")


@pytest.mark.parametrize("field", ["fc_bias", "forced_choice_sampled_mean"])
def test_a_prevalence_value_that_is_not_a_number_is_one_line_naming_the_file_and_the_place(tmp_path, capsys,
                                                                                            field):
    row = {"ambiguity": 0.0, "option": 0, "tau": 0.5, "true_mean": 0.4, "forced_choice_mean": 0.5,
           "response_set_mean": 0.45, field: "some"}
    p = tmp_path / "simulation.json"
    p.write_text(json.dumps({"seeds": 1, "prevalence": {"rows": [row]}}))
    with pytest.raises(SystemExit) as exc:
        main(["report", "--simulation", str(p), "-o", str(tmp_path / "r.html")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1
    assert err.startswith(f"polyjudge: error: {p}: prevalence.rows[0].{field}: ")
    assert not (tmp_path / "r.html").exists()
