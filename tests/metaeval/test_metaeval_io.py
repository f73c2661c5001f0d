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
