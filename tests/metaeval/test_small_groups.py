"""Item-level correlations are not averaged over items scored for fewer than 3 systems (issue 33, item 3).

Over two systems Kendall and Pearson are +-1 whatever the scores, so an item-grouped correlation with two
systems was the mean of coin flips, printed as a number (-0.0667 for random scores). Such groups are left out
of the average (mt-metrics-eval leaves out only the ones whose correlation is undefined), the table says how
many, and a correlation with no group left is n/a.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import scipy.stats

from polyjudge.cli.main import main
from polyjudge.metaeval import stats


def _scores(systems: int, items: int, seed: int, holes: float) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    h = rng.normal(size=(systems, items))
    m = h + rng.normal(size=(systems, items))
    h[rng.random(size=h.shape) < holes] = np.nan
    return h, m


def _scipy_item_mean(h, m, method):
    fn = {"pearson": scipy.stats.pearsonr, "spearman": scipy.stats.spearmanr, "kendall": scipy.stats.kendalltau}
    vals, small = [], 0
    for a, b in zip(h.T, m.T):
        ok = ~np.isnan(a)
        if 0 < ok.sum() < 3:
            small += 1
            continue
        if ok.sum() == 0 or np.ptp(a[ok]) == 0 or np.ptp(b[ok]) == 0:
            continue
        vals.append(fn[method](a[ok], b[ok])[0])
    return float(np.mean(vals)), len(vals), small


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_item_groups_of_fewer_than_three_systems_are_left_out_like_scipy(method, seed):
    h, m = _scores(systems=4, items=60, seed=seed, holes=0.45)  # many items keep 1 or 2 systems
    want, used, small = _scipy_item_mean(h, m, method)
    assert small > 5  # the data does hold such items
    assert stats.correlation(h, m, method, "item") == pytest.approx(want, abs=1e-12)
    got = stats.grouped_correlation(h, m, method, "item")
    assert got.value == pytest.approx(want, abs=1e-12) and got.groups == used and got.left_out == small


def test_two_systems_give_no_item_level_correlation():
    h, m = _scores(systems=2, items=30, seed=3, holes=0.0)
    assert np.isnan(stats.kendall(h, m, "item"))
    got = stats.grouped_correlation(h, m, "kendall", "item")
    assert np.isnan(got.value) and (got.groups, got.left_out) == (0, 30)


def test_a_whole_correlation_over_two_points_is_na():
    got = stats.grouped_correlation(np.array([1.0, 2.0]), np.array([5.0, 7.0]), "pearson", "none")
    assert np.isnan(got.value) and got.left_out == 1
    three = stats.grouped_correlation(np.array([1.0, 2.0, 4.0]), np.array([5.0, 7.0, 6.0]), "pearson", "none")
    assert three.value == pytest.approx(scipy.stats.pearsonr([1, 2, 4], [5, 7, 6])[0])


def _write(path, systems, n, seed):
    rnd = random.Random(seed)
    path.write_text("system\tseg_id\tscore\n" + "".join(f"{s}\t{i}\t{rnd.random():.3f}\n"
                                                        for s in systems for i in range(n)), encoding="utf-8")
    return path


def _meta_eval(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(["meta-eval", *map(str, args)])
    got = capsys.readouterr()
    return exc.value.code, got.out, got.err


def test_the_table_shows_na_and_a_note_with_two_systems(tmp_path, capsys):
    human, metric = _write(tmp_path / "h.tsv", "AB", 15, 1), _write(tmp_path / "m.tsv", "AB", 15, 2)
    code, out, err = _meta_eval(capsys, "--human", human, "--metric", metric, "-k", "0", "--lp", "en-de")
    assert code == 0, err
    lines = out.splitlines()
    at = next(i for i, r in enumerate(lines) if r.startswith("Metric  systems"))
    head, row = lines[at].split(), lines[at + 2].split()
    assert row[head.index("seg_kendall_item")] == "n/a"  # was -0.0667: the mean of fifteen +-1
    assert "en-de: 15 item(s) scored for fewer than 3 systems are left out of seg_kendall_item" in out
    code, out, err = _meta_eval(capsys, "--human", human, "--metric", metric, "-k", "0", "--lp", "en-de",
                                "--format", "json")
    got = json.loads(out)["language_pairs"]["en-de"]["m"]
    assert got["seg_kendall_item"] is None and got["seg_items_left_out"] == 15  # JSON null, not NaN


def test_items_missing_systems_are_counted_in_the_note(tmp_path, capsys):
    human = _write(tmp_path / "h.tsv", "ABCD", 10, 1)
    # items 0-3 scored by the metric for two systems only: left out; the other six items keep four systems
    rnd = random.Random(5)
    rows = [(s, i) for s in "ABCD" for i in range(10) if i >= 4 or s in "AB"]
    metric = tmp_path / "m.tsv"
    metric.write_text("system\tseg_id\tscore\n" + "".join(f"{s}\t{i}\t{rnd.random():.3f}\n" for s, i in rows),
                      encoding="utf-8")
    code, out, err = _meta_eval(capsys, "--human", human, "--metric", metric, "-k", "0", "--lp", "en-de",
                                "--missing-metric", "drop", "--format", "json")
    assert code == 0, err
    got = json.loads(out)["language_pairs"]["en-de"]["m"]
    assert got["seg_items_left_out"] == 4 and got["seg_kendall_item"] == got["seg_kendall_item"]
    assert any("4 item(s) scored for fewer than 3 systems" in n for n in json.loads(out)["notes"])
