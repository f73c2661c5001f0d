"""``polyjudge agreement``: calibrate judges against human ratings (Hada et al.).

Reads a long ratings table (see :mod:`polyjudge.metaeval.calibration` for the
format) and prints agreement statistics per language, task, metric and judge,
plus the class distribution by human agreement.
"""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command()
@click.argument("input_path", metavar="RATINGS", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["jsonl", "tsv", "csv"]), default=None,
              help="Input format (default: from the extension; anything else is TSV).")
@click.option("--output", "-f", "output", type=click.Choice(["text", "tsv", "json"]), default="text",
              show_default=True, help="How the tables are printed.")
@click.option("--pool", "pool", multiple=True, type=click.Choice(["language", "task", "metric"]),
              help="Pool the class distribution over this key (repeatable).")
@click.option("--out", "-O", "out", type=click.Path(file_okay=False), default=None,
              help="Also write agreement.tsv, distribution.tsv and agreement.json here.")
def agreement(input_path: str, fmt: str | None, output: str, pool: tuple[str, ...], out: str | None) -> None:
    """Agreement of judges with human ratings in RATINGS (JSONL/TSV, one rating per line:
    item_id, language, task, metric, rater, kind=human|judge, rating)."""
    from polyjudge.metaeval.calibration import (
        calibrate,
        class_distribution,
        distribution_tsv,
        read_ratings,
        rows_text,
        rows_tsv,
    )

    ratings = read_ratings(input_path, fmt)
    rows = calibrate(ratings)
    cells = class_distribution(ratings, by_language="language" not in pool, by_task="task" not in pool,
                               by_metric="metric" not in pool)
    doc = {"input": input_path, "n_ratings": len(ratings), "rows": [r.to_dict() for r in rows],
           "class_distribution": [c.__dict__ for c in cells]}
    if out is not None:
        d = Path(out)
        d.mkdir(parents=True, exist_ok=True)
        (d / "agreement.tsv").write_text(rows_tsv(rows), encoding="utf-8")
        (d / "distribution.tsv").write_text(distribution_tsv(cells), encoding="utf-8")
        (d / "agreement.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False), encoding="utf-8")
    if output == "json":
        click.echo(json.dumps(doc, indent=1, ensure_ascii=False))
    elif output == "tsv":
        click.echo(rows_tsv(rows), nl=False)
        click.echo()
        click.echo(distribution_tsv(cells), nl=False)
    else:
        click.echo(rows_text(rows), nl=False)
        click.echo()
        click.echo("class distribution (human agreement x human majority x judge score):")
        click.echo(distribution_tsv(cells), nl=False)
