"""Start-up (issue 33 item 5): the Python API loads its members on first use, so judging does not import
scipy, the studies or the report (about 0.75 s of CPU per command); ``--help`` of the judging commands
imports no numpy, jinja2, asyncio, engine or protocol/backend/aggregator module (the registries declare
their built-ins, checked here against what the modules register). Times: ``benchmarks/startup.py``."""

import subprocess
import sys


def _loaded_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
                         capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_the_judge_path_does_not_import_scipy_the_studies_or_the_report():
    loaded = _loaded_after("import polyjudge.cli.main, polyjudge.cli.judge_cmd\n"
                           "from polyjudge.api import JudgeConfig, judge\n"
                           # what a judging run then loads: engine, protocols, analysis, the run directory
                           "import polyjudge.engine.core, polyjudge.engine.result, polyjudge.analysis\n"
                           "import polyjudge.protocols.da, polyjudge.protocols.mqm, polyjudge.rundir")
    assert "polyjudge.engine.session" in loaded
    assert not {"scipy", "scipy.stats", "polyjudge.studies.consistency", "polyjudge.report.html"} & loaded


def test_every_public_name_of_the_api_resolves_and_pairwise_is_the_function():
    loaded = _loaded_after("import polyjudge.api as api\n"
                           "assert all(getattr(api, n) is not None for n in api.__all__)\n"
                           "import polyjudge.api.pairwise_study\n"
                           "from polyjudge.api import pairwise\n"
                           "assert callable(pairwise) and not hasattr(pairwise, '__path__'), pairwise\n"
                           "import polyjudge.api.exporting, polyjudge.api.reporting\n"
                           "from polyjudge.api import export, report\n"
                           "assert callable(export) and callable(report), (export, report)")
    assert "polyjudge.api.pairwise_study" in loaded


def test_importing_polyjudge_does_not_import_the_api():
    """``polyjudge`` exports the API's names from its table when first asked for, not at import."""
    assert "polyjudge.api" not in _loaded_after("import polyjudge")
    assert "polyjudge.engine.session" in _loaded_after("import polyjudge\npolyjudge.JudgeConfig")


def _loaded_by_cli(*argv: str) -> set[str]:
    """The modules a ``polyjudge ARGV`` process has loaded when it exits (it prints its help, exit 0)."""
    return _loaded_after("import sys\nfrom polyjudge.cli.main import main\n"
                         f"try:\n    main({list(argv)!r})\nexcept SystemExit as exc:\n    assert exc.code == 0, exc\n")


HEAVY = {"scipy", "numpy", "aiohttp", "polyjudge.api", "polyjudge.engine", "polyjudge.metaeval", "polyjudge.report"}


def test_the_command_list_imports_no_command_module_and_nothing_heavy():
    loaded = _loaded_by_cli("--help")
    assert not HEAVY & loaded, sorted(HEAVY & loaded)
    assert not [m for m in loaded if m.startswith("polyjudge.cli.") and m.endswith("_cmd")]


def test_meta_eval_help_does_not_import_scipy():
    assert "scipy" not in _loaded_by_cli("meta-eval", "--help")


def test_every_command_in_the_table_loads_and_shows_the_table_line():
    import click

    from polyjudge.cli.main import COMMANDS, cli

    ctx = click.Context(cli)
    assert cli.list_commands(ctx) == list(COMMANDS)
    for name, (_, short) in COMMANDS.items():
        command = cli.get_command(ctx, name)
        assert command is not None and command.get_short_help_str(200) == short, name


# What printing the help of a judging command must not load (issue 33 item 5): numpy and scipy (the
# aggregators and span voting import numpy where they compute), jinja2 (built when a template is),
# aiohttp and asyncio, the engine, and any protocol, backend or aggregator implementation (the
# listings read the registries' declared built-ins).
NOT_FOR_HELP = {"numpy", "scipy", "jinja2", "aiohttp", "asyncio", "polyjudge.engine.session",
                "polyjudge.engine.runner", "polyjudge.engine.spec", "polyjudge.backends.http",
                "polyjudge.backends.openai", "polyjudge.backends.pool", "polyjudge.protocols.base",
                "polyjudge.protocols.da", "polyjudge.protocols.tsa", "polyjudge.protocols.templates",
                "polyjudge.aggregate.rrwa", "polyjudge.aggregate.spanvote", "polyjudge.aggregate.mqm"}


