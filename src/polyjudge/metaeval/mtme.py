"""Language pairs from an mt-metrics-eval directory, ready for :func:`polyjudge.metaeval.tasks.evaluate`.

An mt-metrics-eval directory holds, per language pair, human scores
(``human-scores/LP.NAME.LEVEL.score``) and metric scores
(``metric-scores/LP/NAME-REF.LEVEL.score``). Metrics name the reference they
used after the dash; those reference "systems" are dropped from the human
scores unless asked otherwise, since a metric scores its own reference as perfect.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from polyjudge.data.errors import InputError
from polyjudge.data.testsets import TestSet, TestSetSelection
from polyjudge.metaeval import readers
from polyjudge.metaeval.matrices import ScoreMatrix
from polyjudge.metaeval.tasks import LanguagePair
from polyjudge.rundir.mtme import mtme_grid
from polyjudge.rundir.writers import mtme_name


def parse_metric_spec(spec: str) -> tuple[str, Path]:
    """``NAME=PATH`` or ``PATH`` -> (name, path); without a name, the file's stem
    (before the first dot) or the directory's name."""
    if "=" in spec and not Path(spec).exists():
        name, path = spec.split("=", 1)
        return name.strip(), Path(path)
    p = Path(spec)
    name = p.name if p.is_dir() else p.name.split(".")[0]
    return name, p


def _first_scores(scores: dict[str, list[float | None]], sign: float = 1.0) -> dict[str, float]:
    """System-level scores: the first value per system (NaN when missing)."""
    return {s: (sign * v[0] if v and v[0] is not None else float("nan")) for s, v in scores.items()}


def standard_gold(testset: str, lp: str, level: str) -> str | None:
    """The human score name mt-metrics-eval takes as gold for ``testset``/``lp`` at ``level`` (None: unknown)."""
    return TestSet(Path(testset), lp).standard_gold(level)


def outlier_systems(testset: str, lp: str) -> frozenset[str]:
    """Systems mt-metrics-eval leaves out by default for ``testset``/``lp`` (its outliers)."""
    return TestSet(Path(testset), lp).outlier_systems()


def human_systems(root: Path, lp: str) -> set[str]:
    """The human translations of a test set (:meth:`TestSet.human_systems`)."""
    return TestSet(Path(root), lp).human_systems()


def segment_count(root: Path, lp: str) -> int:
    """The number of segments of ``lp`` (:meth:`TestSet.segment_count`)."""
    return TestSet(Path(root), lp).segment_count()


def run_on_testset(path: str | Path, n_segments: int, opened: readers.RunDirs | None = None) -> readers.ScoreTable:
    """A judge run's final segment scores laid onto a test set's positions (seg_id = line number;
    unscored and unjudged cells are missing), as a positional table like the test set's own files."""
    run = readers.open_run_dir(path, opened)
    rows = run.segment_rows
    grid = mtme_grid(run.items, [r.score for r in rows], n_segments)
    matrix = ScoreMatrix.from_lists(dict(grid.scores), source=str(run.path))
    return readers.ScoreTable(str(run.path), (), has_doc_id=False, positional=matrix)


def run_metric_names(paths: Collection[str | Path], opened: readers.RunDirs | None = None) -> dict[str, Path]:
    """Run directories by their mt-metrics-eval metric name (``polyjudge-mqm-src``); two runs of one name
    are an input error (name them with --metric NAME=PATH)."""
    out: dict[str, Path] = {}
    for path in paths:
        name = mtme_name(readers.open_run_dir(path, opened))
        if name in out:
            raise InputError(f"two runs are named {name} ({out[name]}, {path}); give one as --metric NAME=PATH",
                             path=str(path))
        out[name] = Path(path)
    return out


@dataclass(frozen=True)
class MtmeSelection:
    """What to read of an mt-metrics-eval directory, the same for each of its language pairs."""

    human: str | None = None
    level: str = "seg"
    # the systems compared (exclude_systems, include_refs; systems: only these), the test set's one selection
    systems: TestSetSelection = TestSetSelection()
    human_lower_better: bool = False
    lower_better: Collection[str] = ()
    missing_metric: str = "error"
    extra_metrics: Mapping[str, str | Path | readers.ScoreSource] | None = None
    metric_format: str = "auto"
    item_key: str = "auto"
    base_names: Mapping[str, str] | None = None
    # judge run directories laid onto the test set's segments (name -> path), and whether the test
    # set's own metric-scores/ are read too (always when no run is given)
    runs: Mapping[str, str | Path] | None = None
    stored_metrics: bool = True


def _human_files(found: readers.MtmeSet) -> str:
    """The human scores there are, with their levels ("mqm at sys, wmt-raw at seg")."""
    return ", ".join(f"{name} at {'/'.join(sorted(levels))}" for name, levels in sorted(found.human.items()))


def _human_name(root: Path, found: readers.MtmeSet, lp: str, sel: MtmeSelection) -> str:
    """The human scores to compare with: the one named, else the test set's standard gold at the level
    (mt-metrics-eval's meta information), else ``mqm`` when present, else the only one."""
    names = [n for n, levels in found.human.items() if sel.level in levels]
    human = sel.human
    if human is None:
        gold = TestSet(Path(root), lp).standard_gold(sel.level)
        human = gold if gold in names else "mqm" if "mqm" in names else (names[0] if len(names) == 1 else None)
        if human is None and not names:
            raise InputError(f"{lp}: no {sel.level}-level human scores (human-scores/{lp}.NAME.{sel.level}.score); "
                             f"found {_human_files(found) or 'none'}", path=str(root), field="human")
        if human is None:
            raise InputError(f"{lp}: several human scores ({', '.join(names)}); pick one with --human-name",
                             path=str(root), field="human")
    if human not in found.human or sel.level not in found.human[human]:
        raise InputError(f"{lp}: no human scores '{human}' at level {sel.level} "
                         f"(found: {_human_files(found) or 'none'})", path=str(root), field="human")
    return human


