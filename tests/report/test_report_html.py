"""Report generation per section on fixture runs, escaping, plots and the CLI."""

from __future__ import annotations

import base64
import hashlib
import html as html_lib
import json
import re
import xml.etree.ElementTree as ET
from collections import defaultdict

import numpy as np
import pytest
from click.testing import CliRunner

from polyjudge.cli.main import cli, main
from polyjudge.report.html import json_for_script, render, write_report
from polyjudge.report.load import load_run
from polyjudge.report.sections import Cell, Figure, Table
from tests.report.fixtures import CONSISTENCY, INJECT_TGT, METAEVAL, VALIDATION, build_run

ALL_EXTRAS = {"metaeval.json": METAEVAL, "consistency.json": CONSISTENCY, "validation.json": VALIDATION}


def _titles(rep):
    return [s.title for s in rep.sections]


def _table(section, caption_start=""):
    return next(b for b in section.blocks if isinstance(b, Table) and b.caption.startswith(caption_start))


def _text(c):
    return c.text if isinstance(c, Cell) else str(c)


def test_all_sections_present_with_full_data(tmp_path):
    d = build_run(tmp_path, extras=ALL_EXTRAS)
    rep = render([load_run(d)], n_boot=200)
    assert _titles(rep) == ["Summary", "Score distributions", "System ranking", "Which systems differ",
                            "Variability across runs", "Error spans", "Meta-evaluation against human judgments",
                            "Multilingual consistency", "Judge validation"]
    assert rep.html.count("<svg") == len(rep.figures) >= 8


def test_sections_absent_without_data(tmp_path):
    d = build_run(tmp_path, n_runs=1, spans=False, failures=False)
    rep = render([load_run(d)], n_boot=200)
    assert _titles(rep) == ["Summary", "Score distributions", "System ranking", "Which systems differ"]
    assert "Failures" not in rep.html
    assert 'class="spanbrowser"' not in rep.html


def test_summary_counts_failures_and_tokens(tmp_path):
    d = build_run(tmp_path, n_items=20, n_runs=3, judges=("gpt-4.1-mini", "local"))
    recs = [json.loads(x) for x in (d / "judgments.jsonl").read_text().splitlines()]
    rep = render([load_run(d)], n_boot=200)
    summary = rep.sections[0]
    kv = dict(summary.blocks[0].items)
    n_fail = sum(r["status"] != "ok" for r in recs)
    assert kv["judgments"] == f"{len(recs)} ({len(recs) - n_fail} ok, {n_fail} failed)"
    pt = sum(r["usage"]["prompt_tokens"] for r in recs)
    ct = sum(r["usage"]["completion_tokens"] for r in recs)
    assert kv["tokens"] == f"{pt} prompt + {ct} completion"
    # Cost as the manifest records it: only the priced model costs anything (0.40/1.60 per Mtok).
    mini = [r for r in recs if r["judge"] == "gpt-4.1-mini"]
    cost = (sum(r["usage"]["prompt_tokens"] for r in mini) * 0.40
            + sum(r["usage"]["completion_tokens"] for r in mini) * 1.60) / 1e6
    assert kv["cost"].startswith(f"${cost:.4f}")
    failures = _table(summary, "Failures")
    by_reason = {(_text(r[0]), r[1]): r[2] for r in failures.rows}
    expected = defaultdict(int)
    for r in recs:
        if r["status"] != "ok":
            expected[(r["status"], r["error"])] += 1
    assert by_reason == dict(expected)


def test_manifest_cost_and_wall_time_used(tmp_path):
    d = build_run(tmp_path, manifest={"cost_usd": 1.25, "wall_time_s": 3600.0})
    kv = dict(render([load_run(d)], n_boot=200).sections[0].blocks[0].items)
    assert kv["cost"] == "$1.2500" and kv["wall time"] == "3600.0 s"


def test_variability_numbers_match_an_independent_count(tmp_path):
    d = build_run(tmp_path, n_items=30, n_runs=5)
    recs = [json.loads(x) for x in (d / "judgments.jsonl").read_text().splitlines()]
    per_item = defaultdict(list)
    for r in recs:
        if r["status"] == "ok":
            per_item[r["item_index"]].append(r["score"])
    deltas = [max(v) - min(v) for v in per_item.values() if len(v) >= 2]
    rep = render([load_run(d)], n_boot=200)
    var = next(s for s in rep.sections if s.title == "Variability across runs")
    row = _table(var).rows[0]
    assert row[1] == len(deltas)
    assert float(row[2]) == pytest.approx(np.mean(deltas), rel=1e-2)
    assert float(row[4]) == pytest.approx(max(deltas))
    ties = _table(var, "Ties").rows[0]
    firsts = [per_item[i][0] for i in sorted(per_item)]
    assert ties[1] == len(set(firsts))
    agg = _table(var, "Aggregators").rows
    assert {r[1] for r in agg} >= {"mean", "median", "first"}


