"""Meta-evaluation from Python: how well do metrics and judges agree with human scores (WMT style)?"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from polyjudge.data.errors import InputError, check_choices
from polyjudge.data.shapes import normalise_fields
from polyjudge.metaeval import readers, tasks
from polyjudge.metaeval.mtme import parse_metric_spec
from polyjudge.metaeval.results import MetaEvalResults, read_metaeval, stats_rows
from polyjudge.metaeval.stats import MIN_CORRELATION_POINTS
from polyjudge.metaeval.system_level import Stats, SystemScores, format_system_level, system_level_stats
from polyjudge.studies.tables import data_frame

SCORE_FORMATS = readers.FORMATS  # the one list lives beside the readers
SEGMENT_SCORE_FORMATS = readers.SEGMENT_FORMATS


def task_presets() -> list[str]:
    """The ranking-table presets (registered in metaeval.tasks, plugins' included)."""
    return tasks.PRESETS.names()
MISSING_METRIC = ("error", "drop")
ITEM_KEYS = ("auto", "seg", "doc-seg")


@dataclass(frozen=True, slots=True)
class MetaEvalConfig:
    """Where the scores are and how the ranking table is built.

    Either ``mtme_dir`` (an mt-metrics-eval directory; every metric in it for
    each of ``lps``, plus ``metrics``; ``human`` is then the human score NAME)
    or ``human`` (a score file or run directory) with ``metrics`` (name -> score
    file or run directory). Without ``mtme_dir``, every language pair the
    inputs name (a run's items, a file's ``lp`` or ``src_lang``/``tgt_lang``
    columns) is evaluated on its own, ``lps`` selecting some of them (a pair
    not in the inputs is an InputError naming those that are); ``pool_lps``
    evaluates the selected pairs as one, named ``pooled: en-de+zh-en``. Inputs
    that name no pair are one pair, labelled ``lps[0]`` when given.
    ``task=None`` skips the ranking table (per-LP statistics only).
    With ``missing_metric="drop"``, system scores on both sides are averaged
    over the same cells (see :class:`polyjudge.metaeval.tasks.LanguagePair`).
    Every file is keyed by the same ``item_key``; a file without doc_id where
    ``doc-seg`` is needed is an error naming it.

    Run-directory metrics can be split into one metric per run aggregator
    (``aggregators``: names, or ``("all",)`` for every aggregator the run
    stored) and one per single run (``single_runs``), named ``NAME@rrwa``,
    ``NAME@run3`` (runs counted from 1), as in GEMBA-MQM V2's Tables 2–4;
    see :mod:`polyjudge.metaeval.variants`. ``lower_better`` names apply to
    every row of a metric.

    A metric with system scores only (format ``sys``: a ``.sys.score`` file, a
    systems table, the pairwise study's output directory) is compared with the
    human system scores alone (:mod:`polyjudge.metaeval.system_level`); its
    segment statistics are not applicable and it is left out of the ranking
    table. Human scores given at system level make every metric system-level.
    """

    def __post_init__(self) -> None:
        normalise_fields(self, {"metrics": parse_metric_spec})  # Python shapes; TypeError names a field

    human: str | Path | None = None
    metrics: Mapping[str, str | Path] = field(default_factory=dict)
    mtme_dir: str | Path | None = None
    lps: tuple[str, ...] = ()
    human_format: str = "auto"
    metric_format: str = "auto"
    human_lower_better: bool = False  # negate human scores (e.g. raw MQM error points)
    lower_better: tuple[str, ...] = ()  # metrics to negate (e.g. error counts)
    exclude_systems: tuple[str, ...] = ()
    include_refs: bool = False  # with mtme_dir: keep the reference systems the metrics used
    task: str | None = "wmt24"
    level: str = "seg"
    k: int = 1000  # permutation draws per significance test (0 = none)
    seed: int = 0
    alpha: float = 0.05  # p-value threshold of the significance clusters
    missing_metric: str = "error"  # a metric lacks a score where humans have one: "error" or "drop"
    # how segments are matched across files: "seg" (seg_id), "doc-seg" (doc_id + seg_id), or
    # "auto" (doc-seg when a file's seg_ids repeat across documents)
    item_key: str = "auto"
    # every run aggregator ("all" or names) and every single run of run-directory metrics as metrics
    aggregators: tuple[str, ...] = ()
    single_runs: bool = False
    # judge run directories laid onto the --mtme test set's segments (named by their mt-metrics-eval
    # name), ranked with the test set's stored metrics only when with_stored_metrics
    runs: tuple[str | Path, ...] = ()
    with_stored_metrics: bool = False
    # without mtme_dir: the language pairs the inputs name are evaluated one by one (lps selects some of
    # them); pool_lps evaluates the selected pairs as one, named "pooled: A+B"
    pool_lps: bool = False


PER_LP_COLUMNS = ("lp", "metric")


@dataclass
class MetaEvalResult:
    """Per-LP statistics and the ranking table (``evaluation``; None when every metric is
    system-level only), and the statistics of system-level-only metrics (``system_level``:
    lp -> metric -> statistic, ``None`` where not applicable), with renderings."""

    config: MetaEvalConfig
    evaluation: tasks.MetaEvalResult | None
    system_level: dict[str, dict[str, Stats]] = field(default_factory=dict)

    @property
    def per_lp(self) -> dict[str, dict[str, dict[str, float | int]]]:
        """lp -> metric -> statistic -> value (metrics with segment scores)."""
        return self.evaluation.per_lp if self.evaluation is not None else {}

    @property
    def average(self) -> dict[str, float]:
        return self.evaluation.average if self.evaluation is not None else {}

    def ranking(self) -> list[str]:
        return self.evaluation.ranking() if self.evaluation is not None else []

    @property
    def notes(self) -> list[str]:
        """Caveats of the tables: metrics scored on different segments, too few systems for a correlation."""
        notes = list(self.evaluation.notes) if self.evaluation is not None else []
        few = {lp for lp, by in self.system_level.items() if any(s.get("sys_pearson") is None for s in by.values())}
        notes += [f"{tasks.display_lp(lp)}: fewer than {MIN_CORRELATION_POINTS} systems shared with the humans: "
                  "system-level correlations are undefined (n/a)" for lp in sorted(few)]
        return notes

    def results(self) -> MetaEvalResults:
        """The typed rows (ranking, per-LP and system-level-only statistics) that the JSON holds,
        :func:`read_results` reads back and the report renders."""
        base = (self.evaluation.results() if self.evaluation is not None else
                MetaEvalResults(self.config.task, self.config.k, self.config.seed))
        return replace(base, system_level_only=stats_rows(self.system_level))

    def to_dict(self) -> dict[str, Any]:
        """The document ``polyjudge meta-eval --format json`` writes."""
        return self.results().to_json()

    def format(self, fmt: str = "text") -> str:
        """``text`` (aligned tables), ``tsv`` or ``json``, as ``polyjudge meta-eval`` prints them."""
        if fmt == "json" or (self.evaluation is None and fmt not in ("text", "tsv")):
            import json

            if fmt != "json":
                raise InputError(f"unknown format {fmt!r} (text, tsv, json)", field="format")
            return json.dumps(self.to_dict(), indent=2, default=float) + "\n"
        parts = [tasks.format_result(self.evaluation, fmt)] if self.evaluation is not None else []
        if self.system_level:
            parts.append(format_system_level(self.system_level, fmt))
        return "\n".join(parts)

    def to_pandas(self) -> Any:
        """The per-LP table: one row per language pair and metric, one column per statistic
        (system-level-only metrics included, their segment statistics empty)."""
        recs: list[dict[str, Any]] = [{"lp": lp, "metric": m, **stats} for lp, by_metric in self.per_lp.items()
                                      for m, stats in by_metric.items()]
        recs += [{"lp": lp, "metric": m, **stats} for lp, by_metric in self.system_level.items()
                 for m, stats in by_metric.items()]
        keys = list(dict.fromkeys(k for r in recs for k in r))
        return data_frame(recs, keys or PER_LP_COLUMNS)


def _check(config: MetaEvalConfig) -> None:
    check_choices(("human-format", config.human_format, SCORE_FORMATS),
                  ("metric-format", config.metric_format, SCORE_FORMATS),
                  ("missing-metric", config.missing_metric, MISSING_METRIC), ("item-key", config.item_key, ITEM_KEYS))
    if config.task is not None and config.task not in tasks.PRESETS:
        raise InputError(f"unknown task preset {config.task!r} (choose from {', '.join(task_presets())})",
                         field="task")


def human_source(config: MetaEvalConfig) -> readers.ScoreSource:
    """Where the human scores of ``config`` are and how they are read (``human``, a score file or run
    directory, in ``human_format``), without an mt-metrics-eval folder (there ``human`` names its human
    scores). The one place ``--human`` is resolved: another kind of human scores is a change here."""
    if config.human is None:
        raise InputError("give --human (scores file or run directory) or --mtme DIR", field="human")
    return readers.ScoreSource(config.human, config.human_format)


def language_pairs(config: MetaEvalConfig) -> list[tasks.LanguagePair]:
    """The language pairs the config describes, every score read (higher = better)."""
    from polyjudge.data.testsets import TestSetSelection
    from polyjudge.metaeval import readers
    from polyjudge.metaeval.mtme import MtmeSelection, mtme_language_pair, run_metric_names
    from polyjudge.metaeval.variants import RunVariants, expand_metrics, parse_aggregator_list

    _check(config)
    variants = RunVariants(parse_aggregator_list(config.aggregators), config.single_runs)
    opened: readers.RunDirs = {}  # every run directory is read once, however many metrics it gives
    if config.mtme_dir is not None:
        if not config.lps:
            raise InputError("--mtme needs at least one --lp", field="lp")
        if config.pool_lps:
            raise InputError("--pool-lps pools the pairs of score files and runs; an mt-metrics-eval test set is "
                             "evaluated one --lp at a time", field="pool-lps")
        human = None if config.human is None else str(config.human)
        extra = expand_metrics(config.metrics, config.metric_format, variants, opened)
        systems = TestSetSelection(exclude_systems=tuple(config.exclude_systems), include_refs=config.include_refs)
        selection = MtmeSelection(human=human, level=config.level, systems=systems,
                                  human_lower_better=config.human_lower_better,
                                  lower_better=config.lower_better, missing_metric=config.missing_metric,
                                  extra_metrics=extra.sources, metric_format=config.metric_format,
                                  item_key=config.item_key, base_names=extra.base,
                                  runs=run_metric_names(config.runs, opened),
                                  stored_metrics=config.with_stored_metrics or not config.runs)
        return [mtme_language_pair(config.mtme_dir, lp, selection, opened=opened) for lp in config.lps]
    if config.runs:
        raise InputError("RUN arguments are laid onto a test set: give --mtme ROOT/TESTSET (or each run as "
                         "--metric PATH)", field="RUN")
    if not config.human:
        raise InputError("give --human (scores file or run directory) or --mtme DIR", field="human")
    if not config.metrics:
        raise InputError("give at least one --metric", field="metric")
    expanded = expand_metrics(config.metrics, config.metric_format, variants, opened)
    sources = [human_source(config), *expanded.sources.values()]
    tables = [src.table(opened) for src in sources]
    lower = set(config.lower_better)
    pairs = []
    for lp, chosen in readers.select_pairs(tables, config.lps, pool=config.pool_lps):
        key = readers.resolve_item_key(chosen, config.item_key)
        h, *read = [t.matrix(key) for t in chosen]
        metrics = {name: m.negated() if name in lower or expanded.base[name] in lower else m
                   for name, m in zip(expanded.sources, read, strict=True)}
        pairs.append(tasks.LanguagePair(tasks.UNNAMED_LP if lp is None else lp,
                                        h.negated() if config.human_lower_better else h, metrics,
                                        exclude_systems=config.exclude_systems,
                                        missing_metric=config.missing_metric))
    return pairs


def _split_system_level(config: MetaEvalConfig) -> tuple[dict[str, str | Path], dict[str, str | Path]]:
    """The metrics with segment scores, and those with system scores only."""
    from polyjudge.metaeval import readers

    segment: dict[str, str | Path] = {}
    system: dict[str, str | Path] = {}
    for name, path in config.metrics.items():
        (system if readers.is_system_level(path, config.metric_format) else segment)[name] = path
    return segment, system


def _human_system_scores(config: MetaEvalConfig, pairs: list[tasks.LanguagePair]) -> dict[str, dict[str, float]]:
    """lp -> system -> human system score (higher = better), over the systems meta-eval compares:
    the humans' own system scores when given, else the mean of each system's human segment scores."""
    from polyjudge.metaeval import readers

    out: dict[str, dict[str, float]] = {}
    for pair in pairs:
        hm = pair.human.drop_systems(pair.exclude_systems)
        means = dict(zip(hm.systems, hm.system_means().tolist(), strict=True))
        given = pair.human_sys
        out[pair.lp] = {s: (given.get(s, float("nan")) if given is not None else v) for s, v in means.items()
                        if v == v}
    if pairs:
        return out
    human = human_source(config)
    sign = -1.0 if config.human_lower_better else 1.0
    drop = set(config.exclude_systems)
    if readers.is_system_level(human.path, human.fmt):
        if len(config.lps) > 1:
            raise InputError("human system scores hold one language pair; give one --lp (its label)", field="lp")
        scores = {s: sign * v for s, v in readers.read_system_scores(human.path).items()}
        return {config.lps[0] if config.lps else tasks.UNNAMED_LP: {s: v for s, v in scores.items()
                                                                    if s not in drop}}
    for lp, (table,) in readers.select_pairs([human.table()], config.lps, pool=config.pool_lps):
        hm = table.matrix(readers.resolve_item_key([table], config.item_key))
        out[tasks.UNNAMED_LP if lp is None else lp] = {
            s: sign * v for s, v in zip(hm.systems, hm.system_means().tolist(), strict=True)
            if v == v and s not in drop}
    return out


def _segment_metrics_as_systems(config: MetaEvalConfig, metrics: Mapping[str, str | Path]) -> dict[str, SystemScores]:
    """Metrics with segment scores reduced to system means (when the humans gave system scores only)."""
    from polyjudge.metaeval import readers
    from polyjudge.metaeval.variants import RunVariants, expand_metrics, parse_aggregator_list

    variants = RunVariants(parse_aggregator_list(config.aggregators), config.single_runs)
    opened: readers.RunDirs = {}
    expanded = expand_metrics(metrics, config.metric_format, variants, opened)
    read = readers.read_score_tables(list(expanded.sources.values()), config.item_key, opened=opened)
    return {name: SystemScores(name, {s: v for s, v in zip(m.systems, m.system_means().tolist(), strict=True)
                                      if v == v}, str(src.path))
            for (name, src), m in zip(expanded.sources.items(), read, strict=True)}


def meta_eval(config: MetaEvalConfig) -> MetaEvalResult:
    """Meta-evaluate the metrics against the human scores: per-LP statistics, the
    task preset's ranking table and significance clusters; system-level-only
    metrics get their system statistics. Bad input raises InputError."""
    from polyjudge.api.annotate import campaign_or_file
    from polyjudge.metaeval import readers

    config = replace(config, human=campaign_or_file(config.human))  # a campaign folder: read as its export
    _check(config)
    segment, system = _split_system_level(config)
    given = human_source(config) if config.mtme_dir is None and config.human is not None else None
    human_sys_only = given is not None and readers.is_system_level(given.path, given.fmt)
    if system and config.mtme_dir is None and not config.human:
        raise InputError("give --human (scores file or run directory) or --mtme DIR", field="human")
    if human_sys_only and (config.aggregators or config.single_runs) and not segment:
        raise InputError("--aggregators and --single-runs apply to run-directory metrics, and no metric is a "
                         "run directory", field="aggregators" if config.aggregators else "single-runs")
    pairs: list[tasks.LanguagePair] = []
    evaluation = None
    if not human_sys_only and (segment or config.mtme_dir is not None or not system):
        pairs = language_pairs(replace(config, metrics=segment))
        try:
            evaluation = tasks.evaluate(pairs, config.task, k=config.k, seed=config.seed, alpha=config.alpha)
        except ValueError as exc:
            if isinstance(exc, InputError):
                raise
            raise InputError(str(exc)) from None
    scores: dict[str, SystemScores] = {}
    if human_sys_only:
        scores.update(_segment_metrics_as_systems(config, segment))
    for name, path in system.items():
        scores[name] = SystemScores(name, readers.read_system_scores(path), str(path))
    lower = set(config.lower_better)
    scores = {n: SystemScores(n, {s: -v for s, v in m.scores.items()}, m.source) if n in lower or
              n.split("@")[0] in lower else m for n, m in scores.items()}
    system_level: dict[str, dict[str, Stats]] = {}
    if scores:
        for lp, human in _human_system_scores(config, pairs).items():
            system_level[lp] = {n: system_level_stats(human, m, lp=lp, missing_metric=config.missing_metric)
                                for n, m in scores.items()}
    return MetaEvalResult(config, evaluation, system_level)


def read_results(path: str | Path) -> MetaEvalResults:
    """The typed results in a file ``polyjudge meta-eval --format json`` wrote (any version);
    a file of another shape is an InputError naming it and the place in the JSON."""
    from polyjudge.data import textio
    from polyjudge.data.readers import parse_json

    return read_metaeval(parse_json(textio.read_text(Path(path)), path=str(path)), str(path))


__all__ = ["SCORE_FORMATS", "SEGMENT_SCORE_FORMATS", "MetaEvalConfig", "MetaEvalResult", "MetaEvalResults",
           "human_source", "language_pairs", "meta_eval", "parse_metric_spec", "read_results", "task_presets"]
