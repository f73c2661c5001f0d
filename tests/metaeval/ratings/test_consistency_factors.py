"""Fu & Liu's factor analyses: per-language kappa against the reference next to
resource class, script and family; Spearman of class vs kappa; group means;
and the Yes/No minus grade gap. Numbers by hand and against scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import spearmanr

from polyjudge.metaeval.ratings.agreement import cohen_kappa
from polyjudge.metaeval.ratings.consistency import (
    Rating,
    consistency_table,
    factor_correlations,
    factor_groups,
    grade_gap,
    language_factors,
    records_tsv,
)

LANGS = ("en", "de", "ru", "th", "sw", "te", "liv")  # classes 5 4 3 2 1, and liv: unknown


def ratings(labels_by_lang, criterion="binary", judge="j"):
    return [Rating(judge, "qa", criterion, lang, f"q{i}", float(v), None)
            for lang, labels in labels_by_lang.items() for i, v in enumerate(labels)]


EN = [1, 1, 1, 1, 0, 0, 0, 0]
BINARY = {
    "en": EN,
    "de": EN,                          # kappa 1
    "ru": [1, 1, 1, 0, 0, 0, 0, 0],    # one flip
    "th": [1, 1, 1, 1, 1, 1, 0, 0],    # two flips
    "sw": [1, 1, 1, 1, 1, 1, 1, 0],    # three flips
    "te": [1, 1, 1, 1, 1, 1, 1, 1],    # constant: kappa 0
    "liv": [1, 1, 0, 1, 0, 0, 0, 0],   # not in the class table
}
GRADE = {lang: [5 if v else 2 for v in labels] for lang, labels in BINARY.items()}
GRADE["de"] = [5, 4, 5, 4, 2, 1, 2, 1]  # de agrees with en on verdicts but not on grades


def test_language_factors_and_spearman_by_hand_and_scipy():
    rows = consistency_table(ratings(BINARY), subsets=False)
    langs = language_factors(rows)
    assert [r.language for r in langs] == ["de", "ru", "th", "sw", "te", "liv"]  # the reference is left out
    kappa = {r.language: r.kappa for r in langs}
    for lang in kappa:
        assert kappa[lang] == pytest.approx(cohen_kappa(EN, BINARY[lang]))
    # by hand: ru has p_o = 7/8, marginals (4,4) vs (3,5): p_e = (4*3 + 4*5) / 64 = 1/2 -> kappa 3/4
    assert kappa["ru"] == pytest.approx(0.75)
    assert kappa["de"] == 1.0 and kappa["te"] == 0.0
    by = {r.language: r for r in langs}
    assert [by[c].resource_class for c in ("de", "ru", "th", "sw", "te")] == [5, 4, 3, 2, 1]
    assert by["liv"].resource_class is None and by["liv"].family == "Uralic"
    assert (by["th"].script, by["th"].family) == ("Thai", "Tai-Kadai")

    (corr,) = factor_correlations(langs)
    known = [lang for lang in kappa if by[lang].resource_class is not None]
    ref = spearmanr([by[lang].resource_class for lang in known], [kappa[lang] for lang in known])
    assert corr.n_languages == 5 and corr.factor == "resource_class"
    assert corr.spearman == pytest.approx(ref.statistic) and corr.p_value == pytest.approx(ref.pvalue)
    # kappa falls with the class here in strict order: rho = 1 exactly
    assert corr.spearman == pytest.approx(1.0)


def test_group_means_by_hand():
    langs = language_factors(consistency_table(ratings(BINARY), subsets=False))
    groups = {(g.factor, g.group): g for g in factor_groups(langs)}
    k = {r.language: r.kappa for r in langs}
    ie = groups[("family", "Indo-European")]
    assert ie.languages == "de,ru" and ie.n_languages == 2
    assert ie.mean_kappa == pytest.approx((k["de"] + k["ru"]) / 2)
    assert groups[("family", "Uralic")].languages == "liv"
    assert groups[("script", "Latn")].languages == "de,sw,liv"
    assert groups[("script", "Latn")].mean_kappa == pytest.approx(np.mean([k["de"], k["sw"], k["liv"]]))
    assert groups[("script", "Telu")].mean_kappa == 0.0
    # resource classes: highest first, unknown class left out
    classes = [g.group for g in factor_groups(langs) if g.factor == "resource_class"]
    assert classes == ["5", "4", "3", "2", "1"]


def test_grade_gap_per_language_and_overall():
    rows = consistency_table(ratings(BINARY) + ratings(GRADE, "grade"), subsets=False)
    gap = {g.language: g for g in grade_gap(rows)}
    # de: identical verdicts (kappa 1) but grades 5/4 vs en's 5: Cohen's kappa on the grade labels
    kg = cohen_kappa([5 if v else 2 for v in EN], GRADE["de"])
    assert gap["de"].kappa_binary == 1.0 and gap["de"].kappa_grade == pytest.approx(kg)
    assert gap["de"].delta == pytest.approx(1.0 - kg) and gap["de"].statistic == "cohen_vs_ref"
    # languages whose grades mirror their verdicts have no gap
    assert gap["ru"].delta == pytest.approx(0.0)
    b = next(r for r in rows if r.criterion == "binary")
    g = next(r for r in rows if r.criterion == "grade")
    assert gap["all"].statistic == "fleiss_kappa"
    assert gap["all"].delta == pytest.approx(b.fleiss_kappa - g.fleiss_kappa) and gap["all"].delta > 0
    assert "en" not in gap
    assert grade_gap(consistency_table(ratings(BINARY), subsets=False)) == []  # one criterion only


def test_too_few_languages_give_nan_and_tables_render():
    rows = consistency_table(ratings({"en": EN, "de": EN, "ru": BINARY["ru"]}), subsets=False)
    (corr,) = factor_correlations(language_factors(rows))
    assert corr.n_languages == 2 and math.isnan(corr.spearman)
    text = records_tsv([corr])
    assert text.splitlines()[0].split("\t")[-3:] == ["n_languages", "spearman", "p_value"]
    assert text.splitlines()[1].endswith("\t2\tn/a\tn/a")  # NaN is n/a (issue 43 item 4)
    assert records_tsv([]) == ""
