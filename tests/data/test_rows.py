"""Rows given in code (COMET's dicts, a DataFrame's records, a dataset's rows) as items (issue 45)."""

from __future__ import annotations

import pytest

from polyjudge.data.columns import parse_columns
from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from polyjudge.data.rows import items_from_rows


def test_comet_keys_become_an_item():
    [item] = items_from_rows([{"src": "Hallo", "mt": "Hello", "ref": "Hi", "lp": "de-en", "system": "S",
                               "doc_id": 3, "seg_id": 7.0, "domain": "news"}])
    assert (item.src, item.tgt, item.ref, item.src_lang, item.tgt_lang) == ("Hallo", "Hello", "Hi", "de", "en")
    assert (item.system, item.doc_id, item.seg_id) == ("S", "3", "7")
    assert item.extra == {"lp": "de-en", "domain": "news"}


def test_languages_row_first_then_the_call():
    rows = [{"src": "a", "mt": "b"}, {"src": "a", "mt": "b", "src_lang": "fr"}, {"src": "a", "mt": "b", "lp": "cs-uk"}]
    items = items_from_rows(rows, lp="de-en")
    assert [(i.src_lang, i.tgt_lang) for i in items] == [("de", "en"), ("fr", "en"), ("cs", "uk")]
    assert [(i.src_lang, i.tgt_lang) for i in items_from_rows(rows[:1], lp="de-en", src_lang="ja")] == [("ja", "en")]


def test_polyjudge_names_items_and_nan_cells_are_taken():
    given = Item("x", "y", src_lang="de", tgt_lang="en")
    items = items_from_rows([given, {"src": "a", "tgt": "b", "ref": float("nan"), "seg_id": None}])
    assert items[0] is given and (items[1].tgt, items[1].ref, items[1].seg_id) == ("b", None, None)


def test_a_column_map_renames_first():
    [item] = items_from_rows([{"source": "a", "hypothesis": "b"}], columns=parse_columns("src=source,tgt=hypothesis"))
    assert (item.src, item.tgt) == ("a", "b")


@pytest.mark.parametrize(("row", "field", "reason"), [
    ({"src": "a"}, "mt", "has no 'mt'"),
    ({"mt": "b"}, "src", "has no 'src'"),
    ({"src": "a", "mt": 3}, "mt", "expected text"),
    ({"src": "a", "mt": "b", "tgt": "c"}, "mt", "both 'mt' and 'tgt'"),
    ({"src": "a", "mt": "b", "seg_id": [1]}, "seg_id", "expected a string or a number"),
    ({"src": "a", "mt": "b", "lp": "deen"}, "lp", "language pair"),
])
def test_a_bad_row_is_named_with_its_key(row, field, reason):
    with pytest.raises(InputError, match=reason) as exc:
        items_from_rows([{"src": "ok", "mt": "ok"}, row])
    assert exc.value.path == "row 1" and exc.value.field == field


def test_a_row_that_is_no_mapping():
    with pytest.raises(InputError, match="expected a mapping"):
        items_from_rows(["just text"])
