"""Readers, the meta-eval CLI, and a realistic check on WMT21 TED MQM."""

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from polyjudge.cli.metaeval_cmd import meta_eval
from polyjudge.data.errors import InputError
from polyjudge.metaeval import readers, stats
from polyjudge.metaeval.matrices import ScoreMatrix, align

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


def _write_mtme(root: Path, lp="en-de", S=6, T=30, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(S, 1)) + rng.normal(size=(S, T))
    h = np.round(q, 1)
    h[:, :3] = np.nan  # unrated items
    (root / "human-scores").mkdir(parents=True)
    (root / "metric-scores" / lp).mkdir(parents=True)
    systems = [f"sys{i}" for i in range(S - 1)] + ["refA"]

    def dump(path, mat):
        path.write_text("".join(f"{s}\t{'None' if np.isnan(v) else repr(float(v))}\n"
                                for s, row in zip(systems, mat) for v in row))
    dump(root / "human-scores" / f"{lp}.mqm.seg.score", h)
    good = q + rng.normal(scale=0.5, size=q.shape)
    bad = q + rng.normal(scale=3, size=q.shape)
    dump(root / "metric-scores" / lp / "Good-refA.seg.score", good)
    dump(root / "metric-scores" / lp / "Bad-src.seg.score", bad)
    return h, good, bad


def test_mtme_reader_and_scan(tmp_path):
    h, good, _ = _write_mtme(tmp_path)
    found = readers.scan_mtme(tmp_path, "en-de")
    assert set(found.metrics) == {"Good-refA", "Bad-src"} and "mqm" in found.human
    hm = readers.read_mtme_matrix(found.human["mqm"]["seg"])
    assert hm.shape == (6, 30) and np.isnan(hm.values[:, :3]).all()
    np.testing.assert_allclose(hm.values[:, 3:], h[:, 3:])
    assert readers.metric_refs("Good-refA") == ("Good", {"refA"})
    assert readers.metric_refs("Bad-src") == ("Bad", set())


def test_table_readers_and_errors(tmp_path):
    tsv = tmp_path / "s.tsv"
    tsv.write_text("system\tdoc_id\tseg_id\tscore\nA\td\t1\t0.5\nA\td\t2\t\nB\td\t1\t0.25\n")
    m = readers.read_scores(tsv)
    assert m.systems == ("A", "B") and m.items == ("1", "2")
    assert np.isnan(m.values[0, 1]) and np.isnan(m.values[1, 1]) and m.values[1, 0] == 0.25
    run = tmp_path / "run"
    run.mkdir()
    (run / "segments.tsv").write_text(tsv.read_text())
    (run / "judgments.jsonl").write_text("")  # what makes a directory a run directory
    assert readers.read_scores(run).shape == (2, 2)
    js = tmp_path / "s.jsonl"
    js.write_text('{"system": "A", "seg_id": 1, "score": 2}\n{"system": "B", "seg_id": 1, "score": null}\n')
    assert readers.read_scores(js).values[0, 0] == 2.0
    bad = tmp_path / "bad.tsv"
    bad.write_text("system\tseg_id\tscore\nA\t1\tzero\n")
    with pytest.raises(InputError) as err:
        readers.read_scores(bad)
    assert err.value.line == 2 and err.value.field == "score"
    dup = tmp_path / "dup.tsv"
    dup.write_text("system\tseg_id\tscore\nA\t1\t1\nA\t1\t2\n")
    with pytest.raises(InputError, match="duplicate"):
        readers.read_scores(dup)
    human = ScoreMatrix(("A", "B"), ("1",), np.array([[1.0], [2.0]]))
    with pytest.raises(InputError, match="no score"):
        align(human, ScoreMatrix(("A",), ("1",), np.array([[1.0]])))
    assert np.isnan(align(human, ScoreMatrix(("A",), ("1",), np.array([[1.0]])),
                          missing_metric="drop")[1, 0])


