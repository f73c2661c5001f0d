"""Rendering a template once per *shape* of its variables, then putting the values in.

A judging run renders the same template for every item, and most variables
are only printed as they are (``{{ source }}``) or tested for truth
(``{% if reference %}``, ``{{ language or "source" }}``). Such a variable
cannot change the text around it: rendering with a private stand-in (a
*slot*) and writing the value over the slot afterwards gives the very same
messages. So a template renders once per shape (which of those variables are
set, and the values of all the others) and each item only fills slots, which
also keeps a long value, such as a whole document, out of the renderer.

The analysis is conservative. A variable is a slot only when every place the
template reads it is a plain print or a truth test (through ``and``, ``or``,
``not`` and ``x if c else y``); a filter, a comparison, a call, a loop, an
assignment or a macro parameter of the same name keeps it out, and its
value becomes part of the shape. Only non-empty strings are slotted (an
empty string or another type is passed as itself), so every truth test sees
what it would see with the real value.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from polyjudge.data.chat import Message, Role

if TYPE_CHECKING:  # jinja2 loads when a template is built, not when the protocols are listed (--help)
    from jinja2 import nodes

# Value types whose equality decides how they print (a shape key holds them with their type).
_ATOMIC = (str, int, float, bool, type(None))
_MISSING = object()
# Shapes kept per template: a template whose printed values are not slots would add one per item.
MAX_SHAPES = 256


def slot_variables(ast: nodes.Template) -> frozenset[str]:
    """The variables ``ast`` only prints verbatim or tests for truth (see the module docstring)."""
    slotted: set[str] = set()
    excluded: set[str] = set()

    from jinja2 import nodes

    def visit(node: nodes.Node, how: str | None) -> None:
        if isinstance(node, nodes.Name):
            (slotted if node.ctx == "load" and how is not None else excluded).add(node.name)
        elif isinstance(node, nodes.Output):
            for child in node.nodes:
                visit(child, "print")
        elif isinstance(node, nodes.If):
            visit(node.test, "test")
            for statement in (*node.body, *node.elif_, *node.else_):
                visit(statement, None)
        elif isinstance(node, nodes.CondExpr):
            visit(node.test, "test")
            visit(node.expr1, how)
            if node.expr2 is not None:
                visit(node.expr2, how)
        elif isinstance(node, nodes.And | nodes.Or) and how is not None:
            visit(node.left, how)
            visit(node.right, how)
        elif isinstance(node, nodes.Not) and how is not None:
            visit(node.node, "test")
        else:
            for inner in node.iter_child_nodes():
                visit(inner, None)

    try:
        visit(ast, None)
    except RecursionError:  # a template nested beyond reason renders the slow way
        return frozenset()
    return frozenset(slotted - excluded)


# A rendered message with its slots: the role, and its pieces (template text, or a slot's number).
_Shape = tuple[tuple[Role, tuple[str | int, ...]], ...]


@dataclass(frozen=True, slots=True)
class _Slots:
    """The private stand-ins of one template: ``prefix`` + number + ``end``, never seen in data."""

    prefix: str
    end: str = "\ue002"

    def stand_in(self, number: int) -> str:
        return f"{self.prefix}{number}{self.end}"


class ShapeMemo:
    """Renders of one template by shape; :meth:`render` gives the same messages as rendering directly.

    ``render_text`` renders the template with the given variables and splits
    the text into messages (PromptTemplate's own path); ``reads`` are the
    variables the template reads and ``slots`` those it only prints or tests.
    """

    def __init__(self, render_messages: Callable[[Mapping[str, object]], list[Message]],
                 reads: frozenset[str], slots: frozenset[str]) -> None:
        self._render = render_messages
        self._reads = tuple(sorted(reads))
        self._slots = slots
        self._plan = tuple((name, name in slots) for name in self._reads)
        self._stand_ins = _Slots(f"\ue003{secrets.randbelow(10**32):032d}")
        self._shapes: dict[tuple[object, ...], _Shape] = {}

    def render(self, variables: Mapping[str, object]) -> list[Message] | None:
        """The messages for ``variables``, or None when their values cannot key a shape
        (the caller then renders directly)."""
        key: list[object] = []
        values: list[str] = []
        for name, slotted in self._plan:
            value = variables.get(name, _MISSING)
            kind = type(value)
            if slotted and kind is str and value:
                key.append(None)
                values.append(value)  # type: ignore[arg-type]
            elif kind in _ATOMIC or value is _MISSING:
                key.append((kind, value))
            else:
                return None
        found = tuple(key)
        shape = self._shapes.get(found)
        if shape is None:
            shape = self._shape(variables, values)
            if len(self._shapes) >= MAX_SHAPES:
                self._shapes.clear()
            self._shapes[found] = shape
        return _fill(shape, values)

    def _shape(self, variables: Mapping[str, object], values: list[str]) -> _Shape:
        """Render once with stand-ins in the slots, and cut each message at them."""
        standing = dict(variables)
        number = 0
        for name in self._reads:
            value = variables.get(name, _MISSING)
            if name in self._slots and type(value) is str and value:
                standing[name] = self._stand_ins.stand_in(number)
                number += 1
        return tuple((m.role, self._pieces(m.content, len(values))) for m in self._render(standing))

    def _pieces(self, content: str, count: int) -> tuple[str | int, ...]:
        prefix, end = self._stand_ins.prefix, self._stand_ins.end
        parts = content.split(prefix)
        out: list[str | int] = [parts[0]] if parts[0] else []
        for part in parts[1:]:
            number, _, rest = part.partition(end)
            if not number.isdigit() or int(number) >= count:  # cannot happen: the prefix is private
                raise AssertionError("a template stand-in was altered while rendering")
            out.append(int(number))
            if rest:
                out.append(rest)
        return tuple(out)


def _fill(shape: _Shape, values: list[str]) -> list[Message]:
    """The messages of a shape with its slots filled (a message left blank is dropped, as rendering does)."""
    out: list[Message] = []
    for role, pieces in shape:
        filled = tuple([values[p] if p.__class__ is int else p for p in pieces])
        content = "".join(filled)  # type: ignore[arg-type]
        if content.strip():
            out.append(Message(role, content, filled))  # type: ignore[arg-type]
    return out


__all__ = ["MAX_SHAPES", "ShapeMemo", "slot_variables"]
