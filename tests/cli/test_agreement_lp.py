"""agreement --lp: a language pair is a selection of the ratings, never a label (issue 43 item 1)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score

from polyjudge.cli.agreement_cmd import agreement
from polyjudge.cli.main import main


def _exit(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    return exc.value.code, capsys.readouterr().err

HUMAN = {"zh-en": [0, 1, 2, 2, 1, 0, 2, 1], "en-de": [2, 2, 1, 0, 0, 1, 2, 2]}
JUDGE = {"zh-en": [0, 1, 2, 1, 1, 0, 2, 2], "en-de": [0, 2, 2, 1, 0, 0, 1, 2]}


def _ratings(path):
    rows = []
    for lp in HUMAN:
        for i, (h, j) in enumerate(zip(HUMAN[lp], JUDGE[lp], strict=True)):
            item = f"{lp}-{i}"
            rows.append({"item_id": item, "language": lp, "task": "t", "metric": "m", "rater": "h1",
                         "kind": "human", "rating": h})
            rows.append({"item_id": item, "language": lp, "task": "t", "metric": "m", "rater": "j",
                         "kind": "judge", "rating": j})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _rows(out: str) -> list[dict]:
    return json.loads(out)["rows"]


def test_lp_selects_one_pair_and_its_kappa_is_that_pairs(tmp_path):
    ratings = _ratings(tmp_path / "r.jsonl")
    res = CliRunner().invoke(agreement, [str(ratings), "--lp", "zh-en", "--format", "json"])
    assert res.exit_code == 0, res.output
    rows = _rows(res.output)
    assert [r["language"] for r in rows] == ["zh-en"]
    assert rows[0]["n_items"] == 8
    assert rows[0]["kappa_judge"] == pytest.approx(cohen_kappa_score(HUMAN["zh-en"], JUDGE["zh-en"]))
    dist = json.loads(res.output)["class_distribution"]
    assert {c["language"] for c in dist} == {"zh-en"} and sum(c["count"] for c in dist) == 8


def test_every_pair_on_its_own_by_default(tmp_path):
    ratings = _ratings(tmp_path / "r.jsonl")
    res = CliRunner().invoke(agreement, [str(ratings), "--format", "json"])
    assert res.exit_code == 0, res.output
    by_lp = {r["language"]: r for r in _rows(res.output)}
    assert set(by_lp) == {"zh-en", "en-de"}
    for lp, row in by_lp.items():
        assert row["kappa_judge"] == pytest.approx(cohen_kappa_score(HUMAN[lp], JUDGE[lp]))


def test_lp_repeated_selects_several(tmp_path):
    ratings = _ratings(tmp_path / "r.jsonl")
    res = CliRunner().invoke(agreement, [str(ratings), "--lp", "en-de", "--lp", "zh-en", "--format", "json"])
    assert res.exit_code == 0, res.output
    assert {r["language"] for r in _rows(res.output)} == {"zh-en", "en-de"}


def test_lp_not_in_the_ratings_exits_2_naming_those_present(tmp_path, capsys):
    ratings = _ratings(tmp_path / "r.jsonl")
    code, err = _exit(["agreement", str(ratings), "--lp", "de-fr"], capsys)
    assert code == 2
    assert "'de-fr'" in err and "en-de, zh-en" in err and "Traceback" not in err


def test_ratings_without_languages_are_labelled_by_one_lp(tmp_path, capsys):
    """Ratings that name no language are one comparison, labelled by --lp (as meta-eval); two pairs exit 2."""
    path = tmp_path / "r.jsonl"
    rows = [{"item_id": "a", "rater": "h", "kind": "human", "rating": 1},
            {"item_id": "a", "rater": "j", "kind": "judge", "rating": 1}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    res = CliRunner().invoke(agreement, [str(path), "--lp", "zh-en", "--format", "json"])
    assert res.exit_code == 0, res.output
    assert [r["language"] for r in _rows(res.output)] == ["zh-en"]
    code, err = _exit(["agreement", str(path), "--lp", "zh-en", "--lp", "en-de"], capsys)
    assert code == 2 and "name no language" in err


def test_pool_language_names_the_pooled_pairs(tmp_path):
    """--pool language pools the class distribution and says so: its language is 'pooled: en-de+zh-en' (was '*');
    the agreement rows stay per pair."""
    ratings = _ratings(tmp_path / "r.jsonl")
    res = CliRunner().invoke(agreement, [str(ratings), "--pool", "language", "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert {c["language"] for c in doc["class_distribution"]} == {"pooled: en-de+zh-en"}
    assert sum(c["count"] for c in doc["class_distribution"]) == 16
    assert {r["language"] for r in doc["rows"]} == {"zh-en", "en-de"}
    res = CliRunner().invoke(agreement, [str(ratings), "--pool", "language", "--lp", "zh-en", "--format", "json"])
    assert {c["language"] for c in json.loads(res.output)["class_distribution"]} == {"zh-en"}
