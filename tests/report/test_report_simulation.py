"""The report's section for `polyjudge simulate --format json`, and the line-with-band SVG."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from polyjudge.api import SimConfig
from polyjudge.api.validation import AmbiguityLevels, BudgetGrid, simulate
from polyjudge.data.errors import InputError
from polyjudge.report import svg
from polyjudge.report.adapters import STUDY_FILES, check_study, read_study
from polyjudge.report.html import render
from polyjudge.report.sections import Figure, Table
from polyjudge.report.simulation import simulation_blocks
from polyjudge.validation.simulation_results import read_simulation

SVG_NS = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def doc():
    res = simulate([SimConfig(n_items=30, n_judges=6, taus=(0.5,)),
                    SimConfig(n_items=30, n_judges=6, gamma_judge=-1.0, taus=(0.5,))], seeds=2,
                   budget=BudgetGrid(items=(20, 40), ratings=(1, 3)), prevalence=AmbiguityLevels((0.0, 0.5)))
    return json.loads(json.dumps(res.to_dict()))


def test_line_band_by_hand():
    """x 1..3 on [56, 450], means .2 .1 .0 on an axis whose ticks run 0..0.25."""
    out = svg.line_band([("a<b>", [3, 1, 2], [0.0, 0.2, 0.1], [0.0, 0.1, 0.05], [0.05, 0.25, 0.15]),
                         ("skip", [1, float("nan")], [0.1, 0.2], [0.1, 0.2], [0.1, 0.2])],
                        xlabel="ratings", ylabel="regret", title="t", ymin=0)
    root = ET.fromstring(str(out))
    assert "a&lt;b&gt;" in str(out) and "<b>" not in str(out)
    line = root.findall(f"{SVG_NS}polyline")[0]
    xs = [float(p.split(",")[0]) for p in line.get("points").split()]
    assert xs == sorted(xs) and len(xs) == 3  # points sorted by x
    assert xs[0] == pytest.approx(56) and xs[-1] == pytest.approx(450)
    band = root.findall(f"{SVG_NS}polygon")[0]
    assert len(band.get("points").split()) == 6  # upper edge there, lower edge back
    # the second series keeps its one finite point
    assert len(root.findall(f"{SVG_NS}polyline")[1].get("points").split()) == 1
    circles = root.findall(f"{SVG_NS}circle")
    assert "a<b> at 1: 0.2 [0.1, 0.25]" in [c.find(f"{SVG_NS}title").text for c in circles]


def test_blocks_tables_and_figures(doc):
    blocks = simulation_blocks(read_simulation(doc, "sim.json"))
    figs = [b.name for b in blocks if isinstance(b, Figure)]
    assert figs == ["rank-correlation-1", "regret-budget-20-items", "regret-budget-40-items",
                    "regret-total-budget-hit-rate-h-h", "regret-total-budget-mse-srs-srs", "prevalence-tau-0-5"]
    tables = [b for b in blocks if isinstance(b, Table)]
    sel = tables[0]
    assert len(sel.rows) == 2 * 9 and "Spearman ρ vs C" in sel.columns
    # values in the table are the document's
    first = doc["runs"][0]
    best = min(first["selection"], key=lambda d: first["selection"][d]["regret"])
    row = sel.rows[0]
    assert row[1] == best
    assert row[6] == svg.number(first["rank_correlation"][best]["spearman_consistency"])
    budget = tables[1]
    assert budget.columns == ["items", "definition", "1 rating/item", "3 ratings/item"] and len(budget.rows) == 18
    prev = tables[2]
    assert len(prev.rows) == 2 * 3
    for b in blocks:
        if isinstance(b, Figure):
            ET.fromstring(str(b.svg))


def test_budget_figure_plots_the_documented_means(doc):
    blocks = simulation_blocks(read_simulation(doc, "sim.json"))
    fig = next(b for b in blocks if isinstance(b, Figure) and b.name == "regret-budget-20-items")
    titles = re.findall(r"<title>([^<]*)</title></circle>", str(fig.svg))
    rows = {(r["definition"], r["ratings_per_item"]): r for r in doc["budget"]["rows"] if r["n_items"] == 20}
    for d in ("hit_rate (h/h)", "mse (srs/srs)"):
        for r in (1, 3):
            m, sd = rows[(d, r)]["regret_mean"], rows[(d, r)]["regret_sd"]
            lo, hi = max(0.0, m - sd), min(1.0, m + sd)
            assert f"{d} at {r}: {svg.number(m)} [{svg.number(lo)}, {svg.number(hi)}]" in titles
    total = next(b for b in blocks if isinstance(b, Figure) and b.name.endswith("mse-srs-srs"))
    titles = re.findall(r"<title>([^<]*)</title></circle>", str(total.svg))
    for (n, r), row in {(x["n_items"], x["ratings_per_item"]): x for x in doc["budget"]["rows"]
                        if x["definition"] == "mse (srs/srs)"}.items():
        assert any(t.startswith(f"{n} items at {n * r}: {svg.number(row['regret_mean'])} [") for t in titles)


def test_rendered_page_is_deterministic_and_escapes(doc):
    evil = json.loads(json.dumps(doc))
    evil["runs"][0]["label"] = "<script>alert(1)</script>"
    a = render([], studies={"simulation.json": read_simulation(evil, "evil.json")})
    b = render([], studies={"simulation.json": read_simulation(evil, "evil.json")})
    assert [str(f.svg) for _, f in a.figures] == [str(f.svg) for _, f in b.figures]
    assert "<script>alert(1)" not in a.html and "&lt;script&gt;alert(1)" in a.html
    assert [s.title for s in a.sections] == ["Judge validation: synthetic experiments"]


def test_shape_check(tmp_path, doc):
    assert "simulation.json" in STUDY_FILES
    # read into its typed rows (repr: NaN != NaN in a comparison)
    assert repr(check_study(doc, "simulation.json", "x.json")) == repr(read_simulation(doc, "x.json"))
    for bad, where in (({}, "no selection runs"), ({"runs": "x"}, "runs"),
                       ({"budget": {"rows": [{"n_items": "many"}]}}, "budget.rows[0].n_items"),
                       ({"prevalence": {"rows": [{"ambiguity": 0.1}]}}, "prevalence.rows[0].option")):
        with pytest.raises(InputError, match=re.escape(where)) as exc:
            check_study(bad, "simulation.json", "sim.json")
        assert exc.value.path == "sim.json"
    p = tmp_path / "sim.json"
    p.write_text(json.dumps(doc))
    assert repr(read_study(p, "simulation.json")) == repr(read_simulation(doc, str(p)))


def test_report_command_takes_simulation_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`polyjudge report --simulation FILE` renders the synthetic-experiment section; a wrong file is exit 2."""
    from polyjudge.cli.main import main

    def run(*argv: str) -> int:
        with pytest.raises(SystemExit) as ex:
            main(list(argv))
        return int(ex.value.code or 0)

    assert run("simulate", "--seeds", "1", "--items", "40", "--format", "json") == 0
    sim = tmp_path / "sim.json"
    sim.write_text(capsys.readouterr().out)
    out = tmp_path / "r.html"
    assert run("report", "--simulation", str(sim), "-o", str(out)) == 0
    assert "synthetic experiments" in out.read_text()
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a simulation"}')
    capsys.readouterr()
    assert run("report", "--simulation", str(bad), "-o", str(out)) == 2
    err = capsys.readouterr().err
    assert "bad.json" in err and "Traceback" not in err
