"""The report reads what the study commands really write.

Each JSON here is produced by running the real command (meta-eval, validate,
consistency against the scripted local server) on small inputs; the report is
then built from those files (given with --metaeval/--consistency/--validation,
or placed in a run directory) and its tables are checked against numbers
computed independently (scipy, hand-computed kappas, the JSON's own per-judge
values).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats as sps

from polyjudge.cli.main import cli, main
from polyjudge.metaeval.kappas import is_study, read_consistency
from polyjudge.metaeval.results import read_metaeval
from polyjudge.report.format import number as fmt
from polyjudge.report.html import render
from polyjudge.report.load import load_run
from polyjudge.report.sections import Cell, Figure, KeyValues, Table, study_sections
from polyjudge.validation.selection import read_selection, read_validation, selection_json
from tests.report.fixtures import CONSISTENCY, METAEVAL, VALIDATION, build_run

LPS = ("en-de", "zh-en")


def _text(c):
    return c.text if isinstance(c, Cell) else str(c)


def _table(section, caption_start):
    return next(b for b in section.blocks if isinstance(b, Table) and b.caption.startswith(caption_start))


def _section(sections, title):
    return next(s for s in sections if s.title == title)


def _invoke(args):
    res = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res


# --------------------------------------------------------------------------- meta-eval

def _write_mtme(root: Path):
    """Two LPs, 5 systems x 20 items; 'Good' tracks the humans closely, 'Bad' loosely."""
    rng = np.random.default_rng(3)
    systems = [f"sys{i}" for i in range(5)]
    truth = {}
    for lp in LPS:
        q = rng.normal(size=(5, 1)) + rng.normal(size=(5, 20))
        h = np.round(q, 1)
        h[:, :2] = np.nan
        good = q + rng.normal(scale=0.4, size=q.shape)
        bad = q + rng.normal(scale=3.0, size=q.shape)
        (root / "human-scores").mkdir(parents=True, exist_ok=True)
        (root / "metric-scores" / lp).mkdir(parents=True)
        for path, mat in ((root / "human-scores" / f"{lp}.mqm.seg.score", h),
                          (root / "metric-scores" / lp / "Good-src.seg.score", good),
                          (root / "metric-scores" / lp / "Bad-src.seg.score", bad)):
            path.write_text("".join(f"{s}\t{'None' if np.isnan(v) else repr(float(v))}\n"
                                    for s, row in zip(systems, mat) for v in row))
        truth[lp] = (h, good, bad)
    return truth


@pytest.fixture(scope="module")
def metaeval_json(tmp_path_factory):
    root = tmp_path_factory.mktemp("mtme")
    truth = _write_mtme(root)
    out = root / "metaeval.json"
    _invoke(["meta-eval", "--mtme", str(root), "--lp", LPS[0], "--lp", LPS[1], "--task", "wmt23",
             "-k", "20", "--format", "json", "--out", str(out)])
    return out, truth


def test_metaeval_real_output(metaeval_json):
    path, truth = metaeval_json
    obj = json.loads(path.read_text())
    res = read_metaeval(obj, str(path))
    assert "results" not in obj and not res.given and res.task_cells()  # read as meta-eval wrote it
    sec = _section(study_sections({"metaeval.json": res}), "Meta-evaluation against human judgments")
    seg = _table(sec, "seg pearson")
    assert seg.columns == ["metric", *LPS]
    cells = {r[0]: r[1:] for r in seg.rows}
    for j, lp in enumerate(LPS):
        h, good, bad = truth[lp]
        m = ~np.isnan(h)
        for name, mat in (("Good-src", good), ("Bad-src", bad)):
            r = sps.pearsonr(h[m], mat[m]).statistic  # no grouping: all scored cells pooled
            assert cells[name][j].text == fmt(r)
        assert cells["Good-src"][j].cls == "best" and cells["Bad-src"][j].cls == ""
        assert "rank 1" in cells["Good-src"][j].title
    # system-level Pearson: humans' mean over their rated items, the metric's over all its items
    sysp = {r[0]: r[1:] for r in _table(sec, "sys pearson").rows}
    h, good, _ = truth[LPS[1]]
    hm = np.nanmean(h, axis=1)
    gm = good.mean(axis=1)
    assert sysp["Good-src"][1].text == fmt(sps.pearsonr(hm, gm).statistic)
    # wmt23 pools pairwise accuracy over both LPs in one "all" column; acc-t per LP
    assert _table(sec, "sys pairwise accuracy").columns == ["metric", "all"]
    acct = {r[0]: r[1:] for r in _table(sec, "seg acc-t").rows}
    col = {c["lp"] + c["level"] + c["statistic"]: c["value"]
           for c in next(r for r in obj["ranking"] if r["metric"] == "Bad-src")["columns"]}
    assert acct["Bad-src"][0].text == fmt(col["en-deseg" + "acc_t"])
    ranking = _table(sec, "Ranking (wmt23 preset)")
    assert [r[0] for r in ranking.rows] == ["Good-src", "Bad-src"]
    assert ranking.rows[0][2] == fmt(obj["ranking"][0]["average"])
    figs = [b for b in sec.blocks if isinstance(b, Figure)]
    assert len(figs) == 4 and all("<rect" in f.svg for f in figs)  # one bar chart per statistic
    assert any(lp in figs[1].svg for lp in LPS)


def test_metaeval_without_preset_uses_standard_statistics(tmp_path):
    h = tmp_path / "h.tsv"
    m = tmp_path / "m.tsv"
    rows_h, rows_m = ["system\tseg_id\tscore"], ["system\tseg_id\tscore"]
    rng = np.random.default_rng(1)
    hv = rng.normal(size=(4, 8))
    mv = hv + rng.normal(scale=0.5, size=hv.shape)
    for s in range(4):
        for i in range(8):
            rows_h.append(f"S{s}\t{i}\t{float(hv[s, i])!r}")
            rows_m.append(f"S{s}\t{i}\t{float(mv[s, i])!r}")
    h.write_text("\n".join(rows_h) + "\n")
    m.write_text("\n".join(rows_m) + "\n")
    out = tmp_path / "me.json"
    _invoke(["meta-eval", "--human", str(h), "--metric", f"chrF={m}", "--lp", "xx-yy", "--task", "none",
             "-k", "0", "--format", "json", "--out", str(out)])
    sec = _section(study_sections({"metaeval.json": read_metaeval(json.loads(out.read_text()), str(out))}),
                   "Meta-evaluation against human judgments")
    seg = _table(sec, "seg pearson")
    assert seg.columns == ["metric", "xx-yy"]
    assert seg.rows[0][1].text == fmt(sps.pearsonr(hv.ravel(), mv.ravel()).statistic)
    assert not any(b.caption.startswith("Ranking") for b in sec.blocks if isinstance(b, Table))


# --------------------------------------------------------------------------- validation

TASK = {"name": "tox", "options": ["Very toxic", "Toxic", "Not toxic"],
        "response_sets": [["Very toxic"], ["Toxic"], ["Not toxic"], ["Very toxic", "Toxic"],
                          ["Toxic", "Not toxic"], ["Very toxic", "Not toxic"],
                          ["Very toxic", "Toxic", "Not toxic"]]}
SETS = ["A", "B", "C", "AB", "BC", "AC", "ABC"]


@pytest.fixture(scope="module")
def validation_json(tmp_path_factory):
    d = tmp_path_factory.mktemp("val")
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
    out = d / "validation.json"
    _invoke(["validate", "--task", str(d / "task.json"), "--human", str(d / "human.jsonl"),
             "--judge", f"good={d / 'good.jsonl'}", "--judge", f"bad={d / 'bad.jsonl'}",
             "--beta", "0,0.3", "--tau", "0.5", "--format", "json", "--out", str(out)])
    return out


def test_validation_real_output(validation_json):
    obj = json.loads(validation_json.read_text())
    res = read_validation(obj, str(validation_json))
    assert "selection" not in obj and res.selection  # read as validate wrote it
    assert selection_json(read_selection(obj, str(validation_json))) == validation_json.read_text()
    sec = _section(study_sections({"validation.json": res}), "Judge validation")
    kv = dict(next(b for b in sec.blocks if isinstance(b, KeyValues)).items)
    assert kv["items rated by humans and every judge"] == "30" and kv["judges"] == "good, bad"
    tables = [b for b in sec.blocks if isinstance(b, Table)]
    assert len(tables) == 2 * 2  # 2 betas x 1 tau x (consistency, |bias|)
    n_losses = 0
    for beta in ("0", "0.3"):
        per = obj["per_judge"][f"beta={beta},tau=0.5"]
        best_c = max(per[j]["consistency"] for j in ("good", "bad"))
        best_b = min(abs(per[j]["bias"]) for j in ("good", "bad"))
        tc = _table(sec, f"Judge selection (β = {beta}, τ = 0.5): which judge each agreement metric "
                         "picks and what it costs in decision consistency")
        tb = _table(sec, f"Judge selection (β = {beta}, τ = 0.5): which judge each agreement metric "
                         "picks and what it costs in |estimation bias|")
        assert tc.columns[:4] == ["selection metric", "selected judge", "decision consistency",
                                  "loss in decision consistency"]
        assert tc.columns[4:] == ["metric value: good", "metric value: bad"]
        defs = [r for r in obj["rows"] if r["beta"] == float(beta) and not r["definition"].startswith("[")]
        assert [r[0] for r in tc.rows] == [r["definition"] for r in defs]
        for row, rb in zip(tc.rows, tb.rows):
            sel = row[1]
            assert sel in ("good", "bad")
            assert row[2] == fmt(per[sel]["consistency"])
            assert row[3].text == fmt(best_c - per[sel]["consistency"])
            assert (row[3].cls == "loss") == (best_c - per[sel]["consistency"] > 1e-12)
            n_losses += row[3].cls == "loss"
            assert row[4] == fmt(per["good"][row[0]]) and row[5] == fmt(per["bad"][row[0]])
            assert rb[2] == fmt(abs(per[sel]["bias"]))
            assert rb[3].text == fmt(abs(per[sel]["bias"]) - best_b)
        hit = next(r for r in tc.rows if r[0] == "hit_rate (h/h)")
        assert hit[1] == "good"  # the judge that always says "Not toxic" is never picked by hit rate
    assert n_losses > 0  # some definitions pick the worse judge for consistency


# --------------------------------------------------------------------------- consistency

CLANGS = {"en": "English", "de": "German", "sw": "Swahili", "te": "Telugu"}
N = 4


def _responder(body):
    system = body["messages"][0]["content"]
    user = body["messages"][-1]["content"]
    lang = next(code for code, name in CLANGS.items() if f"written in {name}" in system)
    i = int(re.search(r"Problem (\d+) in", user).group(1))
    truth = int(re.search(r"Proposed answer: (\d+)", user).group(1)) == 10 * (i + 1)
    said = {("m1", "te"): True, ("m3", "de"): not truth}.get((body["model"], lang), truth)
    return f"<justification>checked</justification><verdict>{'correct' if said else 'incorrect'}</verdict>"


@pytest.fixture(scope="module")
def consistency_dir(tmp_path_factory):
    from tests.helpers.openai_server import ScriptedServer

    d = tmp_path_factory.mktemp("cons")
    for code in CLANGS:
        (d / f"mgsm_{code}.tsv").write_text("".join(f"Problem {i} in {code}?\t{10 * (i + 1)}\n"
                                                    for i in range(N)), encoding="utf-8")
    out = d / "study"
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "test-key")
    try:
        with ScriptedServer(_responder) as srv:
            args = ["consistency", "--dataset", "mgsm", "--data-dir", str(d), "--languages", "en,de,sw,te",
                    "--out", str(out), "-q", "-c", "4"]
            for m in ("m1", "m3"):
                args += ["--judge", f"openai:{m}@{srv.base_url}"]
            _invoke(args)
    finally:
        mp.undo()
    return out


def test_consistency_real_output(consistency_dir):
    obj = json.loads((consistency_dir / "study.json").read_text())
    assert is_study(obj)
    sec = _section(study_sections({"consistency.json": read_consistency(obj, "study.json")}),
                   "Multilingual consistency")
    radar = next(b for b in sec.blocks if isinstance(b, Figure))
    assert radar.svg.count("<polygon") >= 3  # m1, m3 and the panel ("ensemble")
    kappa = _table(sec, "κ with en: math · binary")
    assert kappa.columns == ["judge", "de", "sw", "te"]
    rows = {r[0]: r[1:] for r in kappa.rows}
    # m1 accepts everything in Telugu (kappa 0 against English), m3 is inverted in German (-1)
    assert rows["m1"] == ["1", "1", "0"] and rows["m3"] == ["-1", "1", "1"]
    fl = next(b for b in sec.blocks if isinstance(b, Table) and "Fleiss κ across languages" in b.columns)
    assert fl.columns == ["judge", "task", "criterion", "subset", "Fleiss κ across languages"]
    fk = {(r[0], r[3]): r[4] for r in fl.rows}
    assert fk[("m1", "all")] == fmt(7 / 15)  # hand-computed: 3 of 4 languages right, Telugu says yes
    assert fk[("m3", "all")] == fmt(0.0)  # one of four languages inverted: P_bar = P_e = 1/2
    assert ("m1", "gold") in fk and ("m1", "wrong") in fk
    # Fu & Liu's factor tables: each language's kappa next to its factors, as the study computed them
    factors = _table(sec, "κ with the reference per language, with its resource class, script and family")
    study_rows = obj["factors"]["languages"]
    assert len(factors.rows) == len(study_rows) > 0
    assert factors.columns == list(study_rows[0])
    lang_col = factors.columns.index("language")
    assert {r[lang_col] for r in factors.rows} == {r["language"] for r in study_rows}


# --------------------------------------------------------------------------- the CLI

def test_cli_report_from_study_files_only(tmp_path, metaeval_json, validation_json, consistency_dir):
    out = tmp_path / "r.html"
    res = _invoke(["report", "--metaeval", str(metaeval_json[0]), "--consistency", str(consistency_dir),
                   "--validation", str(validation_json), "-o", str(out), "--plots-dir", str(tmp_path / "p")])
    assert "3 sections" in res.output
    html = out.read_text()
    for title in ("Meta-evaluation against human judgments", "Multilingual consistency", "Judge validation"):
        assert f"<h2>{title}</h2>" in html
    assert "<polygon" in html and 'class="loss"' in html and 'class="best"' in html
    assert "polyjudge report: study outputs" in html
    # study.json given as a file works the same as its folder
    out2 = tmp_path / "r2.html"
    _invoke(["report", "--consistency", str(consistency_dir / "study.json"), "-o", str(out2)])
    assert "<h2>Multilingual consistency</h2>" in out2.read_text()


def test_cli_report_real_files_in_run_dir_and_options(tmp_path, metaeval_json, validation_json,
                                                      consistency_dir):
    d = build_run(tmp_path, n_runs=1, spans=False, extras={
        "metaeval.json": json.loads(metaeval_json[0].read_text()),
        "consistency.json": json.loads((consistency_dir / "study.json").read_text())})
    rep = render([load_run(d)], n_boot=200)
    titles = [s.title for s in rep.sections]
    assert "Meta-evaluation against human judgments" in titles and "Multilingual consistency" in titles
    out = tmp_path / "r.html"
    res = _invoke(["report", str(d), "--validation", str(validation_json), "-o", str(out), "--bootstrap", "100"])
    # summary, distributions, ranking, which systems differ, meta-eval, consistency, validation
    assert "7 sections" in res.output
    assert out.read_text().count("<h2>Judge validation</h2>") == 1


def test_documented_shapes_still_read():
    secs = study_sections({"metaeval.json": read_metaeval(METAEVAL, "m"),
                           "consistency.json": read_consistency(CONSISTENCY, "c"),
                           "validation.json": read_validation(VALIDATION, "v")})
    assert [s.title for s in secs] == ["Meta-evaluation against human judgments", "Multilingual consistency",
                                       "Judge validation"]
    cells = read_metaeval(METAEVAL, "m").cells()  # the documented shape's results, as given
    assert [(c.metric, c.lp, c.level, c.statistic, c.value) for c in cells] == [
        (r["metric"], r["lp"], r["level"], r["statistic"], r["value"]) for r in METAEVAL["results"]]
    kappas = read_consistency(CONSISTENCY, "c")  # the documented shape's rows, as given
    assert [(k.judge, k.language, k.kappa, k.task, k.criterion) for k in kappas.cohen] == [
        (r["judge"], r["language"], r["kappa"], r["task"], r["criterion"]) for r in CONSISTENCY["results"]]
    assert [(f.judge, f.kappa, f.subset) for f in kappas.fleiss] == [("gpt-4o", 0.31, "all")]
    sel = read_validation(VALIDATION, "v").selection  # the documented shape's table, as given
    assert [(p.metric, p.selected, dict(p.metric_values)) for t in sel for p in t.picks] == [
        (r["metric"], r["selected"], r.get("metric_values", {})) for r in VALIDATION["selection"]["rows"]]


def test_cli_report_needs_some_input(tmp_path):
    with pytest.raises(SystemExit) as e:
        main(["report", "-o", str(tmp_path / "x.html")])
    assert e.value.code == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SystemExit) as e:
        main(["report", "--metaeval", str(bad), "-o", str(tmp_path / "x.html")])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        main(["report", "--consistency", str(tmp_path), "-o", str(tmp_path / "x.html")])
    assert e.value.code == 2
