"""The one-search checks of the fast paths (bad_text, bad_id) refuse exactly what the character rules refuse,
for every code point, also where they skip the search (ASCII text, printable ids)."""

import sys

from polyjudge.data.fields import _NOT_IN_ID, _NOT_TEXT, bad_id, bad_text

EVERY = [chr(c) for c in range(sys.maxunicode + 1)]


def test_bad_text_is_the_text_rule_for_every_code_point():
    assert [c for c in EVERY if bad_text(f"ab{c}cd")] == [c for c in EVERY if _NOT_TEXT.search(c)]
    assert [c for c in EVERY if bad_text(c)] == [c for c in EVERY if _NOT_TEXT.search(c)]


def test_bad_id_is_the_id_rule_for_every_code_point():
    assert [c for c in EVERY if bad_id(f"sys {c}1")] == [c for c in EVERY if _NOT_IN_ID.search(c)]
    assert not bad_id("") and not bad_text("")
