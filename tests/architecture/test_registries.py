"""Registries are the only lists of names (issue 36, item 3).

A registered name (a protocol, a backend, a statistic, an executor, a command) is written once, where
its entry is declared. Elsewhere in ``src/polyjudge`` the source may not list such names again, nor
branch on one:

* a *list*: a tuple, list or set literal, or a dict's literal keys, holding two or more names of one
  registry (``Choice(["local", "ray"])``, ``{"openai": 0.5, "anthropic": 0.5}``, a table of commands);
* a *branch*: a comparison with a registered protocol's, backend's or executor's name
  (``protocol == "pairwise"``): the behaviour belongs on the registered class as a property.

The few exemptions below each say why. The API's public names have one table too (``_HOMES`` in
``polyjudge/api/__init__.py``); a test below checks that ``__all__``, the lazy ``__getattr__`` and
the TYPE_CHECKING block follow it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "polyjudge"

# (file under src/polyjudge, name): why the literal may stay.
EXEMPT: dict[tuple[str, str], str] = {
    ("data/settings.py", "da"): "the protocol setting's one default (-p, JudgeConfig, study files; not a list)",
    ("data/settings.py", "local"): "the executor setting's one default (--executor, JudgeConfig; not a list)",
    ("engine/session.py", "local"): "the in-process executor, which needs no Ray options (one name, not a list)",
    ("engine/pricing.py", "openai"): "MAINTAINED_BATCH_DISCOUNT's keys are genai-prices provider ids (google "
                                     "has no backend), the one table of Batch API discounts",
    ("metaeval/mtme.py", "mqm"): "mt-metrics-eval's name of its MQM human scores, not the protocol",
    ("studies/pairwise.py", "kendall"): "a key of pairwise.json's agreement object (a file's field), not the statistic",
}
# (file, name of a module-level table): why the table may hold names of a registry. Not checked for
# staleness: the study files' table (issue 36 item 2) lands beside this test at merge time.
EXEMPT_TABLES: dict[tuple[str, str], str] = {
    ("cli/specs.py", "STUDY_LEAVES_OUT"): "per-command data of study files (which options a study decides), "
                                          "keyed by the commands a study runs, not a list of commands",
    # A registry's own declaration of its built-ins (listed by --help without importing them); a test in
    # tests/architecture/test_startup.py fails when it differs from what the modules register.
    ("protocols/registry.py", "BUILTIN_PROTOCOLS"): "the protocol registry's declared built-ins",
    ("backends/registry.py", "BUILTIN_BACKENDS"): "the backend registry's declared built-ins",
}
# Command names are common words ("judge", "report", "export" are API functions and JSON keys too):
# lists of them are looked for where commands are wired, the command line's modules.
SCOPE = {"command": "cli/"}
BRANCH_KINDS = ("protocol", "backend", "executor")


def registered() -> dict[str, dict[str, str]]:
    """kind -> name -> the module that declares it."""
    from polyjudge.backends.registry import BACKENDS
    from polyjudge.cli.main import COMMANDS
    from polyjudge.engine.executor import EXECUTORS
    from polyjudge.metaeval.statistics import STATISTICS
    from polyjudge.protocols.registry import PROTOCOLS

    def home(obj: object) -> str:
        value = getattr(obj, "value", obj)  # a Statistic record: its value function's module
        return str(getattr(value, "__module__", ""))

    return {
        "protocol": {n: home(c) for n, c in PROTOCOLS.items()},
        "backend": {n: home(c) for n, c in BACKENDS.items()},
        "statistic": {n: home(s) for n, s in STATISTICS.items()},
        "executor": dict.fromkeys(EXECUTORS, "polyjudge.engine.executor"),
        "command": dict.fromkeys(COMMANDS, "polyjudge.cli.main"),
    }


def _module(path: Path) -> str:
    return "polyjudge." + ".".join(path.relative_to(SRC).with_suffix("").parts)


def _strings(nodes: list[ast.expr | None]) -> list[str]:
    return [n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def offences(path: Path, names: dict[str, dict[str, str]]) -> Iterator[str]:
    """``file:line: what`` for every list of registered names and branch on one in ``path``."""
    rel, module = path.relative_to(SRC).as_posix(), _module(path)

    def foreign(kind: str, value: str) -> bool:
        return names[kind].get(value, module) != module and (rel, value) not in EXEMPT

    tree = ast.parse(path.read_text(encoding="utf-8"))
    exempt_tables = {id(node.value) for node in tree.body if isinstance(node, ast.Assign | ast.AnnAssign)
                     for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
                     if isinstance(target, ast.Name) and (rel, target.id) in EXEMPT_TABLES}
    for node in ast.walk(tree):
        if id(node) in exempt_tables:
            continue
        if isinstance(node, ast.Tuple | ast.List | ast.Set | ast.Dict):
            values = _strings(list(node.keys) if isinstance(node, ast.Dict) else list(node.elts))
            for kind in names:
                if not rel.startswith(SCOPE.get(kind, "")):
                    continue
                listed = sorted({v for v in values if foreign(kind, v)})
                if len(listed) >= 2:
                    yield f"{rel}:{node.lineno}: lists the {kind}s {listed}"
        elif isinstance(node, ast.Compare):
            values = _strings([node.left, *node.comparators])
            for kind in BRANCH_KINDS:
                for value in values:
                    if foreign(kind, value):
                        yield f"{rel}:{node.lineno}: branches on the {kind} {value!r}"


def test_no_registered_name_is_listed_or_branched_on_outside_its_registry():
    names = registered()
    found = [o for p in sorted(SRC.rglob("*.py")) if "templates" not in p.parts for o in offences(p, names)]
    assert not found, "registered names written again (declare a property or read the registry):\n" + "\n".join(found)


def test_every_exemption_is_still_needed():
    """An exemption whose literal is gone is dropped, so the list stays small and true."""
    for (rel, value), why in EXEMPT.items():
        assert why and f'"{value}"' in (SRC / rel).read_text(encoding="utf-8"), (rel, value)


@pytest.mark.parametrize("source, expected", [
    ('EXECUTORS = ("local", "ray")\n', "lists the executors ['local', 'ray']"),
    ('if run.protocol == "pairwise":\n    pass\n', "branches on the protocol 'pairwise'"),
    ('DISCOUNT = {"openai": 0.5, "anthropic": 0.5}\n', "lists the backends ['anthropic', 'openai']"),
])
def test_the_rule_catches_a_second_list(tmp_path, source, expected, monkeypatch):
    fake = tmp_path / "polyjudge" / "engine" / "fake.py"
    fake.parent.mkdir(parents=True)
    fake.write_text(source, encoding="utf-8")
    monkeypatch.setattr(__import__(__name__, fromlist=["SRC"]), "SRC", tmp_path / "polyjudge")
    assert any(expected in o for o in offences(fake, registered()))


def test_the_api_names_have_one_table():
    """``_HOMES`` is the one list of the API's public names: ``__all__`` is it, every name loads from
    its home, and the TYPE_CHECKING block imports exactly those names from the same homes."""
    import importlib

    import polyjudge.api as api

    homes = api._HOMES
    assert list(api.__all__) == list(homes)
    tree = ast.parse((SRC / "api" / "__init__.py").read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    typed = {alias.asname or alias.name: node.module for node in block.body if isinstance(node, ast.ImportFrom)
             for alias in node.names}
    assert typed == homes
    for name, home in homes.items():
        assert getattr(api, name) is getattr(importlib.import_module(home), name), name


def test_the_package_exports_the_api_from_the_same_table():
    """``polyjudge`` reads ``polyjudge.api._HOMES`` (no list of its own): every API name is a name of the
    package, the same object, and the legacy ``polyjudge.run`` stays."""
    import polyjudge
    import polyjudge.api as api

    shared = set(api._HOMES) - set(polyjudge._SUBPACKAGES)
    assert shared <= set(polyjudge.__all__) and len(polyjudge.__all__) == len(set(polyjudge.__all__))
    assert shared <= set(dir(polyjudge))
    for name in ("judge", "JudgeConfig", "RunDir", "get_protocol", "export", "pairwise"):
        assert getattr(polyjudge, name) is getattr(api, name), name
    assert callable(polyjudge.run)
    with pytest.raises(AttributeError):
        polyjudge.no_such_name  # noqa: B018


def test_the_package_exports_no_api_name_that_a_subpackage_would_hide():
    """Importing ``polyjudge.report`` (the reporting package) binds it on ``polyjudge`` as ``report``, which
    would hide the API function of that name after a first report: such a name is left to ``polyjudge.api``,
    and ``_SUBPACKAGES`` lists exactly the API names that are subpackages."""
    import pkgutil

    import polyjudge
    import polyjudge.api as api
    import polyjudge.report  # noqa: F401

    subpackages = {m.name for m in pkgutil.iter_modules(polyjudge.__path__)}
    assert set(polyjudge._SUBPACKAGES) == set(api._HOMES) & subpackages
    assert not set(polyjudge._SUBPACKAGES) & set(polyjudge.__all__)
    assert callable(api.report)


def test_no_api_name_is_also_a_submodule():
    """Importing ``polyjudge.api.NAME`` binds the module on the package as NAME, which would hide the public
    NAME (a module class swap used to guard against it); so no public name is a submodule's name."""
    import polyjudge.api as api

    modules = {p.stem for p in (SRC / "api").glob("*.py")} | {p.name for p in (SRC / "api").iterdir() if p.is_dir()}
    assert not set(api._HOMES) & modules


