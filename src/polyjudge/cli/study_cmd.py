"""``polyjudge study run|plan|schema``: a study file (TOML) read into a typed ``Study`` that the API runs.

A study file's tables take exactly the long options of ``polyjudge judge`` (``[[judging]]``),
``polyjudge meta-eval`` (``[[meta_eval]]``) and ``polyjudge report`` (``[report]``), dashes as
underscores; the keys, their types and the JSON schema all come from the click parameters of those
commands, and each value is checked by its parameter's click type, as the flag's value would be.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from polyjudge.cli.options import emit, format_option, judging_spec, out_option
from polyjudge.cli.specs import STUDY_LEAVES_OUT, build_spec, flags_of, study_keys
from polyjudge.data.errors import InputError

if TYPE_CHECKING:
    from polyjudge.api.study import Study, StudyJudging, StudyMetaEval, StudyPlan, StudyReport

TABLES = ("judging", "meta_eval", "report")
# The keys a table has besides its command's options (JSON schema of each).
OWN_KEYS: dict[str, dict[str, dict[str, Any]]] = {
    "judging": {"name": {"type": "string", "description": "The judging's name: its run directory OUT/judging/NAME."},
                "input": {"type": "string", "description": "What is judged (polyjudge judge's INPUT)."}},
    "meta_eval": {"name": {"type": "string", "description": "Its outputs: OUT/meta_eval/NAME.txt and NAME.json."},
                  "runs": {"type": "array", "items": {"type": "string"},
                           "description": "Judgings (by name) meta-evaluated."},
                  "human": {"type": "string", "description": "Human scores: a file, or an mt-metrics-eval "
                                                             "test-set folder (then as --mtme)."}},
    "report": {"runs": {"type": "array", "items": {"type": "string"},
                        "description": "Judgings (by name) shown (default: every one)."}},
}
REQUIRED = {"judging": ["name", "input"], "meta_eval": ["runs", "human"], "report": []}
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


def _defaults(table: str) -> dict[str, Any]:
    """Every parameter of the table's command as click fills it when no flag is given."""
    command = COMMAND_OF[table]
    return dict(_command(command).make_context(command, ["-"] if table == "judging" else []).params)


# --------------------------------------------------------------------------- the file and its lines

_HEADER = re.compile(r"^\s*\[(\[)?\s*([A-Za-z0-9_\-\"'.]+)\s*\]?\]\s*(#.*)?$")


@dataclass
class Source:
    """A study file's text, to find the line of a key inside its table (tomllib gives no lines)."""

    path: str
    text: str
    base: Path = field(init=False)

    def __post_init__(self) -> None:
        self.base = Path(self.path).parent

    def line(self, table: str | None, index: int = 0, key: str | None = None) -> int | None:
        """The line of ``key`` in the ``index``-th ``table`` (its header without a key; a top-level
        ``key`` with no table); None when the file spells it so that no line holds it alone."""
        section: tuple[str | None, int] = (None, 0)
        seen: dict[str, int] = {}
        header_line = None
        key_re = None if key is None else re.compile(rf"^\s*([\"']?){re.escape(key)}\1\s*[=.]")
        for n, text in enumerate(self.text.splitlines(), 1):
            m = _HEADER.match(text)
            if m:
                name = m.group(2).strip("\"'")
                seen[name] = seen.get(name, -1) + 1
                section = (name, seen[name])
                if section == (table, index):
                    header_line = n
                if table is None and name == key:
                    return n
                continue
            if section == (table, index) and key_re is not None and key_re.match(text):
                return n
        return header_line

    def error(self, message: str, table: str | None, index: int = 0, key: str | None = None) -> InputError:
        return InputError(message, path=self.path, line=self.line(table, index, key), field=key)

    def path_of(self, value: str) -> str:
        """A path of the study file, relative to the study file's folder."""
        return value if os.path.isabs(value) else os.path.join(self.base, value) if str(self.base) != "." else value


# --------------------------------------------------------------------------- values

def _json_type(param: click.Option) -> str:
    if param.is_flag:
        return "boolean"
    if isinstance(param.type, click.types.IntParamType):
        return "integer"
    if isinstance(param.type, click.types.FloatParamType):
        return "number"
    return "string"


_PYTHON_TYPES: dict[str, Callable[[Any], bool]] = {
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
}
_NAMES = {"boolean": "true or false", "integer": "an integer", "number": "a number", "string": "a string"}


def _toml_repr(value: Any) -> str:
    return json.dumps(value, default=str)[:60]


