"""The ``polyjudge`` command.

Sub-commands live in their own modules and are imported only when invoked,
so ``polyjudge --version`` and ``--help`` stay fast.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

import click

from polyjudge._version import __version__

# command name -> "module:attribute" of a click.Command
COMMANDS: dict[str, str] = {
    "judge": "polyjudge.cli.judge_cmd:judge",
    "batch": "polyjudge.cli.batch_cmd:batch",
    "cache": "polyjudge.cli.cache_cmd:cache",
    "cost": "polyjudge.cli.cost_cmd:cost",
    "score": "polyjudge.cli.judge_cmd:score",
    "demo": "polyjudge.cli.judge_cmd:demo",
    "human-mqm": "polyjudge.cli.mqm_cmd:human_mqm",
    "variability": "polyjudge.cli.mqm_cmd:variability",
    "span-f1": "polyjudge.cli.spans_cmd:span_f1",
    "compare-formats": "polyjudge.cli.compare_cmd:compare_formats",
    "meta-eval": "polyjudge.cli.metaeval_cmd:meta_eval",
    "compare-systems": "polyjudge.cli.systems_cmd:compare_systems",
    "export": "polyjudge.cli.export_cmd:export",
    "consistency": "polyjudge.cli.consistency_cmd:consistency",
    "agreement": "polyjudge.cli.agreement_cmd:agreement",
    "probe": "polyjudge.cli.probes_cmd:probe",
    "pairwise": "polyjudge.cli.pairwise_cmd:pairwise",
    "validate": "polyjudge.cli.validate_cmd:validate",
    "simulate": "polyjudge.cli.validate_cmd:simulate",
    "report": "polyjudge.cli.report_cmd:report",
    "protocols": "polyjudge.cli.registry_cmd:protocols",
    "backends": "polyjudge.cli.registry_cmd:backends",
    "statistics": "polyjudge.cli.registry_cmd:statistics",
    "aggregators": "polyjudge.cli.registry_cmd:aggregators",
    "presets": "polyjudge.cli.registry_cmd:presets",
    "readers": "polyjudge.cli.registry_cmd:readers",
    "score-formats": "polyjudge.cli.registry_cmd:score_formats",
    "span-formats": "polyjudge.cli.registry_cmd:span_formats",
    "writers": "polyjudge.cli.registry_cmd:writers",
}


class LazyGroup(click.Group):
    def invoke(self, ctx: click.Context) -> object:
        # click would turn a broken pipe into exit 1; it is raised past click so run_cli ends quietly.
        try:
            return super().invoke(ctx)
        except BrokenPipeError as exc:
            from polyjudge.cli.errors import OutputClosed

            raise OutputClosed() from exc

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [n for n, t in COMMANDS.items()
                if importlib.util.find_spec(t.split(":")[0]) is not None]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, attr = target.split(":")
        if importlib.util.find_spec(module) is None:
            return None
        command: click.Command = getattr(importlib.import_module(module), attr)
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="polyjudge")
def cli() -> None:
    """LLM judges for multilingual text and MT, and the statistics to trust them."""


def main(argv: list[str] | None = None) -> None:
    from polyjudge.cli.errors import run_cli
    sys.exit(run_cli(cli, argv))


if __name__ == "__main__":  # pragma: no cover
    main()
