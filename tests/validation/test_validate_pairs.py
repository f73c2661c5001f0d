"""validate compares each language pair of the ratings on its own (issue 43 item 1): a pair is a selection,
never pooled; --lp selects; ratings without pairs behave as before."""

from __future__ import annotations

import json

import numpy as np
import pytest

from polyjudge.api.validation import ValidateConfig, validate, validate_pairs
from polyjudge.cli.main import main

TASK = {"name": "tox", "options": ["Very toxic", "Toxic", "Not toxic"],
        "response_sets": [["Very toxic"], ["Toxic"], ["Not toxic"], ["Very toxic", "Toxic"],
                          ["Toxic", "Not toxic"], ["Very toxic", "Not toxic"],
                          ["Very toxic", "Toxic", "Not toxic"]]}
SETS = ["A", "B", "C", "AB", "BC", "AC", "ABC"]
PAIRS = ("zh-en", "en-de")


def _lines(rows):
    return "\n".join(json.dumps(r) for r in rows) + "\n"


def _files(tmp_path, *, pair_key=lambda lp: {"lp": lp}):
    """Humans and two judges over 40 items, 20 per pair; the humans' lines name the pair, the judges' do not.
    Per pair, the same files without the other pair's items and without the pair (the reference)."""
    rng = np.random.default_rng(1)
    (tmp_path / "task.json").write_text(json.dumps(TASK))
    rows: dict[str, list] = {"human": [], "good": [], "bad": []}
    for i in range(40):
        lp = PAIRS[i // 20]
        p = rng.dirichlet([1, 1, 1]) if lp == "zh-en" else rng.dirichlet([4, 1, 1])
        rows["human"].append({"item": f"i{i}", **pair_key(lp),
                              "forced_choice": ["ABC"[x] for x in rng.choice(3, 5, p=p)]})
        rows["good"].append({"item": f"i{i}", "forced_choice": ["ABC"[x] for x in rng.choice(3, 10, p=p)],
                             "response_sets": [SETS[x] for x in rng.choice(3, 10, p=p)]})
        rows["bad"].append({"item": f"i{i}", "fc_counts": [0, 0, 10], "rs_counts": [0, 0, 10, 0, 0, 0, 0]})
    for name, rs in rows.items():
        (tmp_path / f"{name}.jsonl").write_text(_lines(rs))
        for k, lp in enumerate(PAIRS):
            part = [{key: v for key, v in r.items() if key not in ("lp", "src_lang", "tgt_lang")}
                    for r in rs[20 * k: 20 * (k + 1)]]
            (tmp_path / f"{name}-{lp}.jsonl").write_text(_lines(part))
    return tmp_path


def _config(d, suffix="", **kw):
    return ValidateConfig(task=d / "task.json", human=d / f"human{suffix}.jsonl",
                          judges=[("good", d / f"good{suffix}.jsonl"), ("bad", d / f"bad{suffix}.jsonl")],
                          betas=(0.0, 0.3), taus=(0.3, 0.5), **kw)


def _same(a: dict, b: dict) -> None:
    a, b = dict(a), dict(b)
    a.pop("lp", None)
    b.pop("lp", None)
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_each_pair_is_compared_on_its_own(tmp_path):
    d = _files(tmp_path)
    reports = validate_pairs(_config(d))
    assert [r.lp for r in reports] == ["en-de", "zh-en"]
    for r in reports:
        assert r.n_items == 20
        # the same numbers as the pair's items alone, in a file without pairs
        _same(r.to_json(), validate(_config(d, f"-{r.lp}")).to_json())


def test_pairs_from_src_lang_and_tgt_lang(tmp_path):
    d = _files(tmp_path, pair_key=lambda lp: dict(zip(("src_lang", "tgt_lang"), lp.split("-"), strict=True)))
    (zh,) = validate_pairs(_config(d, lps=("zh-en",)))
    assert zh.lp == "zh-en"
    _same(zh.to_json(), validate(_config(d, "-zh-en")).to_json())


def test_validate_of_several_pairs_asks_for_one(tmp_path):
    d = _files(tmp_path)
    from polyjudge.data.errors import InputError

    with pytest.raises(InputError, match="2 language pairs"):
        validate(_config(d))
    assert validate(_config(d, lps=("en-de",))).lp == "en-de"


def _cli(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def _args(d):
    return ["validate", "--task", str(d / "task.json"), "--human", str(d / "human.jsonl"),
            "--judge", f"good={d / 'good.jsonl'}", "--judge", f"bad={d / 'bad.jsonl'}", "--beta", "0,0.3"]


def test_cli_tables_are_named_by_pair_and_lp_selects(tmp_path, capsys):
    d = _files(tmp_path)
    code, out, err = _cli(_args(d), capsys)
    assert code == 0, err
    assert "language pair en-de: task tox" in out and "language pair zh-en: task tox" in out
    assert "20 items" in out and "40 items" not in out
    code, out, err = _cli([*_args(d), "--lp", "zh-en", "--format", "tsv"], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("lp\tbeta\ttau\tdefinition")
    assert {line.split("\t")[0] for line in lines[1:]} == {"zh-en"}
    code, out, err = _cli([*_args(d), "--format", "json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert [r["lp"] for r in doc["language_pairs"]] == ["en-de", "zh-en"]
    assert [r["n_items"] for r in doc["language_pairs"]] == [20, 20]


def test_cli_lp_not_in_the_ratings_exits_2(tmp_path, capsys):
    d = _files(tmp_path)
    code, out, err = _cli([*_args(d), "--lp", "de-fr"], capsys)
    assert code == 2 and out == ""
    assert "'de-fr'" in err and "en-de, zh-en" in err and len(err.strip().splitlines()) == 1


def test_tsv_ratings_with_an_lp_column(tmp_path, capsys):
    d = _files(tmp_path)
    lines = ["item\tprotocol\tanswer\tlp"]
    for r in (json.loads(x) for x in (d / "human.jsonl").read_text().splitlines()):
        lines += [f"{r['item']}\tfc\t{a}\t{r['lp']}" for a in r["forced_choice"]]
    (d / "human.tsv").write_text("\n".join(lines) + "\n")
    args = [a if a != str(d / "human.jsonl") else str(d / "human.tsv") for a in _args(d)]
    code, out, err = _cli([*args, "--lp", "en-de", "--format", "json"], capsys)
    assert code == 0, err
    ref = validate(ValidateConfig(task=d / "task.json", human=d / "human-en-de.jsonl",
                                  judges=[("good", d / "good-en-de.jsonl"), ("bad", d / "bad-en-de.jsonl")],
                                  betas=(0.0, 0.3)))
    _same(json.loads(out), ref.to_json())


def test_an_item_with_two_pairs_exits_2(tmp_path, capsys):
    d = _files(tmp_path)
    good = [json.loads(x) for x in (d / "good.jsonl").read_text().splitlines()]
    good[0]["lp"] = "en-de"  # the humans say i0 is zh-en
    (d / "good.jsonl").write_text(_lines(good))
    code, _, err = _cli(_args(d), capsys)
    assert code == 2 and "'i0'" in err


def test_ratings_without_pairs_print_as_before(tmp_path, capsys):
    d = _files(tmp_path)
    args = ["validate", "--task", str(d / "task.json"), "--human", str(d / "human-zh-en.jsonl"),
            "--judge", f"good={d / 'good-zh-en.jsonl'}", "--beta", "0"]
    code, out, err = _cli([*args, "--format", "json"], capsys)
    assert code == 0, err
    assert "lp" not in json.loads(out) and "language_pairs" not in json.loads(out)
    code, out, _ = _cli([*args, "--format", "tsv"], capsys)
    assert out.startswith("beta\ttau\tdefinition")
    code, out, _ = _cli(args, capsys)
    assert out.startswith("task tox")
    # one --lp labels ratings without pairs (as meta-eval); two exit 2
    code, out, _ = _cli([*args, "--lp", "zh-en"], capsys)
    assert code == 0 and out.startswith("language pair zh-en: task tox")
    code, _, err = _cli([*args, "--lp", "zh-en", "--lp", "en-de"], capsys)
    assert code == 2 and "name none" in err


def test_a_run_directory_lends_its_items_pairs(tmp_path, capsys):
    """Humans without pairs, a judge's run whose items are de-en (judge --lp de-en) and zh-en: one table
    per pair, each of that pair's items."""
    d = _files(tmp_path)
    judgments, items = [], []
    for i in range(40):
        lp = PAIRS[i // 20]
        items.append({"item_index": i, "src": "s", "tgt": "t", "src_lang": lp[:2], "tgt_lang": lp[3:],
                      "extra": {}})
        for r, x in enumerate((0, 2, 2)):
            judgments.append({"item_index": i, "system": None, "doc_id": None, "seg_id": None, "run_index": r,
                              "judge": "m", "status": "ok", "error": None, "raw_text": "ABC"[x],
                              "annotation": {"option": TASK["options"][x], "letter": "ABC"[x], "index": x,
                                             "item_id": f"i{i}"}, "score": None})
    run = d / "run"
    run.mkdir()
    (run / "judgments.jsonl").write_text(_lines(judgments))
    (run / "items.jsonl").write_text(_lines(items))
    human = [{"item": f"i{i}", "forced_choice": ["A", "C"]} for i in range(40)]
    (d / "plain.jsonl").write_text(_lines(human))
    code, out, err = _cli(["validate", "--task", str(d / "task.json"), "--human", str(d / "plain.jsonl"),
                           "--judge", f"run={run}", "--judge", f"bad={d / 'bad.jsonl'}", "--beta", "0",
                           "--format", "json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert [(r["lp"], r["n_items"]) for r in doc["language_pairs"]] == [("en-de", 20), ("zh-en", 20)]


def test_the_report_reads_a_validation_of_several_pairs(tmp_path, capsys):
    """report --validation takes validate's JSON of several pairs: every pair's tables, named by it."""
    from polyjudge.validation.selection import read_selection, read_validation

    d = _files(tmp_path)
    out = d / "validation.json"
    code, _, err = _cli([*_args(d), "--format", "json", "-o", str(out)], capsys)
    assert code == 0, err
    doc = json.loads(out.read_text())
    typed = read_validation(doc, str(out))
    per_pair = [read_selection(r, str(out)).results() for r in doc["language_pairs"]]
    assert len(typed.selection) == sum(len(p.selection) for p in per_pair) > 0
    assert {t.label.split(":")[0] for t in typed.selection} == {"en-de", "zh-en"}
    assert ("language pair", "zh-en") in typed.notes
    code, _, err = _cli(["report", "--validation", str(out), "-o", str(d / "r.html")], capsys)
    assert code == 0, err
    html = (d / "r.html").read_text()
    assert "en-de: " in html and "zh-en: " in html
