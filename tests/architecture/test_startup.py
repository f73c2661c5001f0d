"""The judge command's start-up: the Python API loads its members on first use, so judging
does not import scipy, the studies or the report (about 0.75 s of CPU per command)."""

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
                           "assert callable(pairwise) and not hasattr(pairwise, '__path__'), pairwise")
    assert "polyjudge.api.pairwise_study" in loaded


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
