"""A study file (TOML) read into a typed :class:`~polyjudge.api.Study`, from Python, without the command line.

A ``[[judging]]`` table takes the declared judging settings (``polyjudge.data.settings``) and the input keys,
a ``[[meta_eval]]`` table and the ``[report]`` table the keys of ``polyjudge.data.study_keys``: each one the
long flag of its command, dashes as underscores. A value is checked as the flag's value is (its type, bounds,
choices, paths, relative to the study file); a bad one is an :class:`~polyjudge.data.errors.InputError`
naming the file, the line and the key. ``polyjudge study run|plan`` calls :func:`load_study` and prints.
"""

from __future__ import annotations

import logging
import math
import os
import re
import stat
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyjudge.data.errors import InputError
from polyjudge.data.settings import Setting
from polyjudge.data.study_keys import TABLE_KEYS, TableKey

if TYPE_CHECKING:
    from polyjudge.api.metaeval import MetaEvalConfig
    from polyjudge.api.study import Study, StudyJudging, StudyMetaEval, StudyPlan, StudyReport, StudyResult

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
_UNBOUNDED = 1.7976931348623157e308
log = logging.getLogger("polyjudge")

Key = Setting | TableKey


def table_keys(table: str) -> dict[str, Key]:
    """The keys a study table takes besides its own (``name``, ``input``, ``runs``, ``human``), by study key:
    a ``[[judging]]``'s input keys and every judging setting of the command line, the declared keys of the
    other tables."""
    from polyjudge.data.settings import command_line

    keys: dict[str, Key] = {k.key: k for k in TABLE_KEYS[table]}
    if table == "judging":
        keys |= {s.study_key: s for s in command_line()}
    return keys


def _dest(key: Key) -> str:
    return key.dest if isinstance(key, Setting) else key.name


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

def _json_type(key: Key) -> str:
    return {"flag": "boolean", "int": "integer", "float": "number"}.get(key.kind, "string")


_NAMES = {"boolean": "true or false", "integer": "an integer", "number": "a number", "string": "a string"}


def _is(kind: str, v: Any) -> bool:
    if kind == "boolean":
        return isinstance(v, bool)
    if kind == "string":
        return isinstance(v, str)
    numbers = (int,) if kind == "integer" else (int, float)
    return isinstance(v, numbers) and not isinstance(v, bool)


def _toml_repr(value: Any) -> str:
    import json

    return json.dumps(value, default=str)[:60]


def _bounds(key: Key) -> tuple[float | None, float | None, bool]:
    low, high = key.low, key.high
    if high is not None and high >= _UNBOUNDED:
        high = None
    if key.kind == "int":
        low, high = (None if low is None else int(low)), (None if high is None else int(high))
    return low, high, bool(getattr(key, "low_open", False))


def _in_range(key: Key, value: Any) -> Any:
    """A number in its key's bounds, said as the flag says it (``0 is not in the range x>=1.``)."""
    value = float(value) if key.kind == "float" else value
    low, high, low_open = _bounds(key)
    if key.kind == "float":
        low, high = (None if low is None else float(low)), (None if high is None else float(high))
    below = low is not None and (value <= low if low_open else value < low)
    if below or (high is not None and value > high):
        if low is None:
            shown = f"x<={high}"
        elif high is None:
            shown = f"x{'>' if low_open else '>='}{low}"
        else:
            shown = f"{low}{'<' if low_open else '<='}x<={high}"
        raise ValueError(f"{value} is not in the range {shown}.")
    if key.kind == "float" and not math.isfinite(value):
        raise ValueError(f"{value!r} is not a finite number.")
    return value


