"""``polyjudge pairwise``: compare systems two at a time, in both orders, and rank them.

INPUT holds several systems' translations of the same segments (``system``,
``doc_id``, ``seg_id``). Every pair of systems per segment (or ``--pairs N``
sampled ones) is judged with the ``pairwise`` protocol in both orders;
``--seed`` seeds the judge, that sample and the bootstrap, and several
``--judge`` pool their verdicts. The run directory is ``OUT/run``; the tables
(``pairwise.tsv``, ``systems-bt.tsv``, ``position.json``, ...) and figures go
into ``OUT``. The study itself is :func:`polyjudge.api.pairwise`.
"""

from __future__ import annotations

from typing import Any

import click

from polyjudge.api.formats import SEGMENT_SCORE_FORMATS as SCORE_FORMATS
from polyjudge.api.registries import input_formats
from polyjudge.cli.options import (
    FiniteFloat,
    RegistryHelpCommand,
    format_option,
    input_format_option,
    judge_config,
    judge_options,
    out_option,
)

INPUT_FORMATS = tuple(input_formats())  # the registered readers (plugins' included)


@click.command(cls=RegistryHelpCommand)
@click.argument("input_path", metavar="INPUT", type=click.Path(dir_okay=False))
@out_option("Folder for the run directory (OUT/run), the tables and the figures.", required=True)
@format_option()
@input_format_option(INPUT_FORMATS)
@click.option("--src-lang", default=None, help="Source language code for items that lack one.")
@click.option("--tgt-lang", default=None, help="Target language code for items that lack one.")
@click.option("--pairs", type=click.IntRange(min=1), default=None,
              help="Pairs of systems judged per segment, sampled with --seed (default: every pair).")
@click.option("--bootstrap", "n_boot", type=click.IntRange(min=0), default=1000, show_default=True,
              help="Bootstrap resamples of the source segments for the 95% intervals (0: none).")
@click.option("--prior", type=FiniteFloat(min=0.0), default=1.0, show_default=True,
              help="Virtual ties between every two systems in the Bradley-Terry fit (0: plain maximum "
                   "likelihood, which fails when a system wins or loses every comparison).")
@click.option("--human", default=None, metavar="FILE",
              help="Human scores (any file meta-eval reads) to compare the ranking with.")
@click.option("--human-format", type=click.Choice(SCORE_FORMATS), default="auto", show_default=True)
@click.option("--human-lower-better", is_flag=True, help="Negate human scores (e.g. MQM error points).")
@judge_options
def pairwise(input_path: str, out: str, fmt: str, input_format: str | None, src_lang: str | None,
             tgt_lang: str | None, pairs: int | None, n_boot: int, prior: float, human: str | None,
             human_format: str, human_lower_better: bool, **kw: Any) -> None:
    """Compare the systems of INPUT pairwise (both orders) and rank them by Bradley-Terry.

    --format text (default) prints the ranking with its intervals and the position bias,
    tsv prints systems-bt.tsv, json prints pairwise.json. The judging protocol is
    'pairwise' (options: --protocol-option allow_tie=false, with_reference=true);
    --seed also seeds the sample of --pairs and the bootstrap.
    """
    from polyjudge.api import PairwiseConfig
    from polyjudge.api import pairwise as run_pairwise

    ctx = click.get_current_context()
    judge = judge_config(kw)
    if ctx.get_parameter_source("protocol") in (click.core.ParameterSource.DEFAULT, None):
        judge = judge.replace(protocol="pairwise")
    config = PairwiseConfig(judge=judge, pairs=pairs, seed=judge.seed, n_boot=n_boot, prior=prior, human=human,
                            human_format=human_format, human_lower_better=human_lower_better,
                            input_format=input_format, src_lang=src_lang, tgt_lang=tgt_lang)
    result = run_pairwise(input_path, config, out)
    text = result.to_json() if fmt == "json" else result.to_text() if fmt == "text" else result.to_tsv()
    click.echo(text, nl=fmt == "json")
