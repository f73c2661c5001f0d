"""``polyjudge agreement``: calibrate judges against human ratings (Hada et al.).

Reads a long ratings table (see :mod:`polyjudge.metaeval.ratings.calibration` for the
format) and, optionally, judge run directories, and prints agreement
statistics per language, task, metric and judge, plus the class distribution
by human agreement. The computation is :func:`polyjudge.api.agreement`.
"""

from __future__ import annotations

import click
from click.core import ParameterSource

from polyjudge.cli.options import (
    OUTPUT_FORMATS,
    format_option,
    guard_outputs,
    input_format_option,
    legacy,
    number_list,
    out_option,
)

INPUT_FORMATS = ("jsonl", "tsv", "csv")
# 0.1.0 took the input format as --format; values that are not output formats still mean that.
LEGACY_INPUT = ("jsonl", "csv")


@click.command()
@click.argument("inputs", metavar="[RUN_DIR...] RATINGS", nargs=-1, type=click.Path())
@input_format_option(INPUT_FORMATS, help="Input format (default: from the extension; anything else is TSV).")
@format_option(legacy_input=LEGACY_INPUT)
@legacy("--output", "-f", dest="legacy_output", use="--format", type=click.Choice(OUTPUT_FORMATS))
@click.option("--pool", "pool", multiple=True, type=click.Choice(["language", "task", "metric"]),
              help="Pool the class distribution over this key (repeatable).")
@click.option("--lp", "lps", multiple=True, metavar="SRC-TGT",
              help="Language pair(s) to evaluate, repeatable: values of the ratings' language column (default: "
                   "each of them, on its own); one the ratings do not hold exits 2 naming those they hold.")
@click.option("--human", default=None, metavar="RATINGS", type=click.Path(),
              help="The ratings file (or an annotation campaign folder); then every positional argument is a "
                   "run directory.")
@click.option("--metric", default=None, help="The human metric the run directories' judges rated "
              "(needed when items have human ratings on several metrics).")
@click.option("--bins", "bins", default=None, metavar="EDGES",
              help="Comma-separated edges that put continuous judge scores into the human classes "
                   "(e.g. 33.3,66.7: below 33.3 is class 0, then 1, from 66.7 on 2).")
@click.option("--bin-labels", default=None, metavar="LABELS",
              help="The class of each bin (default 0,1,...), one more than --bins edges.")
@out_option("Also write agreement.tsv, distribution.tsv and agreement.json (and runs.tsv) into this folder.",
            legacy_decls=("-O",))
def agreement(inputs: tuple[str, ...], input_format: str | None, fmt: str, pool: tuple[str, ...],
              lps: tuple[str, ...], human: str | None, metric: str | None, bins: str | None,
              bin_labels: str | None, out: str | None, legacy_output: str | None = None) -> None:
    """Agreement of judges with human ratings in RATINGS (JSONL/TSV, one rating per line:
    item_id, language, task, metric, rater, kind=human|judge, rating).

    Each language (pair, e.g. zh-en) is evaluated on its own, one row per language; --lp selects some,
    and the class distribution pools languages only with --pool language.

    Each RUN_DIR (a directory written by `polyjudge judge`) adds its judges: an
    item's final score is matched to the ratings by the item's item_id field,
    else its seg_id. Judge scores must be on the humans' scale unless --bins is given.
    """
    import os

    from polyjudge.api import AgreementConfig
    from polyjudge.api import agreement as compute
    from polyjudge.api.calibration import AGREEMENT_TABLES
    from polyjudge.api.runs import Target

    if legacy_output is not None:  # 0.1.0's -f/--output, unless --format named an output format
        ctx = click.get_current_context()
        if ctx.get_parameter_source("fmt") is ParameterSource.DEFAULT or ctx.params.get("fmt") in LEGACY_INPUT:
            fmt = legacy_output
    runs = tuple(p for p in inputs if os.path.isdir(p))
    files = [p for p in inputs if not os.path.isdir(p)] + ([human] if human is not None else [])
    if len(files) != 1:
        raise click.UsageError(f"give exactly one RATINGS file (got {len(files)}) and any number of run directories")
    if out is not None:
        guard_outputs({"out": [Target("-o/--out", out, AGREEMENT_TABLES)]})
    result = compute(AgreementConfig(ratings=files[0], input_format=input_format, pool=pool, runs=runs, lps=lps,
                                     metric=metric, bins=number_list(bins, "--bins"),
                                     bin_labels=number_list(bin_labels, "--bin-labels")))
    if out is not None:
        result.write(out)
    if fmt == "json":
        click.echo(result.to_json())
    else:
        click.echo(result.to_tsv() if fmt == "tsv" else result.to_text(), nl=False)
