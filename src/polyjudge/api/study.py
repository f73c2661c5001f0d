"""A study: several judgings, their meta-evaluations and one report, run (or planned) as one thing.

A study file (``polyjudge study run STUDY.toml -o OUT``) is read into the typed, frozen :class:`Study`
below by ``polyjudge.api.load_study`` (``api/study_file.py``); ``polyjudge.api.run_study`` and
``plan_study`` take that object or the file (here :func:`execute_study` and :func:`estimate_study` run
the object), so a study can be built and run from Python as well::

    from polyjudge.api import InputSpec, JudgingSpec, ProtocolSpec, Study, StudyJudging, run_study
    study = Study(judgings=(StudyJudging("mqm", JudgingSpec(data=InputSpec("items.jsonl", lp="en-de"),
                                                              protocol=ProtocolSpec("mqm"))),))
    run_study(study, "out")

Everything is written under ``out``: ``judging/NAME/`` (a run directory per judging),
``meta_eval/NAME.txt`` and ``NAME.json``, ``report.html``. The folder is claimed like every
output folder (a new or empty folder, or a study folder polyjudge wrote); running the study
again resumes each judging from its run directory, so a finished study sends nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from polyjudge.api.inputs import read_input, uses_reference, with_testset_reference
from polyjudge.api.metaeval import MetaEvalConfig, MetaEvalResult, meta_eval
from polyjudge.api.reporting import ReportConfig, report
from polyjudge.api.settle import judge
from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from polyjudge.engine.estimate import Estimate
from polyjudge.engine.result import RunResult
from polyjudge.engine.session import estimate
from polyjudge.engine.spec import JudgingSpec
from polyjudge.rundir.clash import Target, file_target, input_target, refuse_clashes
from polyjudge.rundir.ownership import OwnedDir, check_out_path, claim

STUDY_KIND = "study"
JUDGING_DIR = "judging"
META_EVAL_DIR = "meta_eval"
REPORT_FILE = "report.html"


class StudyInputError(InputError):
    """Bad input found while a table of the study ran: ``table`` (``judging``, ``meta_eval``, ``report``)
    and ``index`` say which, so the command line can name the table's line in the study file."""

    def __init__(self, message: str, *, path: str | None, field: str | None, table: str, index: int) -> None:
        super().__init__(message, path=path, field=field)
        self.table, self.index = table, index


@contextmanager
def _table(study: Study, table: str, index: int) -> Iterator[None]:
    """An InputError of the table's own settings (one naming no file) as a :class:`StudyInputError`."""
    try:
        yield
    except StudyInputError:
        raise
    except InputError as exc:
        if exc.path is not None:  # names its own file (an input's line): said as it is
            raise
        raise StudyInputError(exc.reason, path=study.path, field=exc.field, table=table, index=index) from None


@dataclass(frozen=True, slots=True)
class StudyJudging:
    """A ``[[judging]]`` table: its name (the run directory ``OUT/judging/NAME``) and its spec (the one
    :class:`~polyjudge.engine.spec.JudgingSpec` of ``polyjudge judge``; its ``output`` is the study's)."""

    name: str
    spec: JudgingSpec


@dataclass(frozen=True, slots=True)
class StudyMetaEval:
    """A ``[[meta_eval]]`` table: the judgings (``runs``) compared with ``human``.

    ``human`` is a human score file (each judging is then a metric named after it) or an
    mt-metrics-eval test-set folder (the judgings are laid onto it, as ``meta-eval RUN --mtme``);
    ``config`` holds the other settings (its human, metrics and runs are filled in here)."""

    name: str
    runs: tuple[str, ...]
    human: str
    config: MetaEvalConfig


@dataclass(frozen=True, slots=True)
class StudyReport:
    """The ``[report]`` table: the judgings shown (``runs``), the ``[[meta_eval]]`` whose table it
    shows (``meta_eval``, by name) and the report's other settings (``config.out`` is replaced)."""

    runs: tuple[str, ...]
    meta_eval: str | None = None
    config: ReportConfig = ReportConfig()


