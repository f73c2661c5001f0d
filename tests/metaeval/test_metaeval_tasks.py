"""The statistic and preset registries, and ranking tables built from explicit tasks."""

import json
from collections.abc import Iterator, Sequence

import numpy as np
import pytest

from polyjudge.data.errors import InputError
from polyjudge.metaeval import significance as sig
from polyjudge.metaeval import stats
from polyjudge.metaeval.matrices import ScoreMatrix
from polyjudge.metaeval.statistics import (
    STATISTICS,
    Scores,
    get_statistic,
    perm_both,
    register_statistic,
    statistic_titles,
)
from polyjudge.metaeval.tasks import PRESETS, LanguagePair, Task, evaluate, format_result, preset_tasks


def _pair(lp: str, seed: int, S: int = 6, T: int = 30) -> LanguagePair:
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(S, 1)) + rng.normal(size=(S, T))
    h = -np.round(np.clip(-2 * q, 0, None))
    h[:, rng.random(T) < 0.2] = np.nan
    systems = tuple(f"s{i}" for i in range(S))
    items = tuple(str(i) for i in range(T))
    metrics = {name: ScoreMatrix(systems, items, np.round(q + rng.normal(scale=noise, size=q.shape), 1))
               for name, noise in (("Good", 0.5), ("Mid", 1.5), ("Bad", 4.0))}
    return LanguagePair(lp, ScoreMatrix(systems, items, h), metrics)


