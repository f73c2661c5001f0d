"""One expected-score run against N sampled runs: ties, ranking stability, SPA and acc-t."""

import math
from itertools import combinations

import numpy as np
import pytest
from scipy import stats

from polyjudge.metaeval.expected import compare_expected
from polyjudge.metaeval.matrices import ScoreMatrix
from polyjudge.rundir import RunScores

SYSTEMS = ["A", "B", "C"]
SEGS = ["1", "2", "3", "4"]
# sampled runs: integer scores, 3 runs; per system A > B > C on average, with run noise
SAMPLED = {
    "A": [[90, 80, 90], [70, 80, 80], [80, 80, 90], [60, 70, 60]],
    "B": [[80, 80, 70], [70, 60, 70], [80, 90, 80], [50, 60, 60]],
    "C": [[60, 70, 60], [70, 60, 60], [70, 70, 80], [40, 50, 40]],
}
EXPECTED = {"A": [86.5, 78.2, 84.1, 63.3], "B": [76.4, 66.6, 83.2, 56.7], "C": [63.9, 64.8, 72.5, 44.1]}


def run_scores(table, judge="j"):
    systems = [s for s in SYSTEMS for _ in SEGS]
    rows = [np.atleast_1d(np.asarray(table[s][k], dtype=float)) for s in SYSTEMS for k in range(len(SEGS))]
    return RunScores(judge, systems, ["d"] * len(systems), SEGS * len(SYSTEMS), np.vstack(rows))


def tie_share(values):
    pairs = list(combinations(values, 2))
    return sum(a == b for a, b in pairs) / len(pairs)


def test_ties_and_ranking_against_hand_computed_values():
    cmp = compare_expected(run_scores(EXPECTED), run_scores(SAMPLED), ["mean-all", "max"])
    ways = {w.name: w for w in cmp.ways}
    assert list(ways) == ["expected", "one sampled run", "mean-all of 3 runs", "max of 3 runs"]
    assert cmp.n_items == 12 and cmp.n_sampled_runs == 3 and not cmp.human
    assert ways["expected"].tie_rate == 0.0 and ways["expected"].distinct == 12
    runs = [[SAMPLED[s][k][r] for s in SYSTEMS for k in range(4)] for r in range(3)]
    assert ways["one sampled run"].tie_rate == pytest.approx(np.mean([tie_share(r) for r in runs]))
    # reference: per-system mean over segments and runs
    ref = [np.mean(SAMPLED[s]) for s in SYSTEMS]
    exp_means = [np.mean(EXPECTED[s]) for s in SYSTEMS]
    assert ways["expected"].tau_vs_reference == pytest.approx(stats.kendalltau(exp_means, ref).statistic)
    single = [stats.kendalltau([np.mean([SAMPLED[s][k][r] for k in range(4)]) for s in SYSTEMS], ref).statistic
              for r in range(3)]
    assert ways["one sampled run"].tau_vs_reference == pytest.approx(np.mean(single))
    assert ways["one sampled run"].tau_min == pytest.approx(min(single))
    assert ways["mean-all of 3 runs"].tau_vs_reference == pytest.approx(1.0)
    assert ways["expected"].same_best == 1.0 and math.isnan(ways["expected"].tau_between_runs)
    assert "expected" in cmp.to_text() and "SPA" not in cmp.to_text()


def test_with_human_scores_spa_and_acc_t_are_one_for_a_perfect_judge_and_items_are_matched():
    human_vals = np.array([[EXPECTED[s][k] for k in range(4)] for s in SYSTEMS])
    human = ScoreMatrix(tuple(SYSTEMS), tuple(SEGS), human_vals)
    shuffled = run_scores(EXPECTED)
    order = np.random.default_rng(0).permutation(12)  # item order must not matter
    shuffled = RunScores("j", [shuffled.systems[i] for i in order], [shuffled.doc_ids[i] for i in order],
                         [shuffled.seg_ids[i] for i in order], shuffled.scores[order])
    cmp = compare_expected(shuffled, run_scores(SAMPLED), ["mean-all"], human=human)
    ways = {w.name: w for w in cmp.ways}
    assert ways["expected"].spa == pytest.approx(1.0) and ways["expected"].acc_t == pytest.approx(1.0)
    # the sampled runs tie within segments where the humans do not: acc-t below 1
    assert ways["one sampled run"].acc_t < 1.0
    assert "acc-t" in cmp.to_text()


def test_no_common_items_is_an_error():
    other = run_scores(EXPECTED)
    other = RunScores("j", other.systems, ["x"] * 12, other.seg_ids, other.scores)
    with pytest.raises(ValueError, match="no items in common"):
        compare_expected(other, run_scores(SAMPLED))


def _write_run(out, table, *, runs, expected):
    from polyjudge.data.records import Item
    from polyjudge.engine.result import RunResult
    from polyjudge.protocols import get_protocol
    from polyjudge.protocols.base import ProtocolOptions
    from polyjudge.rundir import OK, Manifest, RunConfig
    from tests.helpers.judgments import judgment_at

    items = [Item(src_lang="en", tgt_lang="de",
                  src="s", tgt=f"t{s}{k}", system=s, doc_id="d", seg_id=seg) for s in SYSTEMS
             for k, seg in enumerate(SEGS)]
    options = {"score_mode": "expected"} if expected else {}
    judgments = [judgment_at(items, i, r, "judge", OK, None, "", {"score": 0},
                             float(np.atleast_1d(table[it.system][k])[r]))
                 for i, it in enumerate(items) for k in [SEGS.index(it.seg_id)] for r in range(runs)]
    manifest = Manifest(protocol="da", config=RunConfig(runs=runs, aggregator="mean", protocol_options=options))
    RunResult(items, ["judge"], get_protocol("da", ProtocolOptions(extra=options)), runs, "mean", judgments,
              manifest=manifest).write(out)
    return out


def test_the_variability_command_compares_an_expected_run_with_human_scores(tmp_path, capsys):
    import json

    from polyjudge.cli.main import main

    smp = _write_run(tmp_path / "smp", SAMPLED, runs=3, expected=False)
    exp = _write_run(tmp_path / "exp", EXPECTED, runs=1, expected=True)
    human = tmp_path / "human.tsv"
    human.write_text("system\tseg_id\tscore\n" + "".join(f"{s}\t{seg}\t{EXPECTED[s][k]}\n" for s in SYSTEMS
                                                          for k, seg in enumerate(SEGS)))

    def run(*args):
        with pytest.raises(SystemExit) as exc:
            main(["variability", str(smp), *map(str, args)])
        return exc.value.code, capsys.readouterr()

    code, got = run("--expected", exp, "--human", human, "--format", "json")
    assert code == 0, got.err
    (cmp,) = json.loads(got.out)
    ways = {w["name"]: w for w in cmp["ways"]}
    assert cmp["human"] and cmp["n_items"] == 12 and ways["expected"]["tie_rate"] == 0.0
    assert ways["expected"]["spa"] == pytest.approx(1.0) and ways["expected"]["acc_t"] == pytest.approx(1.0)
    assert "mean of 3 runs" in ways and ways["mean of 3 runs"]["requests"] == 3
    code, got = run("--expected", exp)
    assert code == 0 and "expected" in got.out and "tied pairs" not in got.out
    code, got = run("--expected", smp)  # the sampled run given as the expected one
    assert code == 2 and "--score-mode expected" in got.err