def convert(src: Source, where: tuple[str, int], key: str, param: click.Option, value: Any) -> Any:
    """A study value checked as its flag's value would be (its type, then its click type)."""
    def fail(message: str) -> InputError:
        return src.error(message, where[0], where[1], key)

    kind, many = _json_type(param), param.multiple or param.nargs == -1
    values = value if many else [value]
    if many and not isinstance(value, list):
        raise fail(f"expected a list of {_NAMES[kind].split(' ', 1)[-1]}s, got {_toml_repr(value)}")
    for v in values:
        if not _PYTHON_TYPES[kind](v):
            raise fail(f"expected {_NAMES[kind]}, got {_toml_repr(v)}")
    if isinstance(param.type, click.Path):
        values = [src.path_of(v) for v in values]
    ctx = click.Context(click.Command(key))
    try:
        return param.type_cast_value(ctx, values if many else values[0])
    except click.BadParameter as exc:
        raise fail(exc.message) from None
    except InputError as exc:
        raise fail(exc.reason) from None


def _check_keys(src: Source, table: str, index: int, found: Mapping[str, Any], allowed: Mapping[str, Any]) -> None:
    for key in found:
        if key not in allowed:
            raise src.error(f"unknown key in [{table}] (see `polyjudge study schema`)", table, index, key)
    for key in REQUIRED[table]:
        if key not in found:
            raise src.error(f"[{table}] needs {key!r}", table, index, key)


def _own(src: Source, table: str, index: int, found: Mapping[str, Any]) -> dict[str, Any]:
    """The table's own keys (name, input, runs, human) checked against their schema."""
    out: dict[str, Any] = {}
    for key, schema in OWN_KEYS[table].items():
        if key not in found:
            continue
        value = found[key]
        ok = isinstance(value, str) if schema["type"] == "string" else \
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        if not ok:
            want = "a string" if schema["type"] == "string" else "a list of strings"
            raise src.error(f"expected {want}, got {_toml_repr(value)}", table, index, key)
        out[key] = value
    return out


def _renamed(src: Source, table: str, found: Mapping[str, Any]) -> dict[str, Any]:
    """A ``[[judging]]`` table with the keys of an earlier release (``aggregate``, ``no_context``, ...) under
    their settings' names, each said once in a deprecation line (a ``no_X`` key's value negated)."""
    from polyjudge.api.settings import old_keys
    from polyjudge.cli.options import warn

    renamed = old_keys() if table == "judging" else {}
    out: dict[str, Any] = {}
    for key, value in found.items():
        if key not in renamed:
            out[key] = value
            continue
        setting, negated = renamed[key]
        if setting.study_key in found:
            raise src.error(f"give {setting.study_key!r} only ({key!r} is its old name)", table, 0, key)
        warn(f"{src.path}: the study key {key!r} is deprecated and will be removed in the next release; use "
             f"{setting.study_key!r}" + (" (its negation)" if negated else ""))
        out[setting.study_key] = (not value) if negated and isinstance(value, bool) else value
    return out


def _options(src: Source, table: str, index: int, found: Mapping[str, Any]) -> dict[str, Any]:
    """The table's command parameters (dests), defaults filled in, given values converted."""
    found = _renamed(src, table, found)
    keys = table_keys(table)
    _check_keys(src, table, index, found, {**OWN_KEYS[table], **keys})
    params = _defaults(table)
    for key, value in found.items():
        if key in keys and not (table == "report" and key == "metaeval"):
            params[keys[key].name or key] = convert(src, (table, index), key, keys[key], value)
    return params


# --------------------------------------------------------------------------- tables

def _judging(src: Source, index: int, found: Mapping[str, Any], progress: bool) -> StudyJudging:
    from polyjudge.api.study import StudyJudging

    own = _own(src, "judging", index, found)
    params = _options(src, "judging", index, found)
    given = own["input"]
    params["input_path"] = given if given.startswith("hf:") else src.path_of(given)
    try:
        spec = judging_spec(params, progress=progress)
    except InputError as exc:
        key = (exc.field or "").lstrip("-").replace("-", "_")
        raise src.error(exc.reason, "judging", index, key if key in found else None) from None
    return StudyJudging(own["name"], spec)


def _metric(src: Source, spec: str) -> str:
    name, sep, path = spec.rpartition("=")
    return f"{name}{sep}{src.path_of(path)}"


def _meta_eval(src: Source, index: int, found: Mapping[str, Any]) -> StudyMetaEval:
    from polyjudge.api.metaeval import parse_metric_spec
    from polyjudge.api.study import StudyMetaEval

    own = _own(src, "meta_eval", index, found)
    params = _options(src, "meta_eval", index, found)
    flags_type = flags_of(_command("meta-eval"))
    assert flags_type is not None
    flags = build_spec(flags_type, params)
    metrics = dict(parse_metric_spec(_metric(src, s)) for s in params["metric_specs"])
    try:
        config = flags.config(metrics)
    except InputError as exc:
        raise src.error(exc.reason, "meta_eval", index, None) from None
    human = src.path_of(own["human"])
    if not os.path.exists(human):  # found now, not after the judgings were paid for
        raise src.error(f"{human} does not exist", "meta_eval", index, "human")
    return StudyMetaEval(own.get("name", f"meta_eval{index + 1}"), tuple(own["runs"]), human, config)


