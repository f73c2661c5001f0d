"""``polyjudge agreement``: calibrate judges against human ratings (Hada et al.).

Reads a long ratings table (see :mod:`polyjudge.metaeval.calibration` for the
format) and prints agreement statistics per language, task, metric and judge,
plus the class distribution by human agreement. The computation is
:func:`polyjudge.api.agreement`.
"""

from __future__ import annotations

import click
from click.core import ParameterSource

from polyjudge.cli.options import OUTPUT_FORMATS, format_option, input_format_option, legacy, out_option

INPUT_FORMATS = ("jsonl", "tsv", "csv")
# 0.1.0 took the input format as --format; values that are not output formats still mean that.
LEGACY_INPUT = ("jsonl", "csv")


@click.command()
@click.argument("input_path", metavar="RATINGS", type=click.Path(dir_okay=False))
@input_format_option(INPUT_FORMATS, help="Input format (default: from the extension; anything else is TSV).")
@format_option(legacy_input=LEGACY_INPUT)
@legacy("--output", "-f", dest="legacy_output", use="--format", type=click.Choice(OUTPUT_FORMATS))
@click.option("--pool", "pool", multiple=True, type=click.Choice(["language", "task", "metric"]),
              help="Pool the class distribution over this key (repeatable).")
@out_option("Also write agreement.tsv, distribution.tsv and agreement.json into this folder.",
            legacy_decls=("-O",))
def agreement(input_path: str, input_format: str | None, fmt: str, pool: tuple[str, ...], out: str | None,
              legacy_output: str | None = None) -> None:
    """Agreement of judges with human ratings in RATINGS (JSONL/TSV, one rating per line:
    item_id, language, task, metric, rater, kind=human|judge, rating)."""
    from polyjudge.api import AgreementConfig
    from polyjudge.api import agreement as compute

    if legacy_output is not None:  # 0.1.0's -f/--output, unless --format named an output format
        ctx = click.get_current_context()
        if ctx.get_parameter_source("fmt") is ParameterSource.DEFAULT or ctx.params.get("fmt") in LEGACY_INPUT:
            fmt = legacy_output
    result = compute(AgreementConfig(ratings=input_path, input_format=input_format, pool=pool))
    if out is not None:
        result.write(out)
    if fmt == "json":
        click.echo(result.to_json())
    else:
        click.echo(result.to_tsv() if fmt == "tsv" else result.to_text(), nl=False)
