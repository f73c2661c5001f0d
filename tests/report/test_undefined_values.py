"""The report shows undefined statistics as n/a (issue 43, item 4): charts label them and never get an
axis of 1e-09, intervals and p-values from too few segments read n/a, one formatting rule for all."""

from __future__ import annotations

import math
import re

import numpy as np

from polyjudge.metaeval.systems import compare_systems
from polyjudge.report import svg
from polyjudge.report.format import interval, number
from polyjudge.report.systems import comparison_blocks


def _tick_labels(markup: str) -> list[str]:
    return re.findall(r'text-anchor="end"\s*>([^<]+)</text>', markup)


def test_a_chart_of_undefined_values_has_a_unit_axis_and_labels_them():
    chart = str(svg.grouped_bars(["en-de", "zh-en"], [("judge", [None, math.nan])], ylabel="pearson"))
    assert "1e-09" not in chart and "1.00e-09" not in chart
    assert chart.count(">n/a</text>") == 2
    assert "fill-opacity" not in chart  # no bar drawn for an undefined value
    zeros = str(svg.grouped_bars(["a"], [("m", [0.0])], ylabel="acc"))
    assert "1.00e-09" not in zeros and "e-09" not in zeros


def test_sorted_curves_of_zeros_have_no_1e09_axis():
    chart = str(svg.sorted_curves([("j", np.zeros(5))], ylabel="delta", xlabel="segments"))
    assert "e-09" not in chart


def test_intervals_and_p_values_of_two_segments_read_na():
    scores = np.array([[0.9, 0.8, np.nan, np.nan, np.nan, np.nan, np.nan],
                       [0.1, 0.2, 0.5, 0.4, 0.3, 0.6, 0.2],
                       [0.3, 0.1, 0.2, 0.1, 0.3, 0.2, 0.1]])
    _, _, pairs = comparison_blocks(compare_systems(["A", "B", "C"], scores))
    row = next(r for r in pairs.rows if r[:2] == ["A", "B"])
    assert row[2] == 2 and row[4] == "n/a" and row[5] == "n/a" and row[6] == "n/a"  # was 9.99e-04 and [x, x]
    assert interval(math.nan, 1.0) == "n/a" and interval(0.1, 0.2) == "[0.1, 0.2]"


def test_one_rule_for_undefined():
    from polyjudge.data.numbers import defined, stat_text, undefined_to_none

    for x in (None, math.nan, math.inf, -math.inf, "x", True):
        assert defined(x) is None and number(x) == "n/a" and stat_text(x) == "n/a"
    assert stat_text(np.float64(0.25), ".2f") == "0.25" and number(0.0) == "0"
    assert undefined_to_none({"a": [math.nan, 1.0, np.float64("nan")], "b": (math.inf,)}) == \
        {"a": [None, 1.0, None], "b": [None]}


def test_the_report_of_a_constant_metric_shows_na_and_no_1e09_axis(tmp_path, capsys):
    import pytest

    from polyjudge.cli.main import main

    rows = [(s, i, (7 * i + ord(s)) % 10 / 10) for s in "ABCDE" for i in range(10)]
    (tmp_path / "human.tsv").write_text("system\tseg_id\tscore\n" + "".join(f"{s}\t{i}\t{v}\n" for s, i, v in rows))
    (tmp_path / "const.tsv").write_text("system\tseg_id\tscore\n" + "".join(f"{s}\t{i}\t0.5\n" for s, i, _ in rows))
    for args in (["meta-eval", "--human", str(tmp_path / "human.tsv"), "--metric", str(tmp_path / "const.tsv"),
                  "-k", "0", "--lp", "en-de", "--task", "none", "--format", "json", "-o", str(tmp_path / "m.json")],
                 ["report", "--metaeval", str(tmp_path / "m.json"), "-o", str(tmp_path / "r.html")]):
        with pytest.raises(SystemExit) as exc:
            main(args)
        assert exc.value.code == 0, capsys.readouterr()
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "e-09" not in html and ">n/a</td>" in html and ">n/a</text>" in html
