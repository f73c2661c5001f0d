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

``--match``, ``--matching`` and ``--average`` choose a span-F1 variant of
span-mt-metrics-eval (exact, binary overlap, WMT23 character counts or MPP
partial credit; optimal, greedy or many-to-many matching; micro or macro over
segments); without them the scores are the official WMT25 scorer's. With
``--rank PATH`` (repeatable, ``NAME=PATH`` to label it) the predictions of
``--pred`` and of each ``--rank`` are ranked by F1 under every variant of
``--variants`` (``all``, or a comma-separated list of ``match/matching/average``;
the first is the reference): one line per variant with each metric's rank, how
many moved from the reference, and Kendall's tau-b with it.

Example (a TSA run on TED en-de against the human spans)::

    polyjudge span-f1 --gold ../shared/data/wmt-mqm/ted/ende/mqm_ted_ende.tsv --pred runs/tsa
    polyjudge span-f1 --gold gold.tsv --pred runs/tsa --match mpp --matching greedy --average macro
    polyjudge span-f1 --gold gold.tsv --pred runs/tsa --rank gemba=runs/gemba --variants all
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from polyjudge.api.runs import file_target, input_target
from polyjudge.cli.options import emit, format_option, guard_outputs, legacy, out_option, span_scoring_option
from polyjudge.cli.specs import option, shared, takes
from polyjudge.data.errors import InputError

if TYPE_CHECKING:
    from polyjudge.api import SpanF1Config

def _choices(table: str) -> list[str]:
    """The names of one of the span-variant tables (``MATCHES``, ``MATCHINGS``, ``AVERAGES``)."""
    from polyjudge.api import spans

    return list(getattr(spans, table))


@dataclass(frozen=True, slots=True, kw_only=True)
class SpanF1Flags:
    """The flags of ``polyjudge span-f1``, in ``--help`` order."""

    gold: str = span_scoring_option("gold")
    pred: str | None = option("--pred", "pred", type=click.Path(exists=True),
                              help="Predicted spans: run directory, task-2 TSV, JSONL or WMT MQM TSV (required).",
                              spellings=[legacy("-p", dest="pred", use="--pred", type=click.Path(exists=True))])
    gold_format: str = span_scoring_option("gold_format")
    pred_format: str = span_scoring_option("pred_format")
    lp: str | None = span_scoring_option("lp")
    judge: str | None = span_scoring_option("judge")
    set_id: str = span_scoring_option("set_id")
    missing: str = span_scoring_option("missing")
    raters: str = span_scoring_option("raters")
    vote_threshold: float = span_scoring_option("vote_threshold")
    match: str = option("--match", type=click.Choice(_choices("MATCHES")), default="wmt25", show_default=True,
                        help="What a matched span is worth: wmt25 (the official scorer), exact, overlap "
                             "(binary), wmt23 (character counts), mpp (partial credit).")
    matching: str | None = option("--matching", type=click.Choice(_choices("MATCHINGS")), default=None,
                                  help="Which spans may match: optimal or greedy (one-to-one), many "
                                       "(many-to-many); default: many for wmt25, optimal for the others.")
    average: str = option("--average", type=click.Choice(_choices("AVERAGES")), default="micro",
                          show_default=True, help="Over the segments of a language pair: micro (summed) or "
                                                  "macro (mean of per-segment scores).")
    rank: tuple[str, ...] = option("--rank", multiple=True, metavar="[NAME=]PATH",
                                   help="Another set of predicted spans to rank with --pred under each of "
                                        "--variants (repeatable).")
    variants: str = option("--variants", default="all", show_default=True,
                           help="With --rank: the variants to rank under, 'all' or match/matching/average,... "
                                "(the first is the reference).")
    write_tsv: str | None = option("--write-tsv", type=click.Path(dir_okay=False), default=None,
                                   help="Also write the predictions as a task-2 TSV.")
    fmt: str = shared(format_option())
    out: str | None = shared(out_option("Write the scores to this file instead of standard output."))

    def config(self) -> SpanF1Config:
        """The API's settings (``--pred`` is checked first: it is required, under two spellings)."""
        from polyjudge.api import SpanF1Config

        if self.pred is None:
            raise click.UsageError("Missing option '--pred'.")
        return SpanF1Config(gold=self.gold, pred=self.pred, gold_format=self.gold_format,
                            pred_format=self.pred_format, lp=self.lp, judge=self.judge, set_id=self.set_id,
                            missing=self.missing, raters=self.raters, vote_threshold=self.vote_threshold,
                            match=self.match, matching=self.matching, average=self.average)

    def others(self) -> dict[str, str]:
        """``--rank``'s predictions by label (``NAME=PATH``, else the path's name)."""
        from pathlib import Path

        out: dict[str, str] = {}
        for given in self.rank:
            name, sep, path = given.partition("=")
            if not sep or Path(given).exists():
                name, path = Path(given).stem if Path(given).is_file() else Path(given).name, given
            if not Path(path).exists():
                raise InputError(f"--rank: no such file or folder {path!r}", path=path, field="rank")
            if name in out:
                raise InputError(f"--rank: two predictions are labelled {name!r}: name them NAME=PATH",
                                 field="rank")
            out[name] = path
        return out



@click.command("span-f1")
@takes(SpanF1Flags)
def span_f1(flags: SpanF1Flags) -> None:
    """Character-level span P/R/F1 as scored in WMT25 task 2."""
    from polyjudge.api import span_f1 as score

    config = flags.config()
    others = flags.others() if flags.rank else {}
    ranked_inputs = [t for name, path in others.items() for t in input_target(f"--rank {name}", path)]
    guard_outputs({"write_tsv": file_target("--write-tsv", flags.write_tsv),
                   "out": file_target("-o/--out", flags.out)}, ranked_inputs)
    if flags.rank:
        from polyjudge.api import span_f1_ranking

        if flags.write_tsv:
            raise click.UsageError("--write-tsv writes one set of predictions: not with --rank.")
        ranked = span_f1_ranking(config, others, flags.variants)
        fmt = flags.fmt
        emit(ranked.to_json() + "\n" if fmt == "json" else ranked.to_text() if fmt == "text" else ranked.to_tsv(),
             flags.out, ranked_inputs)
        return
    result = score(config)
    if flags.write_tsv:
        result.write_predictions_tsv(flags.write_tsv)
    fmt = flags.fmt
    text = result.to_json() + "\n" if fmt == "json" else result.to_text() if fmt == "text" else result.to_tsv()
    emit(text, flags.out)
