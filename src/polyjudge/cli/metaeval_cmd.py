"""``polyjudge meta-eval``: how well do metrics / judges agree with human scores?

The computation is :func:`polyjudge.api.meta_eval`; this module parses and prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from polyjudge.api.runs import file_target, input_target
from polyjudge.cli.options import emit, format_option, guard_outputs, out_option, warn
from polyjudge.cli.specs import argument, declared, option, shared, takes
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
    lps: tuple[str, ...] = declared("meta_eval", "lp")
    pool_lps: bool = declared("meta_eval", "pool_lps")
    human: str | None = option("--human", "human",
                               help="Human scores: a file, run directory or annotation campaign; with --mtme the "
                                    "human score NAME (default: mqm if present, else the only one).")
    human_name: str | None = declared("meta_eval", "human_name")
    with_stored_metrics: bool = declared("meta_eval", "with_stored_metrics")
    human_format: str = declared("meta_eval", "human_format")
    metric_specs: tuple[str, ...] = declared("meta_eval", "metric")
    metric_format: str = declared("meta_eval", "metric_format")
    human_lower_better: bool = declared("meta_eval", "human_lower_better")
    lower_better: tuple[str, ...] = declared("meta_eval", "lower_better")
    exclude: tuple[str, ...] = declared("meta_eval", "exclude_system")
    include_refs: bool = declared("meta_eval", "include_refs")
    task: str = declared("meta_eval", "task")
    level: str = declared("meta_eval", "level")
    k: int = declared("meta_eval", "k")
    seed: int = declared("meta_eval", "seed")
    alpha: float = declared("meta_eval", "alpha")
    missing_metric: str = declared("meta_eval", "missing_metric")
    item_key: str = declared("meta_eval", "item_key")
    aggregators: str | None = declared("meta_eval", "aggregators")
    single_runs: bool = declared("meta_eval", "single_runs")
    fmt: str = shared(format_option())
    out: str | None = shared(out_option("Write the results to this file instead of standard output."))

    def config(self, metrics: dict[str, Path]) -> MetaEvalConfig:
        """The API's settings, with the metrics already read from ``--metric`` (the declared keys' values as a
        study's ``[[meta_eval]]`` table gives them: ``polyjudge.api.study_file.meta_eval_settings``)."""
        from dataclasses import fields

        from polyjudge.api.study_file import meta_eval_settings

        if self.human_name is not None and self.human not in (None, self.human_name):
            raise InputError("--human and --human-name name different human scores; give one", field="human-name")
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return meta_eval_settings(values, metrics, human=self.human_name or self.human, runs=self.runs,
                                  mtme_dir=self.mtme_dir)


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
