"""No function in ``src/`` longer than 80 lines, none with more than 10 parameters.

A function past these limits does several things or is driven by a bag of
settings; both want a split or one typed specification instead. Lines are
counted from the ``def`` (decorators excluded) to the last line of the body,
docstring included. Parameters are every name a caller may pass: ``self`` and
``cls`` of a method are not counted, ``*args`` and ``**kwargs`` count one each.
The source is read with :mod:`ast`, so nested functions and methods count too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
MAX_LINES = 80
MAX_PARAMETERS = 10

# Functions still over a limit, named "path:function (lines|parameters)"; it may only shrink (empty: none).
BEING_FIXED: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Offence:
    """One function over a limit, named so the list can be read and kept in step with the code."""

    path: str  # relative to src/, with '/'
    line: int
    qualname: str
    size: int
    unit: str  # "lines" or "parameters"

    @property
    def key(self) -> str:
        """How BEING_FIXED names it (no line number: it moves with every edit above it)."""
        return f"{self.path}:{self.qualname} ({self.unit})"

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.qualname}: {self.size} {self.unit}"


def parameter_count(node: ast.FunctionDef | ast.AsyncFunctionDef, *, in_class: bool) -> int:
    """Names a caller may pass; the first positional one of a method (self/cls) is not counted,
    except for a staticmethod."""
    a = node.args
    count = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)
    positional = [*a.posonlyargs, *a.args]
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)
    if in_class and not static and positional and positional[0].arg in ("self", "cls", "mcs"):
        count -= 1
    return count


def line_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the ``def`` to the end of the body (decorators not counted)."""
    return (node.end_lineno or node.lineno) - node.lineno + 1


def _functions(tree: ast.AST, prefix: str = "", in_class: bool = False,
               ) -> Iterator[tuple[str, bool, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(qualified name, defined directly in a class, node) of every function, nested ones included."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}{child.name}"
            yield name, in_class, child
            yield from _functions(child, f"{name}.<locals>.", False)
        elif isinstance(child, ast.ClassDef):
            yield from _functions(child, f"{prefix}{child.name}.", True)
        else:
            yield from _functions(child, prefix, in_class)


def offences_in(source: str, path: str) -> list[Offence]:
    """Every limit a function of ``source`` breaks."""
    out = []
    for qualname, in_class, node in _functions(ast.parse(source)):
        lines, params = line_count(node), parameter_count(node, in_class=in_class)
        if lines > MAX_LINES:
            out.append(Offence(path, node.lineno, qualname, lines, "lines"))
        if params > MAX_PARAMETERS:
            out.append(Offence(path, node.lineno, qualname, params, "parameters"))
    return out


def all_offences() -> list[Offence]:
    out = []
    for file in sorted(SRC.rglob("*.py")):
        out += offences_in(file.read_text(encoding="utf-8"), file.relative_to(SRC).as_posix())
    return out


def test_no_function_over_the_limits():
    new = [str(o) for o in all_offences() if o.key not in BEING_FIXED]
    assert not new, (f"functions over {MAX_LINES} lines or {MAX_PARAMETERS} parameters (split them, or pass "
                     "one typed, frozen specification):\n" + "\n".join(new))


def test_allow_list_only_shrinks():
    """An allow-listed function that no longer offends must leave BEING_FIXED."""
    stale = sorted(BEING_FIXED - {o.key for o in all_offences()})
    assert not stale, "remove from BEING_FIXED (no longer over the limit):\n" + "\n".join(stale)


def test_lines_and_parameters_are_counted_as_documented():
    code = '''
def short(a, b, *args, c, d=1, **kwargs):
    """doc"""
    return a

class K:
    def method(self, a, b, c, d, e, f, g, h, i, j):
        pass

    @classmethod
    def build(cls, a, b, c, d, e, f, g, h, i, j, k):
        pass

    @staticmethod
    def free(self, a, b, c, d, e, f, g, h, i, j):
        pass

def outer():
    async def inner(a, b, c, d, e, f, g, h, i, j, k):
        pass
''' + "def long():\n" + "    x = 1\n" * 80
    found = {(o.qualname, f"{o.size} {o.unit}") for o in offences_in(code, "m.py")}
    assert found == {("K.build", "11 parameters"), ("K.free", "11 parameters"),
                     ("outer.<locals>.inner", "11 parameters"), ("long", "81 lines")}
    short = ast.parse(code).body[0]
    assert isinstance(short, ast.FunctionDef)
    assert parameter_count(short, in_class=False) == 6 and line_count(short) == 3


def test_offences_name_file_and_line():
    [offence] = offences_in("\n\ndef f(" + ", ".join(f"p{i}" for i in range(11)) + "):\n    pass\n", "pkg/m.py")
    assert str(offence) == "pkg/m.py:3: f: 11 parameters"
