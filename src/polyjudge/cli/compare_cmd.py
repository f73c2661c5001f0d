"""``polyjudge compare-formats``: span answer formats side by side (the TSA paper's Tables 2–3).

Give one run directory per format (``tsa``, ``gemba-spans``, ``direct-index``,
``gemba-esa``), each judged on the same items, and the gold spans. Prints per
run: character-level F1, precision and recall as ``span-f1`` scores them (a
failed judgment counts as predicting no errors, the official scorer's rule;
``--missing skip`` leaves it out), the failure rate, prompt and completion
tokens, and time. The computation is :func:`polyjudge.api.compare_formats`.

Example::

    polyjudge compare-formats runs/tsa runs/gemba-spans runs/direct-index runs/esa --gold gold.tsv
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from polyjudge.cli.options import emit, format_option, out_option, span_scoring_option
from polyjudge.cli.specs import argument, shared, takes

if TYPE_CHECKING:
    from polyjudge.api import CompareFormatsConfig

@dataclass(frozen=True, slots=True, kw_only=True)
class CompareFormatsFlags:
    """The arguments and flags of ``polyjudge compare-formats``, in ``--help`` order."""

    runs: tuple[str, ...] = argument("runs", nargs=-1, required=True,
                                     type=click.Path(exists=True, file_okay=False))
    gold: str = span_scoring_option("gold")
    gold_format: str = span_scoring_option("gold_format")
    lp: str | None = span_scoring_option("lp")
    judge: str | None = span_scoring_option("judge")
    set_id: str = span_scoring_option("set_id")
    missing: str = span_scoring_option("missing")
    raters: str = span_scoring_option("raters")
    vote_threshold: float = span_scoring_option("vote_threshold")
    fmt: str = shared(format_option())
    out: str | None = shared(out_option("Write the table to this file instead of standard output."))

    def config(self) -> CompareFormatsConfig:
        """The API's settings: every scoring flag means what it means to ``span-f1``."""
        from polyjudge.api import CompareFormatsConfig

        return CompareFormatsConfig(runs=self.runs, gold=self.gold, gold_format=self.gold_format, lp=self.lp,
                                    judge=self.judge, set_id=self.set_id, missing=self.missing, raters=self.raters,
                                    vote_threshold=self.vote_threshold)


@click.command("compare-formats")
@takes(CompareFormatsFlags)
def compare_formats(flags: CompareFormatsFlags) -> None:
    """Span formats side by side: F1/P/R, failure rate, tokens and time per run directory."""
    from polyjudge.api import compare_formats as compare

    emit(compare(flags.config()).format(flags.fmt), flags.out)
