"""Every aggregator and every single run of a run directory as its own metric
(GEMBA-MQM V2 Tables 2–4), on a scripted 10-run run whose ordering is known by hand.

The run: four systems with human scores A = 0, B = -10, C = -20, D = -30 on
each of 60 segments, judged ten times. Every run copies the human scores,
except that run r (1-based) over-annotates system A on r segments of its own
(A scores -35 there, below D). No segment is over-annotated by two runs, so:

* every aggregator that drops the lone bad run (rrwa, mean-2s, median, max,
  trimmed-mean, geo, geo+1) gives back the human scores exactly; mean-all
  gives A -3.5 there, still above B, so the order within every segment is
  right too: segment acc-t = 1 for all of them;
* run r puts A last on r segments, turning 3 of its 6 system pairs there:
  acc-t = 1 - 3r / (6 * 60) = 1 - r / 120;
* min collects all 1 + 2 + ... + 10 = 55 over-annotations: 1 - 55 / 120.

System level: every run keeps A first on average (-35 r / 60 > -10), so
system SPA stays at (or within 0.01 of) 1 for the runs, far less than the
1/120 between two consecutive runs' acc-t. Hence the ranking: the
aggregators (tied at the top), then run1, run2, ..., run10, then min.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from polyjudge.aggregate.runs import get_aggregator
from polyjudge.api import MetaEvalConfig, meta_eval
from polyjudge.cli.main import main
from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from polyjudge.engine.result import RunResult
from polyjudge.metaeval import readers
from polyjudge.metaeval.variants import RunVariants, expand_metrics, parse_aggregator_list
from polyjudge.protocols import get_protocol
from polyjudge.rundir import OK, Manifest, RunConfig
from tests.helpers.judgments import judgment_at
from tests.metaeval.test_metaeval_io import _write_run

SEGMENTS = 60
RUNS = 10
HUMAN = {"A": 0.0, "B": -10.0, "C": -20.0, "D": -30.0}
STORED = ["rrwa", "mean-2s", "mean-all", "median", "max", "min", "geo", "trimmed-mean"]
ROBUST = [a for a in STORED if a != "min"]


def over_annotated(run: int) -> range:
    """Segments (0-based) where run ``run`` (0-based) over-annotates system A: r + 1 of its own."""
    start = run * (run + 1) // 2
    return range(start, start + run + 1)


def write_scripted_run(out: Path, *, seg_ids: list[str] | None = None, doc_id: str | None = "d") -> Path:
    ids = seg_ids or [str(i + 1) for i in range(SEGMENTS)]
    items = [Item(src_lang="en", tgt_lang="de", src=f"s{i}", tgt=f"t{i}", system=system, doc_id=doc_id, seg_id=ids[i])
             for system in HUMAN for i in range(SEGMENTS)]
    judgments = []
    for k, it in enumerate(items):
        i = ids.index(it.seg_id or "")
        for r in range(RUNS):
            score = HUMAN[it.system or ""] - (35.0 if it.system == "A" and i in over_annotated(r) else 0.0)
            judgments.append(judgment_at(items, k, r, "judge", OK, None, "", {"errors": {}}, score))
    manifest = Manifest(protocol="mqm", config=RunConfig(runs=RUNS, temperature=0.4, aggregator="rrwa"))
    RunResult(items, ["judge"], get_protocol("mqm"), RUNS, "rrwa", judgments, manifest=manifest).write(out)
    return out


@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    root = tmp_path_factory.mktemp("variants")
    run = write_scripted_run(root / "run")
    human = root / "human.tsv"
    human.write_text("system\tdoc_id\tseg_id\tscore\n" + "".join(
        f"{s}\td\t{i + 1}\t{h}\n" for s, h in HUMAN.items() for i in range(SEGMENTS)), encoding="utf-8")
    return run, human


def test_the_schedule_is_as_described():
    seen = [s for r in range(RUNS) for s in over_annotated(r)]
    assert len(seen) == len(set(seen)) == 55 and max(seen) < SEGMENTS  # no segment twice


def test_expansion_names_and_sources(scripted):
    run, _ = scripted
    both = expand_metrics({"judge": run}, "auto", RunVariants(("all",), True))
    # the final score is rrwa, which is listed: it is not repeated as plain "judge"
    assert list(both.sources) == [f"judge@{a}" for a in STORED] + [f"judge@run{r}" for r in range(1, 11)]
    assert set(both.base.values()) == {"judge"}
    assert both.sources["judge@run3"] == readers.ScoreSource(run, "run", judge="judge", run=2)
    runs_only = expand_metrics({"judge": run}, "auto", RunVariants((), True))
    assert list(runs_only.sources)[:2] == ["judge", "judge@run1"] and len(runs_only.sources) == 11
    some = expand_metrics({"judge": run}, "run", RunVariants(("max", "geo+1", "mean"), False))
    assert list(some.sources) == ["judge", "judge@max", "judge@geo+1", "judge@mean"]
    none = expand_metrics({"judge": run}, "auto", RunVariants())
    assert list(none.sources) == ["judge"]


def test_stored_aliased_and_computed_aggregators(scripted):
    run, _ = scripted
    human_like = np.array([[h] * SEGMENTS for h in HUMAN.values()])
    for name in ROBUST + ["geo+1", "mean"]:  # "mean" is mean-2s; geo+1 is computed from the runs
        m = readers.read_scores(run, aggregator=name)
        np.testing.assert_allclose(m.values[1:], human_like[1:], atol=1e-9)
        np.testing.assert_allclose(m.values[0], 0.0 if name != "mean-all" else m.values[0], atol=1e-9)
    np.testing.assert_allclose(readers.read_scores(run, aggregator="mean-all").values[0, :55], -3.5)
    # geo+1 was not stored: computed with the run's own aggregator code, per item
    rows = readers.read_scores(run, aggregator="geo+1").values[0]
    assert rows[0] == get_aggregator("geo+1")([-35.0] + [0.0] * 9) == 0.0
    run3 = readers.read_scores(run, run=2).values[0]
    assert list(np.nonzero(run3)[0]) == [3, 4, 5] and set(run3[[3, 4, 5]]) == {-35.0}
    with pytest.raises(InputError) as err:
        readers.read_scores(run, aggregator="mode")
    assert "stored: " + ", ".join(STORED) in str(err.value) and "available:" in str(err.value)


def test_ranking_table_by_hand(scripted):
    run, human = scripted
    res = meta_eval(MetaEvalConfig(human=human, metrics={"judge": run}, aggregators=("all",), single_runs=True,
                                   k=200, seed=0))
    stats = res.per_lp["en-de"]
    for a in ROBUST:
        assert stats[f"judge@{a}"]["seg_acc_t"] == pytest.approx(1.0)
    for r in range(1, RUNS + 1):
        assert stats[f"judge@run{r}"]["seg_acc_t"] == pytest.approx(1 - r / 120)
        assert stats[f"judge@run{r}"]["sys_spa"] > 0.99
    assert stats["judge@min"]["seg_acc_t"] == pytest.approx(1 - 55 / 120)
    ranking = res.ranking()
    assert set(ranking[:len(ROBUST)]) == {f"judge@{a}" for a in ROBUST}
    assert ranking[len(ROBUST):] == [f"judge@run{r}" for r in range(1, RUNS + 1)] + ["judge@min"]
    # significance clusters: every aggregate in the top cluster, clusters never rise down the table
    clusters = [res.evaluation.average_cluster[m] for m in ranking]
    assert clusters == sorted(clusters)
    assert {res.evaluation.average_cluster[f"judge@{a}"] for a in ROBUST} == {1}
    assert res.evaluation.average_cluster["judge@run10"] > 1
    assert res.evaluation.average_cluster["judge@min"] == max(clusters) > res.evaluation.average_cluster[
        "judge@run10"]
    rows = res.to_dict()["ranking"]
    assert [r["metric"] for r in rows] == ranking and rows[-1]["cluster"] == max(clusters)


def _main(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in argv])
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_cli_table_and_errors(scripted, tmp_path, capsys):
    run, human = scripted
    base = ["meta-eval", "--human", human, "--metric", f"judge={run}", "-k", "0"]
    code, out, err = _main(base + ["--aggregators", "rrwa,geo+1,max", "--single-runs"], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["Metric", "Avg"] and "seg (acc-t)" in lines[1]
    assert lines[2].split()[:2] == ["rank", "value"]  # the value columns are named (a third header row)
    names = [ln.split()[0] for ln in lines[4:4 + 13]]
    assert set(names[:3]) == {"judge@rrwa", "judge@geo+1", "judge@max"}
    assert names[3:] == [f"judge@run{r}" for r in range(1, 11)]
    code, out, err = _main(base + ["--single-runs", "--format", "json"], capsys)
    assert code == 0, err
    ranked = [r["metric"] for r in json.loads(out)["ranking"]]
    assert ranked[0] == "judge" and ranked[1:] == [f"judge@run{r}" for r in range(1, 11)]
    code, out, err = _main(base + ["--aggregators", "mode"], capsys)
    assert code == 2 and out == "" and "unknown aggregator 'mode'" in err and "stored in the run: rrwa" in err
    code, _, err = _main(["meta-eval", "--human", human, "--metric", f"h={human}", "--single-runs", "-k", "0"],
                         capsys)
    assert code == 2 and "no metric is a run directory" in err
    clash = tmp_path / "clash.tsv"
    clash.write_text(human.read_text(), encoding="utf-8")
    code, _, err = _main(base + ["--metric", f"judge@run1={clash}", "--single-runs"], capsys)
    assert code == 2 and "'judge@run1' occurs twice" in err


def test_lower_better_applies_to_every_row(scripted):
    run, human = scripted
    res = meta_eval(MetaEvalConfig(human=human, metrics={"judge": run}, single_runs=True, lower_better=("judge",),
                                   task=None, k=0))
    assert res.per_lp["en-de"]["judge@run1"]["seg_acc_t"] < 0.5 and res.per_lp["en-de"]["judge"]["seg_acc_t"] < 0.5


def test_panel_rows_per_judge(tmp_path):
    run = _write_run(tmp_path / "run", judges=("j1", "j2"))
    got = expand_metrics({"p": run}, "auto", RunVariants(("median",), True))
    assert list(got.sources) == ["p", "p:j1@median", "p:j1@run1", "p:j1@run2", "p:j1@run3",
                                 "p:j2@median", "p:j2@run1", "p:j2@run2", "p:j2@run3"]
    np.testing.assert_allclose(got.sources["p:j2@run2"].table().matrix().values, [[2, 5], [8, 11]])


def test_parse_aggregator_list():
    assert parse_aggregator_list("all") == ("all",)
    assert parse_aggregator_list(" rrwa, mean-2s ,rrwa") == ("rrwa", "mean-2s")
    assert parse_aggregator_list(("rrwa,geo", "max")) == ("rrwa", "geo", "max")
    assert parse_aggregator_list(None) == () and parse_aggregator_list(()) == ()
    with pytest.raises(InputError, match="no aggregator"):
        parse_aggregator_list(",")


def test_mtme_directory_with_an_expanded_run(tmp_path):
    """Run rows next to the directory's own metrics (here a chrF-like file), items by position."""
    root = tmp_path / "mtme"
    (root / "human-scores").mkdir(parents=True)
    (root / "metric-scores" / "en-de").mkdir(parents=True)
    (root / "human-scores" / "en-de.mqm.seg.score").write_text(
        "".join(f"{s}\t{h}\n" for s, h in HUMAN.items() for _ in range(SEGMENTS)))
    rng = np.random.default_rng(0)
    (root / "metric-scores" / "en-de" / "chrF-refA.seg.score").write_text(
        "".join(f"{s}\t{h + rng.normal(scale=8)}\n" for s, h in HUMAN.items() for _ in range(SEGMENTS)))
    run = write_scripted_run(tmp_path / "run", seg_ids=[str(i) for i in range(SEGMENTS)], doc_id=None)
    res = meta_eval(MetaEvalConfig(mtme_dir=root, lps=("en-de",), metrics={"judge": run}, aggregators=("rrwa",),
                                   single_runs=True, k=0))
    stats = res.per_lp["en-de"]
    assert set(stats) == {"chrF-refA", "judge@rrwa"} | {f"judge@run{r}" for r in range(1, 11)}
    assert stats["judge@rrwa"]["seg_acc_t"] == pytest.approx(1.0)
    assert stats["judge@run4"]["seg_acc_t"] == pytest.approx(1 - 4 / 120)
    assert res.ranking()[0] == "judge@rrwa"