@dataclass(frozen=True, slots=True)
class Study:
    """Judgings, then meta-evaluations of them, then a report. ``path`` is the study file (for messages)."""

    judgings: tuple[StudyJudging, ...]
    meta_evals: tuple[StudyMetaEval, ...] = ()
    report: StudyReport | None = None
    path: str | None = None

    def judging_dir(self, out: str | Path, name: str) -> Path:
        return Path(out) / JUDGING_DIR / name

    def outputs(self) -> list[str]:
        """The files of the study folder itself (run directories keep their own record)."""
        names = [f"{META_EVAL_DIR}/{m.name}.{ext}" for m in self.meta_evals for ext in ("txt", "json")]
        return names + ([REPORT_FILE] if self.report is not None else [])


@dataclass(frozen=True, slots=True)
class StudyResult:
    """What a study run did: each judging's run, each meta-evaluation, the report written (or None)."""

    runs: dict[str, RunResult]
    meta_evals: dict[str, MetaEvalResult]
    report: Path | None


@dataclass(frozen=True, slots=True)
class StudyPlan:
    """The dry run of a whole study: each judging's estimate (counting what its run directory holds)."""

    estimates: dict[str, Estimate]

    def rows(self) -> list[dict[str, object]]:
        """One row per judging and a ``total`` row: requests, tokens, cost (USD, None when no judge of
        a row has a price) and duration (seconds, None when nothing bounds it)."""
        rows = [_plan_row(name, est) for name, est in self.estimates.items()]
        total: dict[str, object] = {"judging": "total"}
        for key in ("requests_total", "requests_to_send", "prompt_tokens", "max_completion_tokens", "tokens"):
            total[key] = sum(int(str(r[key])) for r in rows)
        # The cost covers the judges with a price (None when none has one), as each estimate does; the
        # judgings run one after the other, so the duration is their sum, unknown when one is unknown.
        costs = [float(str(r["cost_usd"])) for r in rows if r["cost_usd"] is not None]
        total["cost_usd"] = round(sum(costs), 6) if costs or not rows else None
        durations = [r["duration_s"] for r in rows]
        total["duration_s"] = None if None in durations else round(sum(float(str(d)) for d in durations), 1)
        return [*rows, total]


def _plan_row(name: str, est: Estimate) -> dict[str, object]:
    seconds = est.duration.seconds if est.duration is not None else None
    return {"judging": name, "requests_total": est.requests_total, "requests_to_send": est.requests_to_send,
            "prompt_tokens": est.prompt_tokens, "max_completion_tokens": est.max_completion_tokens,
            "tokens": est.prompt_tokens + est.max_completion_tokens, "cost_usd": est.cost_usd,
            "duration_s": None if seconds is None else round(seconds, 1)}


def check_study(study: Study) -> None:
    """At least one judging, names unique and folder-safe, every ``runs`` entry a judging of the study
    (InputError otherwise)."""
    if not study.judgings:
        raise InputError("holds no [[judging]] table; a study judges at least once", path=study.path)
    tables = (("judging", [j.name for j in study.judgings]), ("meta_eval", [m.name for m in study.meta_evals]))
    for what, names in tables:
        for i, name in enumerate(names):
            check_name(name, what, study.path)
            if name in names[:i]:
                raise InputError(f"{what} name {name!r} is given twice", path=study.path, field="name")
    if study.report is not None and study.report.meta_eval not in (None, *(m.name for m in study.meta_evals)):
        raise InputError(f"{study.report.meta_eval!r} names no [[meta_eval]] of the study", path=study.path,
                         field="metaeval")
    judged = {j.name for j in study.judgings}
    wanted = [r for m in study.meta_evals for r in m.runs] + list(study.report.runs if study.report else ())
    for run in wanted:
        if run not in judged:
            raise InputError(f"{run!r} names no [[judging]] of the study", path=study.path, field="runs")


