"""``polyjudge agreement``: output formats and the 0.1.0 spellings of its options."""

from __future__ import annotations

import json

from click.testing import CliRunner

from polyjudge.cli.agreement_cmd import agreement


def write_ratings(path):
    rows = []
    for i in range(6):
        for rater, value in (("h1", i % 2), ("h2", i % 2)):
            rows.append({"item_id": f"q{i}", "language": "de", "task": "qa", "metric": "LA", "rater": rater,
                         "kind": "human", "rating": value})
        rows.append({"item_id": f"q{i}", "language": "de", "task": "qa", "metric": "LA", "rater": "gpt",
                     "kind": "judge", "rating": i % 2 if i else 1})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_new_spellings(tmp_path):
    p = tmp_path / "ratings.txt"
    write_ratings(p)
    res = CliRunner().invoke(agreement, [str(p), "--input-format", "jsonl", "--format", "json",
                                         "-o", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["n_ratings"] == 18 and doc["rows"][0]["pa_judge"] == 5 / 6
    assert json.loads((tmp_path / "o" / "agreement.json").read_text()) == doc
    assert res.stderr == ""
    res = CliRunner().invoke(agreement, [str(p), "--input-format", "jsonl", "--format", "tsv"])
    assert res.stdout.startswith("language\ttask\tmetric\tjudge\t")


def test_legacy_spellings_still_work_with_warnings(tmp_path):
    p = tmp_path / "ratings.txt"
    write_ratings(p)
    res = CliRunner().invoke(agreement, [str(p), "--format", "jsonl", "-f", "json", "-O", str(tmp_path / "old")])
    assert res.exit_code == 0, res.output
    assert "--output/-f is deprecated" in res.stderr and "-O is deprecated" in res.stderr
    assert "--input-format jsonl" in res.stderr
    doc = json.loads(res.stdout)
    assert doc["n_ratings"] == 18 and (tmp_path / "old" / "agreement.tsv").is_file()
    res = CliRunner().invoke(agreement, [str(p), "--format", "jsonl", "--output", "tsv"])
    assert res.exit_code == 0 and res.stdout.startswith("language\ttask\tmetric\tjudge\t")
