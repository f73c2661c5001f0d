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

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from polyjudge.api.formats import SEGMENT_SCORE_FORMATS as SCORE_FORMATS
from polyjudge.api.registries import input_formats
from polyjudge.cli.options import (
    FiniteFloat,
    RegistryHelpCommand,
    format_option,
    input_format_option,
    judge_options,
    out_option,
    study_judging,
)
from polyjudge.cli.specs import argument, group, option, shared, takes

if TYPE_CHECKING:
    from polyjudge.api import JudgingSpec, PairwiseConfig

INPUT_FORMATS = tuple(input_formats())  # the registered readers (plugins' included)


@dataclass(frozen=True, slots=True, kw_only=True)
class PairwiseFlags:
    """The argument and flags of ``polyjudge pairwise``, in ``--help`` order (the judge's last)."""

    input_path: str = argument("input_path", metavar="INPUT", type=click.Path(dir_okay=False))
    out: str = shared(out_option("Folder for the run directory (OUT/run), the tables and the figures.",
                                 required=True))
    fmt: str = shared(format_option())
    input_format: str | None = shared(input_format_option(INPUT_FORMATS))
    src_lang: str | None = option("--src-lang", default=None, help="Source language code for items that lack one.")
    tgt_lang: str | None = option("--tgt-lang", default=None, help="Target language code for items that lack one.")
    pairs: int | None = option("--pairs", type=click.IntRange(min=1), default=None,
                               help="Pairs of systems judged per segment, sampled with --seed (default: every pair).")
    n_boot: int = option("--bootstrap", "n_boot", type=click.IntRange(min=0), default=1000, show_default=True,
                         help="Bootstrap resamples of the source segments for the 95% intervals (0: none).")
    prior: float = option("--prior", type=FiniteFloat(min=0.0), default=1.0, show_default=True,
                          help="Virtual ties between every two systems in the Bradley-Terry fit (0: plain maximum "
                               "likelihood, which fails when a system wins or loses every comparison).")
    human: str | None = option("--human", default=None, metavar="FILE",
                               help="Human scores (any file meta-eval reads) to compare the ranking with.")
    human_format: str = option("--human-format", type=click.Choice(SCORE_FORMATS), default="auto",
                               show_default=True, help="Format of --human (auto: from the extension or content).")
    human_lower_better: bool = option("--human-lower-better", is_flag=True,
                                      help="Negate human scores (e.g. MQM error points).")
    judge: JudgingSpec = group(judge_options, study_judging)

    def config(self, judge: JudgingSpec) -> PairwiseConfig:
        """The study's settings, judged by ``judge`` (whose --seed also seeds the sample and the bootstrap)."""
        from polyjudge.api import PairwiseConfig

        return PairwiseConfig(judge=judge, pairs=self.pairs, seed=judge.generation.seed, n_boot=self.n_boot,
                              prior=self.prior, human=self.human, human_format=self.human_format,
                              human_lower_better=self.human_lower_better, input_format=self.input_format,
                              src_lang=self.src_lang, tgt_lang=self.tgt_lang)


@click.command(cls=RegistryHelpCommand)
@takes(PairwiseFlags)
def pairwise(flags: PairwiseFlags) -> None:
    """Compare the systems of INPUT pairwise (both orders) and rank them by Bradley-Terry.

    --format text (default) prints the ranking with its intervals and the position bias,
    tsv prints systems-bt.tsv, json prints pairwise.json. The judging protocol is
    'pairwise' (options: --protocol-option allow_tie=false, with_reference=true);
    --seed also seeds the sample of --pairs and the bootstrap.
    """
    from polyjudge.api import pairwise as run_pairwise

    ctx = click.get_current_context()
    judge = flags.judge
    if ctx.get_parameter_source("protocol") in (click.core.ParameterSource.DEFAULT, None):
        judge = judge.replace(protocol=dataclasses.replace(judge.protocol, name="pairwise"))
    result = run_pairwise(flags.input_path, flags.config(judge), flags.out)
    fmt = flags.fmt
    text = result.to_json() if fmt == "json" else result.to_text() if fmt == "text" else result.to_tsv()
    click.echo(text, nl=fmt == "json")
