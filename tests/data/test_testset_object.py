"""data.testsets.TestSet: the one owner of mt-metrics-eval's layout (issue 44, item 4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyjudge.data.errors import InputError
from polyjudge.data.testsets import TestSet, TestSetSelection, read_mtme, score_file_name
from polyjudge.metaeval import readers


def _testset(root: Path) -> Path:
    ts = root / "wmt23"
    files = {"sources/en-de.txt": "a\nb\n", "sources/zh-en.txt": "c\n",
             "references/en-de.refA.txt": "A\nB\n", "references/en-de.refB.txt": "A2\nB2\n",
             "system-outputs/en-de/sys1.txt": "x\ny\n", "system-outputs/en-de/refA.txt": "A\nB\n",
             "system-outputs/en-de/synthetic_ref.txt": "s\nt\n", "system-outputs/en-de/sys2.txt": "u\nv\n",
             "documents/en-de.docs": "news d1\nnews d1\n",
             "human-scores/en-de.mqm.seg.score": "sys1\t1\nsys1\t2\n", "human-scores/en-de.mqm.sys.score": "sys1\t1\n",
             "human-scores/zh-en.da-sqm.seg.score": "sys1\t1\n",
             "metric-scores/en-de/COMET-refA.seg.score": "sys1\t1\nsys1\t2\n"}
    for name, text in files.items():
        (ts / name).parent.mkdir(parents=True, exist_ok=True)
        (ts / name).write_text(text)
    return ts


def test_the_layout_and_the_meta_information(tmp_path: Path) -> None:
    root = _testset(tmp_path)
    ts = TestSet.open(root, "en-de")
    assert ts.name == "wmt23" and TestSet.language_pairs(root) == ["en-de", "zh-en"]
    assert TestSet.scored_pairs(root) == ["en-de", "zh-en"]
    assert ts.source_file == root / "sources" / "en-de.txt" and ts.segment_count() == 2
    assert set(ts.reference_files()) == {"refA", "refB"} and ts.human_systems() == {"refA", "refB"}
    assert set(ts.system_files()) == {"refA", "sys1", "sys2", "synthetic_ref"}
    assert ts.human_score_files() == {"mqm": {"seg": root / "human-scores/en-de.mqm.seg.score",
                                              "sys": root / "human-scores/en-de.mqm.sys.score"}}
    assert ts.metric_score_files() == {"COMET-refA": {"seg": root / "metric-scores/en-de/COMET-refA.seg.score"}}
    assert ts.standard_reference() == "refA" and ts.standard_gold("seg") == "mqm"
    assert ts.outlier_systems() == {"synthetic_ref"} and score_file_name("m-src", "seg") == "m-src.seg.score"
    # the one selection: items to judge, systems to compare
    assert ts.items(TestSetSelection(lp="en-de")) == read_mtme(root, TestSetSelection(lp="en-de"))
    judged = {it.system for it in ts.items(TestSetSelection(lp="en-de", with_reference=True))}
    assert judged == {"sys1", "sys2", "synthetic_ref"}
    everything = ("refA", "sys1", "sys2", "synthetic_ref")
    assert ts.compared_systems(TestSetSelection(), everything) == ("sys1", "sys2")
    assert ts.compared_systems(TestSetSelection(include_refs=True, exclude_systems=("sys2",)), everything) == (
        "refA", "sys1", "synthetic_ref")
    assert ts.compared_systems(TestSetSelection(systems=("sys2",)), everything) == ("sys2",)


def test_a_pair_the_test_set_lacks_names_those_it_has(tmp_path: Path) -> None:
    root = _testset(tmp_path)
    with pytest.raises(InputError, match=r"language pairs: en-de, zh-en"):
        TestSet.open(root, "en-ja")
    with pytest.raises(InputError, match=r"pairs with human scores: en-de, zh-en") as err:
        readers.scan_mtme(root, "en-ja")
    assert err.value.field == "lp"
