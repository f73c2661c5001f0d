"""The report's "Which systems differ" section shows what ``compare-systems`` computes for the run."""

from __future__ import annotations

import json

import pytest

from polyjudge.api.systems import CompareSettings, CompareSystemsConfig, compare_systems
from polyjudge.report.format import interval, number
from polyjudge.report.html import render
from polyjudge.report.load import load_run
from polyjudge.report.sections import Cell, Table
from tests.report.fixtures import build_run


def _text(cell):
    return cell.text if isinstance(cell, Cell) else str(cell)


def test_section_equals_compare_systems_on_the_same_run(tmp_path):
    d = build_run(tmp_path, n_items=30, systems=("sysA", "sysB", "sysC", "sysD"), spans=False)
    rep = render([load_run(d)], n_boot=300)
    section = next(s for s in rep.sections if s.title == "Which systems differ")
    tables = [b for b in section.blocks if isinstance(b, Table)]
    ranked, pairs = tables
    api = compare_systems(d, CompareSystemsConfig(settings=CompareSettings(n_boot=300, n_perm=300)))
    assert [r[2] for r in ranked.rows] == [s.system for s in api.judge.systems]
    assert [_text(r[0]) for r in ranked.rows] == [str(s.cluster) for s in api.judge.systems]
    assert len(pairs.rows) == 6
    for row, p in zip(pairs.rows, api.judge.pairs):
        assert row[:3] == [p.system_a, p.system_b, p.n]
        assert row[3:8] == [number(p.delta), interval(p.ci_low, p.ci_high), number(p.p_bootstrap),
                            number(p.p_randomization), number(p.p_ttest)]
        assert _text(row[8]) == ("yes" if p.significant else "no")
    doc = json.loads(api.to_json())
    assert doc["clusters"] == api.judge.clusters() and all(c for c in doc["clusters"])


def test_no_section_for_one_system(tmp_path):
    d = build_run(tmp_path, systems=("only",), spans=False)
    rep = render([load_run(d)], n_boot=200)
    assert "Which systems differ" not in [s.title for s in rep.sections]


@pytest.mark.parametrize("n_boot", [150])
def test_draws_follow_the_reports_bootstrap_setting(tmp_path, n_boot):
    d = build_run(tmp_path, n_items=10, spans=False)
    rep = render([load_run(d)], n_boot=n_boot)
    section = next(s for s in rep.sections if s.title == "Which systems differ")
    assert f"({n_boot} resamples)" in section.blocks[0].text and f"({n_boot} draws)" in section.blocks[0].text