def test_the_judging_commands_help_loads_no_engine_numpy_or_protocol_module():
    for argv in (["judge", "--help"], ["score", "--help"], ["demo", "--help"], ["probe", "--help"]):
        loaded = _loaded_by_cli(*argv)
        assert not NOT_FOR_HELP & loaded, (argv, sorted(NOT_FOR_HELP & loaded))


def test_pairwise_help_loads_no_engine_jinja2_or_protocol_module():
    """pairwise reads segment score files too (their formats' registry brings numpy and the run
    aggregators), but its judge flags load no more than judge's do."""
    reading_scores = {"numpy", "polyjudge.aggregate.rrwa", "polyjudge.aggregate.spanvote"}
    loaded = _loaded_by_cli("pairwise", "--help")
    assert not (NOT_FOR_HELP - reading_scores) & loaded, sorted((NOT_FOR_HELP - reading_scores) & loaded)


def test_listing_the_registries_imports_none_of_their_modules():
    loaded = _loaded_after("from polyjudge.api.registries import AGGREGATORS, BACKENDS, PROTOCOLS\n"
                           "for r in (AGGREGATORS, BACKENDS, PROTOCOLS):\n    r.describe()\n"
                           "from polyjudge.api.registries import protocols_with_option\n"
                           "assert 'da' in protocols_with_option('score_mode'), protocols_with_option('score_mode')\n"
                           "assert 'da' in PROTOCOLS and 'openai' in BACKENDS and 'rrwa' in AGGREGATORS")
    assert not NOT_FOR_HELP & loaded, sorted(NOT_FOR_HELP & loaded)


def declaration_mismatches(registry, options_of=None):
    """How ``registry``'s declared built-ins differ from what its modules register (names, order, targets,
    summaries, option names), one line each; empty when they agree."""
    import importlib

    registered = [(name, obj) for name, obj in registry.items()
                  if str(getattr(getattr(obj, "value", obj), "__module__", "")).startswith("polyjudge.")]
    found = []
    if [n for n, _ in registered] != list(registry.builtins):
        found.append(f"{registry.kind}: modules register {[n for n, _ in registered]}, "
                     f"declared {list(registry.builtins)}")
    for name, obj in registered:
        declared = registry.builtins.get(name)
        if declared is None:
            continue
        module, attr = declared.target.split(":")
        if getattr(importlib.import_module(module), attr, None) is not obj:
            found.append(f"{registry.kind} {name}: target {declared.target} is not the registered object")
        doc = str(getattr(obj, "summary", None) or getattr(obj, "__doc__", None) or "").strip()
        summary = doc.splitlines()[0] if doc else ""
        if declared.summary != summary:
            found.append(f"{registry.kind} {name}: declared summary {declared.summary!r}, "
                         f"its docstring says {summary!r}")
        options = options_of(obj) if options_of is not None else ()
        if declared.options != options:
            found.append(f"{registry.kind} {name}: declared options {declared.options}, it takes {options}")
    return found


def test_every_declared_builtin_is_what_its_module_registers():
    from polyjudge.api.registries import AGGREGATORS, BACKENDS, PROTOCOLS
    from polyjudge.protocols.options import option_fields

    def protocol_option_names(cls):
        return tuple(f.name for f in option_fields(cls.options_type))

    assert declaration_mismatches(PROTOCOLS, protocol_option_names) == []
    assert declaration_mismatches(BACKENDS) == []
    assert declaration_mismatches(AGGREGATORS) == []


def test_a_stale_declaration_is_found():
    import dataclasses

    from polyjudge.api.registries import AGGREGATORS, PROTOCOLS
    from polyjudge.protocols.options import option_fields
    from polyjudge.registry import Registry

    def protocol_option_names(cls):
        return tuple(f.name for f in option_fields(cls.options_type))

    def copy(registry, builtins):
        fake = Registry(registry.kind, builtins=builtins)
        for name, obj in registry.items():
            fake.add(name, obj)
        return fake

    da = PROTOCOLS.builtins["da"]
    wrong = {**PROTOCOLS.builtins, "da": dataclasses.replace(da, summary="Something else.", options=())}
    found = declaration_mismatches(copy(PROTOCOLS, wrong), protocol_option_names)
    assert any("da: declared summary" in f for f in found) and any("da: declared options" in f for f in found)
    missing = {n: b for n, b in AGGREGATORS.builtins.items() if n != "geo"}
    assert any("modules register" in f for f in declaration_mismatches(copy(AGGREGATORS, missing)))
