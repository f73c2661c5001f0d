"""``polyjudge report``: one self-contained HTML file for run directories and study outputs."""

from __future__ import annotations

from pathlib import Path

import click

from polyjudge.data.errors import InputError


@click.command("report")
@click.argument("run_dirs", nargs=-1, required=False,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("report.html"), show_default=True, help="HTML file to write.")
@click.option("--metaeval", "metaeval", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="Output of `polyjudge meta-eval --format json`.")
@click.option("--consistency", "consistency", type=click.Path(exists=True, path_type=Path), default=None,
              help="study.json of `polyjudge consistency`, or its --out folder.")
@click.option("--validation", "validation", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="Output of `polyjudge validate --format json`.")
@click.option("--plots-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Also write every plot as a standalone SVG file here (for papers).")
@click.option("--title", default=None, help="Page title (default: the run names).")
@click.option("--bootstrap", "n_boot", type=click.IntRange(min=100), default=1000, show_default=True,
              help="Bootstrap resamples for the system-ranking confidence intervals.")
def report(run_dirs: tuple[Path, ...], output: Path, metaeval: Path | None, consistency: Path | None,
           validation: Path | None, plots_dir: Path | None, title: str | None, n_boot: int) -> None:
    """Write an HTML report of RUN_DIR... and/or study outputs (sections appear where there is data).

    Also reads metaeval.json, consistency.json and validation.json when they
    are placed in a run directory; --metaeval, --consistency and --validation
    take those outputs from anywhere, with or without run directories.
    """
    from polyjudge.report.adapters import read_study
    from polyjudge.report.html import write_report

    studies = {name: read_study(path, name) for name, path in (
        ("metaeval.json", metaeval), ("consistency.json", consistency), ("validation.json", validation))
        if path is not None}
    if not run_dirs and not studies:
        raise InputError("give at least one run directory or --metaeval / --consistency / --validation")
    rep = write_report(list(run_dirs), output, plots_dir=plots_dir, title=title, n_boot=n_boot,
                       studies=studies)
    if not rep.sections:
        click.echo("warning: no section had data to show", err=True)
    size = output.stat().st_size
    click.echo(f"wrote {output} ({size / 1e6:.2f} MB, {len(rep.sections)} sections, "
               f"{rep.seconds:.2f} s)")
    if plots_dir is not None:
        click.echo(f"wrote {len(rep.figures)} plots to {plots_dir}/")