# ------------------------------------------------------------------ which scores of a run
# Per item, three runs of each judge; None is a failed run (recorded, never scored).
RUN_SCORES = {"j1": [[10, 20, 60], [30, None, 50], [5, 5, 5], [None, None, None]],
              "j2": [[1, 2, 3], [4, 5, 6], [7, 8, 9], [10, 11, 12]]}


def _write_run(out, judges=("j1",)):
    from polyjudge.data.records import Item
    from polyjudge.engine.result import RunResult
    from polyjudge.protocols import get_protocol
    from polyjudge.rundir import OK, PARSE_FAILED
    from tests.helpers.judgments import judgment_at

    items = [Item(src=f"s{i}", tgt=f"t{i}", system=system, doc_id="d", seg_id=str(i))
             for system in ("A", "B") for i in (1, 2)]
    judgments = []
    for judge in judges:
        for i, runs in enumerate(RUN_SCORES[judge]):
            for r, x in enumerate(runs):
                judgments.append(judgment_at(items, i, r, judge, OK if x is not None else PARSE_FAILED,
                                          None if x is not None else "no score", "", {"score": x}, x))
    RunResult(items, list(judges), get_protocol("da"), 3, "mean", judgments).write(out)
    return out


def test_run_scores_default_judge_aggregator_and_run(tmp_path):
    run = _write_run(tmp_path / "run", judges=("j1", "j2"))
    nan = np.nan
    final = readers.read_scores(run)
    assert final.systems == ("A", "B") and final.items == ("1", "2")
    # the panel mean of the two judges' means; item 4 only has j2
    np.testing.assert_allclose(final.values, [[(30 + 2) / 2, (40 + 5) / 2], [(5 + 8) / 2, 11]])
    np.testing.assert_allclose(readers.read_scores(run, judge="j1").values, [[30, 40], [5, nan]])
    median = readers.read_scores(run, judge="j1", aggregator="median")
    np.testing.assert_allclose(median.values, [[20, 40], [5, nan]])
    np.testing.assert_allclose(readers.read_scores(run, judge="j2", aggregator="max").values, [[3, 6], [9, 12]])
    np.testing.assert_allclose(readers.read_scores(run, judge="j1", run=1).values, [[20, nan], [5, nan]])
    np.testing.assert_allclose(readers.read_scores(run, judge="j2", run=0).values, [[1, 4], [7, 10]])
    # aggregators and single runs are one judge's; a panel needs the choice
    with pytest.raises(InputError, match="2 judges"):
        readers.read_scores(run, aggregator="median")
    with pytest.raises(InputError, match="no judge 'j3'"):
        readers.read_scores(run, judge="j3", run=0)


def test_run_scores_single_judge_and_bad_choices(tmp_path):
    run = _write_run(tmp_path / "run")
    np.testing.assert_allclose(readers.read_scores(run, aggregator="min").values, [[10, 30], [5, np.nan]])
    np.testing.assert_allclose(readers.read_scores(run, run=2, fmt="run").values, [[60, 50], [5, np.nan]])
    assert readers.read_scores(run, judge="j1").values[0, 0] == 30
    with pytest.raises(InputError) as err:
        readers.read_scores(run, aggregator="mode")
    assert "stored: rrwa, mean-2s, mean-all, median, max, min, geo, trimmed-mean" in str(err.value)
    with pytest.raises(InputError, match="0..2"):
        readers.read_scores(run, run=3)
    with pytest.raises(InputError, match="not both"):
        readers.read_scores(run, aggregator="median", run=0)
    with pytest.raises(InputError, match="run directory"):
        readers.read_scores(run / "segments.tsv", aggregator="median")
    # a damaged segments.tsv names the line and field instead of losing the score
    seg = run / "segments.tsv"
    lines = seg.read_text().splitlines()
    cells = lines[2].split("\t")
    cells[5] = "thirty"
    seg.write_text("\n".join(lines[:2] + ["\t".join(cells)] + lines[3:]) + "\n")
    with pytest.raises(InputError) as err:
        readers.read_scores(run)
    assert err.value.line == 3 and err.value.field == "score"


