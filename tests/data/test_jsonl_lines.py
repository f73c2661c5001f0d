"""A JSONL line that is one object alone on its line is parsed by the decoder's scanner without json.loads'
layers (issue 46: a first run's reading); whatever it takes is what json.loads gives, and anything else
(whitespace around it, extra data, invalid or deeply nested JSON) goes through json.loads as before."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from polyjudge.data.readers import iter_jsonl
from polyjudge.data.textio import whole_json_object as _object_line

scalars = st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=8)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                           max_size=3), max_leaves=10)
objects = st.dictionaries(st.text(max_size=5), values, max_size=4)
pieces = st.sampled_from(["", " ", "\t", "}", "{", ",", "x", "{}", "]", '"', "\\", "NaN", "\u00a0", "\x0c"])


@st.composite
def lines(draw):
    text = json.dumps(draw(objects), ensure_ascii=draw(st.booleans()))
    cut = draw(st.integers(0, len(text)))
    if draw(st.booleans()):
        text = text[:cut] + draw(pieces) + text[cut:]
    return draw(pieces) + text + draw(pieces) if draw(st.booleans()) else text


def _loaded(text):
    try:
        return ("ok", json.dumps(json.loads(text)))
    except (ValueError, RecursionError) as exc:
        return ("error", type(exc).__name__)


@settings(max_examples=1000, deadline=None)
@given(lines())
def test_a_line_taken_is_what_json_loads_gives(text):
    row = _object_line(text) if text[:1] == "{" else None
    if row is not None:
        assert _loaded(text) == ("ok", json.dumps(row))
        assert isinstance(json.loads(text), dict)


def test_what_the_scanner_leaves_to_json_loads():
    assert _object_line('{"a": 1}') == {"a": 1}
    for text in ('{"a": 1} ', '{"a": 1}{}', '{"a": 1', '{"a": 1}, {"b": 2}', '{"a": ' + "[" * 100_000 + "]" * 100_000
                 + "}", "{'a': 1}"):
        assert _object_line(text) is None


def test_bad_lines_are_named_as_before(tmp_path):
    import pytest

    from polyjudge.data.errors import InputError

    path = tmp_path / "in.jsonl"
    path.write_text('{"a": 1}\n\n   \n {"b": 2} \n{"c": 3}{"d": 4}\n', encoding="utf-8")
    with pytest.raises(InputError) as err:
        list(iter_jsonl(path))
    assert err.value.line == 5 and "Extra data" in str(err.value)
    path.write_text('{"a": 1}\n\n   \n {"b": 2} \n', encoding="utf-8")
    assert list(iter_jsonl(path)) == [(1, {"a": 1}), (4, {"b": 2})]
