"""``polyjudge meta-eval``: how well do metrics / judges agree with human scores?

The computation is :func:`polyjudge.api.meta_eval`; this module parses and prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from polyjudge.api.formats import SCORE_FORMATS as FORMATS
from polyjudge.api.metaeval import task_presets
from polyjudge.api.runs import file_target, input_target
from polyjudge.cli.options import SEED, emit, format_option, guard_outputs, out_option, share, warn
from polyjudge.cli.specs import argument, option, shared, takes
from polyjudge.data.errors import InputError

if TYPE_CHECKING:
    from polyjudge.api import MetaEvalConfig


def _metrics(specs: tuple[str, ...], *, unique: bool) -> dict[str, Path]:
    from polyjudge.api.metaeval import parse_metric_spec

    out: dict[str, Path] = {}
    for name, path in map(parse_metric_spec, specs):
        if unique and name in out:
            raise InputError(f"metric name '{name}' given twice; use NAME=PATH", field="metric")
        out[name] = path
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class MetaEvalFlags:
    """The flags of ``polyjudge meta-eval``, in ``--help`` order."""

    runs: tuple[Path, ...] = argument("runs", metavar="[RUN]...", nargs=-1,
                                      type=click.Path(exists=True, file_okay=False, path_type=Path))
    mtme_dir: Path | None = option("--mtme", "mtme_dir", type=click.Path(file_okay=False, path_type=Path),
                                   help="Directory laid out like mt-metrics-eval (human-scores/, metric-scores/LP/).")
    lps: tuple[str, ...] = option(
        "--lp", "lps", multiple=True,
        help="Language pair(s) to evaluate, repeatable: with --mtme every one given; otherwise pairs the inputs "
             "name (a run's items, an lp or src_lang/tgt_lang column; default: each of them, one table per pair), "
             "or the label of inputs that name none.")
    pool_lps: bool = option("--pool-lps", is_flag=True,
                            help="Evaluate the selected language pairs (default: all) as one, named "
                                 "'pooled: A+B' (without --mtme).")
    human: str | None = option("--human", "human",
                               help="Human scores: a file, run directory or annotation campaign; with --mtme the "
                                    "human score NAME (default: mqm if present, else the only one).")
    human_name: str | None = option("--human-name", "human_name", metavar="NAME",
                                    help="With --mtme: the human scores to compare with (default: the test set's "
                                         "standard gold at the level, from mt-metrics-eval's meta information).")
    with_stored_metrics: bool = option(
        "--with-stored-metrics", is_flag=True,
        help="With --mtme and RUN: also rank every metric stored in the test set's metric-scores/ (the "
             "metrics-task submissions) in the same table.")
    human_format: str = option("--human-format", type=click.Choice(FORMATS), default="auto", show_default=True,
                               help="Format of --human (auto: from the extension, .csv/.tsv/.jsonl, or content).")
    metric_specs: tuple[str, ...] = option(
        "--metric", "metric_specs", multiple=True, metavar="[NAME=]PATH",
        help="Metric scores or polyjudge run directory; repeat for several. System scores only (a "
             ".sys.score file, a systems table, the output directory of `polyjudge pairwise`) get "
             "system-level statistics, segment ones shown as n/a.")
    metric_format: str = option("--metric-format", type=click.Choice(FORMATS), default="auto", show_default=True,
                                help="Format of every --metric file (auto: from the extension or content).")
    human_lower_better: bool = option("--human-lower-better", is_flag=True,
                                      help="Negate human scores (e.g. raw MQM error points).")
    lower_better: tuple[str, ...] = option("--lower-better", "lower_better", multiple=True, metavar="NAME",
                                           help="Negate this metric's scores (e.g. an error count); repeatable.")
    exclude: tuple[str, ...] = option("--exclude-system", "exclude", multiple=True, metavar="SYSTEM",
                                      help="Leave a system out (e.g. the reference used by reference-based metrics).")
    include_refs: bool = option("--include-refs", is_flag=True,
                                help="With --mtme, keep human reference systems used by the metrics (default: drop "
                                     "systems named like a reference, ref*).")
    task: str = option("--task", type=click.Choice([*task_presets(), "none"]), default="wmt24",
                       show_default=True, help="Ranking table preset.")
    level: str = option("--level", type=click.Choice(["seg"]), default="seg", show_default=True,
                        help="Level of the score files read (system scores are derived unless "
                             "mt-metrics-eval .sys.score files exist).")
    k: int = option("-k", "--k", "--permutations", "k", type=click.IntRange(min=0), default=1000,
                    show_default=True, help="Permutation draws per significance test (0 = none).")
    seed: int = option("--seed", type=SEED, default=0, show_default=True,
                       help="Seed of the permutation draws (the same seed gives the same p-values).")
    alpha: float = option("--alpha", type=share(), default=0.05, show_default=True,
                          help="p-value threshold for significance clusters.")
    missing_metric: str = option(
        "--missing-metric", type=click.Choice(["error", "drop"]), default="error", show_default=True,
        help="A metric lacks a score where humans have one: stop, or skip those cells (system "
             "scores of both sides are then means over the cells the metric scored).")
    item_key: str = option(
        "--item-key", type=click.Choice(["auto", "seg", "doc-seg"]), default="auto", show_default=True,
        help="How segments are matched across files: seg_id, doc_id + seg_id, or auto "
             "(doc_id + seg_id when seg_ids repeat across documents).")
    aggregators: str | None = option(
        "--aggregators", "aggregators", default=None, metavar="all|NAME,...",
        help="Rank every run aggregator of run-directory metrics as a metric of its own, named "
             "NAME@AGG: 'all' (every aggregator the run stored) or names such as rrwa,mean-2s,geo,max "
             "(one not stored is computed from the single runs).")
    single_runs: bool = option(
        "--single-runs", is_flag=True,
        help="Rank every single run of run-directory metrics as a metric of its own, named NAME@run1, "
             "NAME@run2, ... (GEMBA-MQM V2 Tables 2-4). A run that failed on some items has no score "
             "there: add --missing-metric drop to compare over the items each one scored.")
    fmt: str = shared(format_option())
    out: str | None = shared(out_option("Write the results to this file instead of standard output."))

    def config(self, metrics: dict[str, Path]) -> MetaEvalConfig:
        """The API's settings, with the metrics already read from ``--metric``."""
        from polyjudge.api import MetaEvalConfig

        if self.human_name is not None and self.human not in (None, self.human_name):
            raise InputError("--human and --human-name name different human scores; give one", field="human-name")
        return MetaEvalConfig(
            human=self.human_name or self.human, metrics=metrics, runs=self.runs,
            with_stored_metrics=self.with_stored_metrics, mtme_dir=self.mtme_dir, lps=self.lps,
            human_format=self.human_format, metric_format=self.metric_format,
            human_lower_better=self.human_lower_better, lower_better=self.lower_better,
            exclude_systems=self.exclude, include_refs=self.include_refs,
            task=None if self.task == "none" else self.task, level=self.level, k=self.k, seed=self.seed,
            alpha=self.alpha, missing_metric=self.missing_metric, item_key=self.item_key,
            aggregators=() if self.aggregators is None else (self.aggregators,), single_runs=self.single_runs,
            pool_lps=self.pool_lps)