def test_the_command_lines_helpers_keep_no_lazy_table():
    """api/runs.py imports only light names; the heavy ones the commands need come from api's one table."""
    tree = ast.parse((SRC / "api" / "runs.py").read_text(encoding="utf-8"))
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in {"lazy_members", "__getattr__"}]
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "__getattr__"]


def test_the_standard_columns_name_registered_statistics():
    """meta-eval's standard columns (one table, metaeval.statistics.COLUMNS) report registered statistics
    at levels they have; the per-LP table, the system-level table and the report read them from it."""
    from polyjudge.metaeval.results import standard_columns
    from polyjudge.metaeval.statistics import COLUMNS, STATISTICS
    from polyjudge.metaeval.system_level import NOT_APPLICABLE, SYSTEM_STATS
    from polyjudge.metaeval.tasks import STANDARD_COLUMNS

    for column in COLUMNS:
        assert column.level in STATISTICS.get(column.statistic).levels, column
    keys = {c.key for c in COLUMNS}
    assert set(STANDARD_COLUMNS) | set(SYSTEM_STATS) | set(NOT_APPLICABLE) == keys
    assert {c.key for c in standard_columns()} <= keys


def test_every_listing_is_one_command_and_every_listing_command_a_listing():
    """A registry listed by ``polyjudge KIND`` is declared once in ``api.registries.LISTINGS``; the command
    table names it and registry_cmd builds its command from the listing (no list of its own)."""
    from polyjudge.api.registries import LISTINGS
    from polyjudge.cli import registry_cmd
    from polyjudge.cli.main import COMMANDS

    listed = [name for name, (target, _) in COMMANDS.items() if target.startswith("polyjudge.cli.registry_cmd:")]
    assert listed == list(LISTINGS)
    for name in listed:
        attribute = COMMANDS[name][0].split(":")[1]
        assert getattr(registry_cmd, attribute).name == name
