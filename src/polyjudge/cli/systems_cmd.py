"""``polyjudge compare-systems``: which systems of a run the judge tells apart.

The comparison is :func:`polyjudge.api.systems.compare_systems`; this module parses and prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from polyjudge.api.formats import SEGMENT_SCORE_FORMATS
from polyjudge.api.runs import file_target
from polyjudge.cli.options import OPEN_SHARE, SEED, emit, format_option, guard_outputs, out_option
from polyjudge.cli.specs import argument, option, shared, takes

if TYPE_CHECKING:
    from polyjudge.api.systems import CompareSystemsConfig

# The same as polyjudge.api.systems' (a test holds them equal); spelled here so --help loads no statistics.
TESTS = ("randomization", "bootstrap", "t-test")
CORRECTIONS = ("none", "holm", "bonferroni")


@dataclass(frozen=True, slots=True, kw_only=True)
class CompareSystemsFlags:
    """The argument and flags of ``polyjudge compare-systems``, in ``--help`` order."""

    run_dir: str = argument("run_dir", metavar="RUN", type=click.Path(file_okay=False))
    human: str | None = option("--human", type=click.Path(), default=None, metavar="FILE",
                               help="Human scores of the same segments (any file meta-eval reads), compared the "
                                    "same way and shown beside the judge's.")
    human_format: str = option("--human-format", type=click.Choice(SEGMENT_SCORE_FORMATS), default="auto",
                               show_default=True, help="Format of --human.")
    human_lower_better: bool = option("--human-lower-better", is_flag=True,
                                      help="Negate human scores (e.g. raw MQM error points).")
    item_key: str = option("--item-key", type=click.Choice(["auto", "seg", "doc-seg"]), default="auto",
                           show_default=True, help="How segments are matched with --human: seg_id, or doc_id + "
                                                   "seg_id.")
    test: str = option("--test", type=click.Choice(TESTS), default="randomization", show_default=True,
                       help="The test whose p-values decide significance and the clusters (all three are shown).")
    n_boot: int = option("--bootstrap", "n_boot", type=click.IntRange(min=1), default=1000, show_default=True,
                         help="Bootstrap resamples of the segments (interval of delta, paired bootstrap p).")
    k: int = option("-k", "--permutations", "k", type=click.IntRange(min=1), default=1000, show_default=True,
                    help="Approximate randomization draws per pair.")
    seed: int = option("--seed", type=SEED, default=0, show_default=True,
                       help="Seed of the bootstrap and randomization draws.")
    alpha: float = option("--alpha", type=OPEN_SHARE, default=0.05, show_default=True,
                          help="p-value threshold of significance and clusters; intervals are 1 - alpha.")
    correction: str = option("--correction", type=click.Choice(CORRECTIONS), default="none", show_default=True,
                             help="Adjust the p-values for the number of pairs (default: uncorrected).")
    lps: tuple[str, ...] = option(
        "--lp", "lps", multiple=True,
        help="Language pair(s) of RUN to compare, repeatable (default: each pair its items name, one table per "
             "pair); a pair not in RUN is an error.")
    pool_lps: bool = option("--pool-lps", is_flag=True,
                            help="Compare the selected language pairs (default: all) as one, named 'pooled: A+B'.")
    fmt: str = shared(format_option())
    out: str | None = shared(out_option("Write the results to this file instead of standard output."))

    def config(self) -> CompareSystemsConfig:
        from polyjudge.api.systems import CompareSettings, CompareSystemsConfig

        settings = CompareSettings(n_boot=self.n_boot, n_perm=self.k, seed=self.seed, alpha=self.alpha,
                                   test=self.test, correction=self.correction)
        return CompareSystemsConfig(human=self.human, human_format=self.human_format,
                                    human_lower_better=self.human_lower_better, item_key=self.item_key,
                                    settings=settings, lps=self.lps, pool_lps=self.pool_lps)


@click.command("compare-systems")
@takes(CompareSystemsFlags)
def compare_systems(flags: CompareSystemsFlags) -> None:
    """Compare every pair of systems of RUN on the judge's segment scores (and on --human).

    Paired bootstrap, paired approximate randomization and a paired t-test per
    pair (two-sided, uncorrected unless --correction), and WMT-style
    significance clusters.

    \b
    polyjudge compare-systems runs/mqm
    polyjudge compare-systems runs/mqm --human mqm_ted_ende.tsv --format json -o systems.json
    """
    from polyjudge.api.systems import compare_systems_per_lp, format_per_lp

    guard_outputs({"out": file_target("-o/--out", flags.out)})
    emit(format_per_lp(compare_systems_per_lp(flags.run_dir, flags.config()), flags.fmt), flags.out)