@click.command("meta-eval")
@takes(MetaEvalFlags)
def meta_eval(flags: MetaEvalFlags) -> None:
    """Meta-evaluate metrics (and judge RUNs laid onto a --mtme test set) against human scores, WMT style.

    \b
    polyjudge meta-eval --mtme DIR --lp en-de --lp zh-en --task wmt24
    polyjudge meta-eval runs/mqm --mtme ROOT/wmt23 --lp en-de --with-stored-metrics
    polyjudge meta-eval --human mqm.tsv --metric chrF=chrf.tsv --metric runs/judge1
    polyjudge meta-eval --human mqm.tsv --metric gemba=runs/mqm --aggregators all --single-runs
    """
    from polyjudge.api import meta_eval as evaluate

    # Without --mtme every metric needs its own name; with it, a later file replaces an earlier one.
    unique = flags.mtme_dir is None and flags.human is not None and bool(flags.metric_specs)
    metrics = _metrics(flags.metric_specs, unique=unique)
    metric_inputs = [t for name, path in metrics.items() for t in input_target(f"--metric {name}", path)]
    metric_inputs += input_target("--human", flags.human if flags.mtme_dir is None else None)
    metric_inputs += [t for run in flags.runs for t in input_target("RUN", run)]
    guard_outputs({"out": file_target("-o/--out", flags.out)}, metric_inputs)  # before the work, not after
    result = evaluate(flags.config(metrics))
    if flags.fmt != "text":  # text tables carry their notes; TSV and JSON on stdout stay machine-readable
        for note in result.notes:
            warn(f"meta-eval: {note}")
    emit(result.format(flags.fmt), flags.out, metric_inputs)