def _choice(key: Key, value: str) -> str:
    from polyjudge.registry import Registry, UnknownNameError

    if isinstance(key, Setting):
        if isinstance(key.choices, str):
            import polyjudge.api.registries as registries

            found = getattr(registries, key.choices)
            if isinstance(found, Registry):
                if value not in found:
                    try:
                        found.get(value)
                    except UnknownNameError as exc:
                        raise ValueError(str(exc)) from None
                return value
            choices = tuple(found)
        else:
            choices = tuple(key.choices or ())
    else:
        choices = key.choice_list()
    if value not in choices:
        shown = ", ".join(map(repr, choices))
        raise ValueError(f"{value!r} is not {'one of ' if len(choices) > 1 else ''}{shown}.")
    return value


def _path(src: Source, key: Key, value: str) -> Any:
    """A path key's value relative to the study file, checked as the flag checks it."""
    path = src.path_of(value)
    file_ok, dir_ok = key.kind in ("file", "path"), key.kind in ("folder", "path")
    name = "File" if not dir_ok else "Directory" if not file_ok else "Path"
    try:
        mode = os.stat(path).st_mode
    except OSError:
        if getattr(key, "exists", False):
            raise ValueError(f"{name} {path!r} does not exist.") from None
        return Path(path) if isinstance(key, TableKey) else path
    if not file_ok and stat.S_ISREG(mode):
        raise ValueError(f"{name} {path!r} is a file.")
    if not dir_ok and stat.S_ISDIR(mode):
        raise ValueError(f"{name} {path!r} is a directory.")
    if not os.access(path, os.R_OK):
        raise ValueError(f"{name} {path!r} is not readable.")
    return Path(path) if isinstance(key, TableKey) else path


def _one(src: Source, key: Key, value: Any) -> Any:
    if key.kind in ("int", "float"):
        return _in_range(key, value) if key.low is not None or key.high is not None or key.kind == "float" \
            else value
    if key.kind == "choice":
        return _choice(key, value)
    if key.kind in ("file", "folder", "path"):
        return _path(src, key, value)
    if key.kind == "judge":
        from polyjudge.backends.spec import parse_judge

        return parse_judge(value)
    return value


def convert(src: Source, where: tuple[str, int], name: str, key: Key, value: Any) -> Any:
    """A study value checked as its flag's value would be (its type, then its bounds, choices, path)."""
    def fail(message: str) -> InputError:
        return src.error(message, where[0], where[1], name)

    kind, many = _json_type(key), key.many
    values = value if many else [value]
    if many and not isinstance(value, list):
        raise fail(f"expected a list of {_NAMES[kind].split(' ', 1)[-1]}s, got {_toml_repr(value)}")
    for v in values:
        if not _is(kind, v):
            raise fail(f"expected {_NAMES[kind]}, got {_toml_repr(v)}")
    try:
        done = [_one(src, key, v) for v in values]
    except InputError as exc:  # an InputError is a ValueError too: its reason, not its text naming the field
        raise fail(exc.reason) from None
    except ValueError as exc:
        raise fail(str(exc)) from None
    return tuple(done) if many else done[0]


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
    from polyjudge.data.settings import old_keys

    renamed = old_keys() if table == "judging" else {}
    out: dict[str, Any] = {}
    for key, value in found.items():
        if key not in renamed:
            out[key] = value
            continue
        setting, negated = renamed[key]
        if setting.study_key in found:
            raise src.error(f"give {setting.study_key!r} only ({key!r} is its old name)", table, 0, key)
        log.warning(f"{src.path}: the study key {key!r} is deprecated and will be removed in the next release; "
                    f"use {setting.study_key!r}" + (" (its negation)" if negated else ""))
        out[setting.study_key] = (not value) if negated and isinstance(value, bool) else value
    return out


def table_values(src: Source, table: str, index: int, found: Mapping[str, Any]) -> dict[str, Any]:
    """The values of a table's keys by the keyword each fills (its command's ``dest``), every key not given at
    its default, the given ones checked (``[report]``'s ``metaeval`` is left to the table)."""
    found = _renamed(src, table, found)
    keys = table_keys(table)
    _check_keys(src, table, index, found, {**OWN_KEYS[table], **keys})
    values = {_dest(k): k.command_default for k in keys.values()}
    for name, value in found.items():
        if name in keys and not (table == "report" and name == "metaeval"):
            values[_dest(keys[name])] = convert(src, (table, index), name, keys[name], value)
    return values


