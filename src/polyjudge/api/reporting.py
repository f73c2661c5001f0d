"""The HTML report from Python: run directories and study outputs in one self-contained file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyjudge.api.metaeval import MetaEvalResult
from polyjudge.api.spans import SpanRanking
from polyjudge.api.validation import SimulationResult
from polyjudge.data.errors import InputError
from polyjudge.data.shapes import normalise_fields
from polyjudge.studies.consistency import ConsistencyResult
from polyjudge.studies.pairwise import PairwiseResult
from polyjudge.validation.selection import SelectionReport

if TYPE_CHECKING:
    from polyjudge.report.html import Report

DEFAULT_REPORT = "report.html"


@dataclass(frozen=True, slots=True)
class ReportConfig:
    """Where the report goes and which study outputs it shows besides the runs.

    Each study is a file (``polyjudge meta-eval --format json``, the study.json
    or ``--out`` folder of ``polyjudge consistency``, ``polyjudge validate
    --format json``) or the result object of the API call.
    """

    def __post_init__(self) -> None:
        normalise_fields(self)  # Python shapes; TypeError names a field

    out: str | Path = DEFAULT_REPORT
    metaeval: str | Path | MetaEvalResult | None = None
    consistency: str | Path | ConsistencyResult | None = None
    validation: str | Path | SelectionReport | None = None
    simulation: str | Path | SimulationResult | None = None  # ``polyjudge simulate --format json``
    pairwise: str | Path | PairwiseResult | None = None  # pairwise.json of ``polyjudge pairwise``
    span_ranking: str | Path | SpanRanking | None = None  # ``span-f1 --rank ... --format json`` (or its result)
    annotation: str | Path | None = None  # a campaign folder (``polyjudge annotate``) or its status JSON file
    plots_dir: str | Path | None = None  # also write every plot as a standalone SVG here
    title: str | None = None  # default: the run names
    n_boot: int = 1000  # bootstrap resamples of the system-ranking confidence intervals


def _study(source: str | Path | MetaEvalResult | ConsistencyResult | SelectionReport | SimulationResult
           | PairwiseResult | SpanRanking, kind: str) -> Any:
    from polyjudge.report.adapters import read_study

    if isinstance(source, MetaEvalResult):
        return source.results()  # the typed rows the report renders, as a file would read back
    if isinstance(source, ConsistencyResult):
        return source.kappas()
    if isinstance(source, SpanRanking):
        return source.ranking
    if isinstance(source, SelectionReport | SimulationResult | PairwiseResult):
        return source.results()
    if kind == "annotation.json":  # a campaign folder or its `annotate status --format json` file: typed rows
        from polyjudge.api.annotate import status_of

        return status_of(source)
    return read_study(source, kind)


def report(run_dirs: Sequence[str | Path] = (), config: ReportConfig | None = None) -> Report:
    """Write the HTML report of ``run_dirs`` and the configured study outputs
    (sections appear where there is data); returns its sections and figures."""
    from polyjudge.report.html import write_report

    cfg = config or ReportConfig()
    if cfg.n_boot < 100:
        raise InputError(f"must be at least 100, got {cfg.n_boot}", field="bootstrap")
    if Path(cfg.out).is_dir():
        raise InputError("is a directory; give the HTML file to write", path=str(cfg.out), field="out")
    given = (("metaeval.json", cfg.metaeval), ("consistency.json", cfg.consistency),
             ("validation.json", cfg.validation), ("simulation.json", cfg.simulation),
             ("pairwise.json", cfg.pairwise), ("span-ranking.json", cfg.span_ranking),
             ("annotation.json", cfg.annotation))
    _refuse_self_overwrite(run_dirs, cfg, given)
    studies = {name: _study(source, name) for name, source in given if source is not None}
    if not run_dirs and not studies:
        raise InputError("give at least one run directory or --metaeval / --consistency / --validation / "
                         "--simulation / --pairwise / --span-ranking / --annotation")
    return write_report(list(run_dirs), cfg.out, plots_dir=cfg.plots_dir, title=cfg.title, n_boot=cfg.n_boot,
                        studies=studies)


def _refuse_self_overwrite(run_dirs: Sequence[str | Path], cfg: ReportConfig,
                           given: Sequence[tuple[str, Any]]) -> None:
    """The report file must not be a run's own file or a study output it reads (exit 2 naming both)."""
    from polyjudge.reranking.summary import CHOSEN, RUN_DIR, SCORES, SUMMARY, rerank_folder
    from polyjudge.rundir.clash import Target, file_target, input_target, refuse_clashes, run_dir_target

    inputs = [t for d in run_dirs for t in input_target("RUN_DIR", d)]
    for folder in filter(None, map(rerank_folder, run_dirs)):  # a reranking output: its files and its run
        inputs += [Target("RUN_DIR", str(folder), (CHOSEN, SCORES, SUMMARY)),
                   *run_dir_target("RUN_DIR", folder / RUN_DIR)]
    inputs += [t for name, src in given if isinstance(src, (str, Path))
               for t in input_target("--" + name.split(".")[0], src)]
    refuse_clashes(file_target("-o/--out", cfg.out), inputs)


__all__ = ["DEFAULT_REPORT", "ReportConfig", "report"]
