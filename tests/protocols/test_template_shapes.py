"""Rendering by shape (protocols/template_shapes.py) gives exactly the messages of rendering directly.

The reference is the template run by Jinja for every call (``render_directly``).
Templates are generated from fragments that print, test, filter, compare, loop
over and assign variables, with role-marker lines and blank lines around them;
values are empty, blank, multi-line, hostile (markers, Jinja syntax, the
private-use characters of the renderer's tokens) or not strings at all.
"""

from __future__ import annotations

import jinja2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from polyjudge.data.errors import InputError
from polyjudge.protocols.template_shapes import MAX_SHAPES, slot_variables
from polyjudge.protocols.templates import PromptTemplate

NAMES = ("a", "b", "c")
FRAGMENTS = [
    "{{ a }}", "{{ b }}", "{{ c }}", "{{ a or 'none' }}", "{{ a and b }}", "{{ not c }}", "{{ a if b else c }}",
    "{% if a %}A:{{ a }}{% endif %}", "{% if not b %}no b{% else %}[{{ b }}]{% endif %}",
    "{% if a and c %}\n{{ c }}\n{% endif %}", "{{ b | upper }}", "{{ c | length }}", "{% if a == 'x' %}eq{% endif %}",
    "{% for ch in b %}{{ ch }}.{% endfor %}", "{% set a = 'shadow' %}", "{{ a ~ '!' }}", "{{ '%s' % c }}",
    "text", " ", "\n", "\n\n", "<|user|>", "<|assistant|>", "<|system|>",
]
VALUES = st.one_of(
    st.sampled_from(["", " ", "\n", "x", "\nline\n", "<|user|>", "{{ a }}", "\ue000", "\ue0030\ue002", "\ue003",
                     "Übersetzung — 漢字", "None"]),
    st.text(max_size=6), st.none(), st.integers(-2, 2), st.booleans(), st.just(1.0))


def _template(fragments: list[str]) -> str:
    """Fragments joined, a role marker always on a line of its own."""
    return "".join(f"\n{f}\n" if f.startswith("<|") else f for f in fragments)


def _messages(template: PromptTemplate, method: str, values: dict[str, object]) -> list[tuple[str, str]] | str:
    try:
        return [(m.role, m.content) for m in getattr(template, method)(**values)]
    except InputError as exc:
        return f"error: {exc}"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=8),
       st.lists(st.fixed_dictionaries({n: VALUES for n in NAMES}), min_size=1, max_size=4))
def test_rendering_by_shape_equals_rendering_directly(fragments, calls):
    template = PromptTemplate(_template(fragments), "generated.jinja")
    for values in calls:  # several calls: shapes are reused across them
        assert _messages(template, "render", values) == _messages(template, "render_directly", values)


def test_each_message_keeps_the_pieces_it_was_joined_from():
    template = PromptTemplate("<|system|>\nDocument:\n{{ doc }}\nEnd\n<|user|>\n{{ seg }}", "t.jinja")
    doc = "sentence one\nsentence two " * 10
    messages = template.render(doc=doc, seg="the segment")
    assert [m.content for m in messages] == ["Document:\n" + doc + "\nEnd", "the segment"]
    assert any(p is doc for p in messages[0].parts)  # the very value, not a copy: shared by every prompt
    assert all("".join(m.parts) == m.content for m in messages)


@pytest.mark.parametrize("source,slots", [
    ("{{ a }}{% if b %}{{ c or a }}{% endif %}", {"a", "b", "c"}),
    ("{{ a | upper }}{{ b }}", {"b"}),
    ("{% for x in a %}{{ x }}{% endfor %}{{ b }}", {"b"}),
    ("{% set b = a %}{{ b }}", set()),
    ("{% macro m(a) %}{{ a }}{% endmacro %}{{ m(b) }}{{ c }}", {"c"}),
    ("{% if a == 'x' %}{{ b }}{% endif %}", {"b"}),
    ("{{ a.attr }}{{ b[0] }}{{ c }}", {"c"}),
])
def test_only_variables_printed_or_tested_are_slots(source, slots):
    env = jinja2.Environment()
    assert slot_variables(env.parse(source)) == slots


def test_shapes_are_bounded_when_values_decide_the_shape():
    template = PromptTemplate("{{ a | upper }}", "t.jinja")
    for k in range(MAX_SHAPES * 3):
        assert template.render(a=f"v{k}")[0].content == f"V{k}"
    assert len(template._shapes._shapes) <= MAX_SHAPES


def test_values_that_are_not_plain_render_directly():
    template = PromptTemplate("{% for x in a %}{{ x }};{% endfor %}{{ b }}", "t.jinja")
    assert template.render(a=["1", "2"], b="end")[0].content == "1;2;end"
    assert template.render(a={"k": 1}, b="end")[0].content == "k;end"
