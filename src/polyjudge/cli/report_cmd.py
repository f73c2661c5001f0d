"""``polyjudge report``: one self-contained HTML file for one or more run directories."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("report")
@click.argument("run_dirs", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("report.html"), show_default=True, help="HTML file to write.")
@click.option("--plots-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Also write every plot as a standalone SVG file here (for papers).")
@click.option("--title", default=None, help="Page title (default: the run names).")
@click.option("--bootstrap", "n_boot", type=click.IntRange(min=100), default=1000, show_default=True,
              help="Bootstrap resamples for the system-ranking confidence intervals.")
def report(run_dirs: tuple[Path, ...], output: Path, plots_dir: Path | None, title: str | None,
           n_boot: int) -> None:
    """Write an HTML report of RUN_DIR... (sections appear where the runs have the data).

    Also reads metaeval.json, consistency.json and validation.json when they
    are placed in a run directory.
    """
    from polyjudge.report.html import write_report

    rep = write_report(list(run_dirs), output, plots_dir=plots_dir, title=title, n_boot=n_boot)
    size = output.stat().st_size
    click.echo(f"wrote {output} ({size / 1e6:.2f} MB, {len(rep.sections)} sections, "
               f"{rep.seconds:.2f} s)")
    if plots_dir is not None:
        click.echo(f"wrote {len(rep.figures)} plots to {plots_dir}/")
