"""Error-free meta-evaluation: binary labels against gold from ESA (score >= 85 and no span)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from polyjudge.data.errors import InputError
from polyjudge.metaeval.binary import (
    BinaryCounts,
    error_free_metaeval,
    esa_error_free,
    gold_from_esa,
    parse_label,
    rank_metrics,
    read_binary_labels,
)


def key(seg: int, lp: str = "en-de", system: str = "A") -> tuple[str | None, str, str | None, str]:
    return (lp, system, "d", str(seg))


# ------------------------------------------------------------------ a hand-computed example
# ten segments; gold error-free: 0-3; metric "m" says error-free: 0, 1, 4, 9
GOLD = {key(i): i < 4 for i in range(10)}
M = {key(i): i in (0, 1, 4, 9) for i in range(10)}


def test_hand_computed_example():
    c = BinaryCounts.of([GOLD[k] for k in GOLD], [M[k] for k in GOLD])
    assert (c.tp, c.fp, c.fn, c.tn) == (2, 2, 2, 4)
    assert c.precision == 0.5 and c.recall == 0.5 and c.f1 == 0.5 and c.accuracy == 0.6
    # MCC = (2*4 - 2*2) / sqrt(4 * 4 * 6 * 6) = 4 / 24
    assert c.mcc == pytest.approx(1 / 6, abs=1e-15)


@pytest.mark.filterwarnings("ignore:A single label was found")
def test_statistics_equal_sklearn():
    sk = pytest.importorskip("sklearn.metrics")
    rng = random.Random(7)
    cases = [([True] * 5, [True] * 5), ([False] * 5, [False] * 5), ([True, False] * 3, [False] * 6),
             ([False] * 6, [True, False] * 3)]
    cases += [([rng.random() < 0.3 for _ in range(50)], [rng.random() < q for _ in range(50)]) for q in (0.1, 0.5, 0.9)]
    for gold, pred in cases:
        c = BinaryCounts.of(gold, pred)
        assert c.precision == pytest.approx(sk.precision_score(gold, pred, zero_division=0), abs=1e-12)
        assert c.recall == pytest.approx(sk.recall_score(gold, pred, zero_division=0), abs=1e-12)
        assert c.f1 == pytest.approx(sk.f1_score(gold, pred, zero_division=0), abs=1e-12)
        assert c.accuracy == pytest.approx(sk.accuracy_score(gold, pred), abs=1e-12)
        assert c.mcc == pytest.approx(sk.matthews_corrcoef(gold, pred), abs=1e-12)


def test_gold_rule_threshold_and_spans():
    assert esa_error_free(85, 0) is True and esa_error_free(84.9, 0) is False
    assert esa_error_free(100, 1) is False and esa_error_free(None, 0) is None
    assert esa_error_free(80, 0, threshold=80) is True and esa_error_free(math.nan, 0) is None


# ------------------------------------------------------------------ ranking and per language pair
def test_per_pair_pooled_and_tie_free_ranking():
    gold = {**GOLD, **{key(i, "zh-en"): i % 2 == 0 for i in range(4)}}
    perfect = dict(gold)
    m = {**M, **{key(i, "zh-en"): True for i in range(4)}}
    copy = dict(m)  # the same labels as m: only the name can order them
    r = error_free_metaeval(gold, {"m": m, "perfect": perfect, "copy": copy})
    assert set(r.counts) == {"en-de", "zh-en", "all"}
    assert r.ranking["en-de"] == ["perfect", "copy", "m"]  # tie broken by name, and flagged
    assert r.tie_broken_by_name["en-de"] == [("copy", "m")]
    zh = r.counts["zh-en"]["m"]
    assert (zh.tp, zh.fp, zh.fn, zh.tn) == (2, 2, 0, 0) and zh.mcc == 0.0
    pooled = r.counts["all"]["m"]
    assert (pooled.tp, pooled.fp, pooled.fn, pooled.tn) == (4, 4, 2, 4)
    assert r.rows()[0]["metric"] == "perfect" and r.rows()[0]["rank"] == 1
    json.dumps(r.as_dict())


def test_rank_by_another_statistic_changes_the_order():
    gold = {key(i): i < 5 for i in range(10)}
    says_all = {k: True for k in gold}  # recall 1, MCC 0
    careful = {key(i): i < 2 for i in range(10)}  # precision 1, recall 0.4
    counts = {"all": BinaryCounts.of(gold.values(), says_all.values()),
              "careful": BinaryCounts.of(gold.values(), careful.values())}
    assert rank_metrics(counts, "recall")[0] == ["all", "careful"]
    r = error_free_metaeval(gold, {"all": says_all, "careful": careful})
    assert r.ranking["en-de"] == ["careful", "all"]


def test_missing_labels_policies():
    partial = {k: v for k, v in GOLD.items() if k[3] != "0"}  # seg 0 (error-free) unlabelled
    neg = error_free_metaeval(GOLD, {"p": partial}).counts["en-de"]["p"]
    assert (neg.fn, neg.n) == (1, 10)
    skip = error_free_metaeval(GOLD, {"p": partial}, missing="skip")
    assert skip.counts["en-de"]["p"].n == 9 and skip.missing == {"p": 1}
    with pytest.raises(InputError, match="no label"):
        error_free_metaeval(GOLD, {"p": partial}, missing="error")
    with pytest.raises(InputError, match="matches a gold segment"):
        error_free_metaeval(GOLD, {"p": {key(99): True}})
    with pytest.raises(InputError, match="unknown statistic"):
        error_free_metaeval(GOLD, {"p": partial}, rank_by="auc")


# ------------------------------------------------------------------ reading labels and gold
def test_read_labels_words_numbers_and_cutoff(tmp_path: Path):
    tsv = tmp_path / "m.tsv"
    tsv.write_text("system\tdoc_id\tseg_id\tlp\terror_free\nA\td\t1\ten-de\ttrue\nA\td\t2\ten-de\tNo\n"
                   "A\td\t3\ten-de\t1\nA\td\t4\ten-de\t\n")
    assert read_binary_labels(tsv) == {("en-de", "A", "d", "1"): True, ("en-de", "A", "d", "2"): False,
                                       ("en-de", "A", "d", "3"): True}
    jl = tmp_path / "m.jsonl"
    jl.write_text(json.dumps({"system": "A", "seg_id": 1, "score": 0.7}) + "\n"
                  + json.dumps({"system": "A", "seg_id": 2, "score": 0.2}) + "\n")
    assert read_binary_labels(jl, cutoff=0.5) == {(None, "A", None, "1"): True, (None, "A", None, "2"): False}
    with pytest.raises(InputError, match="not a binary label"):
        read_binary_labels(jl)
    csv = tmp_path / "m.csv"
    csv.write_text("system,seg_id,label\nA,1,true\nA,1,false\n")
    with pytest.raises(InputError, match="labelled twice") as exc:
        read_binary_labels(csv)
    assert exc.value.line == 3
    assert parse_label(True) is True and parse_label("nan") is None
    assert parse_label("1", cutoff=85) is False and parse_label("yes", cutoff=85) is True


def test_gold_from_esa_jsonl(tmp_path: Path):
    esa = tmp_path / "esa.jsonl"
    rows = [
        {"system": "A", "doc_id": "d", "seg_id": "1", "lp": "en-de", "hypothesis": "abcdef", "score": 90,
         "spans": []},
        {"system": "A", "doc_id": "d", "seg_id": "2", "lp": "en-de", "hypothesis": "abcdef", "score": 95,
         "spans": [{"start": 0, "end": 2, "severity": "minor"}]},
        {"system": "A", "doc_id": "d", "seg_id": "3", "lp": "en-de", "hypothesis": "abcdef", "score": 70,
         "spans": []},
    ]
    esa.write_text("".join(json.dumps(r) + "\n" for r in rows))
    gold = gold_from_esa(esa)
    assert gold == {("en-de", "A", "d", "1"): True, ("en-de", "A", "d", "2"): False,
                    ("en-de", "A", "d", "3"): False}
    assert gold_from_esa(esa, threshold=60)[("en-de", "A", "d", "3")] is True


# ------------------------------------------------------------------ the command
def test_error_free_eval_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    from polyjudge.cli.main import main

    esa = tmp_path / "esa.jsonl"
    esa.write_text("".join(json.dumps({"system": "A", "doc_id": "d", "seg_id": str(i), "lp": "en-de",
                                       "hypothesis": "abcdef", "score": 90 if i < 4 else 50, "spans": []}) + "\n"
                           for i in range(10)))
    good = tmp_path / "good.tsv"
    good.write_text("system\tdoc_id\tseg_id\tlabel\n" + "".join(f"A\td\t{i}\t{'true' if i < 4 else 'false'}\n"
                                                                for i in range(10)))
    m = tmp_path / "m.jsonl"
    m.write_text("".join(json.dumps({"system": "A", "doc_id": "d", "seg_id": str(i), "score": 0.9 if i in (0, 1, 4, 9)
                                     else 0.1}) + "\n" for i in range(10)))

    def run(*argv: str) -> tuple[int, str, str]:
        with pytest.raises(SystemExit) as exc:
            main(["error-free-eval", "--gold", str(esa), *argv])
        out = capsys.readouterr()
        return int(exc.value.code or 0), out.out, out.err

    code, out, err = run("--metric", str(good), "--metric", f"m={m}", "--cutoff", "0.5", "--format", "json")
    assert code == 0, err
    res = json.loads(out)
    assert res["ranking"]["en-de"] == ["good", "m"] and res["threshold"] == 85.0
    assert res["scores"]["en-de"]["m"]["mcc"] == pytest.approx(1 / 6)
    code, out, err = run("--metric", f"m={m}", "--cutoff", "0.5", "--format", "tsv")
    assert out.splitlines()[1].split("\t")[:3] == ["en-de", "1", "m"]
    code, _, err = run("--metric", f"m={m}")  # scores without --cutoff are no labels
    assert code == 2 and "not a binary label" in err and "Traceback" not in err
    code, _, err = run("--metric", str(good), "--threshold", "nan")
    assert code == 2 and "threshold must be a finite number" in err


def test_tsv_cells_are_taken_as_written(tmp_path: Path):
    tsv = tmp_path / "q.tsv"
    tsv.write_text('system\tseg_id\tnote\tlabel\nA\t1\t"quoted\tyes\nA\t2\tplain" text\tno\n')
    assert read_binary_labels(tsv) == {(None, "A", None, "1"): True, (None, "A", None, "2"): False}
    bad = tmp_path / "bad.tsv"
    bad.write_text("system\tseg_id\tlabel\nA\t1\n")
    with pytest.raises(InputError, match="expected 3 fields, got 2"):
        read_binary_labels(bad)
