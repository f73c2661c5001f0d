"""An item's dict (what items.jsonl, fingerprints and reports read) holds the core fields in
:data:`CORE_FIELDS`' order, then the extra keys; an extra key named like a core field replaces its value."""

from polyjudge.data.records import CORE_FIELDS, Item


def test_to_dict_is_the_core_fields_in_order_then_the_extra():
    it = Item("s", "t", "r", "en", "de", "d", "1", "sys", extra={"domain": "news", "n": 2}, origin="f:1")
    d = it.to_dict()
    assert list(d) == [*CORE_FIELDS, "domain", "n"]
    assert d == {**{k: getattr(it, k) for k in CORE_FIELDS}, "domain": "news", "n": 2}


def test_an_extra_key_named_like_a_core_field_replaces_it_in_place():
    d = Item("s", "t", extra={"src": "other", "x": 1}).to_dict()
    assert list(d) == [*CORE_FIELDS, "x"]
    assert d["src"] == "other"


def test_to_dict_is_a_fresh_dict():
    it = Item("s", "t", extra={"x": 1})
    it.to_dict()["x"] = 2
    assert it.extra == {"x": 1}
