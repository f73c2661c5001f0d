"""The seams hold: one run-directory module, imports pointing one way, a thin CLI.

These read the source with ``ast``, so they fail on the line that breaks a rule.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "polyjudge"

# Lower number = lower layer; a module may import its own layer or lower ones.
LAYERS = {
    "_version": 0, "registry": 0, "data": 0,
    "rundir": 1, "cache": 1,  # cache: the machine's shared response cache (the engine reads and fills it)
    "aggregate": 2,
    # protocols and backends are siblings: both build on data.chat (messages, requests, results),
    # neither imports the other (test_siblings_do_not_import_each_other)
    "protocols": 3, "backends": 3, "analysis": 3,
    "engine": 4, "validation": 4, "metaeval": 4,  # metaeval reads runs through analysis, never the reverse
    "studies": 5,
    "reranking": 5,  # choosing translations with a judge (QE, MBR): judges through the engine like the studies
    "annotate": 5,  # human annotation campaigns: read data, metaeval.spans/ratings and validation
    "report": 6,
    "api": 7, "plugins": 7,  # plugins: the stable surface a third-party package imports
    "cli": 8,
    "__init__": 9,
}
# Parts of a package that sit lower than the package: metaeval's span scores, rating agreement and
# system comparisons read only data, aggregate and rundir, so validation may use them and they never
# reach back into the rest of metaeval (WMT statistics, run variants).
SUBLAYERS = {"metaeval.spans": 3, "metaeval.ratings": 3, "metaeval.systems": 3}
RUN_FILES = {"judgments.jsonl", "segments.tsv", "manifest.json", "items.jsonl", "aggregates.tsv",
             "merged.jsonl", "systems.tsv"}
SHARED_CLI = {"options", "errors", "main", "specs"}


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "templates" not in p.parts)


def _package(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0].removesuffix(".py") if len(rel.parts) > 1 else rel.stem


def _layer(dotted: str) -> int:
    """The layer of ``package.sub...`` (without the ``polyjudge.`` prefix)."""
    for sub, layer in SUBLAYERS.items():
        if dotted == sub or dotted.startswith(sub + "."):
            return layer
    return LAYERS.get(dotted.split(".")[0], 0)


def _dotted(path: Path) -> str:
    return ".".join(path.relative_to(SRC).with_suffix("").parts)


def _imports(tree: ast.AST) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
    return [(n, m) for n, m in out if m == "polyjudge" or m.startswith("polyjudge.")]


def _docstring_nodes(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def test_every_package_has_a_layer():
    missing = {_package(p) for p in _modules()} - set(LAYERS)
    assert not missing, f"add these packages to LAYERS (and DEVELOPERS.md): {sorted(missing)}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_imports_point_down(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = _layer(_dotted(path))
    bad = []
    for line, module in _imports(tree):
        parts = module.split(".")
        if len(parts) < 2:
            continue
        target = _layer(".".join(parts[1:]))
        if target > own:
            bad.append(f"{path.relative_to(SRC)}:{line} imports {module} (layer {target} > {own})")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(("lower", "upper"), [("analysis", "metaeval"), ("metaeval", "validation")])
def test_evaluation_packages_point_one_way(lower: str, upper: str):
    """Meta-evaluation reads runs through analysis, never the reverse; validation is its own package."""
    bad = [f"{path.relative_to(SRC)}:{line} imports {module}"
           for path in _modules() if _package(path) == lower
           for line, module in _imports(ast.parse(path.read_text(encoding="utf-8")))
           if module.split(".")[1:2] == [upper]]
    assert not bad, "\n".join(bad)


# Packages on one layer that never import each other, in either direction.
SIBLINGS = [("protocols", "backends")]
# What a package never imports although the layers would let it: the report reads run directories
# through their contract (rundir: records, the unknown-price marker), never the engine that wrote them.
NEVER = {"report": {"engine", "backends"}}


def _package_imports(package: str) -> list[tuple[str, int, str]]:
    """(module path, line, imported module) of every polyjudge import in ``package``."""
    return [(str(path.relative_to(SRC)), line, module)
            for path in _modules() if _package(path) == package
            for line, module in _imports(ast.parse(path.read_text(encoding="utf-8")))]


@pytest.mark.parametrize(("one", "other"), SIBLINGS)
def test_siblings_do_not_import_each_other(one: str, other: str):
    assert _layer(one) == _layer(other)
    bad = [f"{path}:{line} imports {module}" for a, b in ((one, other), (other, one))
           for path, line, module in _package_imports(a) if module.split(".")[1:2] == [b]]
    assert not bad, "what both need belongs below them (chat types: polyjudge.data.chat):\n" + "\n".join(bad)


@pytest.mark.parametrize("package", sorted(NEVER))
def test_packages_skip_what_they_never_import(package: str):
    bad = [f"{path}:{line} imports {module}" for path, line, module in _package_imports(package)
           if set(module.split(".")[1:2]) & NEVER[package]]
    assert not bad, "\n".join(bad)


def test_the_sibling_rule_reads_lazy_imports():
    tree = ast.parse("def f():\n    from polyjudge.backends.base import Message\n")
    assert [m.split(".")[1] for _, m in _imports(tree)] == ["backends"]


def test_only_rundir_names_run_directory_files():
    bad = []
    for path in _modules():
        if _package(path) == "rundir":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstring_nodes(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in RUN_FILES
                    and id(node) not in docs):
                bad.append(f"{path.relative_to(SRC)}:{node.lineno} names {node.value!r}")
    assert not bad, "open run directories with polyjudge.rundir.RunDir:\n" + "\n".join(bad)


def test_cli_modules_do_not_import_each_other():
    bad = []
    for path in sorted((SRC / "cli").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, module in _imports(tree):
            parts = module.split(".")
            if len(parts) >= 3 and parts[1] == "cli" and parts[2] not in SHARED_CLI:
                bad.append(f"cli/{path.name}:{line} imports {module}")
    assert not bad, "\n".join(bad)


def test_no_import_cycle_between_engine_result_and_outputs():
    assert not (SRC / "engine" / "outputs.py").exists()


# Evaluation reads run directories and arrays; how a judgment was made is not its business.
EVALUATION = {"metaeval", "analysis", "validation"}
JUDGING = {"protocols", "engine", "backends", "cli", "api"}


def test_evaluation_knows_no_judging():
    bad = []
    for path in _modules():
        if _package(path) not in EVALUATION:
            continue
        for line, module in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            parts = module.split(".")
            if len(parts) >= 2 and parts[1] in JUDGING:
                bad.append(f"{path.relative_to(SRC)}:{line} imports {module}")
    assert not bad, "pass what is needed in (e.g. metaeval.spans.SpanProtocols) instead:\n" + "\n".join(bad)


# What the command line may import: the API (which reaches the engine, backends, readers and
# run directories for it), the shared errors, the registry pattern, its own modules and the version.
CLI_MAY_IMPORT = ("polyjudge.api", "polyjudge.cli", "polyjudge.data.errors", "polyjudge.registry",
                  "polyjudge._version")


@pytest.mark.parametrize("path", sorted((SRC / "cli").glob("*.py")), ids=lambda p: p.name)
def test_the_cli_reaches_the_rest_only_through_the_api(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = [f"cli/{path.name}:{line} imports {module}" for line, module in _imports(tree)
           if not any(module == ok or module.startswith(ok + ".") for ok in CLI_MAY_IMPORT)]
    assert not bad, "go through polyjudge.api:\n" + "\n".join(bad)


def test_the_cli_rule_catches_a_direct_import():
    tree = ast.parse("def f():\n    from polyjudge.engine.session import JudgeConfig\n")
    assert [m for _, m in _imports(tree)] == ["polyjudge.engine.session"]
    assert not any("polyjudge.engine.session".startswith(ok + ".") for ok in CLI_MAY_IMPORT)


def _commands_taking_keywords(tree: ast.AST) -> list[str]:
    """Click command functions (decorated with ``...command(...)`` or ``...group(...)``) that take ``**kw``."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef) or node.args.kwarg is None:
            continue
        for deco in node.decorator_list:
            call = deco.func if isinstance(deco, ast.Call) else deco
            name = call.attr if isinstance(call, ast.Attribute) else getattr(call, "id", "")
            if name in {"command", "group"}:
                found.append(f"{node.name}:{node.lineno}")
    return found


def test_no_command_takes_keyword_arguments():
    """Issue 36: a command takes one frozen flags value (cli.specs.takes) or named parameters, never ``**kw``."""
    offenders = [f"{path.name}:{hit}" for path in sorted((SRC / "cli").glob("*.py"))
                 for hit in _commands_taking_keywords(ast.parse(path.read_text(encoding="utf-8")))]
    assert offenders == []


def test_the_keyword_rule_catches_one():
    tree = ast.parse("import click\n@click.command('x')\ndef x(a, **studies):\n    pass\n")
    assert _commands_taking_keywords(tree) == ["x:3"]
