"""``polyjudge report``: one self-contained HTML file for run directories and study outputs.

The report is written by :func:`polyjudge.api.report`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from polyjudge.cli.options import out_option
from polyjudge.cli.specs import argument, declared, shared, takes

if TYPE_CHECKING:
    from polyjudge.api import ReportConfig


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportFlags:
    """The arguments and flags of ``polyjudge report``, in ``--help`` order."""

    run_dirs: tuple[Path, ...] = argument("run_dirs", nargs=-1, required=False,
                                          type=click.Path(exists=True, file_okay=False, path_type=Path))
    out: str | None = shared(out_option("HTML file to write [default: report.html].", legacy_decls=("--output",)))
    metaeval: Path | None = declared("report", "metaeval")
    consistency: Path | None = declared("report", "consistency")
    validation: Path | None = declared("report", "validation")
    simulation: Path | None = declared("report", "simulation")
    pairwise: Path | None = declared("report", "pairwise")
    span_ranking: Path | None = declared("report", "span_ranking")
    annotation: Path | None = declared("report", "annotation")
    plots_dir: Path | None = declared("report", "plots_dir")
    title: str | None = declared("report", "title")
    n_boot: int = declared("report", "bootstrap")

    def config(self, output: Path) -> ReportConfig:
        from polyjudge.api import ReportConfig

        return ReportConfig(out=output, metaeval=self.metaeval, consistency=self.consistency,
                            validation=self.validation, simulation=self.simulation, pairwise=self.pairwise,
                            span_ranking=self.span_ranking, annotation=self.annotation, plots_dir=self.plots_dir,
                            title=self.title, n_boot=self.n_boot)


@click.command("report")
@takes(ReportFlags)
def report(flags: ReportFlags) -> None:
    """Write an HTML report of RUN_DIR... and/or study outputs (sections appear where there is data).

    Also reads metaeval.json, consistency.json and validation.json when they
    are placed in a run directory; --metaeval, --consistency and --validation
    take those outputs from anywhere, with or without run directories. A
    RUN_DIR may be the -o folder of polyjudge rerank: its reranking section shows
    the gain under the choosing judge next to the held-out checks.
    """
    from polyjudge.api import report as write_report
    from polyjudge.api.reporting import DEFAULT_REPORT

    output = Path(flags.out or DEFAULT_REPORT)
    rep = write_report(list(flags.run_dirs), flags.config(output))
    if not rep.sections:
        click.echo("warning: no section had data to show", err=True)
    size = output.stat().st_size
    click.echo(f"wrote {output} ({size / 1e6:.2f} MB, {len(rep.sections)} sections, "
               f"{rep.seconds:.2f} s)")
    if flags.plots_dir is not None:
        click.echo(f"wrote {len(rep.figures)} plots to {flags.plots_dir}/")
