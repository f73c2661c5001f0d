"""``polyjudge agreement``: calibrate judges against human ratings (Hada et al.).

Reads a long ratings table (see :mod:`polyjudge.metaeval.ratings.calibration` for the
format) and, optionally, judge run directories, and prints agreement
statistics per language, task, metric and judge, plus the class distribution
by human agreement. The computation is :func:`polyjudge.api.agreement`.
"""

from __future__ import annotations

from dataclasses import dataclass

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
from polyjudge.cli.specs import argument, group, option, shared, takes

INPUT_FORMATS = ("jsonl", "tsv", "csv")
# 0.1.0 took the input format as --format; values that are not output formats still mean that.
LEGACY_INPUT = ("jsonl", "csv")


@dataclass(frozen=True, slots=True, kw_only=True)
class AgreementFlags:
    """The flags of ``polyjudge agreement``, in ``--help`` order."""

    inputs: tuple[str, ...] = argument("inputs", metavar="[RUN_DIR...] RATINGS", nargs=-1, type=click.Path())
    input_format: str | None = shared(input_format_option(
        INPUT_FORMATS, help="Input format (default: from the extension; anything else is TSV)."))
    fmt: str = shared(format_option(legacy_input=LEGACY_INPUT))
    # 0.1.0's -f/--output: a value only when given
    legacy_output: str | None = group(legacy("--output", "-f", dest="legacy_output", use="--format",
                                             type=click.Choice(OUTPUT_FORMATS)),
                                      lambda parsed: parsed.pop("legacy_output", None))
    pool: tuple[str, ...] = option("--pool", "pool", multiple=True, type=click.Choice(["language", "task", "metric"]),
                                   help="Pool the class distribution over this key (repeatable).")
    lps: tuple[str, ...] = option(
        "--lp", "lps", multiple=True, metavar="SRC-TGT",
        help="Language pair(s) to evaluate, repeatable: values of the ratings' language column (default: "
             "each of them, on its own); one the ratings do not hold exits 2 naming those they hold.")
    human: str | None = option("--human", "human", default=None, metavar="RATINGS", type=click.Path(),
                               help="The ratings file (or an annotation campaign folder); then every positional "
                                    "argument is a run directory.")
    metric: str | None = option("--metric", default=None, help="The human metric the run directories' judges "
                                "rated (needed when items have human ratings on several metrics).")
    bins: str | None = option("--bins", "bins", default=None, metavar="EDGES",
                              help="Comma-separated edges that put continuous judge scores into the human classes "
                                   "(e.g. 33.3,66.7: below 33.3 is class 0, then 1, from 66.7 on 2).")
    bin_labels: str | None = option("--bin-labels", default=None, metavar="LABELS",
                                    help="The class of each bin (default 0,1,...), one more than --bins edges.")
    out: str | None = shared(out_option(
        "Also write agreement.tsv, distribution.tsv and agreement.json (and runs.tsv) into this folder.",
        legacy_decls=("-O",)))


@click.command()
@takes(AgreementFlags)
def agreement(flags: AgreementFlags) -> None:
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

    fmt = flags.fmt
    if flags.legacy_output is not None:  # 0.1.0's -f/--output, unless --format named an output format
        ctx = click.get_current_context()
        if ctx.get_parameter_source("fmt") is ParameterSource.DEFAULT or ctx.params.get("fmt") in LEGACY_INPUT:
            fmt = flags.legacy_output
    runs = tuple(p for p in flags.inputs if os.path.isdir(p))
    files = [p for p in flags.inputs if not os.path.isdir(p)] + ([flags.human] if flags.human is not None else [])
    if len(files) != 1:
        raise click.UsageError(f"give exactly one RATINGS file (got {len(files)}) and any number of run directories")
    if flags.out is not None:
        guard_outputs({"out": [Target("-o/--out", flags.out, AGREEMENT_TABLES)]})
    result = compute(AgreementConfig(ratings=files[0], input_format=flags.input_format, pool=flags.pool, runs=runs,
                                     lps=flags.lps, metric=flags.metric, bins=number_list(flags.bins, "--bins"),
                                     bin_labels=number_list(flags.bin_labels, "--bin-labels")))
    if flags.out is not None:
        result.write(flags.out)
    if fmt == "json":
        click.echo(result.to_json())
    else:
        click.echo(result.to_tsv() if fmt == "tsv" else result.to_text(), nl=False)