# --------------------------------------------------------------------------- tables

def _judging(src: Source, index: int, found: Mapping[str, Any], progress: bool) -> StudyJudging:
    from polyjudge.api.judging_values import judging_spec
    from polyjudge.api.study import StudyJudging

    own = _own(src, "judging", index, found)
    params = table_values(src, "judging", index, found)
    given = own["input"]
    params["input_path"] = given if given.startswith("hf:") else src.path_of(given)
    try:
        spec = judging_spec(params, progress=progress)
    except InputError as exc:
        key = (exc.field or "").lstrip("-").replace("-", "_")
        raise src.error(exc.reason, "judging", index, key if key in found else None) from None
    return StudyJudging(own["name"], spec)


def meta_eval_settings(values: Mapping[str, Any], metrics: Mapping[str, Any], **more: Any) -> MetaEvalConfig:
    """A :class:`~polyjudge.api.MetaEvalConfig` of the ``[[meta_eval]]`` keys' values (by ``dest``, as
    ``polyjudge meta-eval`` parses its flags), the metrics read from ``metric`` and ``more`` (``human``,
    ``runs``, ``mtme_dir``)."""
    from polyjudge.api.metaeval import MetaEvalConfig

    v = values
    return MetaEvalConfig(
        human=more.pop("human", None) or v["human_name"], metrics=dict(metrics), runs=more.pop("runs", ()),
        with_stored_metrics=v["with_stored_metrics"], mtme_dir=more.pop("mtme_dir", None), lps=v["lps"],
        human_format=v["human_format"], metric_format=v["metric_format"],
        human_lower_better=v["human_lower_better"], lower_better=v["lower_better"], exclude_systems=v["exclude"],
        include_refs=v["include_refs"], task=None if v["task"] == "none" else v["task"], level=v["level"],
        k=v["k"], seed=v["seed"], alpha=v["alpha"], missing_metric=v["missing_metric"], item_key=v["item_key"],
        aggregators=() if v["aggregators"] is None else (v["aggregators"],), single_runs=v["single_runs"],
        pool_lps=v["pool_lps"], **more)


def _meta_eval(src: Source, index: int, found: Mapping[str, Any]) -> StudyMetaEval:
    from polyjudge.api.metaeval import parse_metric_spec
    from polyjudge.api.study import StudyMetaEval

    own = _own(src, "meta_eval", index, found)
    values = table_values(src, "meta_eval", index, found)
    metrics = {}
    for spec in values["metric_specs"]:
        name, sep, path = spec.rpartition("=")
        key, where = parse_metric_spec(f"{name}{sep}{src.path_of(path)}")
        metrics[key] = where
    try:
        config = meta_eval_settings(values, metrics)
    except InputError as exc:
        raise src.error(exc.reason, "meta_eval", index, None) from None
    human = src.path_of(own["human"])
    if not os.path.exists(human):  # found now, not after the judgings were paid for
        raise src.error(f"{human} does not exist", "meta_eval", index, "human")
    return StudyMetaEval(own.get("name", f"meta_eval{index + 1}"), tuple(own["runs"]), human, config)


