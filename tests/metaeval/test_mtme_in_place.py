"""meta-eval RUN --mtme ROOT/TESTSET --lp LP: a judge run laid onto a test set in mt-metrics-eval's layout,
compared with its standard gold, ranked with the stored metrics (--with-stored-metrics); numbers checked
against scipy and against the same run exported into metric-scores/ and read as a stored metric."""

from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path

import numpy as np
import pytest
import scipy.stats
from click.testing import CliRunner

from polyjudge.api import MetaEvalConfig, meta_eval
from polyjudge.api.exporting import ExportConfig, export
from polyjudge.cli.main import cli, main
from polyjudge.metaeval.mtme import human_systems, outlier_systems, standard_gold
from polyjudge.metaeval.readers import read_mtme_score_file
from tests.helpers.mtme_testset import LP, NAME, TedTestSet, build_ted_testset, judge_items
from tests.helpers.openai_server import ScriptedServer


def _score(body: dict) -> str:
    return json.dumps({"score": zlib.crc32(body["messages"][-1]["content"].encode()) % 101})


def _judge(items: Path, out: Path) -> Path:
    with ScriptedServer(_score) as srv:
        res = CliRunner().invoke(cli, ["judge", str(items), "--out", str(out), "-p", "da", "--backend", "openai",
                                       "--model", "m", "--base-url", srv.base_url, "-q", "-c", "2"])
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture(scope="module")
def ted(tmp_path_factory) -> tuple[TedTestSet, Path]:
    tmp = tmp_path_factory.mktemp("inplace")
    ts = build_ted_testset(tmp / "mtme")
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "test-key")
    try:
        return ts, _judge(judge_items(ts, tmp / "items.jsonl"), tmp / "run")
    finally:
        mp.undo()


def _per_lp(ts: TedTestSet, **kw) -> dict:
    return meta_eval(MetaEvalConfig(mtme_dir=ts.root, lps=(LP,), k=20, **kw)).per_lp[LP]


def test_standard_gold_and_the_systems_left_out_come_from_the_test_sets_meta_information(ted):
    ts, _ = ted
    assert standard_gold(NAME, LP, "seg") == "mqm" and standard_gold("wmt23", "en-de", "sys") == "mqm"
    assert standard_gold("wmt23", "en-cs", "seg") == "da-sqm" and standard_gold("wmt23", "en-ru", "seg") is None
    assert outlier_systems("wmt23", "en-de") == {"synthetic_ref"} and human_systems(ts.root, LP) == {"refA"}


def test_a_run_in_place_against_scipy(ted):
    ts, run = ted
    rows = _per_lp(ts, runs=(run,))
    assert list(rows) == ["polyjudge-da-src"]  # without --with-stored-metrics: the run alone
    stats = rows["polyjudge-da-src"]
    systems = [s for s in ts.systems if s != "refA"]  # the human translation is left out, as mt-metrics-eval does
    seg = read_mtme_score_file(run / "mtme" / "polyjudge-da-src.seg.score")
    human = np.array([[np.nan if v is None else v for v in ts.mqm[s]] for s in systems])
    judge = np.array([seg[s] for s in systems])
    keep = ~np.isnan(human)
    assert stats["n_systems"] == 5 and stats["n_items"] == len(ts.sources)
    assert stats["seg_pearson"] == pytest.approx(scipy.stats.pearsonr(human[keep], judge[keep])[0], abs=1e-9)
    hsys = {s: v[0] for s, v in read_mtme_score_file(ts.root / "human-scores" / f"{LP}.mqm.sys.score").items()}
    expected = scipy.stats.pearsonr([hsys[s] for s in systems], judge.mean(axis=1))[0]
    assert stats["sys_pearson"] == pytest.approx(expected, abs=1e-9)


def test_with_stored_metrics_ranks_the_run_among_them_with_the_numbers_of_an_exported_copy(ted, tmp_path):
    ts, run = ted
    in_place = _per_lp(ts, runs=(run,), with_stored_metrics=True)
    assert set(in_place) == {"polyjudge-da-src", "lenratio-refA", "lensrc-src"}
    copy = tmp_path / NAME
    shutil.copytree(ts.root, copy)
    for p in export(ExportConfig(run, "mtme", tmp_path / "out")).files:
        shutil.copy(p, copy / "metric-scores" / LP / p.name)
    stored = meta_eval(MetaEvalConfig(mtme_dir=copy, lps=(LP,), k=20)).per_lp[LP]  # the old form: stored only
    assert set(stored) == set(in_place)
    for name, values in in_place.items():
        assert stored[name] == pytest.approx(values, abs=1e-6), name


def test_the_ranking_table_has_significance_clusters(ted):
    ts, run = ted
    res = meta_eval(MetaEvalConfig(mtme_dir=ts.root, lps=(LP,), runs=(run,), with_stored_metrics=True, k=50))
    ranking = res.to_dict()["ranking"]
    assert {r["metric"] for r in ranking} == {"polyjudge-da-src", "lenratio-refA", "lensrc-src"}
    assert all(r["cluster"] >= 1 for r in ranking) and ranking[0]["cluster"] == 1


def test_cli_human_name_and_bad_input_exit_2(ted, capsys):
    ts, run = ted
    res = CliRunner().invoke(cli, ["meta-eval", str(run), "--mtme", str(ts.root), "--lp", LP, "--human-name", "mqm",
                                   "-k", "0", "--format", "json"])
    assert res.exit_code == 0, res.output
    assert "polyjudge-da-src" in json.loads(res.output)["language_pairs"][LP]
    for argv, message in ((["--human-name", "esa"], "no human scores 'esa'"),
                          ([], "RUN arguments are laid onto a test set")):
        args = ["meta-eval", str(run), *(["--mtme", str(ts.root), "--lp", LP] if argv else []), *argv]
        with pytest.raises(SystemExit) as exc:
            main(args)
        err = capsys.readouterr().err
        assert exc.value.code == 2 and message in err and "Traceback" not in err
