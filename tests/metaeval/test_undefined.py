"""Undefined is undefined (issue 43, item 4): a statistic that cannot be computed is NaN in the results,
``n/a`` in text and TSV and ``null`` in JSON, never 0.0000; scores of 1e308 give scipy's value, not 0."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import scipy.stats

from polyjudge.cli.main import main
from polyjudge.metaeval import significance, stats, systems
from polyjudge.metaeval.systems import compare_systems


def _write(path, rows):
    path.write_text("system\tseg_id\tscore\n" + "".join(f"{s}\t{i}\t{v!r}\n" for s, i, v in rows), encoding="utf-8")
    return path


def _data(seed=1, systems="ABCDE", n=10):
    rnd = random.Random(seed)
    human = [(s, i, rnd.random()) for s in systems for i in range(n)]
    metric = [(s, i, v + 0.5 * rnd.random()) for s, i, v in human]
    return human, metric


def _meta_eval(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(["meta-eval", *map(str, args)])
    got = capsys.readouterr()
    return exc.value.code, got.out, got.err


def _table(out, metric):
    lines = out.splitlines()
    at = next(i for i, r in enumerate(lines) if r.startswith("Metric  systems"))
    head = lines[at].split()
    row = next(r.split() for r in lines[at + 2:] if r.split()[:1] == [metric])
    return dict(zip(head, row))


# --------------------------------------------------------------------------- constant scores

def test_a_correlation_over_constant_scores_is_nan_like_scipy():
    h = np.array([[0.1, 0.5, 0.3], [0.7, 0.2, 0.9]])
    m = np.full_like(h, 0.5)
    with pytest.warns(scipy.stats.ConstantInputWarning):
        assert np.isnan(scipy.stats.pearsonr(h.ravel(), m.ravel())[0])
    for method in ("pearson", "spearman", "kendall"):
        for grouping in ("none", "item", "sys"):
            assert np.isnan(stats.correlation(h, m, method, grouping)), (method, grouping)


def test_a_constant_metric_prints_na_not_zero(tmp_path, capsys):
    human, _ = _data()
    h = _write(tmp_path / "human.tsv", human)
    const = _write(tmp_path / "const.tsv", [(s, i, 0.5) for s, i, _ in human])
    code, out, err = _meta_eval(capsys, "--human", h, "--metric", const, "-k", "0", "--lp", "en-de")
    assert code == 0, err
    row = _table(out, "const")
    assert row["seg_pearson"] == "n/a" and row["sys_pearson"] == "n/a" and row["seg_kendall_item"] == "n/a"
    assert row["sys_pairwise_accuracy"] == "0.0000"  # defined: every pair is a metric tie, no human tie
    code, out, err = _meta_eval(capsys, "--human", h, "--metric", const, "-k", "0", "--lp", "en-de",
                                "--format", "json")
    got = json.loads(out)["language_pairs"]["en-de"]["const"]  # json.loads would take NaN; the text has null
    assert '"seg_pearson": null' in out and got["seg_pearson"] is None and got["sys_pearson"] is None
    code, out, err = _meta_eval(capsys, "--human", h, "--metric", const, "-k", "0", "--lp", "en-de",
                                "--task", "none", "--format", "tsv")
    head, row = (line.split("\t") for line in out.splitlines()[:2])
    assert dict(zip(head, row))["seg_pearson"] == "n/a"


def test_an_undefined_statistic_ranks_last_and_is_never_significantly_better():
    values = {"a": float("nan"), "b": 0.2, "c": 0.7}
    assert significance.ranked_names(values) == ["c", "b", "a"]
    null = np.zeros(100)
    assert np.isnan(significance._p(null, float("nan")))  # was 0.0: no draw is >= NaN


# --------------------------------------------------------------------------- 1e308

@pytest.mark.parametrize("grouping", ["none", "sys", "item"])
def test_pearson_on_1e308_matches_scipy(grouping):
    rng = np.random.default_rng(3)
    h = rng.normal(size=(5, 8))
    m = h + rng.normal(size=(5, 8))
    m[0, 0] = 1e308
    m[2, 3] = -1e308
    got = stats.correlation(h, m, "pearson", grouping)
    rows = {"none": [(h.ravel(), m.ravel())], "sys": list(zip(h, m)), "item": list(zip(h.T, m.T))}[grouping]
    # scipy overflows on two values of 1e308 (its mean is inf), so it gets the same data divided by 1e300
    want = np.mean([scipy.stats.pearsonr(a, b / 1e300)[0] for a, b in rows])
    assert got == pytest.approx(want, abs=1e-12)
    assert got != 0.0


@pytest.mark.parametrize("cells", [[("A", 0)], [("A", 0), ("A", 1)]])
def test_a_score_of_1e308_gives_scipys_correlations_not_zero(tmp_path, capsys, cells):
    human, metric = _data()
    big = [(s, i, 1e308 if (s, i) in cells else v) for s, i, v in metric]  # two: A's sum overflows
    code, out, err = _meta_eval(capsys, "--human", _write(tmp_path / "h.tsv", human), "--metric",
                                _write(tmp_path / "big.tsv", big), "-k", "0", "--lp", "en-de", "--format", "json")
    assert code == 0, err
    got = json.loads(out)["language_pairs"]["en-de"]["big"]
    hv = np.array([v for _, _, v in human])
    bv = np.array([v for _, _, v in big])
    assert got["seg_pearson"] == pytest.approx(scipy.stats.pearsonr(hv, bv / 1e300)[0], abs=1e-9)
    hs, bs = hv.reshape(5, 10).mean(axis=1), (bv / 10).reshape(5, 10).sum(axis=1)  # the mean, without overflow
    assert got["sys_pearson"] == pytest.approx(scipy.stats.pearsonr(hs, bs)[0], abs=1e-9)
    assert got["sys_pearson"] != 0.0 and got["seg_pearson"] != 0.0


def test_spa_p_values_with_1e308_keep_the_other_pairs_exact():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(4, 12))
    signs = stats.permutation_signs(12, 200, 4)
    before = stats.pairwise_p_values(x, signs)
    x[0, 0], x[1, 0] = 1e308, -1e308  # x_0 - x_1 overflows to inf
    after = stats.pairwise_p_values(x, signs)
    assert np.isfinite(after[np.triu_indices(4, 1)]).all()
    assert np.array_equal(after[2:, 2:], before[2:, 2:], equal_nan=True)
    # pair (0, 1) is dominated by its first segment: the flips that keep its sign (about half) reach it
    assert after[0, 1] == pytest.approx(np.mean(signs[:, 0] > 0), abs=0.05)


def test_perm_both_z_scores_survive_1e308():
    rng = np.random.default_rng(1)
    h = rng.normal(size=(3, 10))
    a = h + rng.normal(size=h.shape)
    b = h + rng.normal(size=h.shape)
    a[0, 0] = 1e308
    z = significance._zscore_on(a, np.ones(a.shape, bool))
    assert np.isfinite(z).all()
    want = scipy.stats.zscore((a / 1e300).ravel()).reshape(a.shape)
    assert np.allclose(z, want, atol=1e-12)
    res = significance.pearson_permutation_test(h, a, b, k=50, seed=0)
    assert np.isfinite(res.delta) and np.isfinite(res.p_value)


# --------------------------------------------------------------------------- paired system comparisons

def test_pairs_of_too_few_segments_get_no_resampling_p_value_or_interval():
    scores = np.array([[0.9, 0.8, np.nan, np.nan, np.nan, np.nan, np.nan],
                       [0.1, 0.2, 0.5, 0.4, 0.3, 0.6, 0.2],
                       [0.3, 0.1, 0.2, 0.1, 0.3, 0.2, 0.1]])
    res = compare_systems(["A", "B", "C"], scores)
    two = res.pair("A", "B")
    assert two.n == 2
    for field in ("p_bootstrap", "p_randomization", "ci_low", "ci_high", "win_rate"):
        assert np.isnan(getattr(two, field)), field  # bootstrap p was 1/1001 = 9.99e-04, interval one point
    assert not two.significant
    seven = res.pair("B", "C")
    assert seven.n == 7 and np.isfinite(seven.p_bootstrap) and np.isfinite(seven.ci_low)


def test_the_minimum_is_where_a_sign_flip_test_can_reach_005():
    smallest = {n: 2 / 2 ** n for n in range(2, 10)}  # two-sided: all signs kept or all flipped
    assert min(n for n, p in smallest.items() if p < 0.05) == systems.MIN_PAIRED_SEGMENTS
    d = np.ones(systems.MIN_PAIRED_SEGMENTS)  # the strongest evidence n segments can give
    exact = scipy.stats.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=np.inf,
                                         alternative="two-sided").pvalue
    assert exact == pytest.approx(smallest[systems.MIN_PAIRED_SEGMENTS]) and exact < 0.05
    d5 = np.ones(systems.MIN_PAIRED_SEGMENTS - 1)
    assert scipy.stats.permutation_test((d5,), np.mean, permutation_type="samples", n_resamples=np.inf,
                                        alternative="two-sided").pvalue > 0.05


def test_one_vector_of_two_cells_has_no_correlation():
    h, m = np.array([[0.1, 0.9]]), np.array([[0.3, 0.2]])
    assert scipy.stats.pearsonr(h[0], m[0])[0] == pytest.approx(-1.0)  # +-1 whatever the two scores
    for method in ("pearson", "spearman", "kendall"):
        assert np.isnan(stats.correlation(h, m, method, "none")), method
    three = np.array([[0.1, 0.9, 0.5]]), np.array([[0.3, 0.2, 0.4]])
    assert stats.pearson(*three) == pytest.approx(scipy.stats.pearsonr(three[0][0], three[1][0])[0])


def test_compare_systems_tables_say_na_for_pairs_of_two_segments():
    from polyjudge.api.systems import CompareSystemsResult

    scores = np.array([[0.9, 0.8] + [np.nan] * 5, [0.1, 0.2, 0.5, 0.4, 0.3, 0.6, 0.2]])
    res = CompareSystemsResult(run="r", judge=compare_systems(["A", "B"], scores))
    head, row = (line.split("\t") for line in res.to_tsv().splitlines())
    got = dict(zip(head, row))
    assert got["n"] == "2" and got["p_bootstrap"] == "n/a" and got["ci_low"] == "n/a"  # was "" (and 9.99e-04)
    assert "n/a" in res.to_text()
    pair = json.loads(res.to_json())["pairs"][0]
    assert pair["p_bootstrap"] is None and pair["ci_low"] is None and pair["p_ttest"] is not None
