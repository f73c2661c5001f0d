"""The long ratings table of ``polyjudge agreement`` read through the text-input layer (issue 13)."""

from __future__ import annotations

import json

import pytest

from polyjudge.data.errors import InputError
from polyjudge.metaeval.ratings.calibration import read_ratings

TSV = "item_id\tlanguage\trater\tkind\trating\nq1\tde\th1\thuman\t2\nq1\tde\tgpt\tjudge\t1\n"


@pytest.mark.parametrize("name,sep", [("r.tsv", "\t"), ("r.csv", ",")])
def test_bom_and_crlf(tmp_path, name, sep):
    plain = tmp_path / f"plain-{name}"
    plain.write_text(TSV.replace("\t", sep), encoding="utf-8")
    p = tmp_path / name
    p.write_bytes(b"\xef\xbb\xbf" + TSV.replace("\t", sep).replace("\n", "\r\n").encode())
    assert read_ratings(p) == read_ratings(plain)
    assert read_ratings(p)[0].item_id == "q1"


def test_bad_bytes_name_the_line(tmp_path):
    p = tmp_path / "r.tsv"
    p.write_bytes(TSV.encode() + b"q2\tde\th1\thuman\t\xff\n")
    with pytest.raises(InputError) as exc:
        read_ratings(p)
    assert exc.value.path == str(p) and exc.value.line == 4 and "not UTF-8" in str(exc.value)


@pytest.mark.parametrize("rating", [float("inf"), 10**400, "-inf"])
def test_infinite_ratings_are_refused(tmp_path, rating):
    p = tmp_path / "r.jsonl"
    p.write_text(json.dumps({"item_id": "q", "rater": "h", "kind": "human", "rating": 1}) + "\n"
                 + json.dumps({"item_id": "q", "rater": "j", "kind": "judge", "rating": rating}) + "\n")
    with pytest.raises(InputError) as exc:
        read_ratings(p)
    assert exc.value.line == 2 and exc.value.field == "rating"


def test_nan_rating_text_is_a_missing_rating(tmp_path):
    p = tmp_path / "r.tsv"
    p.write_text(TSV + "q1\tde\th2\thuman\tnan\n", encoding="utf-8")
    assert [r.rater for r in read_ratings(p)] == ["h1", "gpt"]


def test_csv_error_names_the_line(tmp_path):
    p = tmp_path / "r.csv"
    p.write_bytes(b"item_id,rater,kind,rating\nq,h,human,1\nq,j\rx,judge,2\n")
    with pytest.raises(InputError) as exc:
        read_ratings(p)
    assert exc.value.line == 3
