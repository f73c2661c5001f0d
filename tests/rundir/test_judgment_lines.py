"""The spool writes a judgment's line piece by piece, reusing the encoding of an annotation and an answer
text while they repeat (issue 35: a million lines): every line is byte for byte the reference encoding,
``json.dumps(record.to_json(), ensure_ascii=False)``."""

import json
import math
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from polyjudge.rundir import JudgmentRecord, JudgmentSpool
from polyjudge.rundir.directory import _LineWriter

texts = st.text(max_size=30)  # any code point but lone surrogates (no UTF-8 file holds those)
maybe_text = st.none() | texts
numbers = st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(2**70), 2**70)
json_values = st.recursive(st.none() | st.booleans() | numbers | texts,
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
                           max_leaves=8)


@st.composite
def records(draw, shared_annotation=None):
    annotation = shared_annotation if shared_annotation is not None else draw(json_values)
    return JudgmentRecord(
        item_index=draw(st.integers(0, 10**9)), system=draw(maybe_text), doc_id=draw(maybe_text),
        seg_id=draw(maybe_text), run_index=draw(st.integers(0, 1000)), judge=draw(texts), status=draw(texts),
        error=draw(maybe_text), raw_text=draw(maybe_text), annotation=annotation,
        score=draw(st.none() | numbers | st.booleans()),
        prompt_tokens=draw(st.integers(0, 2**63)), completion_tokens=draw(st.integers(0, 2**63)),
        latency_s=draw(st.floats(allow_nan=True, allow_infinity=True) | st.integers(0, 10)),
        finish_reason=draw(maybe_text), reasoning=draw(maybe_text))


def _reference(r):
    return json.dumps(r.to_json(), ensure_ascii=False)


@settings(max_examples=300, deadline=None)
@given(st.lists(records(), min_size=1, max_size=6), st.data())
def test_every_line_is_the_reference_encoding(tmp_path_factory, recs, data):
    # Runs of one item share one annotation object and an equal answer text (engine.result's parse memo).
    shared = data.draw(json_values)
    text = data.draw(maybe_text)
    repeated = [replace(r, annotation=shared, raw_text=text) for r in recs]
    lines = recs + repeated + recs[::-1]
    spool = JudgmentSpool(tmp_path_factory.mktemp("spool"))
    for r in lines:
        spool.add(r)
    spool._fh.flush()  # noqa: SLF001 - read what was written so far
    written = spool.path.read_text(encoding="utf-8").split("\n")[:-1]
    spool.discard()
    assert written == [_reference(r) for r in lines]


def test_special_numbers_and_text_as_the_reference():
    r = JudgmentRecord(0, "sys\u2028", None, "1\"\\", 0, "m", "ok", None, "\x00é\ud7ff", {"k": [math.nan, -0.0]},
                       -math.inf, 0, 0, math.nan, None, "")
    line = _LineWriter()
    assert line(r) == _reference(r)
    assert line(r) == _reference(r)  # the second time from the kept encodings
