"""``polyjudge span-f1``: WMT25 task-2 character-level span precision/recall/F1.

Gold and predictions can each be a WMT25 task-2 TSV, a WMT MQM TSV (``<v>``
markup), a JSONL of spans (ours or WMT24 ESA records) or a polyjudge run
directory (its ``judgments.jsonl``; several runs per item are merged by
character voting). Prints one JSON object (``--format json``, the default):
per language pair ``precision``, ``recall``, ``f1`` (plus counts) and the macro
averages ``avg_precision``, ``avg_recall``, ``avg_f1``; ``--format tsv``/``text``
print one line per language pair instead. A gold segment without a prediction
(a failed judgment) is scored as predicting no errors, as the official scorer
does (``--missing empty``); ``missing_predictions`` counts them, and
``--missing skip`` leaves them out instead. ``--write-tsv`` converts the
predictions to the task-2 TSV layout (hypothesis and identifiers taken from
the gold). The scoring is :func:`polyjudge.api.span_f1`. Impossible spans (start
after end, a negative start, an end past the gold hypothesis, task-2 rows with
unequal start/end/type lists) and comparisons with nothing to score (an empty
gold file, no prediction, e.g. every judgment failed, a run of a protocol
without spans) exit 2 with one line naming the file, instead of scores or NaN.

Example (a TSA run on TED en-de against the human spans)::

    polyjudge span-f1 --gold ../shared/data/wmt-mqm/ted/ende/mqm_ted_ende.tsv --pred runs/tsa
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from polyjudge.api.formats import SPAN_FORMATS
from polyjudge.api.runs import file_target
from polyjudge.cli.options import FiniteFloat, emit, format_option, guard_outputs, legacy, out_option
from polyjudge.cli.specs import option, shared, takes

if TYPE_CHECKING:
    from polyjudge.api import SpanF1Config

FORMATS = click.Choice(SPAN_FORMATS)


@dataclass(frozen=True, slots=True, kw_only=True)
class SpanF1Flags:
    """The flags of ``polyjudge span-f1``, in ``--help`` order."""

    gold: str = option("--gold", "-g", required=True, type=click.Path(exists=True),
                       help="Gold spans: task-2 TSV, WMT MQM TSV, JSONL or run directory.")
    pred: str | None = option("--pred", "pred", type=click.Path(exists=True),
                              help="Predicted spans: run directory, task-2 TSV, JSONL or WMT MQM TSV (required).",
                              spellings=[legacy("-p", dest="pred", use="--pred", type=click.Path(exists=True))])
    gold_format: str = option("--gold-format", type=FORMATS, default="auto", show_default=True)
    pred_format: str = option("--pred-format", type=FORMATS, default="auto", show_default=True)
    lp: str | None = option("--lp", default=None, help="Language pair (e.g. en-de) for inputs that do not name one.")
    judge: str | None = option("--judge", default=None, help="Judge (model) to score when the run has several.")
    set_id: str = option("--set-id", "set_id", default="official", show_default=True,
                         help="Score only rows of this set_id (task-2 TSVs); '*' scores every set.")
    missing: str = option("--missing", type=click.Choice(["empty", "skip", "error"]), default="empty",
                          show_default=True,
                          help="Gold segments without a prediction (e.g. failed judgments): score as 'no errors' "
                               "(the official WMT25 scorer's rule), leave out, or stop with an error; counted as "
                               "missing_predictions either way.")
    raters: str = option("--raters", type=click.Choice(["first", "all"]), default="first", show_default=True,
                         help="WMT MQM gold with several raters per segment: first rater, or pool all.")
    vote_threshold: float = option("--vote-threshold", type=FiniteFloat(0.0, 1.0, min_open=True), default=0.5,
                                   show_default=True,
                                   help="Share of runs that must mark a character when merging runs.")
    write_tsv: str | None = option("--write-tsv", type=click.Path(dir_okay=False), default=None,
                                   help="Also write the predictions as a task-2 TSV.")
    fmt: str = shared(format_option(default="json"))
    out: str | None = shared(out_option("Write the scores to this file instead of standard output."))

    def config(self) -> SpanF1Config:
        """The API's settings (``--pred`` is checked first: it is required, under two spellings)."""
        from polyjudge.api import SpanF1Config

        if self.pred is None:
            raise click.UsageError("Missing option '--pred'.")
        return SpanF1Config(gold=self.gold, pred=self.pred, gold_format=self.gold_format,
                            pred_format=self.pred_format, lp=self.lp, judge=self.judge, set_id=self.set_id,
                            missing=self.missing, raters=self.raters, vote_threshold=self.vote_threshold)


@click.command("span-f1")
@takes(SpanF1Flags)
def span_f1(flags: SpanF1Flags) -> None:
    """Character-level span P/R/F1 as scored in WMT25 task 2."""
    from polyjudge.api import span_f1 as score

    config = flags.config()
    guard_outputs({"write_tsv": file_target("--write-tsv", flags.write_tsv),
                   "out": file_target("-o/--out", flags.out)})
    result = score(config)
    if flags.write_tsv:
        result.write_predictions_tsv(flags.write_tsv)
    fmt = flags.fmt
    text = result.to_json() + "\n" if fmt == "json" else result.to_text() if fmt == "text" else result.to_tsv()
    emit(text, flags.out)