MAX_STUDY_BYTES = 4 * 1024 * 1024  # a study file is a few tables; more is not a study file (/dev/zero)


def read_study_file(path: str | Path) -> str:
    """A study file's text: a regular file (never a pipe or a device, which could hang or fill memory) of at
    most :data:`MAX_STUDY_BYTES`, UTF-8 with or without a BOM, CRLF line ends read as LF; else an InputError
    (exit 2) naming the file."""
    import stat

    from polyjudge.data.textio import BOM

    p = Path(path)
    try:
        mode = p.stat().st_mode
    except OSError as exc:
        raise InputError(f"cannot be read ({exc.strerror})", path=str(path)) from None
    if not stat.S_ISREG(mode):
        raise InputError("is not a regular file (a folder, pipe or device); give a study file", path=str(path))
    try:
        with p.open("rb") as fh:
            raw = fh.read(MAX_STUDY_BYTES + 1)
    except OSError as exc:
        raise InputError(f"cannot be read ({exc.strerror})", path=str(path)) from None
    if len(raw) > MAX_STUDY_BYTES:
        raise InputError(f"is larger than {MAX_STUDY_BYTES // (1024 * 1024)} MiB; a study file is a few tables",
                         path=str(path))
    try:
        text = raw.removeprefix(BOM).decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("is not UTF-8 text", path=str(path)) from None
    return text.replace("\r\n", "\n")


def check_name(name: str, what: str, path: str | None) -> None:
    """A name that is one plain folder or file name (letters, digits, ``-``, ``_``, ``.``)."""
    if not name or name.startswith(".") or not all(c.isalnum() or c in "-_." for c in name):
        raise InputError(f"{what} names are letters, digits, '-', '_' or '.' (not first), got {name!r}",
                         path=path, field="name")


def _items(spec: JudgingSpec) -> tuple[list[Item], JudgingSpec]:
    """The items of a judging and its spec, read as ``polyjudge judge`` reads them."""
    items = read_input(replace(spec.data, with_reference=uses_reference(spec)))
    return items, with_testset_reference(spec, items)


def _files(spec: JudgingSpec) -> dict[str, str | None]:
    """The files a judging reads besides its input, by setting."""
    prices = spec.budget.prices if isinstance(spec.budget.prices, str) else None
    return {"prompt_template": spec.protocol.prompt_template, "prices": prices,
            "batch_import": spec.execution.batch_import}


def _writes(spec: JudgingSpec) -> dict[str, str | None]:
    """The files a judging writes besides its run directory, by setting."""
    return {"record": spec.cache.record, "batch_export": spec.execution.batch_export}


def estimate_study(study: Study, out: str | Path) -> StudyPlan:
    """What running ``study`` into ``out`` would send and cost, judging by judging (what their run
    directories already hold is not counted). Nothing is written."""
    check_study(study)
    check_out_path(out)
    estimates = {}
    for i, j in enumerate(study.judgings):
        with _table(study, "judging", i):
            items, config = _items(j.spec)
            run_dir = study.judging_dir(out, j.name)
            estimates[j.name] = estimate(items, config, out=run_dir if run_dir.is_dir() else None)
    return StudyPlan(estimates)


def _inputs(study: Study) -> list[Target]:
    """Every file or folder the study reads (its judgings' inputs and files, human scores, metrics)."""
    found: list[Target] = []
    for j in study.judgings:
        if not str(j.spec.data.path).startswith("hf:"):
            found += input_target(f"judging {j.name}: input", j.spec.data.path)
        for flag, path in _files(j.spec).items():
            found += file_target(f"judging {j.name}: {flag}", path)
    for m in study.meta_evals:
        found += input_target(f"meta_eval {m.name}: human", m.human)
        found += [t for name, p in m.config.metrics.items() for t in input_target(f"meta_eval {m.name}: {name}", p)]
    return found


