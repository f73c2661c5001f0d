"""Parallel judging sets built from the shared XQuAD and MGSM data."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from polyjudge.data.errors import InputError
from polyjudge.data.parallel import (
    MGSM_LANGUAGES,
    XQUAD_LANGUAGES,
    load_mgsm_parallel,
    load_parallel,
    load_xquad_parallel,
)

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
needs_data = pytest.mark.skipif(not (DATA / "xquad").is_dir() or not (DATA / "mgsm").is_dir(),
                                reason="shared data (../shared/data/xquad, mgsm) not present")


@needs_data
def test_xquad_counts_and_alignment():
    items = load_xquad_parallel(DATA / "xquad", list(XQUAD_LANGUAGES))
    # README: 1,190 question-answer pairs per language, 12 languages, gold + wrong
    assert len(items) == 1190 * 12 * 2
    by_lang = Counter(it.extra["language"] for it in items)
    assert set(by_lang.values()) == {2380}
    # every (item id, kind) exists once in every language, same donor everywhere
    keys = {lang: {(it.extra["item_id"], it.system, it.extra.get("donor_id"))
                   for it in items if it.extra["language"] == lang} for lang in XQUAD_LANGUAGES}
    assert all(k == keys["en"] for k in keys.values())
    en = json.loads((DATA / "xquad" / "xquad.en.json").read_text())
    first = en["data"][0]["paragraphs"][0]["qas"][0]
    it0 = items[0]
    assert (it0.extra["language"], it0.extra["item_id"], it0.system) == ("ar", first["id"], "gold")
    en_gold = next(it for it in items if it.extra["language"] == "en" and it.system == "gold")
    assert en_gold.src == first["question"] and en_gold.tgt == first["answers"][0]["text"] == "308"
    assert en_gold.extra["gold_label"] == "correct" and "Panthers" in en_gold.extra["context"]


@needs_data
def test_wrong_answers_come_from_another_item_and_differ():
    items = load_xquad_parallel(DATA / "xquad", ["en", "de", "zh"], limit=200, seed=3)
    gold = {(it.extra["language"], it.extra["item_id"]): it.tgt for it in items if it.system == "gold"}
    wrong = [it for it in items if it.system == "wrong"]
    assert len(wrong) == 600
    for it in wrong:
        lang, donor = it.extra["language"], it.extra["donor_id"]
        assert donor != it.extra["item_id"]
        assert it.tgt == gold[(lang, donor)]  # the donor's answer in the same language
        assert it.tgt.strip().lower() != it.extra["gold_answer"].strip().lower()
        assert it.extra["gold_label"] == "incorrect"
    # deterministic per seed, different across seeds
    again = load_xquad_parallel(DATA / "xquad", ["en", "de", "zh"], limit=200, seed=3)
    assert [i.tgt for i in again] == [i.tgt for i in items]
    other = load_xquad_parallel(DATA / "xquad", ["en", "de", "zh"], limit=200, seed=4)
    assert [i.tgt for i in other] != [i.tgt for i in items]


@needs_data
def test_mgsm_counts_and_line_alignment():
    items = load_mgsm_parallel(DATA / "mgsm", list(MGSM_LANGUAGES))
    assert len(items) == 250 * 11 * 2
    lines = (DATA / "mgsm" / "mgsm_ja.tsv").read_text(encoding="utf-8").splitlines()
    ja = [it for it in items if it.extra["language"] == "ja" and it.system == "gold"]
    assert [it.src for it in ja] == [ln.split("\t")[0].strip() for ln in lines]
    assert ja[0].extra["item_id"] == "mgsm-001" and ja[0].tgt == "18"
    # gold answers are numbers shared across languages, so line alignment is checkable
    gold = {}
    for it in items:
        if it.system == "gold":
            gold.setdefault(it.extra["item_id"], set()).add(it.tgt)
    assert sum(len(v) == 1 for v in gold.values()) >= 245


@needs_data
def test_limit_and_no_wrong():
    items = load_parallel("mgsm", DATA / "mgsm", ["en", "sw"], limit=30, wrong=False)
    assert len(items) == 60 and {it.system for it in items} == {"gold"}


def test_bad_input(tmp_path):
    (tmp_path / "mgsm_en.tsv").write_text("q1\t1\nq2\t2\n")
    (tmp_path / "mgsm_de.tsv").write_text("q1\t1\nq2 without tab\n")
    with pytest.raises(InputError) as e:
        load_mgsm_parallel(tmp_path, ["en", "de"])
    assert e.value.line == 2
    (tmp_path / "mgsm_fr.tsv").write_text("q1\t1\n")
    with pytest.raises(InputError, match="line-aligned"):
        load_mgsm_parallel(tmp_path, ["en", "fr"])
    with pytest.raises(InputError, match="not found"):
        load_mgsm_parallel(tmp_path, ["en", "xx"])
    with pytest.raises(InputError):
        load_parallel("flores", tmp_path, ["en"])
    with pytest.raises(InputError):
        load_mgsm_parallel(tmp_path, ["en", "en"])
    # two questions with the same answer: no valid donor
    (tmp_path / "mgsm_es.tsv").write_text("q1\t1\nq2\t1\n")
    with pytest.raises(InputError, match="different"):
        load_mgsm_parallel(tmp_path, ["es"])
    assert len(load_mgsm_parallel(tmp_path, ["es"], wrong=False)) == 2


# --------------------------------------------------------------------------- hostile input (issue 13)

def _xquad(root: Path, lang: str, data: object) -> Path:
    p = root / f"xquad.{lang}.json"
    p.write_text(json.dumps(data), encoding="utf-8")
    return p


def _qa(qid: str, answer: object = "A") -> dict:
    return {"id": qid, "question": f"q {qid}?", "answers": [{"text": answer, "answer_start": 0}]}


@pytest.mark.parametrize("data,where", [
    ([], "the file must be an object"),
    ({"data": {}}, "the file.data must be a list"),
    ({"data": [[]]}, "data[0] must be an object"),
    ({"data": [{"paragraphs": [{"context": 3, "qas": []}]}]}, "context must be a string"),
    ({"data": [{"paragraphs": [{"context": "c", "qas": [_qa("1", ["x"])]}]}]}, "text must be a string"),
    ({"data": [{"paragraphs": [{"context": "c", "qas": [{"id": ["1"], "question": "q", "answers": []}]}]}]},
     "id must be a string"),
    ({"data": [{"paragraphs": [{"context": "c"}]}]}, "has no 'qas'"),
])
def test_xquad_of_the_wrong_shape_says_where(tmp_path, data, where):
    p = _xquad(tmp_path, "en", data)
    with pytest.raises(InputError) as exc:
        load_xquad_parallel(tmp_path, ["en"])
    assert exc.value.path == str(p) and where in str(exc.value) and "SQuAD" in str(exc.value)


def test_xquad_bad_bytes_and_bom(tmp_path):
    good = {"data": [{"title": "t", "paragraphs": [{"context": "c", "qas": [_qa("1", "A"), _qa("2", "B")]}]}]}
    p = _xquad(tmp_path, "en", good)
    p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes().replace(b"\n", b"\r\n"))
    assert len(load_xquad_parallel(tmp_path, ["en"])) == 4
    p.write_bytes(p.read_bytes().replace(b"q 2?", b"q \xc0?"))
    with pytest.raises(InputError) as exc:
        load_xquad_parallel(tmp_path, ["en"])
    assert exc.value.path == str(p) and exc.value.line == 1 and "not UTF-8" in str(exc.value)


def test_mgsm_bad_bytes_bom_and_crlf(tmp_path):
    (tmp_path / "mgsm_en.tsv").write_bytes(b"\xef\xbb\xbfOne plus one?\t2\r\nTwo plus two?\t4\r\n")
    (tmp_path / "mgsm_de.tsv").write_bytes(b"Eins plus eins?\t2\nZwei plus zwei?\t4\n")
    items = load_mgsm_parallel(tmp_path, ["en", "de"])
    assert items[0].src == "One plus one?" and items[1].tgt == "4"
    (tmp_path / "mgsm_de.tsv").write_bytes(b"Eins plus eins?\t2\nZwei plus \xff?\t4\n")
    with pytest.raises(InputError) as exc:
        load_mgsm_parallel(tmp_path, ["en", "de"])
    assert exc.value.path == str(tmp_path / "mgsm_de.tsv") and exc.value.line == 2


def test_mgsm_blank_lines_in_different_places_are_not_aligned(tmp_path):
    (tmp_path / "mgsm_en.tsv").write_text("One?\t1\nTwo?\t2\n\n", encoding="utf-8")
    (tmp_path / "mgsm_de.tsv").write_text("Eins?\t1\n\nZwei?\t2\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_mgsm_parallel(tmp_path, ["en", "de"])
    assert exc.value.path == str(tmp_path / "mgsm_de.tsv") and exc.value.line == 3
    assert "not line-aligned" in str(exc.value)