@pytest.fixture
def scratch_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Statistics registered inside a test disappear after it."""
    STATISTICS.names()  # load the built-ins (and plugins) first
    monkeypatch.setattr(STATISTICS, "_entries", dict(STATISTICS._entries))
    yield


def test_registry_lists_statistics_with_labels():
    names = STATISTICS.names()
    assert names[:5] == ["accuracy", "pearson", "kendall", "acc_t", "spa"]
    labels = {n: STATISTICS.get(n).label for n in names[:5]}
    assert labels == {"accuracy": "acc", "pearson": "pearson", "kendall": "kendall", "acc_t": "acc-t",
                      "spa": "pce"}
    titles = statistic_titles()
    assert {n: titles[n] for n in ("accuracy", "pearson", "acc_t", "spa")} == {
        "accuracy": "pairwise accuracy", "pearson": "pearson", "acc_t": "acc-t", "spa": "SPA"}
    assert get_statistic("pearson").range == (-1.0, 1.0) and get_statistic("spa").range == (0.0, 1.0)
    assert get_statistic("acc_t").levels == ("seg",) and get_statistic("accuracy").pools_lps
    assert all(STATISTICS.describe()[n] for n in names[:5])  # every built-in has a --help line
    assert Task(("en-de",), "seg", "acc_t").label == "seg (acc-t)"
    assert PRESETS.names() == ["wmt23", "wmt24"]


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(InputError, match=r"unknown statistic 'nope'.*accuracy, pearson, kendall, acc_t, spa") as e:
        get_statistic("nope")
    assert e.value.field == "statistic"
    with pytest.raises(InputError, match=r"unknown task preset 'wmt99'.*wmt23, wmt24"):
        preset_tasks("wmt99", ["en-de"])
    pairs = [_pair("en-de", 0)]
    with pytest.raises(InputError, match="unknown statistic 'nope'"):
        evaluate(pairs, None, k=0, tasks=[Task(("en-de",), "seg", "nope")])
    with pytest.raises(InputError, match="supports level"):
        evaluate(pairs, None, k=0, tasks=[Task(("en-de",), "sys", "acc_t")])
    with pytest.raises(InputError, match="unknown language pair"):
        evaluate(pairs, None, k=0, tasks=[Task(("zh-en",), "seg", "acc_t")])
    with pytest.raises(InputError, match="not both"):
        evaluate(pairs, "wmt24", k=0, tasks=[Task(("en-de",), "seg", "acc_t")])
    two = [_pair("en-de", 0), _pair("zh-en", 1)]
    with pytest.raises(InputError, match="one language pair per task"):
        evaluate(two, None, k=0, tasks=[Task(("en-de", "zh-en"), "seg", "pearson")])


def test_explicit_tasks_reproduce_a_preset():
    pairs = [_pair("en-de", 2), _pair("zh-en", 3)]
    want = evaluate(pairs, "wmt23", k=30, seed=1)
    tasks = PRESETS.get("wmt23").build(["en-de", "zh-en"])
    got = evaluate(pairs, None, k=30, seed=1, tasks=tasks)
    a, b = want.to_dict(), got.to_dict()
    assert a.pop("task") == "wmt23" and b.pop("task") is None
    assert a == b


def test_statistic_registered_in_a_test_runs_in_a_ranking(scratch_registry):
    @register_statistic("mean_abs_diff", label="mad", levels=("seg",), range=(-10.0, 0.0))
    def neg_mean_abs_diff(level: str, human: Sequence[Scores], metric: Sequence[Scores]) -> float:
        """Minus the mean absolute difference from the human scores (higher = closer)."""
        h, m = human[0].seg, metric[0].seg
        ok = ~np.isnan(h) & ~np.isnan(m)
        return -float(np.abs(h[ok] - m[ok]).mean())

    assert "mean_abs_diff" in STATISTICS.names()
    assert STATISTICS.describe()["mean_abs_diff"].startswith("Minus the mean absolute difference")
    pairs = [_pair("en-de", 4)]
    res = evaluate(pairs, None, k=40, seed=0, tasks=[Task(("en-de",), "seg", "mean_abs_diff", 2.0),
                                                      Task(("en-de",), "seg", "acc_t", 2.0)])
    mad, acct = res.tasks
    assert mad.task.weight == 0.5 and mad.task.label == "seg (mad)"
    p = pairs[0].prepare()
    for m in res.metrics:
        ok = ~np.isnan(p.human)
        assert mad.value(m) == pytest.approx(-np.abs(p.human[ok] - p.metric_seg[m][ok]).mean())
        assert acct.value(m) == stats.tie_calibration(p.human, p.metric_seg[m]).value
        assert res.average[m] == pytest.approx(0.5 * (mad.value(m) + 10) / 10 + 0.5 * acct.value(m))
    assert mad.comparison.names[0] == "Good" and mad.comparison.p_matrix[0, 2] < 0.05  # default PERM-BOTH
    text = format_result(res, "text")
    assert "seg (mad)" in text and "Significance clusters" in text
    cols = json.loads(format_result(res, "json"))["ranking"][0]["columns"]
    assert [c["statistic"] for c in cols] == ["mean_abs_diff", "acc_t"]


def test_generic_perm_both_equals_the_dedicated_tests():
    ps = [_pair("en-de", 5).prepare(), _pair("zh-en", 6).prepare()]
    human = [p.human_scores() for p in ps]
    a, b = [p.metric_scores("Good") for p in ps], [p.metric_scores("Mid") for p in ps]
    acc = get_statistic("accuracy")
    ref = sig.accuracy_permutation_test([p.human_sys for p in ps], [x.sys for x in a], [x.sys for x in b],
                                        60, 7)
    got = perm_both(acc.value)("sys", human, a, b, 60, 7)
    assert got.delta == ref.delta and np.array_equal(got.null, ref.null)
    pearson = get_statistic("pearson")
    ref = pearson.test("sys", human[:1], a[:1], b[:1], 60, 7)
    got = perm_both(pearson.value)("sys", human[:1], a[:1], b[:1], 60, 7)
    assert got.delta == ref.delta and np.array_equal(got.null, ref.null)
    fast = pearson.test("seg", human[:1], a[:1], b[:1], 300, 7)
    slow = perm_both(pearson.value)("seg", human[:1], a[:1], b[:1], 300, 7)
    assert fast.delta == pytest.approx(slow.delta, abs=1e-12) and abs(fast.p_value - slow.p_value) < 0.1


def test_kendall_matches_the_standard_statistics():
    p = _pair("en-de", 8).prepare()
    k = get_statistic("kendall")
    h, m = [p.human_scores()], [p.metric_scores("Good")]
    assert k.value("sys", h, m) == stats.kendall(p.human_sys, p.metric_sys["Good"])
    assert k.value("seg", h, m) == stats.kendall(p.human, p.metric_seg["Good"], "item", "b")
    res = evaluate([_pair("en-de", 8)], None, k=20, tasks=[Task(("en-de",), "seg", "kendall")])
    assert res.tasks[0].task.label == "seg (kendall)" and res.average["Good"] >= res.average["Bad"]