def _guard(study: Study, out: Path) -> None:
    """Refuse a study folder that holds one of the study's inputs, and judging outputs
    (``record``, ``batch_export``) that are inputs or one another (InputError, exit 2)."""
    inputs = _inputs(study)
    root = Path(os.path.abspath(out))
    for t in inputs:
        where = Path(os.path.abspath(t.path))
        if where == root or root in where.parents:
            raise InputError(f"is inside the study folder {out}; polyjudge never writes where its inputs are",
                             path=t.path, field=t.flag)
    outputs = [t for j in study.judgings for flag, path in _writes(j.spec).items()
               for t in file_target(f"judging {j.name}: {flag}", path)]
    refuse_clashes(outputs, inputs)


def _subfolder(owned: OwnedDir, name: str) -> Path:
    folder = owned.path / name
    if folder.is_symlink():
        raise InputError("is a symlink; polyjudge does not write through symlinks", path=str(folder))
    folder.mkdir(exist_ok=True)
    return folder


def execute_study(study: Study, out: str | Path) -> StudyResult:
    """Run every judging of ``study`` into ``out/judging/NAME`` (resuming what is there), then its
    meta-evaluations and its report. Errors are those of :func:`polyjudge.api.judge`,
    :func:`~polyjudge.api.meta_eval` and :func:`~polyjudge.api.report`."""
    check_study(study)
    root = Path(out)
    check_out_path(root)
    _guard(study, root)
    owned = claim(root, STUDY_KIND, names=study.outputs())
    owned.record(study.outputs())
    judging = _subfolder(owned, JUDGING_DIR)
    runs: dict[str, RunResult] = {}
    for i, j in enumerate(study.judgings):
        with _table(study, "judging", i):
            items, config = _items(j.spec)
            runs[j.name] = judge(items, config, out=judging / j.name)
    evaluations = {}
    for i, m in enumerate(study.meta_evals):
        with _table(study, "meta_eval", i):
            evaluations[m.name] = _meta_eval(m, study, owned)
    written = None
    if study.report is not None:
        with _table(study, "report", 0):
            written = _report(study, root, evaluations)
    return StudyResult(runs, evaluations, written)


def meta_eval_config(m: StudyMetaEval, run_dirs: Sequence[Path]) -> MetaEvalConfig:
    """``m.config`` with its human scores and its judgings: metrics named after them beside a human
    score file, or runs laid onto an mt-metrics-eval test-set folder."""
    if Path(m.human).is_dir():
        return replace(m.config, mtme_dir=m.human, runs=tuple(run_dirs))
    metrics = {**dict(zip(m.runs, run_dirs)), **m.config.metrics}
    return replace(m.config, human=m.human, metrics=metrics)


def _meta_eval(m: StudyMetaEval, study: Study, owned: OwnedDir) -> MetaEvalResult:
    result = meta_eval(meta_eval_config(m, [study.judging_dir(owned.path, r) for r in m.runs]))
    _subfolder(owned, META_EVAL_DIR)
    for fmt, ext in (("text", "txt"), ("json", "json")):
        owned.write_text(f"{META_EVAL_DIR}/{m.name}.{ext}", result.format(fmt))
    return result


def _report(study: Study, root: Path, evaluations: dict[str, MetaEvalResult]) -> Path:
    rep = study.report
    assert rep is not None
    target = root / REPORT_FILE
    config = replace(rep.config, out=target)
    if rep.meta_eval is not None:
        config = replace(config, metaeval=evaluations[rep.meta_eval])
    report([study.judging_dir(root, r) for r in rep.runs], config)
    return target


__all__ = ["Study", "StudyInputError", "StudyJudging", "StudyMetaEval", "StudyPlan", "StudyReport",
           "StudyResult", "check_study", "estimate_study", "execute_study", "read_study_file"]
