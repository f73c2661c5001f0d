"""``items.jsonl`` is written field by field (issue 46: a first run's per-item work): every line is byte for
byte the reference encoding, ``json.dumps({"item_index": i, **item.to_dict()}, ensure_ascii=False)``, whatever
the item holds (extra keys, keys that clash with the core fields, values of any JSON type), and reads back
equal."""

import json
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from polyjudge.data.records import CORE_FIELDS, Item
from polyjudge.rundir.directory import item_lines

texts = st.text(max_size=20)
maybe_text = st.none() | texts
numbers = st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(2**70), 2**70)
json_values = st.recursive(st.none() | st.booleans() | numbers | texts,
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
                           max_leaves=6)
field_values = maybe_text | numbers | st.booleans() | st.lists(texts, max_size=2)
extra_keys = texts | st.sampled_from(["item_index", *CORE_FIELDS]) | st.integers(-5, 5)


@st.composite
def items(draw):
    return Item(*(draw(field_values) for _ in CORE_FIELDS),  # type: ignore[arg-type]
                extra=draw(st.dictionaries(extra_keys, json_values, max_size=4)), origin=draw(maybe_text))


def _reference(i, it):
    return json.dumps({"item_index": i, **it.to_dict()}, ensure_ascii=False) + "\n"


@settings(max_examples=400, deadline=None)
@given(st.lists(items(), max_size=4))
def test_every_line_is_the_reference_encoding(given_items):
    assert list(item_lines(given_items)) == [_reference(i, it) for i, it in enumerate(given_items)]


def test_common_items_and_their_extras():
    plain = Item("a\tb \u2028 \"q\" é", "t", None, "en", "de", "d1", "3", "sys")
    with_extra = Item("s", "t", extra={"domain": "news", "n": 1.5, "nested": {"x": [1, None]}, 7: float("nan")})
    clashing = Item("s", "t", extra={"src": "replaced", "item_index": 99})
    given_items = [plain, with_extra, clashing]
    lines = list(item_lines(given_items))
    assert lines == [_reference(i, it) for i, it in enumerate(given_items)]
    assert [json.loads(line)["src"] for line in lines] == [plain.src, "s", "replaced"]


def test_a_subclass_with_its_own_to_dict_is_written_by_it():
    @dataclass(frozen=True, slots=True)
    class Tagged(Item):
        def to_dict(self):
            return {**Item.to_dict(self), "tagged": True}

    it = Tagged("s", "t")
    assert list(item_lines([it])) == [_reference(0, it)]
