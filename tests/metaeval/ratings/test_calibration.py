"""Calibration against human ratings, checked against scikit-learn, statsmodels,
krippendorff and hand-worked cases; plus the ``polyjudge agreement`` CLI."""

from __future__ import annotations

import json
import math

import krippendorff
import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score, f1_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from polyjudge.cli.agreement_cmd import agreement
from polyjudge.data.errors import InputError
from polyjudge.metaeval.ratings.calibration import (
    RatingRow,
    agreement_class,
    calibrate,
    class_distribution,
    human_majority,
    read_ratings,
    weighted_f1,
)


def synth(seed: int = 0, n: int = 60, languages=("de", "zh")) -> list[RatingRow]:
    """3 humans noisy around a truth in 0..2, a judge biased toward 2."""
    rng = np.random.default_rng(seed)
    rows = []
    for lang in languages:
        truth = rng.integers(0, 3, n)
        for i in range(n):
            for h in ("a1", "a2", "a3"):
                v = truth[i] if rng.random() < 0.7 else rng.integers(0, 3)
                rows.append(RatingRow(f"q{i}", lang, "qa", "LA", h, "human", float(v)))
            j = 2 if rng.random() < 0.4 else (truth[i] if rng.random() < 0.7 else rng.integers(0, 3))
            rows.append(RatingRow(f"q{i}", lang, "qa", "LA", "gpt", "judge", float(j)))
    return rows


def test_weighted_f1_matches_sklearn():
    rng = np.random.default_rng(3)
    for _ in range(20):
        t, p = rng.integers(0, 4, 50), rng.integers(0, 3, 50)
        assert weighted_f1(t, p) == pytest.approx(f1_score(t, p, average="weighted", zero_division=0))


def test_majority_and_class():
    assert human_majority([2, 2, 1]) == 2
    assert human_majority([0, 1, 2]) is None
    assert human_majority([1, 0]) is None
    assert human_majority([1]) == 1
    assert agreement_class([1, 1, 1]) == "full"
    assert agreement_class([1, 1, 0]) == "partial"
    assert agreement_class([0, 1, 2]) == "none"
    assert agreement_class([0, 1]) == "none"


@pytest.mark.parametrize("lang", ["de", "zh"])
def test_statistics_match_references(lang):
    rows = synth()
    out = {r.language: r for r in calibrate(rows)}
    row = out[lang]
    ids = [f"q{i}" for i in range(60)]
    hum = np.array([[next(r.rating for r in rows if r.language == lang and r.item_id == i and r.rater == h)
                     for h in ("a1", "a2", "a3")] for i in ids])
    judge = np.array([next(r.rating for r in rows if r.language == lang and r.item_id == i and r.kind == "judge")
                      for i in ids])
    maj = []
    for h in hum:
        vals, cnt = np.unique(h, return_counts=True)
        maj.append(vals[cnt.argmax()] if cnt.max() >= 2 else np.nan)
    maj = np.array(maj)
    keep = ~np.isnan(maj)
    assert row.n_items == 60 and row.n_no_majority == int((~keep).sum()) and row.n_humans == 3
    assert row.pa_judge == pytest.approx(np.mean(maj[keep] == judge[keep]))
    assert row.pa_humans_all == pytest.approx(np.mean((hum == hum[:, :1]).all(1)))
    pairs = [(0, 1), (0, 2), (1, 2)]
    assert row.pa_humans_pairwise == pytest.approx(np.mean([np.mean(hum[:, a] == hum[:, b]) for a, b in pairs]))
    assert row.f1_judge == pytest.approx(f1_score(maj[keep], judge[keep], average="weighted"))
    assert row.kappa_judge == pytest.approx(cohen_kappa_score(maj[keep], judge[keep]))
    assert row.qwk_judge == pytest.approx(cohen_kappa_score(maj[keep], judge[keep], weights="quadratic"))
    assert row.fleiss_humans == pytest.approx(sm_fleiss(aggregate_raters(hum)[0]))
    for level in ("nominal", "ordinal", "interval"):
        assert getattr(row, f"alpha_{level}_humans") == pytest.approx(
            krippendorff.alpha(reliability_data=hum.T, level_of_measurement=level, value_domain=[0, 1, 2]))
        two = np.vstack([maj[keep], judge[keep]])
        assert getattr(row, f"alpha_{level}_judge") == pytest.approx(
            krippendorff.alpha(reliability_data=two, level_of_measurement=level, value_domain=[0, 1, 2]))
    assert row.judge_mean == pytest.approx(judge.mean())
    assert row.human_mean == pytest.approx(hum.mean())