def test_ranking_matches_segments_tsv(tmp_path):
    d = build_run(tmp_path, n_items=30, n_runs=2)
    rows = [line.split("\t") for line in (d / "segments.tsv").read_text().splitlines()[1:]]
    means = defaultdict(list)
    for r in rows:
        if r[3]:
            means[r[0]].append(float(r[3]))
    expected = sorted(means, key=lambda s: -np.mean(means[s]))
    rep = render([load_run(d)], n_boot=200)
    rank = _table(next(s for s in rep.sections if s.title == "System ranking"))
    assert [r[1] for r in rank.rows] == expected
    for r in rank.rows:
        lo, hi = (float(x) for x in r[3].strip("[]").split(", "))
        assert lo <= float(r[2]) <= hi


def test_user_text_is_escaped_everywhere(tmp_path):
    d = build_run(tmp_path, inject=True, extras=ALL_EXTRAS)
    html = render([load_run(d)], n_boot=200).html
    assert "<script>window.__pwned" not in html
    assert "<img src=x" not in html
    assert "<b>sys</b>" not in html and "&lt;b&gt;sys&lt;/b&gt;&amp;amp;" in html
    assert "fluency/<i>markup</i>" not in html
    # Exactly one executable script (ours) and the JSON data blocks.
    assert len(re.findall(r"<script>", html)) == 1
    blobs = re.findall(r'<script type="application/json" id="([^"]+)">(.*?)</script>', html, re.S)
    assert len(blobs) == 1
    data = json.loads(blobs[0][1])
    assert data["segs"][0][4] == INJECT_TGT
    assert "</" not in blobs[0][1] and "<!--" not in blobs[0][1]


def test_json_for_script_round_trip():
    obj = {"a": "</script><!-- & \u2028 <b>", "n": [1, 2.5, None]}
    s = str(json_for_script(obj))
    assert "<" not in s and ">" not in s and "&" not in s and "\u2028" not in s
    assert json.loads(s) == obj


def test_csp_pins_the_page_script(tmp_path):
    html = render([load_run(build_run(tmp_path))], n_boot=200).html
    script = re.search(r"<script>(.*?)</script>", html, re.S).group(1)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    csp = html_lib.unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html).group(1))
    assert f"script-src 'sha256-{digest}'" in csp
    assert "default-src 'none'" in csp
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in html


def test_study_outputs(tmp_path):
    d = build_run(tmp_path, extras=ALL_EXTRAS)
    rep = render([load_run(d)], n_boot=200)
    meta = next(s for s in rep.sections if s.title.startswith("Meta-evaluation"))
    seg = _table(meta, "seg pearson")
    assert seg.columns == ["metric", "en-de", "zh-en"]
    cells = {r[0]: r[1:] for r in seg.rows}
    assert cells["judge-a"][0].cls == "best" and cells["judge-b"][1].cls == "best"
    assert cells["judge-a"][0].text == "0.41 [0.36, 0.46]"
    cons = next(s for s in rep.sections if s.title == "Multilingual consistency")
    assert any(isinstance(b, Figure) and "<polygon" in b.svg for b in cons.blocks)
    val = next(s for s in rep.sections if s.title == "Judge validation")
    sel = _table(val, "Judge selection")
    loss = {r[0]: r[3] for r in sel.rows}
    assert loss["hit rate (h/h)"].text == "0" and loss["hit rate (h/h)"].cls == ""
    assert loss["MSE (srs/srs)"].text == "0.23" and loss["MSE (srs/srs)"].cls == "loss"
    assert 'class="loss"' in rep.html
    fig = next(b for b in val.blocks if isinstance(b, Figure))
    # human "full" case: class 2 is 70% of 100 items
    assert "2 human · full (50% of items): 70" in fig.svg


def test_plots_dir_writes_valid_svg(tmp_path):
    d1 = build_run(tmp_path, name="r1", extras=ALL_EXTRAS)
    d2 = build_run(tmp_path, name="r2", n_runs=1, spans=False, seed=4)
    out = tmp_path / "out" / "report.html"
    rep = write_report([d1, d2], out, plots_dir=tmp_path / "plots", n_boot=200)
    files = sorted((tmp_path / "plots").glob("*.svg"))
    assert len(files) == len(rep.figures) and files
    assert any(f.name.startswith("r2-") for f in files)
    for f in files:
        root = ET.parse(f).getroot()
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert rep.sections[0].title == "Runs in this report"


def test_cli_report(tmp_path):
    d = build_run(tmp_path, extras=ALL_EXTRAS)
    out = tmp_path / "r.html"
    res = CliRunner().invoke(cli, ["report", str(d), "-o", str(out), "--plots-dir", str(tmp_path / "p"),
                                   "--bootstrap", "200"])
    assert res.exit_code == 0, res.output
    assert "wrote" in res.output and out.exists()
    assert list((tmp_path / "p").glob("*.svg"))


def test_cli_bad_input_exits_2(tmp_path, capsys):
    d = build_run(tmp_path)
    (d / "judgments.jsonl").write_text("{oops\n")
    with pytest.raises(SystemExit) as e:
        main(["report", str(d), "-o", str(tmp_path / "x.html")])
    assert e.value.code == 2
    assert "judgments.jsonl:1" in capsys.readouterr().err
