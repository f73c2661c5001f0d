"""The ``polyjudge`` command.

Sub-commands live in their own modules and are imported only when invoked,
so ``polyjudge --version`` and ``--help`` stay fast.
"""

from __future__ import annotations

import importlib
import sys

import click

from polyjudge._version import __version__
from polyjudge.registry import REGISTRY_KINDS

# The one table of commands: name -> ("module:attribute" of a click.Command, the line ``polyjudge --help``
# shows for it). ``--help`` lists the commands from this table alone, without importing any command module
# (they pull in the engine, scipy and the report); the line is also the loaded command's ``short_help``.
COMMANDS: dict[str, tuple[str, str]] = {
    "judge": ("polyjudge.cli.judge_cmd:judge", "Judge every item of INPUT and write a run directory."),
    "batch": ("polyjudge.cli.batch_cmd:batch", "Batches of a run sent through a Batch API: status, cancel."),
    "cache": ("polyjudge.cli.cache_cmd:cache", "The response cache every run shares: stats, prune, clear."),
    "cost": ("polyjudge.cli.cost_cmd:cost", "Tokens and USD that RUN_DIR... spent, per judge and model."),
    "score": ("polyjudge.cli.judge_cmd:score", "Score parallel text files like comet-score."),
    "demo": ("polyjudge.cli.judge_cmd:demo", "Judge the bundled example with the embedded judge."),
    "human-mqm": ("polyjudge.cli.mqm_cmd:human_mqm", "MQM error points per system from a WMT MQM TSV."),
    "variability": ("polyjudge.cli.mqm_cmd:variability", "Run-to-run spread of a judged run directory."),
    "position-bias": ("polyjudge.cli.position_cmd:position_bias", "Score by prompt position of a contrastive run."),
    "span-f1": ("polyjudge.cli.spans_cmd:span_f1", "Character-level span P/R/F1 (WMT25 task 2)."),
    "compare-formats": ("polyjudge.cli.compare_cmd:compare_formats", "Span formats side by side."),
    "meta-eval": ("polyjudge.cli.metaeval_cmd:meta_eval", "Meta-evaluate metrics against human scores."),
    "error-free-eval": ("polyjudge.cli.error_free_cmd:error_free_eval", "Error-free labels against ESA gold."),
    "compare-systems": ("polyjudge.cli.systems_cmd:compare_systems", "Compare every pair of systems of RUN."),
    "export": ("polyjudge.cli.export_cmd:export", "Write RUN's scores in a format the field's tools read."),
    "consistency": ("polyjudge.cli.consistency_cmd:consistency", "Cross-language consistency study."),
    "agreement": ("polyjudge.cli.agreement_cmd:agreement", "Agreement of judges with human ratings."),
    "probe": ("polyjudge.cli.probes_cmd:probe", "Probe a judge's robustness on INPUT."),
    "pairwise": ("polyjudge.cli.pairwise_cmd:pairwise", "Compare the systems of INPUT pairwise."),
    "rerank": ("polyjudge.cli.rerank_cmd:rerank", "Choose a translation per source: QE reranking or MBR."),
    "validate": ("polyjudge.cli.validate_cmd:validate", "Compare judges with human ratings many ways."),
    "simulate": ("polyjudge.cli.validate_cmd:simulate", "Synthetic judge-selection experiment."),
    "annotate": ("polyjudge.cli.annotate_cmd:annotate", "Ask humans for MQM/ESA spans, scores and ratings."),
    "report": ("polyjudge.cli.report_cmd:report", "Write an HTML report of runs and study outputs."),
    "drift": ("polyjudge.cli.drift_cmd:drift", "Ask RUN's judge again: has it changed since its stored answers?"),
    "study": ("polyjudge.cli.study_cmd:study", "Run or plan a study file: judgings, meta-evals, a report."),
    # a listing command per listed kind of registry, declared once in polyjudge.registry.REGISTRY_KINDS
    **{kind.name: (kind.command, kind.short_help) for kind in REGISTRY_KINDS if kind.listed},
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
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module, attr = entry[0].split(":")
        command: click.Command = getattr(importlib.import_module(module), attr)
        command.short_help = entry[1]
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from the table alone: no command module is imported to print it."""
        with formatter.section("Commands"):
            formatter.write_dl([(name, short) for name, (_, short) in COMMANDS.items()])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="polyjudge")
def cli() -> None:
    """LLM judges for multilingual text and MT, and the statistics to trust them."""


def main(argv: list[str] | None = None) -> None:
    from polyjudge.cli.errors import run_cli
    sys.exit(run_cli(cli, argv))


if __name__ == "__main__":  # pragma: no cover
    main()
