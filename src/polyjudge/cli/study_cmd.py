"""``polyjudge study run|plan|schema``: parses its arguments, calls ``polyjudge.api`` and prints.

A study file is read, checked, planned and run by ``polyjudge.api`` (``load_study``, ``plan_study``,
``run_study``: ``api/study_file.py``), with no click. Its tables take the long options of ``polyjudge judge``
(``[[judging]]``), ``polyjudge meta-eval`` (``[[meta_eval]]``) and ``polyjudge report`` (``[report]``), dashes
as underscores: the judging settings are declared in ``polyjudge.data.settings``, the other keys in
``polyjudge.data.study_keys``, and these commands' flags are built from the same declarations. The JSON
schema (``study schema``) is generated here from those flags, as ``--help`` shows them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from polyjudge.api.study_file import OWN_KEYS, REQUIRED, TABLES
from polyjudge.cli.options import emit, format_option, out_option
from polyjudge.cli.specs import STUDY_LEAVES_OUT, study_keys

if TYPE_CHECKING:
    from polyjudge.api import Study, StudyPlan

COMMAND_OF = {"judging": "judge", "meta_eval": "meta-eval", "report": "report"}


def _command(name: str) -> click.Command:
    from polyjudge.cli.main import cli

    command = cli.get_command(click.Context(cli), name)
    assert command is not None, name
    return command


def table_keys(table: str) -> dict[str, click.Option]:
    """The command options a study table takes, by study key."""
    command = COMMAND_OF[table]
    return study_keys(_command(command), STUDY_LEAVES_OUT[command])


def parse_study(path: str, text: str, *, progress: bool = True) -> Study:
    """``polyjudge.api.parse_study`` (kept here for callers of an earlier release)."""
    from polyjudge.api import parse_study as parse

    return parse(path, text, progress=progress)


def load_study(path: str, *, progress: bool = True) -> Study:
    """``polyjudge.api.load_study`` (kept here for callers of an earlier release)."""
    from polyjudge.api import load_study as load

    return load(path, progress=progress)


# --------------------------------------------------------------------------- JSON schema

def _json_type(param: click.Option) -> str:
    if param.is_flag:
        return "boolean"
    if isinstance(param.type, click.types.IntParamType):
        return "integer"
    if isinstance(param.type, click.types.FloatParamType):
        return "number"
    return "string"


def _param_schema(param: click.Option) -> dict[str, Any]:
    kind = _json_type(param)
    item: dict[str, Any] = {"type": kind}
    t = param.type
    if isinstance(t, click.Choice):
        item["enum"] = list(getattr(t, "shown", t.choices))
    if kind in ("integer", "number") and isinstance(t, (click.IntRange, click.FloatRange)):
        for bound, open_, name in ((t.min, t.min_open, "minimum"), (t.max, t.max_open, "maximum")):
            if bound is not None:
                item["exclusive" + name.capitalize() if open_ else name] = bound
    record = param.get_help_record(click.Context(click.Command("study")))  # as --help shows it, defaults too
    help_text = " ".join((record[1] if record else "").split())
    if param.multiple or param.nargs == -1:
        return {"type": "array", "items": item, "description": help_text}
    return {**item, "description": help_text}


def study_schema() -> dict[str, Any]:
    """The JSON schema of a study file, generated from the commands' click parameters."""
    tables: dict[str, Any] = {}
    for table in TABLES:
        props = {**OWN_KEYS[table], **{k: _param_schema(p) for k, p in table_keys(table).items()}}
        tables[table] = {"type": "object", "properties": props, "required": REQUIRED[table],
                         "additionalProperties": False}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "polyjudge study file",
        "description": "[[judging]], [[meta_eval]] and [report] tables; their keys are the long options of "
                       "polyjudge judge, meta-eval and report, dashes as underscores.",
        "type": "object", "additionalProperties": False,
        "properties": {"judging": {"type": "array", "items": tables["judging"]},
                       "meta_eval": {"type": "array", "items": tables["meta_eval"]},
                       "report": tables["report"]},
    }


def schema_text() -> str:
    return json.dumps(study_schema(), indent=2, ensure_ascii=False) + "\n"


# --------------------------------------------------------------------------- commands

@click.group("study")
def study() -> None:
    """Run or plan a study file: judgings, their meta-evaluations and a report (README, "Study files")."""


_STUDY_ARG = click.argument("study_file", metavar="STUDY.toml", type=click.Path(exists=True, dir_okay=False))


def _plan_table(plan: StudyPlan, fmt: str) -> str:
    rows = plan.rows()
    if fmt == "json":
        return json.dumps({"judgings": rows[:-1], "total": rows[-1]}, indent=2) + "\n"
    cols = ["judging", "requests_to_send", "requests_total", "prompt_tokens", "max_completion_tokens", "cost_usd",
            "duration_s"]

    def cell(v: object, text: bool) -> str:
        if v is None:
            return "unknown" if text else ""
        return f"{v:,.4f}" if isinstance(v, float) and text else f"{v:,}" if isinstance(v, int) and text else str(v)

    table = [cols] + [[cell(r[c], fmt == "text") for c in cols] for r in rows]
    if fmt == "tsv":
        return "".join("\t".join(r) + "\n" for r in table)
    widths = [max(len(r[i]) for r in table) for i in range(len(cols))]
    return "".join("  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths)))
                   .rstrip() + "\n" for r in table)


@study.command("plan")
@_STUDY_ARG
@out_option("The study folder (what its run directories already hold is not counted).", required=True)
@format_option()
def plan(study_file: str, out: str, fmt: str) -> None:
    """The whole study's dry run: requests, tokens, cost and duration per judging and in total.

    Sends and writes nothing. Cost is an upper bound (every completion at its token limit; "unknown"
    when no judge of the judging has a price); duration is unknown for self-hosted servers."""
    from polyjudge.api import plan_study

    found = plan_study(study_file, out)
    click.echo(_plan_table(found, fmt), nl=False)


@study.command("run")
@_STUDY_ARG
@out_option("The study folder: judging/NAME run directories, meta_eval/NAME.txt|json, report.html.",
            required=True)
@format_option()
def run(study_file: str, out: str, fmt: str) -> None:
    """Run every judging of STUDY.toml, then its meta-evaluations and its report, under -o OUT.

    Running it again resumes: what the run directories hold is not sent again."""
    from polyjudge.api import run_study

    result = run_study(study_file, out)
    rows = [{"judging": name, "judgments": r.manifest.counts["judgments"],
             "ok": r.manifest.counts.get("status_ok", 0), "sent_now": r.manifest.counts["sent_this_session"],
             "cost_usd": round(r.manifest.cost_usd, 6)} for name, r in result.runs.items()]
    if fmt == "json":
        click.echo(json.dumps({"judgings": rows, "meta_evals": sorted(result.meta_evals),
                               "report": None if result.report is None else str(result.report)}, indent=2))
        return
    click.echo("\t".join(rows[0]) if rows else "judging")
    for row in rows:
        click.echo("\t".join(str(v) for v in row.values()))
    for name in result.meta_evals:
        click.echo(f"wrote {Path(out) / 'meta_eval' / name}.txt and .json", err=True)
    if result.report is not None:
        click.echo(f"wrote {result.report}", err=True)


@study.command("schema")
@out_option("Write the schema to this file instead of standard output.")
def schema(out: str | None) -> None:
    """Print the JSON schema of study files (generated from the commands' options)."""
    emit(schema_text(), out)
