"""Cross-language consistency statistics, checked against statsmodels,
scikit-learn and scipy on synthetic parallel judgments."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score, f1_score
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from polyjudge.data.errors import InputError
from polyjudge.metaeval.ratings.consistency import (
    Rating,
    consistency_table,
    ensemble_report,
    languages_tsv,
    panel_ratings,
    spearman_across_judges,
    summary_tsv,
    weighted_f1,
)

LANGS = ["en", "de", "sw", "te", "zh"]


def synthetic(seed: int = 0, n: int = 40, judges=("a", "b", "c"), criterion="binary",
              fail_rate=0.05):
    """Labels that follow gold with a per-language noise level, plus failures."""
    rng = np.random.default_rng(seed)
    noise = {"en": 0.05, "de": 0.1, "sw": 0.35, "te": 0.45, "zh": 0.2}
    out = []
    for j in judges:
        for lang in LANGS:
            for i in range(n):
                for kind, gold in (("gold", 1.0), ("wrong", 0.0)):
                    if criterion == "binary":
                        lab = gold if rng.random() > noise[lang] else 1 - gold
                    else:
                        lab = float(np.clip(round(4 * gold + 1 + rng.normal(0, 3 * noise[lang])), 1, 5))
                    if rng.random() < fail_rate:
                        lab = None
                    out.append(Rating(j, "math", criterion, lang, f"q{i}", lab, gold, kind))
    return out


def matrix(ratings, judge, kind=None):
    keys = sorted({(r.item_id, r.answer_kind) for r in ratings
                   if r.judge == judge and (kind is None or r.answer_kind == kind)})
    idx = {k: i for i, k in enumerate(keys)}
    m = np.full((len(keys), len(LANGS)), np.nan)
    for r in ratings:
        if r.judge == judge and (kind is None or r.answer_kind == kind) and r.label is not None:
            m[idx[(r.item_id, r.answer_kind)], LANGS.index(r.language)] = r.label
    return m


@pytest.mark.parametrize("criterion", ["binary", "grade"])
def test_against_reference_implementations(criterion):
    ratings = synthetic(criterion=criterion)
    rows = consistency_table(ratings)
    assert [(r.judge, r.subset) for r in rows][:3] == [("a", "all"), ("a", "gold"), ("a", "wrong")]
    for row in rows:
        m = matrix(ratings, row.judge, None if row.subset == "all" else row.subset)
        assert row.languages == LANGS and row.n_items == m.shape[0]
        complete = m[~np.isnan(m).any(1)]
        assert row.n_complete == complete.shape[0]
        table, _ = aggregate_raters(complete.astype(int))
        assert row.fleiss_kappa == pytest.approx(fleiss_kappa(table, method="fleiss"), abs=1e-12)
        for j, lang in enumerate(LANGS):
            st = row.per_language[lang]
            v = ~np.isnan(m[:, j])
            assert st.n == v.sum() and st.failed == (~v).sum()
            assert st.mean == pytest.approx(m[v, j].mean())
            if lang == "en":
                assert st.cohen_vs_ref is None
                continue
            both = v & ~np.isnan(m[:, 0])
            ref = cohen_kappa_score(m[both, 0], m[both, j])
            if np.isnan(ref):
                assert np.isnan(st.cohen_vs_ref)
            else:
                assert st.cohen_vs_ref == pytest.approx(ref, abs=1e-12)
        if criterion == "binary":
            gold = 1.0 if row.subset == "gold" else 0.0
            if row.subset != "all":
                assert row.per_language["sw"].accuracy == pytest.approx(
                    np.mean(m[~np.isnan(m[:, 2]), 2] == gold))
            x = [row.per_language[lg].accuracy for lg in LANGS[1:]]
        else:
            assert row.accuracy is None
            x = [row.per_language[lg].mean for lg in LANGS[1:]]
        y = [row.per_language[lg].cohen_vs_ref for lg in LANGS[1:]]
        if not any(np.isnan(y)):
            with warnings.catch_warnings():  # constant input -> nan, as ours
                warnings.simplefilter("ignore")
                ref = spearmanr(x, y).statistic
            assert row.spearman_acc_kappa == pytest.approx(ref, nan_ok=True)


def test_noisier_languages_agree_less_with_english():
    rows = consistency_table(synthetic(n=200, judges=("a",), fail_rate=0.0))
    row = next(r for r in rows if r.subset == "all")
    k = {lg: row.per_language[lg].cohen_vs_ref for lg in LANGS[1:]}
    assert k["de"] > k["zh"] > k["sw"] > k["te"]
    assert row.spearman_acc_kappa == pytest.approx(1.0)  # noisier = less accurate = lower kappa
    assert row.accuracy == pytest.approx(np.mean([0.95, 0.9, 0.65, 0.55, 0.8]), abs=0.03)


def test_hand_computed_example():
    # 4 items, 3 languages; en/de identical, fr flips item 4.
    labels = {"en": [1, 1, 0, 0], "de": [1, 1, 0, 0], "fr": [1, 1, 0, 1]}
    rs = [Rating("j", "qa", "binary", lg, f"i{i}", float(v), 1.0)
          for lg, vals in labels.items() for i, v in enumerate(vals)]
    (row,) = consistency_table(rs)
    # Fleiss: P_i = 1,1,1,1/3 -> P_bar = 5/6; p(1) = 7/12 -> P_e = (49+25)/144
    pe = (49 + 25) / 144
    assert row.fleiss_kappa == pytest.approx((5 / 6 - pe) / (1 - pe))
    assert row.per_language["de"].cohen_vs_ref == pytest.approx(1.0)
    assert row.per_language["fr"].cohen_vs_ref == pytest.approx(0.5)  # po=.75, pe=.5
    assert row.per_language["fr"].accuracy == 0.75 and row.accuracy == pytest.approx(7 / 12)


def test_duplicate_rating_is_an_input_error():
    r = Rating("j", "qa", "binary", "en", "i1", 1.0)
    with pytest.raises(InputError):
        consistency_table([r, r])


def test_panel_and_ens_minus_min():
    ratings = synthetic(n=60, fail_rate=0.1)
    panel = panel_ratings(ratings, method="majority", tie="low")
    assert len(panel) == len(ratings) // 3
    # the panel's label is the majority of the three judges' labels
    by = {}
    for r in ratings:
        by.setdefault((r.language, r.item_id, r.answer_kind), []).append(r.label)
    for p in panel[:50]:
        votes = [v for v in by[(p.language, p.item_id, p.answer_kind)] if v is not None]
        if not votes:
            assert p.label is None
        else:
            c1 = votes.count(1.0)
            assert p.label == (1.0 if c1 > len(votes) - c1 else 0.0)
    rows = consistency_table(ratings + panel)
    rep = ensemble_report(rows)
    assert {(d["subset"]) for d in rep} == {"all", "gold", "wrong"}
    for d in rep:
        singles = [r.fleiss_kappa for r in rows if r.subset == d["subset"] and r.judge != "ensemble"]
        assert d["min"] == pytest.approx(min(singles))
        assert d["delta"] == pytest.approx(d["ens"] - d["min"])
    # majority of three independent noisy judges is more consistent than the worst one
    assert next(d for d in rep if d["subset"] == "all")["delta"] > 0


def test_spearman_across_judges_and_tables():
    ratings = synthetic(n=30, judges=("a", "b", "c", "d"))
    rows = consistency_table(ratings, subsets=False)
    (sp,) = spearman_across_judges(rows)
    assert sp["n_judges"] == 4
    ref = spearmanr([r.accuracy for r in rows], [r.fleiss_kappa for r in rows]).statistic
    assert sp["spearman"] == pytest.approx(ref)
    tsv = summary_tsv(rows).splitlines()
    assert tsv[0].split("\t")[:4] == ["judge", "task", "criterion", "subset"] and len(tsv) == 5
    assert len(languages_tsv(rows).splitlines()) == 1 + 4 * len(LANGS)
    json.dumps([r.to_dict() for r in rows])  # JSON-able, NaN -> null


def gold_matrix(ratings, judge):
    keys = sorted({(r.item_id, r.answer_kind) for r in ratings if r.judge == judge})
    g = {(r.item_id, r.answer_kind): r.gold for r in ratings}
    return np.array([g[k] for k in keys])


def test_weighted_f1_per_language_matches_sklearn():
    ratings = synthetic(seed=5)
    row = consistency_table(ratings, subsets=False)[0]
    m, gold = matrix(ratings, row.judge), gold_matrix(ratings, row.judge)
    for j, lang in enumerate(LANGS):
        v = ~np.isnan(m[:, j])
        ref = f1_score(gold[v], m[v, j], average="weighted")
        assert row.per_language[lang].weighted_f1 == pytest.approx(ref, abs=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_weighted_f1_random_multiclass(seed):
    rng = np.random.default_rng(seed)
    t = rng.integers(0, 4, 30)
    p = np.where(rng.random(30) < 0.5, t, rng.integers(0, 5, 30))  # class 4 only ever predicted
    assert weighted_f1(t, p) == pytest.approx(f1_score(t, p, average="weighted", zero_division=0))