def test_run_scores_need_a_run_directory(tmp_path):
    with pytest.raises(InputError, match="not a polyjudge run directory"):
        readers.read_scores(tmp_path, fmt="run")
    (tmp_path / "judgments.jsonl").write_text("")
    with pytest.raises(InputError, match="no segment scores"):
        readers.read_run_dir(tmp_path)


def test_cli_mtme_json(tmp_path):
    h, good, bad = _write_mtme(tmp_path)
    res = CliRunner().invoke(meta_eval, ["--mtme", str(tmp_path), "--lp", "en-de", "--format", "json",
                                         "-k", "50", "--task", "wmt24"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    lp = out["language_pairs"]["en-de"]
    assert set(lp) == {"Good-refA", "Bad-src"}
    for key in ("sys_pairwise_accuracy", "sys_spa", "sys_pearson", "seg_pearson", "seg_kendall_item",
                "seg_acc_t", "seg_acc_t_epsilon"):
        assert key in lp["Good-refA"]
    assert lp["Good-refA"]["n_systems"] == 5  # refA dropped: it is the metric's reference
    keep = slice(0, 5)
    assert lp["Good-refA"]["seg_pearson"] == pytest.approx(stats.pearson(h[keep], good[keep]))
    assert lp["Good-refA"]["seg_acc_t"] == pytest.approx(stats.tie_calibration(h[keep], good[keep]).value)
    assert out["ranking"][0]["metric"] == "Good-refA"
    text = CliRunner().invoke(meta_eval, ["--mtme", str(tmp_path), "--lp", "en-de", "-k", "0",
                                          "--task", "wmt23"])
    assert text.exit_code == 0 and "sys (acc)" in text.output and "seg (acc-t)" in text.output


def test_cli_bad_input_exits_2(tmp_path):
    from polyjudge.cli.main import main
    with pytest.raises(SystemExit) as ex:
        main(["meta-eval", "--mtme", str(tmp_path), "--lp", "xx-yy"])
    assert ex.value.code == 2


@pytest.mark.skipif(not (DATA / "wmt-mqm" / "ted").is_dir(), reason="../shared/data/wmt-mqm/ted absent")
def test_ted_chrf_bleu_against_mqm():
    import csv

    import sacrebleu

    from polyjudge.metaeval.tasks import LanguagePair, evaluate

    d = DATA / "wmt-mqm" / "ted" / "ende"
    human = readers.read_scores(d / "mqm_ted_ende.avg_seg_scores.tsv")  # already negated MQM
    targets = {}
    with open(d / "mqm_ted_ende.tsv", encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            targets.setdefault((row["system"], row["seg_id"]),
                               row["target"].replace("<v>", "").replace("</v>", ""))
    ref = "ref"
    chrf, bleu = [], []
    for (system, seg), tgt in targets.items():
        if system == ref or (ref, seg) not in targets:
            continue
        r = targets[(ref, seg)]
        chrf.append((system, seg, sacrebleu.sentence_chrf(tgt, [r]).score))
        bleu.append((system, seg, sacrebleu.sentence_bleu(tgt, [r]).score))
    lp = LanguagePair("en-de", human, {"chrF": ScoreMatrix.from_rows(chrf),
                                       "BLEU": ScoreMatrix.from_rows(bleu)},
                      exclude_systems=[ref, "ref-A"])  # the avg file spells it ref-A
    res = evaluate([lp], "wmt24", k=100, seed=0)
    s = res.per_lp["en-de"]["chrF"]
    assert s["n_systems"] == 13
    assert 0.55 < s["sys_spa"] < 0.8 and 0.4 < s["seg_acc_t"] < 0.6
    assert 0.5 < s["sys_pairwise_accuracy"] < 0.8 and 0.05 < s["seg_pearson"] < 0.3
