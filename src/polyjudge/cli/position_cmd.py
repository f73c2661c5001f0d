"""``polyjudge position-bias``: does a contrastive judge score a translation by where it was shown?"""

from __future__ import annotations

import json

import click

from polyjudge.cli.options import format_option


@click.command("position-bias")
@click.argument("run_dir", type=click.Path(file_okay=False))
@format_option()
def position_bias(run_dir: str, fmt: str) -> None:
    """Mean score per prompt position of a contrastive-esa run, relative to each source's mean."""
    from polyjudge.api import position_bias as table

    rows = table(run_dir)
    if fmt == "json":
        click.echo(json.dumps([r.to_json() for r in rows], indent=1))
        return
    head = ("position", "n", "mean_score", "relative", "stderr")
    if fmt == "tsv":
        click.echo("\t".join(head))
        for r in rows:
            click.echo(f"{r.position}\t{r.n}\t{r.mean_score:.4f}\t{r.relative:.4f}\t{r.stderr:.4f}")
        return
    click.echo(f"{'position':>8}  {'n':>6}  {'mean':>8}  {'relative':>9}  {'stderr':>7}")
    for r in rows:
        click.echo(f"{r.position:>8}  {r.n:>6}  {r.mean_score:>8.2f}  {r.relative:>+9.2f}  {r.stderr:>7.2f}")
    click.echo("relative: score minus the mean of its source's translations; 0 at every position without bias")
