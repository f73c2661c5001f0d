"""``polyjudge agreement RUN_DIR... --human RATINGS``: judges read from run
directories (written by ``polyjudge judge`` against the scripted local server),
matched to human ratings by item_id, with continuous scores put into bins."""

from __future__ import annotations

import json

import numpy as np
import pytest

from polyjudge.api import AgreementConfig, agreement
from polyjudge.data.errors import InputError
from tests.helpers.cli import cli
from tests.helpers.openai_server import ScriptedServer

# DA scores the scripted judge gives items 0..9 (item 9: no score, a parse failure)
SCORES = [90, 80, 10, 50, 95, 20, 70, 60, 30, None]
# three human raters on a 0-2 scale for q0..q7 and q9 (q8 has no human rating)
HUMANS = {0: (2, 2, 2), 1: (2, 2, 1), 2: (0, 0, 1), 3: (2, 2, 2), 4: (2, 1, 2), 5: (1, 1, 0), 6: (0, 1, 2),
          7: (1, 1, 1), 9: (2, 2, 2)}


def judge_run(tmp_path, name, shift=0):
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"src": f"source {i}", "tgt": f"cand{i}x", "src_lang": "en", "tgt_lang": "de",
                                         "seg_id": str(i), "item_id": f"q{i}"}) + "\n" for i in range(10)),
                     encoding="utf-8")

    def answer(body):
        user = body["messages"][-1]["content"]
        i = int(user.rsplit("cand", 1)[1].split("x", 1)[0])
        return "no idea" if SCORES[i] is None else json.dumps({"score": min(100, SCORES[i] + shift)})

    with ScriptedServer(answer) as srv:
        assert cli("judge", items, "-p", "da", "-o", tmp_path / name, "--judge", f"openai:m@{srv.base_url}", "-q",
                   "--max-failure-rate", "0.5") == 0
    return tmp_path / name


def write_humans(path, extra_judge=True):
    rows = []
    for i, labels in HUMANS.items():
        for r, v in enumerate(labels):
            rows.append({"item_id": f"q{i}", "language": "en-de", "task": "mt", "metric": "quality",
                         "rater": f"h{r}", "kind": "human", "rating": v})
        if extra_judge:
            rows.append({"item_id": f"q{i}", "language": "en-de", "task": "mt", "metric": "quality",
                         "rater": "gpt", "kind": "judge", "rating": 2})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_run_dir_judge_against_humans_by_hand_and_sklearn(tmp_path, capsys):
    run = judge_run(tmp_path, "run_da")
    ratings = write_humans(tmp_path / "ratings.jsonl")
    capsys.readouterr()
    assert cli("agreement", run, "--human", ratings, "--bins", "33.3,66.7", "--format", "json",
               "-o", tmp_path / "out") == 0
    doc = json.loads(capsys.readouterr().out)
    (src,) = doc["runs"]
    # 10 judged items, 9 with human ratings (q8 has none), 1 of them unscored (t9 gave no score)
    assert (src["n_items"], src["matched"], src["unscored"], src["bucketed"]) == (10, 9, 1, True)
    assert doc["bins"] == {"edges": [33.3, 66.7], "labels": [0.0, 1.0, 2.0]}
    row = next(r for r in doc["rows"] if r["judge"] == src["rater"])
    # binned judge: q0..q7 -> 2 2 0 1 2 0 2 1; human majorities 2 2 0 2 2 1 (none) 1
    assert (row["n_items"], row["n_no_majority"]) == (8, 1)
    assert row["pa_judge"] == pytest.approx(5 / 7)
    h, j = [2, 2, 0, 2, 2, 1, 1], [2, 2, 0, 1, 2, 0, 1]
    sklearn = pytest.importorskip("sklearn.metrics")
    assert row["kappa_judge"] == pytest.approx(sklearn.cohen_kappa_score(h, j, labels=[0, 1, 2]))
    assert row["qwk_judge"] == pytest.approx(sklearn.cohen_kappa_score(h, j, labels=[0, 1, 2], weights="quadratic"))
    krippendorff = pytest.importorskip("krippendorff")
    assert row["alpha_ordinal_judge"] == pytest.approx(
        krippendorff.alpha(np.array([h, j], float), level_of_measurement="ordinal", value_domain=[0, 1, 2]))
    # the file's own judge is still there, and the language comes from the ratings file
    gpt = next(r for r in doc["rows"] if r["judge"] == "gpt")
    assert gpt["language"] == row["language"] == "en-de" and gpt["n_items"] == 9
    assert (tmp_path / "out" / "runs.tsv").read_text().splitlines()[1].split("\t")[3:] == \
        ["10", "9", "1", "True"]