@dataclass
class _Metrics:
    """Metric tables as read, the ones to negate, their system scores and the references they used."""

    tables: dict[str, readers.ScoreTable]
    negate: set[str]
    sys_scores: dict[str, dict[str, float]]
    refs_used: set[str]


def _stored_metrics(found: readers.MtmeSet, sel: MtmeSelection) -> _Metrics:
    out = _Metrics({}, set(), {}, set())
    for full, files in found.metrics.items():
        if sel.level not in files:
            continue
        base, refs = readers.metric_refs(full)
        out.refs_used |= refs
        out.tables[full] = readers.read_mtme_table(files[sel.level])
        if base in sel.lower_better or full in sel.lower_better:
            out.negate.add(full)
        if "sys" in files:
            out.sys_scores[full] = _first_scores(readers.read_mtme_score_file(files["sys"]),
                                                 -1.0 if full in out.negate else 1.0)
    return out


def _added_metrics(root: Path, lp: str, sel: MtmeSelection, metrics: _Metrics,
                   opened: readers.RunDirs | None) -> None:
    """The runs laid onto the test set and the extra metric files, added to ``metrics``."""
    n = TestSet(root, lp).segment_count() if sel.runs else 0
    for name, path in (sel.runs or {}).items():
        metrics.tables[name] = run_on_testset(path, n, opened)
        metrics.refs_used |= readers.metric_refs(name)[1]
    for name, src in (sel.extra_metrics or {}).items():
        metrics.tables[name] = src.table(opened) if isinstance(src, readers.ScoreSource) else \
            readers.read_score_table(src, sel.metric_format, opened=opened)
    bases = {**{name: readers.metric_refs(name)[0] for name in sel.runs or {}}, **(sel.base_names or {})}
    for name in [*(sel.runs or {}), *(sel.extra_metrics or {})]:
        metrics.negate.discard(name)
        if name in sel.lower_better or bases.get(name) in sel.lower_better:
            metrics.negate.add(name)


def mtme_language_pair(root: str | Path, lp: str, selection: MtmeSelection = MtmeSelection(), *,
                       opened: readers.RunDirs | None = None) -> LanguagePair:
    """One language pair of the directory at ``root``, read as ``selection`` says.

    ``human`` names the human scores (default: the test set's standard gold at the level, from
    mt-metrics-eval's meta information, when the folder is named like a known test set; else
    ``mqm`` when present, else the only one). Every metric with scores at ``level`` is read unless
    ``stored_metrics`` is off; ``.sys.score`` files, when present, give the system-level scores
    (see :class:`~polyjudge.metaeval.tasks.LanguagePair` for when they are used). ``runs`` are judge
    run directories laid onto the test set's segments (their seg_ids are its line numbers).
    ``lower_better`` names metrics (with or without the ``-REF`` suffix) to negate;
    ``extra_metrics`` adds score files or run directories by name (or
    :class:`~polyjudge.metaeval.readers.ScoreSource` objects, e.g. one aggregator of a run);
    ``base_names`` maps an extra metric to the name ``lower_better`` knows it by
    (``judge@rrwa`` -> ``judge``); ``opened`` shares run directories already read. Human
    translations (the test set's references), the references the metrics used, systems named
    ``ref*`` and mt-metrics-eval's outlier systems are left out unless ``systems.include_refs``
    (:meth:`~polyjudge.data.testsets.TestSet.compared_systems`).
    Items of the directory's files are positions; ``item_key`` (see
    :func:`~polyjudge.metaeval.readers.resolve_item_key`) must key every file alike, so
    ``doc-seg`` is refused for them.
    """
    sel, root = selection, Path(root)
    found = readers.scan_mtme(root, lp, require_metrics=sel.stored_metrics and not sel.runs)
    human = _human_name(root, found, lp, sel)
    human_table = readers.read_mtme_table(found.human[human][sel.level])
    hsys = None
    if "sys" in found.human[human]:
        hsys = _first_scores(readers.read_mtme_score_file(found.human[human]["sys"]))
    metrics = _stored_metrics(found, sel) if sel.stored_metrics else _Metrics({}, set(), {}, set())
    _added_metrics(root, lp, sel, metrics, opened)
    key = readers.resolve_item_key([human_table, *metrics.tables.values()], sel.item_key)
    h = human_table.matrix(key)
    if sel.human_lower_better:
        h = h.negated()
        if hsys:
            hsys = {s: -v for s, v in hsys.items()}
    tables = {name: t.matrix(key).negated() if name in metrics.negate else t.matrix(key)
              for name, t in metrics.tables.items()}
    kept = set(TestSet(root, lp).compared_systems(sel.systems, h.systems, metrics.refs_used))
    drop = {s for s in h.systems if s not in kept}
    return LanguagePair(lp, h, tables, human_sys=hsys, metric_sys=metrics.sys_scores, exclude_systems=sorted(drop),
                        missing_metric=sel.missing_metric)


__all__ = ["MtmeSelection", "human_systems", "mtme_language_pair", "outlier_systems", "parse_metric_spec",
           "run_metric_names", "run_on_testset", "segment_count", "standard_gold"]
