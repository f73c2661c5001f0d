"""`polyjudge simulate` with the budget and prevalence analyses, its report and its plots."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from polyjudge.api import SimConfig
from polyjudge.api.validation import AmbiguityLevels, BudgetGrid, simulate
from polyjudge.cli.main import main
from polyjudge.cli.validate_cmd import simulate as simulate_cmd

SMALL = ["--items", "30", "--judges", "6", "--seeds", "2"]


def _exit_code(args: list[str]) -> int | None:
    try:
        main(args)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return 0


def test_json_holds_every_analysis_with_its_seeds():
    r = CliRunner().invoke(simulate_cmd, SMALL + ["--budget", "--budget-items", "20,40", "--budget-ratings", "1",
                                                  "--budget-ratings", "5", "--prevalence", "--ambiguity", "0,0.5",
                                                  "--tau", "0.5", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["seeds"] == 2 and doc["seed_values"] == [0, 1]
    run = doc["runs"][0]
    assert run["config"]["taus"] == [0.5]
    assert set(run["rank_correlation"]) == set(run["selection"])
    assert {"kendall_consistency", "spearman_consistency", "kendall_bias", "spearman_bias",
            "spearman_consistency_sd"} <= set(run["rank_correlation"]["mse (srs/srs)"])
    budget = doc["budget"]
    assert budget["items"] == [20, 40] and budget["ratings"] == [1, 5] and budget["seeds"] == 2
    assert len(budget["rows"]) == 2 * 2 * 9
    prev = doc["prevalence"]
    assert prev["seeds"] == 2 and len(prev["rows"]) == 2 * 3  # 2 ambiguity levels x 3 options, one tau


def test_tsv_lists_each_table_and_text_shows_them():
    r = CliRunner().invoke(simulate_cmd, SMALL + ["--budget", "--budget-items", "20", "--budget-ratings", "1,2",
                                                  "--prevalence", "--ambiguity", "0.3", "--format", "tsv"])
    assert r.exit_code == 0, r.output
    parts = r.stdout.split("\n\n")
    assert len(parts) == 3
    assert parts[0].splitlines()[0].split("\t")[-4:] == ["kendall_consistency", "spearman_consistency",
                                                         "kendall_bias", "spearman_bias"]
    assert parts[1].startswith("# regret_by_budget\nn_items\tratings_per_item\tbudget")
    assert parts[2].startswith("# prevalence_by_elicitation\nambiguity\toption\ttau")
    text = CliRunner().invoke(simulate_cmd, SMALL + ["--budget", "--budget-items", "20", "--budget-ratings", "1",
                                                     "--prevalence", "--ambiguity", "0.3"]).stdout
    assert "Regret vs rating budget" in text and "Prevalence by elicitation" in text and "τ_b(C)" in text


def test_report_and_plots_are_written_and_deterministic(tmp_path):
    args = ["simulate", *SMALL, "--budget", "--budget-items", "20", "--budget-ratings", "1,3", "--prevalence",
            "--ambiguity", "0,0.4", "--tau", "0.5", "--format", "json"]
    assert _exit_code(args + ["--report", str(tmp_path / "a.html"), "--plots-dir", str(tmp_path / "a")]) == 0
    assert _exit_code(args + ["--report", str(tmp_path / "b.html"), "--plots-dir", str(tmp_path / "b"),
                              "-o", str(tmp_path / "b.json")]) == 0
    names = sorted(p.name for p in (tmp_path / "a").iterdir() if p.name != ".polyjudge-owned.json")
    assert names == ["prevalence-tau-0-5.svg", "rank-correlation-1.svg", "regret-budget-20-items.svg"]
    for n in names:
        a, b = (tmp_path / "a" / n).read_text(), (tmp_path / "b" / n).read_text()
        assert a == b  # same seeds, same figure
        ET.fromstring(a.split("\n", 1)[1])
    html = (tmp_path / "a.html").read_text()
    assert "Judge validation: synthetic experiments" in html and "Regret vs rating budget" in html
    assert json.loads((tmp_path / "b.json").read_text())["budget"]["items"] == [20]


def test_bad_flags_exit_2(tmp_path, capsys):
    assert _exit_code(["simulate", *SMALL, "--plots-dir", str(tmp_path / "p")]) == 2
    assert "--plots-dir needs --report" in capsys.readouterr().err
    assert _exit_code(["simulate", *SMALL, "--budget", "--budget-items", "x"]) == 2
    assert "--budget-items: 'x'" in capsys.readouterr().err
    assert _exit_code(["simulate", *SMALL, "--budget", "--budget-items", "1"]) == 2
    assert _exit_code(["simulate", *SMALL, "--prevalence", "--ambiguity", "2"]) == 2
    assert _exit_code(["simulate", *SMALL, "--sets", "3", "--prevalence", "--ambiguity", "0.5"]) == 2


def test_api_defaults_use_the_first_configuration():
    res = simulate([SimConfig(n_items=20, n_judges=4, taus=(0.5,)), SimConfig(n_items=10, n_judges=4)], seeds=1,
                   budget=BudgetGrid(items=(10,), ratings=(2,)), prevalence=AmbiguityLevels((0.0,)))
    assert res.budget is not None and res.budget.base.n_items == 20 and res.budget.cells[0].n_items == 10
    assert res.prevalence is not None and res.prevalence.n_items == 20
    assert {r.tau for r in res.prevalence.rows} == {0.5}
    with pytest.raises(Exception, match="no simulation configuration"):
        simulate([], seeds=1)