def _report(src: Source, found: Mapping[str, Any], judgings: list[str], evaluations: list[str]) -> StudyReport:
    from polyjudge.api import ReportConfig
    from polyjudge.api.study import StudyReport

    own = _own(src, "report", 0, found)
    params = _options(src, "report", 0, found)
    params = {k: v for k, v in params.items() if k not in ("run_dirs", "out")}
    named = found.get("metaeval", evaluations[0] if evaluations else None)
    if named is not None and named not in evaluations:  # not a [[meta_eval]] of the study: a file
        params["metaeval"] = convert(src, ("report", 0), "metaeval", table_keys("report")["metaeval"], named)
        named = None
    return StudyReport(tuple(own.get("runs", judgings)), named, ReportConfig(**params))


def _tables(src: Source, data: Mapping[str, Any], name: str) -> list[Mapping[str, Any]]:
    value = data.get(name, [])
    if name == "report":
        value = [value] if isinstance(value, dict) else value
        if len(value) > 1:
            raise src.error("a study has one [report] table", name, 1)
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise src.error(f"expected [[{name}]] tables", None, 0, name)
    return value


def parse_study(path: str, text: str, *, progress: bool = True) -> Study:
    """The :class:`Study` of a study file's text (InputError naming the file, line and key)."""
    from polyjudge.api.study import Study

    src = Source(path, text)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        raise InputError(f"not valid TOML: {str(exc).split(' (at line')[0]}", path=path,
                         line=int(m.group(1)) if m else None) from None
    for key in data:
        if key not in TABLES:
            raise src.error("unknown table or key; a study has [[judging]], [[meta_eval]] and [report]", None, 0, key)
    judgings = [_judging(src, i, t, progress) for i, t in enumerate(_tables(src, data, "judging"))]
    evaluations = [_meta_eval(src, i, t) for i, t in enumerate(_tables(src, data, "meta_eval"))]
    _check_names(src, "judging", [j.name for j in judgings])
    _check_names(src, "meta_eval", [m.name for m in evaluations])
    reports = [_report(src, t, [j.name for j in judgings], [m.name for m in evaluations])
               for t in _tables(src, data, "report")]
    uses = [("meta_eval", i, m.runs) for i, m in enumerate(evaluations)] + [("report", 0, r.runs) for r in reports]
    for table, index, runs in uses:
        for run in runs:
            if run not in {j.name for j in judgings}:
                raise src.error(f"{run!r} names no [[judging]] of the study", table, index, "runs")
    if not judgings:
        raise InputError("holds no [[judging]] table; a study judges at least once (see `polyjudge study schema`)",
                         path=path)
    return Study(tuple(judgings), tuple(evaluations), reports[0] if reports else None, path=path)


def _check_names(src: Source, table: str, names: list[str]) -> None:
    from polyjudge.api.study import check_name

    for i, name in enumerate(names):
        try:
            check_name(name, table, src.path)
        except InputError as exc:
            raise src.error(exc.reason, table, i, "name") from None
        if name in names[:i]:
            raise src.error(f"{table} name {name!r} is given twice", table, i, "name")


@contextmanager
def located(path: str) -> Iterator[None]:
    """A study table's bad setting found while it ran, said at the table's line in the study file
    (the key's line when the error names one of the table's keys)."""
    from polyjudge.api.study import StudyInputError

    try:
        yield
    except StudyInputError as exc:
        from polyjudge.api.study import read_study_file

        src = Source(path, read_study_file(path))
        key = (exc.field or "").lstrip("-").replace("-", "_") or None
        line = src.line(exc.table, exc.index, key)
        if key is not None and line == src.line(exc.table, exc.index):  # not a key of the table
            key = exc.field
        raise InputError(exc.reason, path=path, line=line, field=key) from None


def load_study(path: str, *, progress: bool = True) -> Study:
    """The study file ``path`` read (``polyjudge.api.read_study_file``: a regular UTF-8 file of bounded size)
    and checked."""
    from polyjudge.api.study import read_study_file

    return parse_study(path, read_study_file(path), progress=progress)


# --------------------------------------------------------------------------- JSON schema

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

    with located(study_file):
        found = plan_study(load_study(study_file, progress=False), out)
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

    with located(study_file):
        result = run_study(load_study(study_file), out)
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