def test_scores_off_the_human_scale_need_bins(tmp_path, capsys):
    run = judge_run(tmp_path, "run_da")
    ratings = write_humans(tmp_path / "ratings.jsonl")
    capsys.readouterr()
    assert cli("agreement", run, ratings) == 2
    err = capsys.readouterr().err
    assert "not on the human scale ('0, 1, 2')" in err and "--bins" in err and "run_da" in err
    assert cli("agreement", ratings, "--bins", "10") == 2  # bins without a run directory
    assert "bins apply to judges read from run directories" in capsys.readouterr().err
    assert cli("agreement", run, "--human", ratings, ratings) == 2  # two ratings files
    assert cli("agreement", run, "--human", ratings, "--bins", "50", "--bin-labels", "0,1,2") == 2
    assert "1 bin edges need 2 labels" in capsys.readouterr().err


def test_two_run_dirs_of_the_same_judge_are_named_by_directory(tmp_path):
    a = judge_run(tmp_path, "T0")
    b = judge_run(tmp_path, "T1", shift=30)  # every score 30 higher: q2 (10 -> 40) and q5, q8 move up a class
    ratings = write_humans(tmp_path / "ratings.jsonl", extra_judge=False)
    res = agreement(AgreementConfig(ratings=ratings, runs=(a, b), bins=(33.3, 66.7)))
    names = sorted(r.judge for r in res.rows)
    assert len(names) == 2 and names[0].startswith("T0:") and names[1].startswith("T1:")
    by = {r.judge.split(":")[0]: r for r in res.rows}
    # T1: binned 2 2 1 2 2 1 2 2 vs majorities 2 2 0 2 2 1 - 1: q2 and q7 now wrong, q3 and q5 right
    assert by["T0"].pa_judge == pytest.approx(5 / 7) and by["T1"].pa_judge == pytest.approx(5 / 7)
    assert by["T1"].judge_mean > by["T0"].judge_mean


def test_items_match_by_item_id_and_clashes_are_refused(tmp_path):
    run = judge_run(tmp_path, "run_da")
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"item_id": "zz", "rater": "h", "kind": "human", "rating": 1}) + "\n")
    with pytest.raises(InputError, match="none of the 10 judged items has a human rating"):
        agreement(AgreementConfig(ratings=other, runs=(run,), bins=(50,)))
    ratings = write_humans(tmp_path / "ratings.jsonl", extra_judge=False)
    with open(ratings, "a", encoding="utf-8") as f:  # the run's judge also appears in the file
        judge_name = agreement(AgreementConfig(ratings=ratings, runs=(run,), bins=(50,))).sources[0].rater
        f.write(json.dumps({"item_id": "q0", "language": "en-de", "task": "mt", "metric": "quality",
                            "rater": judge_name, "kind": "judge", "rating": 1}) + "\n")
    with pytest.raises(InputError, match="both in the ratings file and in a run directory"):
        agreement(AgreementConfig(ratings=ratings, runs=(run,), bins=(50,)))
    # an item rated on two metrics needs --metric
    two = tmp_path / "two.jsonl"
    write_humans(two, extra_judge=False)
    with open(two, "a", encoding="utf-8") as f:
        f.write(json.dumps({"item_id": "q0", "language": "en-de", "task": "mt", "metric": "fluency",
                            "rater": "h0", "kind": "human", "rating": 1}) + "\n")
    with pytest.raises(InputError, match="--metric"):
        agreement(AgreementConfig(ratings=two, runs=(run,), bins=(33.3, 66.7)))
    res = agreement(AgreementConfig(ratings=two, runs=(run,), bins=(33.3, 66.7), metric="quality"))
    assert res.sources[0].matched == 9
    with pytest.raises(InputError, match="no human rating has metric"):
        agreement(AgreementConfig(ratings=two, runs=(run,), bins=(33.3, 66.7), metric="adequacy"))
