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

from polyjudge.api.formats import SPAN_FORMATS
from polyjudge.cli.options import FiniteFloat, emit, format_option, out_option
from polyjudge.cli.specs import argument, option, shared, takes

if TYPE_CHECKING:
    from polyjudge.api import CompareFormatsConfig

GOLD_FORMATS = click.Choice(SPAN_FORMATS)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompareFormatsFlags:
    """The arguments and flags of ``polyjudge compare-formats``, in ``--help`` order."""

    runs: tuple[str, ...] = argument("runs", nargs=-1, required=True,
                                     type=click.Path(exists=True, file_okay=False))
    gold: str = option("--gold", "-g", required=True, type=click.Path(exists=True),
                       help="Gold spans: task-2 TSV, WMT MQM TSV, JSONL or run directory.")
    gold_format: str = option("--gold-format", type=GOLD_FORMATS, default="auto", show_default=True)
    lp: str | None = option("--lp", default=None, help="Language pair (e.g. en-de) for inputs that do not name one.")
    judge: str | None = option("--judge", default=None, help="Judge (model) to score when a run has several.")
    set_id: str = option("--set-id", "set_id", default="official", show_default=True,
                         help="Score only gold rows of this set_id (task-2 TSVs); '*' scores every set.")
    missing: str = option("--missing", type=click.Choice(["empty", "skip", "error"]), default="empty",
                          show_default=True,
                          help="Gold segments without a prediction (failed judgments): score as 'no errors' (the "
                               "official rule), leave out, or stop with an error.")
    raters: str = option("--raters", type=click.Choice(["first", "all"]), default="first", show_default=True,
                         help="WMT MQM gold with several raters per segment: first rater, or pool all.")
    vote_threshold: float = option("--vote-threshold", type=FiniteFloat(0.0, 1.0, min_open=True), default=0.5,
                                   show_default=True,
                                   help="Share of runs that must mark a character when a run's runs are merged.")
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
