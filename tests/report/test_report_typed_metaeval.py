"""A meta-evaluation reaches the report as typed rows (issue 36 item 5): meta-eval returns them, its JSON
holds them, one reader reads them back, and the report renders them as they are.

The meta-evaluations are real: the shared WMT21 TED en-de MQM test set (its two stored metrics) and a
two-LP synthetic mt-metrics-eval folder ranked under a preset, computed by the API and by the command line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from polyjudge import api
from polyjudge.api.metaeval import read_results
from polyjudge.api.reporting import ReportConfig, report
from polyjudge.cli.main import cli, main
from polyjudge.metaeval.results import MetaEvalCell, MetaEvalRank, MetaEvalResults, read_metaeval
from polyjudge.report.sections import study_sections
from tests.helpers.mtme_testset import build_ted_testset

LPS = ("en-de", "zh-en")


def _synthetic(root: Path) -> Path:
    """Two LPs, 5 systems x 20 items (a few unrated), a close metric and a loose one."""
    rng = np.random.default_rng(7)
    systems = [f"sys{i}" for i in range(5)]
    for lp in LPS:
        q = rng.normal(size=(5, 1)) + rng.normal(size=(5, 20))
        h = np.round(q, 1)
        h[:, :2] = np.nan
        (root / "human-scores").mkdir(parents=True, exist_ok=True)
        (root / "metric-scores" / lp).mkdir(parents=True)
        close, loose = q + rng.normal(scale=0.4, size=q.shape), q + rng.normal(scale=3, size=q.shape)
        for path, mat in ((root / "human-scores" / f"{lp}.mqm.seg.score", h),
                          (root / "metric-scores" / lp / "Close-src.seg.score", close),
                          (root / "metric-scores" / lp / "Loose-src.seg.score", loose)):
            path.write_text("".join(f"{s}\t{'None' if np.isnan(v) else repr(float(v))}\n"
                                    for s, row in zip(systems, mat) for v in row))
    return root


def _html(path: Path) -> str:
    return re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "TIME", path.read_text(encoding="utf-8"))


def _configs(tmp_path: Path) -> list[api.MetaEvalConfig]:
    ted = build_ted_testset(tmp_path / "ted").root
    synth = _synthetic(tmp_path / "synth")
    return [api.MetaEvalConfig(mtme_dir=ted, lps=("en-de",), task="wmt24", k=30),
            api.MetaEvalConfig(mtme_dir=synth, lps=LPS, task="wmt23", k=20),
            api.MetaEvalConfig(mtme_dir=synth, lps=LPS, task=None, k=0)]


def test_the_report_is_the_same_from_the_result_in_memory_and_from_its_file(tmp_path):
    for n, cfg in enumerate(_configs(tmp_path)):
        result = api.meta_eval(cfg)
        typed = result.results()
        assert isinstance(typed, MetaEvalResults) and typed.per_lp
        assert all(isinstance(r, MetaEvalRank) and all(isinstance(c, MetaEvalCell) for c in r.columns)
                   for r in typed.ranking)
        path = tmp_path / f"me{n}.json"
        path.write_text(result.format("json"), encoding="utf-8")
        # the writer and the reader are one contract: what is read back writes the same bytes
        back = read_results(path)
        assert json.dumps(back.to_json(), indent=2, default=float) + "\n" == path.read_text(encoding="utf-8")
        assert [(c.metric, c.lp, c.level, c.title, c.rank, c.cluster) for c in back.cells()] == \
               [(c.metric, c.lp, c.level, c.title, c.rank, c.cluster) for c in typed.cells()]
        report([], ReportConfig(out=tmp_path / f"mem{n}.html", metaeval=result))
        report([], ReportConfig(out=tmp_path / f"file{n}.html", metaeval=path))
        mem, file = _html(tmp_path / f"mem{n}.html"), _html(tmp_path / f"file{n}.html")
        assert "Meta-evaluation against human judgments" in mem
        assert mem == file, cfg


def test_the_cli_json_reads_back_with_its_ranking_and_clusters(tmp_path):
    root = _synthetic(tmp_path / "synth")
    out = tmp_path / "me.json"
    res = CliRunner().invoke(cli, ["meta-eval", "--mtme", str(root), "--lp", LPS[0], "--lp", LPS[1], "--task",
                                   "wmt24", "-k", "20", "--format", "json", "--out", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    typed = read_metaeval(doc, str(out))
    assert typed.preset == "wmt24" and typed.permutations == 20
    assert [(r.metric, r.rank, r.cluster, r.average) for r in typed.ranking] == \
           [(r["metric"], r["rank"], r["cluster"], r["average"]) for r in doc["ranking"]]
    first = typed.ranking[0].columns[0]
    assert (first.statistic, first.title, first.level) == ("spa", "SPA", "sys")
    per = {(s.lp, s.metric): s for s in typed.per_lp}
    assert per[("zh-en", "Close-src")].get("seg_pearson") == doc["language_pairs"]["zh-en"]["Close-src"]["seg_pearson"]
    sec = study_sections({"metaeval.json": typed})[0]
    assert sec.title == "Meta-evaluation against human judgments"


def test_a_file_without_notes_and_with_system_level_only_metrics_still_reads(tmp_path):
    """The JSON of a meta-eval whose every metric was system-level only (written without ``notes``)."""
    doc = {"task": "wmt24", "permutations": 1000, "seed": 0, "language_pairs": {}, "ranking": [],
           "system_level_only": {"lp": {"bt": {"sys_pairwise_accuracy": 0.8, "sys_pearson": None,
                                               "n_systems": 2}}}}
    text = json.dumps(doc, indent=2) + "\n"
    with pytest.raises(api.InputError, match="no meta-evaluation results"):  # nothing the report shows
        read_metaeval(doc, "old.json")
    doc["language_pairs"] = {"lp": {"m": {"seg_pearson": 0.5, "n_systems": 2}}}
    typed = read_metaeval(doc, "old.json")
    assert typed.notes is None and typed.system_level_only[0].get("sys_pearson") is None
    assert [c.title for c in typed.cells()] == ["pearson"]
    assert json.dumps(typed.to_json(), indent=2) + "\n" == text.replace(
        '"language_pairs": {}', '"language_pairs": {\n    "lp": {\n      "m": {\n        "seg_pearson": 0.5,\n'
                                '        "n_systems": 2\n      }\n    }\n  }')


@pytest.mark.parametrize("column,where", [({"rank": "first"}, "ranking[0].columns[0].rank"),
                                          ({"value": [1]}, "ranking[0].columns[0].value"),
                                          ({"cluster": 1.5}, "ranking[0].columns[0].cluster")])
def test_a_bad_field_is_one_line_naming_the_file_and_the_place(tmp_path, capsys, column, where):
    cell = {"lp": "en-de", "level": "seg", "statistic": "acc_t", "value": 0.5, "rank": 1, "cluster": 1, **column}
    p = tmp_path / "metaeval.json"
    p.write_text(json.dumps({"task": "wmt24", "ranking": [{"metric": "m", "rank": 1, "average": 0.5,
                                                           "columns": [cell]}], "language_pairs": {}}))
    with pytest.raises(SystemExit) as exc:
        main(["report", "--metaeval", str(p), "-o", str(tmp_path / "r.html")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and err.startswith(f"polyjudge: error: {p}: {where}: ")
    assert not (tmp_path / "r.html").exists()


def test_the_consistency_report_is_the_same_from_the_result_in_memory_and_from_study_json(tmp_path, monkeypatch):
    """A consistency study's agreement (κ with the reference, Fleiss κ, factor tables) as typed rows."""
    from polyjudge.api import JudgeConfig
    from polyjudge.metaeval.kappas import ConsistencyKappas, read_consistency
    from polyjudge.studies import ConsistencyConfig, run_consistency
    from tests.cli.test_consistency_cmd import responder, write_mgsm
    from tests.helpers.openai_server import ScriptedServer

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    write_mgsm(tmp_path)
    with ScriptedServer(responder) as srv:
        judges = tuple(f"openai:{m}@{srv.base_url}" for m in ("m1", "m2", "m3"))
        config = ConsistencyConfig(dataset="mgsm", data_dir=tmp_path, languages=("en", "de", "sw", "te"),
                                   judge=JudgeConfig(judges=judges))
        result = run_consistency(config, tmp_path / "study")
    kappas = result.kappas()
    assert isinstance(kappas, ConsistencyKappas) and kappas.reference == "en"
    assert {k.language for k in kappas.cohen} == {"de", "sw", "te"} and kappas.fleiss and kappas.factors
    study = tmp_path / "study" / "study.json"
    back = read_consistency(json.loads(study.read_text(encoding="utf-8")), str(study))
    assert [(k.judge, k.language) for k in back.cohen] == [(k.judge, k.language) for k in kappas.cohen]
    report([], ReportConfig(out=tmp_path / "mem.html", consistency=result))
    report([], ReportConfig(out=tmp_path / "file.html", consistency=tmp_path / "study"))
    mem = _html(tmp_path / "mem.html")
    assert "Multilingual consistency" in mem and "Fleiss κ across languages" in mem
    assert mem == _html(tmp_path / "file.html")
