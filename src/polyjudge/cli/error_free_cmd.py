"""``polyjudge error-free-eval``: metrics' "error-free?" labels against gold from ESA (WMT26).

The gold is an ESA file (scores and spans: a JSONL of ESA records, or a score
file with ``--gold-spans``): a translation is error-free when its ESA score is
at least ``--threshold`` (85) and no error span is marked; ``--gold-labels``
reads the gold as binary labels instead. Each ``--metric [NAME=]PATH`` is a TSV,
CSV or JSONL with ``system``, ``seg_id`` (``doc_id`` and the language pair
optional) and a label column (``label``, ``error_free`` or ``score``: 1/0,
true/false, yes/no), or a run directory; ``--cutoff`` turns scores (an expected
probability) into labels. Prints precision, recall, F1, MCC and accuracy per
language pair (and pooled, ``all``) and metric, ranked without ties by
``--rank-by``, then the other statistics, then name. The computation is
:func:`polyjudge.api.error_free_eval`.

Example::

    polyjudge error-free-eval --gold esa.jsonl --metric judge=labels.tsv --metric qe=qe.tsv
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from polyjudge.api.error_free import MISSING_POLICIES, STATISTICS
from polyjudge.api.runs import file_target, input_target
from polyjudge.cli.options import emit, format_option, guard_outputs, out_option
from polyjudge.cli.specs import option, shared, takes
from polyjudge.data.errors import InputError

if TYPE_CHECKING:
    from polyjudge.api import ErrorFreeConfig


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorFreeFlags:
    """The flags of ``polyjudge error-free-eval``, in ``--help`` order."""

    gold: str = option("--gold", "-g", required=True, type=click.Path(exists=True),
                       help="Gold: ESA scores and spans (ESA JSONL), or binary labels with --gold-labels.")
    gold_spans: str | None = option("--gold-spans", type=click.Path(exists=True), default=None,
                                    help="The gold's error spans, when not in --gold (any span format).")
    gold_labels: bool = option("--gold-labels", is_flag=True, default=False,
                               help="--gold holds binary labels, not ESA scores.")
    metric: tuple[str, ...] = option("--metric", "-m", multiple=True, required=True, metavar="[NAME=]PATH",
                                     help="A metric's binary labels: TSV, CSV, JSONL or run directory "
                                          "(repeatable).")
    threshold: float = option("--threshold", type=float, default=85.0, show_default=True,
                              help="ESA score at or above which a translation without error spans is error-free.")
    cutoff: float | None = option("--cutoff", type=float, default=None,
                                  help="Metric scores at or above this are error-free (default: labels are "
                                       "1/0, true/false or yes/no).")
    label_column: str | None = option("--label-column", default=None,
                                      help="The label column (default: label, error_free or score).")
    rank_by: str = option("--rank-by", type=click.Choice(list(STATISTICS)),
                          default="mcc", show_default=True, help="The statistic metrics are ranked by.")
    missing: str = option("--missing", type=click.Choice(list(MISSING_POLICIES)), default="negative",
                          show_default=True, help="A gold segment a metric did not label: not error-free, "
                                                  "left out, or an error; counted either way.")
    lp: str | None = option("--lp", default=None, metavar="SRC-TGT", help="Evaluate this language pair only.")
    fmt: str = shared(format_option())
    out: str | None = shared(out_option("Write the table to this file instead of standard output."))

    def config(self) -> ErrorFreeConfig:
        from polyjudge.api import ErrorFreeConfig

        metrics: dict[str, str] = {}
        for given in self.metric:
            name, sep, path = given.partition("=")
            if not sep or Path(given).exists():
                name, path = (Path(given).stem if Path(given).is_file() else Path(given).name), given
            if not Path(path).exists():
                raise InputError(f"--metric: no such file or folder {path!r}", path=path, field="metric")
            if name in metrics:
                raise InputError(f"--metric: two metrics are named {name!r}: name them NAME=PATH", field="metric")
            metrics[name] = path
        return ErrorFreeConfig(gold=self.gold, metrics=metrics, gold_spans=self.gold_spans,
                               gold_labels=self.gold_labels, threshold=self.threshold, cutoff=self.cutoff,
                               column=self.label_column, rank_by=self.rank_by, missing=self.missing, lp=self.lp)


@click.command("error-free-eval")
@takes(ErrorFreeFlags)
def error_free_eval(flags: ErrorFreeFlags) -> None:
    """Error-free detection: P, R, F1, MCC and accuracy of binary labels against gold from ESA."""
    from polyjudge.api import error_free_eval as evaluate

    config = flags.config()
    metric_inputs = [t for name, path in config.metrics.items() for t in input_target(f"--metric {name}", path)]
    guard_outputs({"out": file_target("-o/--out", flags.out)}, metric_inputs)  # before the work, not after
    result = evaluate(config)
    fmt = flags.fmt
    emit(result.to_json() + "\n" if fmt == "json" else result.to_text() if fmt == "text" else result.to_tsv(),
         flags.out, metric_inputs)
