"""``polyjudge report``: one self-contained HTML file for run directories and study outputs.

The report is written by :func:`polyjudge.api.report`.
"""

from __future__ import annotations

from pathlib import Path

import click

from polyjudge.cli.options import out_option


@click.command("report")
@click.argument("run_dirs", nargs=-1, required=False,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@out_option("HTML file to write [default: report.html].", legacy_decls=("--output",))
@click.option("--metaeval", "metaeval", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="Output of `polyjudge meta-eval --format json`.")
@click.option("--consistency", "consistency", type=click.Path(exists=True, path_type=Path), default=None,
              help="study.json of `polyjudge consistency`, or its --out folder.")
@click.option("--validation", "validation", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="Output of `polyjudge validate --format json`.")
@click.option("--simulation", "simulation", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="Output of `polyjudge simulate --format json`.")
@click.option("--pairwise", "pairwise", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="pairwise.json of `polyjudge pairwise`.")
@click.option("--annotation", "annotation", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=None, help="An annotation campaign folder (`polyjudge annotate`): progress and agreement.")
@click.option("--plots-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Also write every plot as a standalone SVG file here (for papers).")
@click.option("--title", default=None, help="Page title (default: the run names).")
@click.option("--bootstrap", "n_boot", type=click.IntRange(min=100), default=1000, show_default=True,
              help="Bootstrap resamples for the system-ranking confidence intervals.")
def report(run_dirs: tuple[Path, ...], out: str | None, plots_dir: Path | None, title: str | None, n_boot: int,
           **studies: Path | None) -> None:
    """Write an HTML report of RUN_DIR... and/or study outputs (sections appear where there is data).

    Also reads metaeval.json, consistency.json and validation.json when they
    are placed in a run directory; --metaeval, --consistency and --validation
    take those outputs from anywhere, with or without run directories.
    """
    from polyjudge.api import ReportConfig
    from polyjudge.api import report as write_report
    from polyjudge.api.reporting import DEFAULT_REPORT

    output = Path(out or DEFAULT_REPORT)
    # studies: --metaeval, --consistency, --validation, --simulation, --pairwise, --annotation (ReportConfig's fields)
    rep = write_report(list(run_dirs), ReportConfig(out=output, plots_dir=plots_dir, title=title, n_boot=n_boot,
                                                    **studies))
    if not rep.sections:
        click.echo("warning: no section had data to show", err=True)
    size = output.stat().st_size
    click.echo(f"wrote {output} ({size / 1e6:.2f} MB, {len(rep.sections)} sections, "
               f"{rep.seconds:.2f} s)")
    if plots_dir is not None:
        click.echo(f"wrote {len(rep.figures)} plots to {plots_dir}/")
