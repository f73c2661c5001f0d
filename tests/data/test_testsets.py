"""mt-metrics-eval test-set folders and WMT25 task-1 TSVs read as items (real TED segments)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from polyjudge.data.errors import InputError
from polyjudge.data.readers import READERS, ItemDefaults, read_items
from polyjudge.data.testsets import (
    NO_TRANSLATION,
    TestSetInfo,
    TestSetSelection,
    origin_testset,
    read_mtme,
    standard_reference,
    wmt25_keys,
)
from tests.data.wmt_testsets import SYSTEMS, ted_sample, write_mtme, write_wmt25


@pytest.fixture()
def sample():
    return ted_sample()


@pytest.fixture()
def mtme(tmp_path, sample):
    return write_mtme(tmp_path, sample)


def test_every_system_every_segment_in_test_set_order(mtme, sample):
    items = read_items(mtme, how=ItemDefaults(testset=TestSetSelection(lp="en-de")))
    systems = sorted((*SYSTEMS, "refA"))
    assert [(it.system, it.seg_id) for it in items] == [(s, str(k)) for s in systems for k in range(1, 7)]
    for it in items:
        k = int(it.seg_id) - 1  # seg_id is the 1-based line number
        assert it.src == sample.sources[k]
        assert it.tgt == sample.outputs[it.system][k]
        assert it.ref == sample.outputs["refA"][k]  # wmt21.tedtalks en-de: standard reference refA
        assert it.doc_id == sample.docs[k] and it.extra["domain"] == "ted"
        assert (it.src_lang, it.tgt_lang) == ("en", "de")
    info = origin_testset(items)
    assert info == TestSetInfo(format="mtme", root=str(mtme.resolve()), name="wmt21.tedtalks", lp="en-de",
                               systems=tuple(systems), n_segments=6, ref="refA", documents=True, domains=True,
                               all_systems=tuple(systems))
    assert TestSetInfo.from_json(info.to_json()) == info


def test_folder_is_detected_and_one_pair_needs_no_lp(mtme):
    assert read_items(mtme)[0].system == "Facebook-AI"  # only en-de in sources/: --lp may be left out
    (mtme / "sources" / "zh-en.txt").write_text("a\n", encoding="utf-8")
    with pytest.raises(InputError, match="language pair to read") as exc:
        read_items(mtme)
    assert "en-de, zh-en" in str(exc.value)
    with pytest.raises(InputError, match=r"no sources/xx-yy.txt"):
        read_mtme(mtme, TestSetSelection(lp="xx-yy"))


def test_systems_exclusion_and_references(mtme, sample):
    def systems(**kw):
        return list(dict.fromkeys(it.system for it in read_mtme(mtme, TestSetSelection(lp="en-de", **kw))))

    assert systems(systems=("Online-W", "refA")) == ["Online-W", "refA"]
    assert systems(exclude_systems=("refA", "HuaweiTSC")) == ["Facebook-AI", "Online-W"]
    # the judge sees refA: refA itself is not judged against itself
    assert systems(with_reference=True) == ["Facebook-AI", "HuaweiTSC", "Online-W"]
    items = read_mtme(mtme, TestSetSelection(lp="en-de", ref="refB", with_reference=True))
    assert [it.ref for it in items[:6]] == sample.outputs["refB"]
    assert origin_testset(items).ref == "refB" and "refA" in {it.system for it in items}
    with pytest.raises(InputError, match="no system 'nope'") as exc:
        read_mtme(mtme, TestSetSelection(lp="en-de", exclude_systems=("nope",)))
    assert exc.value.field == "exclude_systems"
    with pytest.raises(InputError, match="no reference 'refC'") as exc:
        read_mtme(mtme, TestSetSelection(lp="en-de", ref="refC"))
    assert exc.value.field == "ref"
    with pytest.raises(InputError, match="no system left"):
        read_mtme(mtme, TestSetSelection(lp="en-de", systems=("refA",), with_reference=True))


def test_unknown_test_set_needs_ref_when_it_has_several(tmp_path, sample):
    root = write_mtme(tmp_path, sample, name="my-set")
    assert origin_testset(read_mtme(root, TestSetSelection(lp="en-de"))).ref is None  # two refs, none standard
    with pytest.raises(InputError, match="name one with ref"):
        read_mtme(root, TestSetSelection(lp="en-de", with_reference=True))
    (root / "references" / "en-de.refB.txt").unlink()
    assert origin_testset(read_mtme(root, TestSetSelection(lp="en-de"))).ref == "refA"  # the only one


def test_standard_references_follow_mt_metrics_eval():
    assert standard_reference("wmt23", "en-de") == "refA"
    assert standard_reference("wmt23", "he-en") == "refB"
    assert standard_reference("wmt24", "en-de") == "refB"
    assert standard_reference("wmt21.news", "en-de") == "refC"
    assert standard_reference("wmt20", "de-en") == "ref"
    assert standard_reference("unknown", "en-de") is None


def test_bad_files_name_file_line_and_field(mtme):
    hyp = mtme / "system-outputs" / "en-de" / "Online-W.txt"
    lines = hyp.read_text(encoding="utf-8").splitlines()
    hyp.write_text("\n".join(lines[:4]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="has 4 lines but the source has 6") as exc:
        read_mtme(mtme, TestSetSelection(lp="en-de"))
    assert (exc.value.path, exc.value.line) == (str(hyp), 5)
    hyp.write_text("\n".join([*lines[:2], "bad\x00text", *lines[3:]]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="NUL") as exc:
        read_mtme(mtme, TestSetSelection(lp="en-de"))
    assert (exc.value.path, exc.value.line) == (str(hyp), 3)
    docs = mtme / "documents" / "en-de.docs"
    hyp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    docs.write_text("ted talk.1\nted\n" + "ted talk.1\n" * 4, encoding="utf-8")
    with pytest.raises(InputError, match="DOMAIN DOCNAME") as exc:
        read_mtme(mtme, TestSetSelection(lp="en-de"))
    assert (exc.value.path, exc.value.line) == (str(docs), 2)
    with pytest.raises(InputError, match="not an mt-metrics-eval test-set folder"):
        read_items(mtme / "documents", fmt="mtme")


def test_no_translation_marker_and_domains_file(mtme):
    hyp = mtme / "system-outputs" / "en-de" / "HuaweiTSC.txt"
    lines = hyp.read_text(encoding="utf-8").splitlines()
    hyp.write_text("\n".join([NO_TRANSLATION, *lines[1:]]) + "\n", encoding="utf-8")
    (mtme / "domains").mkdir()
    (mtme / "domains" / "en-de.domains").write_text("talks\n" * 3 + "science\n" * 3, encoding="utf-8")
    items = [it for it in read_mtme(mtme, TestSetSelection(lp="en-de")) if it.system == "HuaweiTSC"]
    assert items[0].tgt == "" and items[0].extra["no_translation"] is True
    assert "no_translation" not in items[1].extra
    assert [it.extra["domain"] for it in items] == ["talks"] * 3 + ["science"] * 3


def test_wmt25_task1_tsv_keeps_its_keys(tmp_path, sample):
    path = write_wmt25(tmp_path / "wmt25-genmt.tsv", sample)
    items = read_items(path)  # detected by its header
    assert read_items(path, fmt="wmt25") == items
    assert len(items) == 3 * 6 and items[0].ref is None
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]
    for it, row in zip(items, rows[1:]):
        assert (it.src, it.tgt, it.src_lang, it.tgt_lang) == (row[6], row[7], "en", "de_DE")
        assert list(wmt25_keys(it).values()) == [row[i] for i in (0, 1, 2, 3, 4, 5, 9, 10)]
    info = origin_testset(items)
    assert (info.format, info.systems, info.n_segments) == ("wmt25", SYSTEMS, 6)


def test_wmt25_format_refuses_another_tsv(tmp_path):
    other = tmp_path / "x.tsv"
    other.write_text("src\ttgt\na\tb\n", encoding="utf-8")
    with pytest.raises(InputError, match="not a WMT25 task-1 TSV") as exc:
        read_items(other, fmt="wmt25")
    assert exc.value.line == 1


def test_every_new_format_is_registered():
    assert {"mtme", "wmt25", "parquet", "hf"} <= set(READERS.names())
    assert READERS.get("mtme").detect is not None and Path("x").suffix == ""


def test_jsonl_test_sets_read_like_text_ones(tmp_path, sample):
    text_root = write_mtme(tmp_path / "text", sample)
    json_root = write_mtme(tmp_path / "json", sample)
    for path, field in ((json_root / "sources" / "en-de.txt", "source"),
                        *((p, "target") for p in (json_root / "references").glob("*.txt")),
                        *((p, "hypothesis") for p in (json_root / "system-outputs" / "en-de").glob("*.txt"))):
        lines = path.read_text(encoding="utf-8").splitlines()
        path.with_suffix(".jsonl").write_text("".join(json.dumps({field: t}) + "\n" for t in lines), encoding="utf-8")
        path.unlink()
    read = [read_mtme(root, TestSetSelection(lp="en-de")) for root in (text_root, json_root)]
    assert [(it.system, it.src, it.tgt, it.ref) for it in read[0]] == [(it.system, it.src, it.tgt, it.ref)
                                                                       for it in read[1]]
    bad = json_root / "system-outputs" / "en-de" / "Online-W.jsonl"
    bad.write_text('{"hypothesis": "a"}\n{"target": "b"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="'hypothesis' field") as exc:
        read_mtme(json_root, TestSetSelection(lp="en-de"))
    assert (exc.value.path, exc.value.line) == (str(bad), 2)
