"""No import cycles: between packages, nor between modules.

Every ``import``/``from`` of ``polyjudge`` counts, also those inside functions
(a lazy import hides a cycle from Python, not from a reader), also relative
ones. A cycle means neither side can be read, tested or moved without the
other, so the test names each one it finds.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "polyjudge"
ROOT = "polyjudge"

# Module cycles allowed to remain (each entry one cycle's set of modules). Issue 25 removed the last
# three (data.readers/wmt_mqm, protocols.base/expected, report.sections/pairwise/simulation), so it is
# empty; anything found that is not listed (or a larger cycle holding one) fails.
KNOWN_MODULE_CYCLES: frozenset[frozenset[str]] = frozenset()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(SRC.rglob("*.py")) if "templates" not in p.parts}


def _resolve(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The absolute module a ``from`` import names (``from . import x`` in a.b resolves to a)."""
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    if not is_package:
        base.pop()
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(tree: ast.AST, importer: str, is_package: bool, known: Mapping[str, Path]) -> set[str]:
    """The polyjudge modules one module imports, anywhere in its body."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = _resolve(node, importer, is_package)
            # ``from pkg import mod`` is an import of the module pkg.mod when there is one
            out.update(f"{module}.{a.name}" if f"{module}.{a.name}" in known else module for a in node.names)
    return {_nearest(m, known) for m in out if m == ROOT or m.startswith(ROOT + ".")} - {importer}


def _nearest(module: str, known: Mapping[str, Path]) -> str:
    """The module itself, or the closest package holding a name that is not a module."""
    while module not in known and "." in module:
        module = module.rsplit(".", 1)[0]
    return module


def module_graph() -> dict[str, set[str]]:
    known = _modules()
    graph = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[name] = _targets(tree, name, path.name == "__init__.py", known)
    return graph


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def package_graph(modules: Mapping[str, set[str]]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for src, targets in modules.items():
        graph.setdefault(_package(src), set()).update(_package(t) for t in targets)
    return {p: ts - {p, ROOT} for p, ts in graph.items() if p != ROOT}


def cycles(graph: Mapping[str, Iterable[str]]) -> list[frozenset[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.add(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def _describe(component: frozenset[str], graph: Mapping[str, set[str]]) -> str:
    edges = [f"{a} -> {b}" for a in sorted(component) for b in sorted(graph[a] & component)]
    return "{" + ", ".join(sorted(component)) + "}: " + "; ".join(edges)


def test_no_cycle_between_packages():
    graph = package_graph(module_graph())
    found = cycles(graph)
    assert not found, "packages importing each other:\n" + "\n".join(_describe(c, graph) for c in found)


def test_no_cycle_between_modules():
    graph = module_graph()
    found = [c for c in cycles(graph) if c not in KNOWN_MODULE_CYCLES]
    assert not found, "modules importing each other:\n" + "\n".join(_describe(c, graph) for c in found)


def gone_from(known: frozenset[frozenset[str]], graph: Mapping[str, Iterable[str]]) -> set[frozenset[str]]:
    """The allow-listed cycles no longer in ``graph`` (they must leave the list)."""
    return set(known - set(cycles(graph)))


def test_known_cycles_are_still_there():
    """An allow-listed cycle that is gone must leave the list, so the list only shrinks."""
    gone = gone_from(KNOWN_MODULE_CYCLES, module_graph())
    assert not gone, f"remove from KNOWN_MODULE_CYCLES: {sorted(sorted(c) for c in gone)}"


def test_a_listed_cycle_that_disappeared_is_reported():
    listed = frozenset({frozenset({"a", "b"}), frozenset({"c", "d"})})
    assert gone_from(listed, {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": set()}) == {frozenset({"c", "d"})}
    assert gone_from(listed, {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}) == set()


def test_the_three_cycles_of_issue_25_stay_gone():
    """data.readers/wmt_mqm, protocols.base/expected and report.sections/pairwise/simulation
    imported each other until issue 25; none of these modules may again be in a cycle."""
    graph = module_graph()
    held = {m for c in cycles(graph) for m in c}
    modules = {"polyjudge.data.readers", "polyjudge.data.wmt_mqm", "polyjudge.protocols.base",
               "polyjudge.protocols.expected", "polyjudge.report.sections", "polyjudge.report.pairwise",
               "polyjudge.report.simulation"}
    assert not held & modules


def test_the_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}, "f": set()}
    assert cycles(graph) == [frozenset({"a", "b", "c"})]
    assert cycles({"x": {"y"}, "y": set()}) == []


def test_relative_and_lazy_imports_are_read():
    code = "from . import sibling\nfrom ..other import thing\ndef f():\n    import polyjudge.late\n"
    known = {n: Path() for n in ("polyjudge.pkg.sibling", "polyjudge.other", "polyjudge.late",
                                 "polyjudge.pkg.mod")}
    assert _targets(ast.parse(code), "polyjudge.pkg.mod", False, known) == {
        "polyjudge.pkg.sibling", "polyjudge.other", "polyjudge.late"}
