"""A language pair is a selection, never a label (issue 43, item 1).

A run directory and a human file that hold three language pairs (en-de, zh-en,
de-fr: 6 + 6 + 4 cells) are meta-evaluated per pair; ``--lp`` selects pairs that
are present, a pair that is not is exit 2 naming those that are, and pooling
pairs is asked for (``pool_lps``) and named in the table.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from polyjudge.api import MetaEvalConfig, meta_eval
from polyjudge.cli.main import main
from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from polyjudge.engine.result import RunResult
from polyjudge.protocols import get_protocol
from polyjudge.rundir import OK
from tests.helpers.judgments import judgment_at

# (src, tgt, segments): 2 systems x 3 + 2 x 3 + 2 x 2 = 16 cells; seg_ids are unique over the pairs
PAIRS = (("en", "de", 3), ("zh", "en", 3), ("de", "fr", 2))
SYSTEMS = ("A", "B")
# The judge agrees with the humans on zh-en, and scores the other pairs on another scale.
HUMAN = {"en-de": [[70, 40, 90], [60, 80, 50]], "zh-en": [[20, 50, 35], [45, 10, 60]],
         "de-fr": [[55, 75], [85, 30]]}
JUDGE = {"en-de": [[80, 70, 60], [90, 75, 65]], "zh-en": [[25, 55, 30], [40, 15, 70]],
         "de-fr": [[5, 95], [60, 10]]}


def _items() -> list[tuple[str, Item, float, float]]:
    out = []
    seg = 0
    for src, tgt, n in PAIRS:
        lp = f"{src}-{tgt}"
        for k in range(n):
            seg += 1
            for s, system in enumerate(SYSTEMS):
                item = Item(src=f"s{seg}", tgt=f"t{seg}{system}", system=system, doc_id=f"doc-{lp}",
                            seg_id=str(seg), src_lang=src, tgt_lang=tgt)
                out.append((lp, item, float(HUMAN[lp][s][k]), float(JUDGE[lp][s][k])))
    return out


def write_three_pairs(root: Path) -> tuple[Path, Path]:
    """A run directory (through the run's own writer) and a human TSV with an ``lp`` column."""
    rows = _items()
    items = [it for _, it, _, _ in rows]
    judgments = [judgment_at(items, i, 0, "j", OK, None, "", {"score": m}, m) for i, (*_, m) in enumerate(rows)]
    run = root / "run"
    RunResult(items, ["j"], get_protocol("da"), 1, "mean", judgments).write(run)
    human = root / "human.tsv"
    human.write_text("lp\tsystem\tdoc_id\tseg_id\tscore\n" + "".join(
        f"{lp}\t{it.system}\t{it.doc_id}\t{it.seg_id}\t{h}\n" for lp, it, h, _ in rows))
    return run, human


def _reference(lps: set[str]) -> float:
    rows = [(h, m) for lp, _, h, m in _items() if lp in lps]
    return float(sps.pearsonr([h for h, _ in rows], [m for _, m in rows]).statistic)


@pytest.fixture()
def three(tmp_path: Path) -> tuple[Path, Path]:
    return write_three_pairs(tmp_path)


def _config(run: Path, human: Path, **kw: object) -> MetaEvalConfig:
    return MetaEvalConfig(human=human, metrics={"judge": run}, task=None, k=0, **kw)  # type: ignore[arg-type]


def test_lp_selects_the_pair_it_names(three: tuple[Path, Path]) -> None:
    run, human = three
    result = meta_eval(_config(run, human, lps=("zh-en",)))
    assert list(result.per_lp) == ["zh-en"]
    got = result.per_lp["zh-en"]["judge"]["seg_pearson"]
    assert got == pytest.approx(_reference({"zh-en"}), abs=1e-12)
    assert round(got, 4) == 0.9540  # all 16 cells pooled, as --lp zh-en printed before, give 0.6597
    assert round(_reference({"en-de", "zh-en", "de-fr"}), 4) == 0.6597


def test_every_pair_is_evaluated_separately_and_named(three: tuple[Path, Path]) -> None:
    run, human = three
    result = meta_eval(_config(run, human))
    assert sorted(result.per_lp) == ["de-fr", "en-de", "zh-en"]
    for lp, by_metric in result.per_lp.items():
        assert by_metric["judge"]["seg_pearson"] == pytest.approx(_reference({lp}), abs=1e-12)
    text = result.format("text")
    assert "unnamed pair" not in text and all(lp in text for lp in ("de-fr", "en-de", "zh-en"))


def test_several_lps_select_several_pairs(three: tuple[Path, Path]) -> None:
    run, human = three
    result = meta_eval(_config(run, human, lps=("zh-en", "en-de")))
    assert sorted(result.per_lp) == ["en-de", "zh-en"]


def test_a_pair_not_present_is_an_input_error_naming_the_present_ones(three: tuple[Path, Path]) -> None:
    run, human = three
    with pytest.raises(InputError, match="de-fr, en-de, zh-en") as err:
        meta_eval(_config(run, human, lps=("en-ja",)))
    assert "en-ja" in str(err.value) and err.value.field == "lp"


def test_pooling_is_explicit_and_named(three: tuple[Path, Path]) -> None:
    run, human = three
    result = meta_eval(_config(run, human, lps=("en-de", "zh-en"), pool_lps=True))
    (name,) = result.per_lp
    assert name == "pooled: en-de+zh-en"
    assert result.per_lp[name]["judge"]["seg_pearson"] == pytest.approx(_reference({"en-de", "zh-en"}), abs=1e-12)
    every = meta_eval(_config(run, human, pool_lps=True))
    (name,) = every.per_lp
    assert name == "pooled: de-fr+en-de+zh-en"
    assert every.per_lp[name]["judge"]["seg_pearson"] == pytest.approx(_reference({"de-fr", "en-de", "zh-en"}),
                                                                       abs=1e-12)


def test_a_single_pair_run_is_named_by_its_pair(tmp_path: Path) -> None:
    run, human = write_three_pairs(tmp_path)
    lines = human.read_text().splitlines(keepends=True)
    only = tmp_path / "zh-en.tsv"  # no lp column: the run's items name the pair
    only.write_text("system\tdoc_id\tseg_id\tscore\n" + "".join(
        line.split("\t", 1)[1] for line in lines[1:] if line.startswith("zh-en")))
    result = meta_eval(_config(run, only))
    assert list(result.per_lp) == ["zh-en"]
    assert result.per_lp["zh-en"]["judge"]["seg_pearson"] == pytest.approx(_reference({"zh-en"}), abs=1e-12)


def _main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[object, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(["meta-eval", *argv])
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_cli_tables_are_named_by_pair_and_a_missing_pair_exits_2(three: tuple[Path, Path],
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    run, human = three
    base = ["--human", str(human), "--metric", f"judge={run}", "--task", "none", "-k", "0"]
    code, out, err = _main([*base, "--lp", "zh-en", "--format", "json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert list(doc["language_pairs"]) == ["zh-en"]
    assert doc["language_pairs"]["zh-en"]["judge"]["seg_pearson"] == pytest.approx(_reference({"zh-en"}))
    code, out, err = _main([*base, "--lp", "en-ja"], capsys)
    assert code == 2 and out == "" and "'en-ja' is not in the inputs (they hold de-fr, en-de, zh-en)" in err
    code, out, err = _main([*base, "--pool-lps"], capsys)
    assert code == 0, err
    assert "pooled: de-fr+en-de+zh-en:" in out and "unnamed" not in out


def test_pairs_of_the_run_without_a_human_lp_column(three: tuple[Path, Path], tmp_path: Path) -> None:
    run, human = three
    plain = tmp_path / "plain.tsv"  # the human file without its lp column: the run's items tell the pairs
    plain.write_text("".join(line.split("\t", 1)[1] for line in human.read_text().splitlines(keepends=True)))
    result = meta_eval(_config(run, plain, lps=("de-fr",)))
    assert result.per_lp["de-fr"]["judge"]["seg_pearson"] == pytest.approx(_reference({"de-fr"}), abs=1e-12)


def test_human_rows_the_run_does_not_hold_are_left_out_when_the_run_names_the_pairs(
        three: tuple[Path, Path], tmp_path: Path) -> None:
    """A human file without pair columns that also scores a segment the run never judged (a WMT MQM file
    holds every system of the campaign): that row belongs to no pair and is left out, not an error."""
    run, human = three
    plain = tmp_path / "plain.tsv"
    plain.write_text("".join(line.split("\t", 1)[1] for line in human.read_text().splitlines(keepends=True))
                     + "other-system\tdoc-x\t99\t50.0\n")
    result = meta_eval(_config(run, plain, lps=("zh-en",)))
    assert result.per_lp["zh-en"]["judge"]["seg_pearson"] == pytest.approx(_reference({"zh-en"}), abs=1e-12)


# ------------------------------------------------------------------ compare-systems


def test_compare_systems_compares_each_pair_of_the_run(three: tuple[Path, Path], capsys) -> None:
    from polyjudge.api.systems import CompareSettings, CompareSystemsConfig, compare_systems, compare_systems_per_lp

    run, human = three
    settings = CompareSettings(n_boot=50, n_perm=50, seed=1)
    per_lp = compare_systems_per_lp(run, CompareSystemsConfig(human=human, settings=settings))
    assert [r.lp for r in per_lp] == ["de-fr", "en-de", "zh-en"]
    for r in per_lp:
        a, b = (np.array(JUDGE[str(r.lp)][k], dtype=float) for k in (0, 1))
        (pair,) = r.judge.pairs
        want = sps.ttest_rel(a, b).pvalue
        assert pair.p_ttest == pytest.approx(want, rel=1e-9)  # on the pair's own segments
        assert {s.system: s.mean for s in r.judge.systems} == pytest.approx({"A": a.mean(), "B": b.mean()})
    one = compare_systems(run, CompareSystemsConfig(lps=("zh-en",), settings=settings))
    assert one.lp == "zh-en" and one.judge.n_segments == 3 and one.to_dict()["lp"] == "zh-en"
    with pytest.raises(InputError, match="3 language pairs"):
        compare_systems(run, CompareSystemsConfig(settings=settings))
    pooled = compare_systems(run, CompareSystemsConfig(pool_lps=True, settings=settings))
    assert pooled.lp == "pooled: de-fr+en-de+zh-en" and pooled.judge.n_segments == 8
    with pytest.raises(SystemExit) as exc:
        main(["compare-systems", str(run), "--lp", "en-ja"])
    assert exc.value.code == 2 and "they hold de-fr, en-de, zh-en" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["compare-systems", str(run), "--bootstrap", "20", "-k", "20", "--format", "json"])
    assert exc.value.code == 0
    doc = json.loads(capsys.readouterr().out)
    assert [d["lp"] for d in doc["language_pairs"]] == ["de-fr", "en-de", "zh-en"]


# ------------------------------------------------------------------ span-f1


def _span_inputs(root: Path) -> tuple[Path, Path]:
    """Gold spans (JSONL with lp) of the three pairs, and a span run whose items carry their pairs."""
    items, gold, judgments = [], [], []
    for lp, it, _, _ in _items():
        items.append(it)
        gold.append({"system": it.system, "doc_id": it.doc_id, "seg_id": it.seg_id, "lp": lp,
                     "hypothesis": "0123456789", "spans": [{"start": 0, "end": 4, "severity": "major"}]})
    for i, it in enumerate(items):  # zh-en predicted exactly; the other pairs half wrong
        end = 4 if it.tgt_lang == "en" else 8
        judgments.append(judgment_at(items, i, 0, "j", OK, None, "",
                                     {"spans": [{"start": 0, "end": end, "severity": "major"}], "score": -5}, -5))
    run = root / "spanrun"
    RunResult(items, ["j"], get_protocol("mqm"), 1, "mean", judgments).write(run)
    path = root / "gold.jsonl"
    path.write_text("".join(json.dumps(g) + "\n" for g in gold))
    return path, run


def test_span_f1_lp_selects_a_pair_of_the_gold(tmp_path: Path) -> None:
    from polyjudge.api.spans import SpanF1Config, span_f1

    gold, run = _span_inputs(tmp_path)
    every = span_f1(SpanF1Config(gold=gold, pred=run, set_id=None))
    assert sorted(every.scores.per_lp) == ["de-fr", "en-de", "zh-en"]
    assert every.scores.per_lp["zh-en"].f1 == 1.0 and every.scores.per_lp["en-de"].f1 == pytest.approx(2 / 3)
    one = span_f1(SpanF1Config(gold=gold, pred=run, set_id=None, lp="zh-en"))
    assert list(one.scores.per_lp) == ["zh-en"] and one.avg_f1 == 1.0
    with pytest.raises(InputError, match="they hold de-fr, en-de, zh-en") as err:
        span_f1(SpanF1Config(gold=gold, pred=run, set_id=None, lp="en-ja"))
    assert err.value.field == "lp"


# ------------------------------------------------------------------ readers


def test_score_files_name_their_pairs_in_every_column_shape(tmp_path: Path) -> None:
    from polyjudge.metaeval import readers

    tsv = tmp_path / "h.tsv"
    tsv.write_text("system\tseg_id\tsrc_lang\ttgt_lang\tscore\nA\t1\ten\tde\t1\nA\t2\tzh\ten\t2\n")
    js = tmp_path / "h.jsonl"
    js.write_text('{"system": "A", "seg_id": 1, "langs": "en-cs_CZ", "score": 1}\n'
                  '{"system": "A", "seg_id": 2, "lp": "en-de", "score": 2}\n')
    csv = tmp_path / "h.csv"
    csv.write_text("system,seg_id,score\nA,1,1\n")
    assert readers.read_score_table(tsv).pairs() == ("en-de", "zh-en")
    assert readers.read_score_table(js).pairs() == ("en-cs_CZ", "en-de")
    assert readers.read_score_table(csv).pairs() == ()
    only = readers.read_score_table(tsv).only(("zh-en",))
    assert [row[2] for row in only.rows] == ["2"]
    holed = tmp_path / "holed.tsv"
    holed.write_text("system\tseg_id\tlp\tscore\nA\t1\ten-de\t1\nA\t2\t\t2\n")
    with pytest.raises(InputError, match="names no language pair") as err:
        readers.read_score_table(holed).only(("en-de",))
    assert err.value.line == 3
    with pytest.raises(InputError, match="expected a language pair"):
        bad = tmp_path / "bad.tsv"
        bad.write_text("system\tseg_id\tlp\tscore\nA\t1\tende\t1\n")
        readers.read_score_table(bad)
