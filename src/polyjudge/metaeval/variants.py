"""Every aggregator and every single run of a run directory as a metric of its own.

GEMBA-MQM V2's headline tables (Tables 2–4) rank the multi-run aggregates
(rrwa, mean, geo, max) and each of the ten single runs as separate rows, so
that "every aggregate beats every single run" can be seen with its
significance clusters. :func:`expand_metrics` turns one run directory given as
a metric into those rows:

* ``NAME@AGG`` for each requested run aggregator: the column the run stored
  in ``aggregates.tsv`` (``all`` = every stored one, in stored order), or a
  registered aggregator computed from the single runs when it was not stored;
* ``NAME@runK`` for each run, ``K`` counted from 1 as in the paper
  (``--single-runs``);
* ``NAME``, the run's final score, stays unless it is one of the rows above
  already (a single-judge run whose own aggregator is listed); a panel keeps
  it, since the panel mean is none of its judges' aggregates.

A run with several judges gets ``NAME:JUDGE@...`` rows for each judge. Metrics
that are not run directories are passed through unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from polyjudge.aggregate.runs import get_aggregator
from polyjudge.data.errors import InputError
from polyjudge.metaeval.readers import RunDirs, ScoreSource, open_run_dir, sniff_format
from polyjudge.registry import UnknownNameError
from polyjudge.rundir import RunDir

ALL = "all"


@dataclass(frozen=True, slots=True)
class RunVariants:
    """Which extra rows a run-directory metric becomes.

    ``aggregators``: aggregator names, or ``("all",)`` for every aggregator the
    run stored (``all`` may be combined with further names); empty for none.
    ``single_runs``: one row per run.
    """

    aggregators: tuple[str, ...] = ()
    single_runs: bool = False

    @property
    def active(self) -> bool:
        return bool(self.aggregators) or self.single_runs


def parse_aggregator_list(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"all"``, ``"rrwa,mean"`` or a sequence of names -> a tuple of unique names, in order."""
    if text is None:
        return ()
    parts = text.split(",") if isinstance(text, str) else [p for t in text for p in str(t).split(",")]
    names = [p.strip() for p in parts if p.strip()]
    if not names and (text if isinstance(text, str) else list(text)):
        raise InputError("no aggregator named (give 'all' or names such as rrwa,mean)", field="aggregators")
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True, slots=True)
class Expanded:
    """Metric name -> where its scores are, and for each metric the name it was given as."""

    sources: dict[str, ScoreSource]
    base: dict[str, str]


def is_run_dir(path: str | Path, fmt: str = "auto") -> bool:
    """Whether a metric source is read as a run directory."""
    if fmt == "run":
        return True
    return fmt == "auto" and Path(path).is_dir() and sniff_format(path) == "run"


def _aggregators_of(rd: RunDir, requested: Sequence[str]) -> list[str]:
    """The requested names, ``all`` replaced by the stored aggregators; unknown names are refused."""
    stored = rd.aggregate_names()
    names: list[str] = []
    for name in requested:
        if name == ALL:
            names += stored
            continue
        if name not in stored:
            try:
                get_aggregator(name)
            except UnknownNameError as exc:
                raise InputError(f"{exc.message} (stored in the run: {', '.join(stored) or 'none'})",
                                 path=str(rd.path), field="aggregators") from None
        names.append(name)
    return list(dict.fromkeys(names))


def expand_run_metric(name: str, path: str | Path, variants: RunVariants,
                      opened: RunDirs | None = None) -> dict[str, ScoreSource]:
    """The rows one run directory becomes (see the module docstring), in display order."""
    rd = open_run_dir(path, opened)
    judges = rd.judges
    if not judges:
        raise InputError("the run has no judgments to evaluate", path=str(rd.path))
    aggregators = _aggregators_of(rd, variants.aggregators)
    out: dict[str, ScoreSource] = {}
    panel = len(judges) > 1
    if panel or not any(_is_final(rd, judges[0], a) for a in aggregators):
        out[name] = ScoreSource(path, "run")
    for judge in judges:
        prefix = f"{name}:{judge}" if panel else name
        for agg in aggregators:
            out[f"{prefix}@{agg}"] = ScoreSource(path, "run", judge=judge, aggregator=agg)
        if variants.single_runs:
            for r in range(rd.n_runs):
                out[f"{prefix}@run{r + 1}"] = ScoreSource(path, "run", judge=judge, run=r)
    return out


def _is_final(rd: RunDir, judge: str, aggregator: str) -> bool:
    """Whether ``aggregator`` is how the run made its final scores: the manifest names it
    (or another name of it) and the stored column holds the same scores as ``segments.tsv``."""
    if not _same_aggregator(aggregator, rd.manifest.config.aggregator):
        return False
    column = next((s for s in rd.aggregate_names() if _same_aggregator(aggregator, s)), None)
    if column is None:
        return False
    final = rd.final_scores(judge)
    stored = rd.aggregate_scores(judge, column)
    return final.shape == stored.shape and bool(np.array_equal(final, stored, equal_nan=True))


def _same_aggregator(a: str, b: str) -> bool:
    """Two names of one aggregator (``mean`` and ``mean-2s``), or the same name."""
    if a == b:
        return True
    try:
        return get_aggregator(a) is get_aggregator(b)
    except (KeyError, ImportError):
        return False


def expand_metrics(metrics: Mapping[str, str | Path], fmt: str, variants: RunVariants,
                   opened: RunDirs | None = None) -> Expanded:
    """Every metric as one or more named sources; run directories expanded by ``variants``.

    With ``variants`` active, at least one metric must be a run directory, and
    no expanded name may repeat a given one (both are input errors). ``opened``
    keeps the run directories read here for the readers.
    """
    sources: dict[str, ScoreSource] = {}
    base: dict[str, str] = {}
    expanded_any = False
    for name, path in metrics.items():
        rows = {name: ScoreSource(path, fmt)}
        if variants.active and is_run_dir(path, fmt):
            rows = expand_run_metric(name, path, variants, opened)
            expanded_any = True
        for row, src in rows.items():
            if row in sources:
                raise InputError(f"metric name '{row}' occurs twice after expanding run directories; "
                                 "rename one metric (NAME=PATH)", field="metric")
            sources[row] = src
            base[row] = name
    if variants.active and not expanded_any:
        raise InputError("--aggregators and --single-runs apply to run-directory metrics, and no metric is a "
                         "run directory", field="aggregators" if variants.aggregators else "single-runs")
    return Expanded(sources, base)


__all__ = ["ALL", "Expanded", "RunVariants", "expand_metrics", "expand_run_metric", "is_run_dir",
           "parse_aggregator_list"]
