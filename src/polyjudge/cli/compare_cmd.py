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

import click

from polyjudge.api.formats import SPAN_FORMATS
from polyjudge.cli.options import FiniteFloat, emit, format_option, out_option

GOLD_FORMATS = click.Choice(SPAN_FORMATS)


@click.command("compare-formats")
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--gold", "-g", required=True, type=click.Path(exists=True),
              help="Gold spans: task-2 TSV, WMT MQM TSV, JSONL or run directory.")
@click.option("--gold-format", type=GOLD_FORMATS, default="auto", show_default=True)
@click.option("--lp", default=None, help="Language pair (e.g. en-de) for inputs that do not name one.")
@click.option("--judge", default=None, help="Judge (model) to score when a run has several.")
@click.option("--set-id", "set_id", default="official", show_default=True,
              help="Score only gold rows of this set_id (task-2 TSVs); '*' scores every set.")
@click.option("--missing", type=click.Choice(["empty", "skip", "error"]), default="empty", show_default=True,
              help="Gold segments without a prediction (failed judgments): score as 'no errors' (the official "
                   "rule), leave out, or stop with an error.")
@click.option("--raters", type=click.Choice(["first", "all"]), default="first", show_default=True,
              help="WMT MQM gold with several raters per segment: first rater, or pool all.")
@click.option("--vote-threshold", type=FiniteFloat(0.0, 1.0, min_open=True), default=0.5, show_default=True,
              help="Share of runs that must mark a character when a run's runs are merged.")
@format_option()
@out_option("Write the table to this file instead of standard output.")
def compare_formats(runs: tuple[str, ...], gold: str, gold_format: str, lp: str | None, judge: str | None,
                    set_id: str, missing: str, raters: str, vote_threshold: float, fmt: str,
                    out: str | None) -> None:
    """Span formats side by side: F1/P/R, failure rate, tokens and time per run directory."""
    from polyjudge.api import CompareFormatsConfig
    from polyjudge.api import compare_formats as compare

    result = compare(CompareFormatsConfig(runs=runs, gold=gold, gold_format=gold_format, lp=lp, judge=judge,
                                          set_id=set_id, missing=missing, raters=raters,
                                          vote_threshold=vote_threshold))
    emit(result.format(fmt), out)
