"""`polyjudge validate` and `polyjudge simulate` end to end on small files."""

from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner

from polyjudge.cli.main import main
from polyjudge.cli.validate_cmd import simulate, validate

TASK = {"name": "tox", "options": ["Very toxic", "Toxic", "Not toxic"],
        "response_sets": [["Very toxic"], ["Toxic"], ["Not toxic"], ["Very toxic", "Toxic"],
                          ["Toxic", "Not toxic"], ["Very toxic", "Not toxic"],
                          ["Very toxic", "Toxic", "Not toxic"]]}
SETS = ["A", "B", "C", "AB", "BC", "AC", "ABC"]


def _files(tmp_path):
    rng = np.random.default_rng(0)
    (tmp_path / "task.json").write_text(json.dumps(TASK))
    hum, good, bad = [], [], []
    runrows = []
    for i in range(40):
        p = rng.dirichlet([1, 1, 1])
        hum.append({"item": f"i{i}", "forced_choice": ["ABC"[x] for x in rng.choice(3, 5, p=p)]})
        good.append({"item": f"i{i}", "forced_choice": ["ABC"[x] for x in rng.choice(3, 10, p=p)],
                     "response_sets": [SETS[x] for x in rng.choice(3, 10, p=p)]})
        bad.append({"item": f"i{i}", "fc_counts": [0, 0, 10], "rs_counts": [0, 0, 10, 0, 0, 0, 0]})
        for r in range(4):
            x = int(rng.choice(3, p=p))
            runrows.append({"item_index": i, "system": None, "doc_id": None, "seg_id": None,
                            "run_index": r, "judge": "m", "status": "ok", "error": None, "raw_text": "ABC"[x],
                            "annotation": {"option": TASK["options"][x], "letter": "ABC"[x], "index": x,
                                           "item_id": f"i{i}"}, "score": None})
            runrows.append({"item_index": i, "run_index": r, "judge": "m", "status": "ok",
                            "annotation": {"set": [TASK["options"][x]], "letters": "ABC"[x],
                                           "set_index": x, "item_id": f"i{i}"}, "score": None})
    runrows.append({"item_index": 0, "run_index": 9, "judge": "m", "status": "parse_failed",
                    "error": "expected one letter", "annotation": None, "score": None})
    for name, rows in (("human.jsonl", hum), ("good.jsonl", good), ("bad.jsonl", bad)):
        (tmp_path / name).write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / "judgments.jsonl").write_text("\n".join(json.dumps(r) for r in runrows) + "\n")
    return tmp_path


def test_validate_text_tsv_json(tmp_path):
    d = _files(tmp_path)
    args = ["--task", str(d / "task.json"), "--human", str(d / "human.jsonl"),
            "--judge", f"good={d / 'good.jsonl'}", "--judge", f"bad={d / 'bad.jsonl'}",
            "--judge", f"run={d / 'run'}", "--beta", "0,0.3", "--tau", "0.3", "--tau", "0.5"]
    r = CliRunner().invoke(validate, args)
    assert r.exit_code == 0, r.output
    assert "hit_rate (h/h)" in r.output and "PPI++ with good" in r.output
    assert "failed judgments left out: run=1" in r.output
    r = CliRunner().invoke(validate, args + ["--format", "tsv"])
    lines = r.output.strip().splitlines()
    assert lines[0].split("\t")[:4] == ["beta", "tau", "definition", "selected"]
    # 2 betas x 2 taus x (19 definitions + 2 oracle rows)
    assert len(lines) == 1 + 4 * 21
    r = CliRunner().invoke(validate, args + ["--format", "json"])
    rep = json.loads(r.output)
    assert rep["n_items"] == 40 and set(rep["judges"]) == {"good", "bad", "run"}
    # the judge that always says "Not toxic" is never selected by hit rate
    assert all(row["selected"] != "bad" for row in rep["rows"] if row["definition"] == "hit_rate (h/h)")


def test_validate_bad_input_exits_2(tmp_path, capsys):
    d = _files(tmp_path)
    (d / "broken.jsonl").write_text('{"item": "i0", "forced_choice": ["Z"]}\n')
    code = None
    try:
        main(["validate", "--task", str(d / "task.json"), "--human", str(d / "broken.jsonl"),
              "--judge", str(d / "good.jsonl")])
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert "broken.jsonl:1" in err and "forced_choice" in err


def test_simulate_command():
    r = CliRunner().invoke(simulate, ["--items", "30", "--judges", "10", "--seeds", "2"])
    assert r.exit_code == 0, r.output
    assert "mse (srs/srs)" in r.output and "1 configuration(s) x 2 seed(s)" in r.output


def test_validate_out_and_simulate_tsv(tmp_path):
    d = _files(tmp_path)
    args = ["--task", str(d / "task.json"), "--human", str(d / "human.jsonl"),
            "--judge", f"good={d / 'good.jsonl'}", "--judge", f"bad={d / 'bad.jsonl'}", "--format", "tsv"]
    printed = CliRunner().invoke(validate, args)
    r = CliRunner().invoke(validate, args + ["-o", str(tmp_path / "v.tsv")])
    assert r.exit_code == 0 and r.stdout == "" and (tmp_path / "v.tsv").read_text() == printed.stdout
    r = CliRunner().invoke(simulate, ["--items", "20", "--judges", "5", "--seeds", "1", "--format", "tsv"])
    assert r.exit_code == 0, r.output
    lines = [x.split("\t") for x in r.stdout.splitlines()]
    assert lines[0][:2] == ["config", "n_options"] and len(lines) == 1 + 9  # nine definitions