def _report(src: Source, found: Mapping[str, Any], judgings: list[str], evaluations: list[str]) -> StudyReport:
    from polyjudge.api.reporting import ReportConfig
    from polyjudge.api.study import StudyReport

    own = _own(src, "report", 0, found)
    values = table_values(src, "report", 0, found)
    named = found.get("metaeval", evaluations[0] if evaluations else None)
    if named is not None and named not in evaluations:  # not a [[meta_eval]] of the study: a file
        values["metaeval"] = convert(src, ("report", 0), "metaeval", table_keys("report")["metaeval"], named)
        named = None
    return StudyReport(tuple(own.get("runs", judgings)), named, ReportConfig(**values))


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
    """The :class:`~polyjudge.api.Study` of a study file's text (InputError naming the file, line and key);
    ``path`` is where it was read (paths in it are relative to its folder)."""
    from polyjudge.api.study import Study

    src = Source(str(path), text)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        raise InputError(f"not valid TOML: {str(exc).split(' (at line')[0]}", path=str(path),
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
                         path=str(path))
    return Study(tuple(judgings), tuple(evaluations), reports[0] if reports else None, path=str(path))


def _check_names(src: Source, table: str, names: list[str]) -> None:
    from polyjudge.api.study import check_name

    for i, name in enumerate(names):
        try:
            check_name(name, table, src.path)
        except InputError as exc:
            raise src.error(exc.reason, table, i, "name") from None
        if name in names[:i]:
            raise src.error(f"{table} name {name!r} is given twice", table, i, "name")


def load_study(path: str | Path, *, progress: bool = True) -> Study:
    """The study file ``path`` read (:func:`~polyjudge.api.read_study_file`: a regular UTF-8 file of bounded
    size) and checked: every key, value and name, every file it reads that must exist (InputError, exit 2,
    naming the file, the line and the key). ``progress``: the judgings show a progress bar on a terminal."""
    from polyjudge.api.study import read_study_file

    return parse_study(str(path), read_study_file(path), progress=progress)


@contextmanager
def located(path: str | Path) -> Iterator[None]:
    """A study table's bad setting found while it ran (a :class:`~polyjudge.api.StudyInputError`), said at the
    table's line in the study file ``path`` (the key's line when the error names one of the table's keys)."""
    from polyjudge.api.study import StudyInputError, read_study_file

    try:
        yield
    except StudyInputError as exc:
        src = Source(str(path), read_study_file(path))
        key = (exc.field or "").lstrip("-").replace("-", "_") or None
        line = src.line(exc.table, exc.index, key)
        if key is not None and line == src.line(exc.table, exc.index):  # not a key of the table
            key = exc.field
        raise InputError(exc.reason, path=str(path), line=line, field=key) from None


def _study(study: Study | str | Path, progress: bool) -> tuple[Study, str | None]:
    """The study and the file whose lines its errors name (None for a study built in Python)."""
    if isinstance(study, (str, Path)):
        return load_study(study, progress=progress), str(study)
    return study, study.path if study.path is not None and os.path.isfile(study.path) else None


def plan_study(study: Study | str | Path, out: str | Path) -> StudyPlan:
    """What running ``study`` (a :class:`~polyjudge.api.Study` or a study file) into ``out`` would send and
    cost, judging by judging (what their run directories already hold is not counted). Nothing is written;
    a table's bad setting is an InputError at its line in the study file."""
    from polyjudge.api.study import estimate_study

    found, path = _study(study, progress=False)
    if path is None:
        return estimate_study(found, out)
    with located(path):
        return estimate_study(found, out)


def run_study(study: Study | str | Path, out: str | Path) -> StudyResult:
    """Run every judging of ``study`` (a :class:`~polyjudge.api.Study` or a study file) into
    ``out/judging/NAME`` (resuming what is there), then its meta-evaluations and its report. Errors are those
    of :func:`polyjudge.api.judge`, :func:`~polyjudge.api.meta_eval` and :func:`~polyjudge.api.report`, a
    table's at its line in the study file."""
    from polyjudge.api.study import execute_study

    found, path = _study(study, progress=True)
    if path is None:
        return execute_study(found, out)
    with located(path):
        return execute_study(found, out)


__all__ = ["OWN_KEYS", "REQUIRED", "TABLES", "Source", "convert", "load_study", "located", "meta_eval_settings",
           "parse_study", "plan_study", "run_study", "table_keys", "table_values"]