def test_hand_worked_case_and_distribution():
    # 4 items, humans h1..h3, judge J; human majority: 2, 1, none, 0; judge: 2, 2, 2, 0
    data = {"i1": ([2, 2, 2], 2), "i2": ([1, 1, 0], 2), "i3": ([0, 1, 2], 2), "i4": ([0, 0, 0], 0)}
    rows = []
    for i, (hs, j) in data.items():
        rows += [RatingRow(i, "es", "sum", "OCQ", f"h{k}", "human", float(v)) for k, v in enumerate(hs)]
        rows.append(RatingRow(i, "es", "sum", "OCQ", "J", "judge", float(j)))
    (row,) = calibrate(rows)
    assert row.n_items == 4 and row.n_no_majority == 1
    assert row.pa_judge == pytest.approx(2 / 3)  # agrees on i1 and i4, not on i2
    assert row.pa_humans_all == pytest.approx(2 / 4)
    # pairs (h0,h1): i1,i2,i4 agree -> 3/4; (h0,h2): i1,i4 -> 2/4; (h1,h2): i1,i4 -> 2/4
    assert row.pa_humans_pairwise == pytest.approx((3 / 4 + 2 / 4 + 2 / 4) / 3)
    cells = {(c.agreement, c.human, c.judge_score): c.count for c in class_distribution(rows)}
    assert cells == {("full", "2", "2"): 1, ("full", "0", "0"): 1, ("partial", "1", "2"): 1,
                     ("none", "", "2"): 1}


def test_categorical_labels_give_nominal_only():
    rows = []
    for i, (hs, j) in enumerate([(["yes", "yes"], "yes"), (["no", "no"], "yes"), (["no", "yes"], "no"),
                                 (["no", "no"], "no")]):
        rows += [RatingRow(str(i), "", "", "H", f"h{k}", "human", v) for k, v in enumerate(hs)]
        rows.append(RatingRow(str(i), "", "", "H", "J", "judge", j))
    (row,) = calibrate(rows)
    assert row.n_no_majority == 1
    maj, jud = ["yes", "no", "no"], ["yes", "yes", "no"]
    assert row.kappa_judge == pytest.approx(cohen_kappa_score(maj, jud))
    assert math.isnan(row.qwk_judge) and math.isnan(row.alpha_interval_humans)
    hum = np.array([[1, 1], [0, 0], [0, 1], [0, 0]])  # no=0, yes=1
    assert row.alpha_nominal_humans == pytest.approx(
        krippendorff.alpha(reliability_data=hum.T, level_of_measurement="nominal"))


def _write_jsonl(path, rows):
    path.write_text("\n".join(json.dumps(r.__dict__) for r in rows) + "\n", encoding="utf-8")


def test_readers_and_errors(tmp_path):
    rows = synth(n=10, languages=("de",))
    p = tmp_path / "r.jsonl"
    _write_jsonl(p, rows)
    assert read_ratings(p) == rows
    t = tmp_path / "r.tsv"
    cols = ["item_id", "language", "task", "metric", "rater", "kind", "rating"]
    t.write_text("\t".join(cols) + "\n" + "\n".join("\t".join(str(getattr(r, c)) for c in cols) for r in rows)
                 + "\n", encoding="utf-8")
    assert read_ratings(t) == rows
    bad = tmp_path / "bad.tsv"
    bad.write_text("item_id\trater\tkind\trating\nq1\ta\trobot\t1\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        read_ratings(bad)
    assert e.value.line == 2 and e.value.field == "kind"
    dup = tmp_path / "dup.tsv"
    dup.write_text("item_id\trater\tkind\trating\nq1\ta\thuman\t1\nq1\ta\thuman\t2\n", encoding="utf-8")
    with pytest.raises(InputError, match="twice"):
        read_ratings(dup)
    # an empty judge rating (parse failure) is skipped, not scored
    miss = tmp_path / "miss.tsv"
    miss.write_text("item_id\trater\tkind\trating\nq1\ta\thuman\t1\nq1\tJ\tjudge\t\n", encoding="utf-8")
    assert len(read_ratings(miss)) == 1


def test_cli(tmp_path):
    rows = synth(n=30)
    p = tmp_path / "r.jsonl"
    _write_jsonl(p, rows)
    out = tmp_path / "o"
    res = CliRunner().invoke(agreement, [str(p), "--format", "json", "-o", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    expected = {r.language: r.to_dict() for r in calibrate(rows)}
    assert {r["language"]: r for r in doc["rows"]} == expected
    assert sum(c["count"] for c in doc["class_distribution"]) == 60
    assert (out / "agreement.tsv").read_text().count("\n") == 3
    res = CliRunner().invoke(agreement, [str(p), "--pool", "language"])
    # the pooled distribution names what it pooled (was *)
    assert res.exit_code == 0 and "pa_judge" in res.output and "\npooled: de+zh\tqa\tLA\tgpt\t" in res.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"item_id": "x"}\n', encoding="utf-8")
    res = CliRunner().invoke(agreement, [str(bad)])
    assert res.exit_code != 0
