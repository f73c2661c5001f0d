"""The reader's fast path for common rows builds exactly the item the checked path builds.

Rows are generated with every kind of value a JSONL line can hold in every field (missing,
empty, blank, numbers, booleans, nested values, NUL, lone surrogates, tabs in ids), so both
the rows the fast path takes and those it hands over are covered.
"""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from polyjudge.data.errors import InputError
from polyjudge.data.readers import _checked_item, _plain_item
from polyjudge.data.records import CORE_FIELDS, Item

VALUES = st.one_of(st.none(), st.sampled_from(["", " ", "a", "x\ty", "n\x00ul", "\ud800", "sys", "é漢"]),
                   st.integers(-3, 3), st.booleans(), st.floats(allow_nan=False, width=16),
                   st.lists(st.text(max_size=3), max_size=2), st.dictionaries(st.text(max_size=3), st.text(max_size=3),
                                                                                 max_size=2))
ROWS = st.builds(lambda given, rest: {**rest, **given},
                 st.fixed_dictionaries({"src": st.sampled_from(["source", "", "a\x00"]),
                                        "tgt": st.sampled_from(["target", " ", 5])}),
                 st.dictionaries(st.sampled_from([*CORE_FIELDS[2:], "extra1", "note", "x\x00"]), VALUES, max_size=9))
DEFAULTS = st.fixed_dictionaries({"src_lang": st.sampled_from([None, "en"]), "tgt_lang": st.sampled_from([None, "de"]),
                                  "system": st.sampled_from([None, "base", "bad\tname"])})


def test_core_fields_are_the_first_fields_of_an_item_in_order():
    assert tuple(f.name for f in dataclasses.fields(Item))[:len(CORE_FIELDS)] == CORE_FIELDS


@settings(max_examples=600, deadline=None)
@given(ROWS, DEFAULTS)
def test_the_fast_path_builds_what_the_checked_path_builds(row, defaults):
    try:
        expected: Item | str = _checked_item(dict(row), "in.jsonl", 3, defaults)
    except InputError as exc:
        expected = f"error: {exc}"
    fast = _plain_item(dict(row), "in.jsonl", 3, defaults)
    if fast is not None:
        assert fast == expected and fast.origin == "in.jsonl:3"
        assert [type(getattr(fast, n)) for n in CORE_FIELDS] == [type(getattr(expected, n)) for n in CORE_FIELDS]
