"""Reading candidate lists: one source per JSONL line, or one candidate per JSONL line or TSV row."""

from __future__ import annotations

import json

import pytest

from polyjudge.data.errors import InputError
from polyjudge.reranking.candidates import from_lists, read_candidates


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_one_source_per_line(tmp_path):
    p = write(tmp_path / "c.jsonl", [json.dumps({"src": "Hallo", "candidates": ["Hi", "Hello", "Hi"], "ref": "Hello",
                                                 "seg_id": 7}),
                                     json.dumps({"src": "Tschuss", "candidates": ["Bye"], "src_lang": "de"})])
    first, second = read_candidates(p, src_lang="xx", tgt_lang="en")
    assert (first.candidates, first.distinct, first.ref, first.seg_id) == (("Hi", "Hello", "Hi"), ("Hi", "Hello"),
                                                                          "Hello", "7")
    assert (first.src_lang, second.src_lang, second.tgt_lang) == ("xx", "de", "en")


def test_one_candidate_per_row_grouped_by_id_or_source(tmp_path):
    tsv = write(tmp_path / "c.tsv", ["seg_id\tsrc\ttgt", "1\tA\ta1", "2\tB\tb1", "1\tA\ta2", "2\tB\tb2"])
    assert [s.candidates for s in read_candidates(tsv)] == [("a1", "a2"), ("b1", "b2")]
    jl = write(tmp_path / "c.jsonl", [json.dumps({"src": "A", "tgt": t}) for t in ("a1", "a2", "a1")])
    assert [s.candidates for s in read_candidates(jl)] == [("a1", "a2", "a1")]


@pytest.mark.parametrize(("name", "lines", "match"), [
    ("c.jsonl", ['{"src": "A", "candidates": []}'], "non-empty list"),
    ("c.jsonl", ['{"src": "A", "candidates": ["x"]}', '{"src": "B", "tgt": "y"}'], "one layout"),
    ("c.jsonl", ['{"candidates": ["x"]}'], "'src' is missing"),
    ("c.tsv", ["src\ttranslation", "A\tx"], "no 'tgt' column"),
    ("c.tsv", ["seg_id\tsrc\ttgt", "1\tA\tx", "1\tB\ty"], "source differs"),
    ("c.csv", ["src,tgt"], ".jsonl or .tsv"),
])
def test_bad_files_are_input_errors_naming_the_line(tmp_path, name, lines, match):
    with pytest.raises(InputError, match=match):
        read_candidates(write(tmp_path / name, lines))


def test_lists_given_in_code():
    found = from_lists(["a", "b"], [["x", "y"], ["z"]], references=["x", "z"])
    assert [(s.seg_id, s.candidates, s.ref) for s in found] == [("1", ("x", "y"), "x"), ("2", ("z",), "z")]
    with pytest.raises(InputError, match="non-empty"):
        from_lists(["a"], ["xy"])
