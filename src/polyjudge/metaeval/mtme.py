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
from polyjudge.metaeval import readers
from polyjudge.metaeval.tasks import LanguagePair


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


@dataclass(frozen=True)
class MtmeSelection:
    """What to read of an mt-metrics-eval directory, the same for each of its language pairs."""

    human: str | None = None
    level: str = "seg"
    exclude_systems: Collection[str] = ()
    include_refs: bool = False
    human_lower_better: bool = False
    lower_better: Collection[str] = ()
    missing_metric: str = "error"
    extra_metrics: Mapping[str, str | Path | readers.ScoreSource] | None = None
    metric_format: str = "auto"
    item_key: str = "auto"
    base_names: Mapping[str, str] | None = None


def mtme_language_pair(root: str | Path, lp: str, selection: MtmeSelection = MtmeSelection(), *,
                       opened: readers.RunDirs | None = None) -> LanguagePair:
    """One language pair of the directory at ``root``, read as ``selection`` says.

    ``human`` names the human scores (default ``mqm`` when present, else the only
    one). Every metric with scores at ``level`` is read; ``.sys.score`` files,
    when present, give the system-level scores (see
    :class:`~polyjudge.metaeval.tasks.LanguagePair` for when they are used).
    ``lower_better`` names metrics (with or without the ``-REF`` suffix) to
    negate; ``extra_metrics`` adds score files or run directories by name (or
    :class:`~polyjudge.metaeval.readers.ScoreSource` objects, e.g. one
    aggregator of a run); ``base_names`` maps an extra metric to the name
    ``lower_better`` knows it by (``judge@rrwa`` -> ``judge``); ``opened``
    shares run directories already read.
    Items of the directory's files are positions; ``item_key`` (see
    :func:`~polyjudge.metaeval.readers.resolve_item_key`) must key every file
    alike, so ``doc-seg`` is refused for them.
    """
    sel = selection
    human, level, lower_better, base_names = sel.human, sel.level, sel.lower_better, sel.base_names
    found = readers.scan_mtme(root, lp)
    names = [n for n, levels in found.human.items() if level in levels]
    if human is None:
        human = "mqm" if "mqm" in names else (names[0] if len(names) == 1 else None)
        if human is None:
            raise InputError(f"{lp}: several human scores ({', '.join(names)}); pick one with --human",
                             path=str(root), field="human")
    if human not in found.human or level not in found.human[human]:
        raise InputError(f"{lp}: no human scores '{human}' at level {level} "
                         f"(found: {', '.join(names) or 'none'})", path=str(root), field="human")
    human_table = readers.read_mtme_table(found.human[human][level])
    tables: dict[str, readers.ScoreTable] = {}
    hsys = None
    if "sys" in found.human[human]:
        hsys = _first_scores(readers.read_mtme_score_file(found.human[human]["sys"]))
    msys: dict[str, dict[str, float]] = {}
    negate: set[str] = set()
    refs_used: set[str] = set()
    for full, files in found.metrics.items():
        if level not in files:
            continue
        base, refs = readers.metric_refs(full)
        refs_used |= refs
        tables[full] = readers.read_mtme_table(files[level])
        if base in lower_better or full in lower_better:
            negate.add(full)
        if "sys" in files:
            msys[full] = _first_scores(readers.read_mtme_score_file(files["sys"]), -1.0 if full in negate else 1.0)
    for name, src in (sel.extra_metrics or {}).items():
        tables[name] = src.table(opened) if isinstance(src, readers.ScoreSource) else readers.read_score_table(
            src, sel.metric_format, opened=opened)
        negate.discard(name)
        if name in lower_better or (base_names or {}).get(name) in lower_better:
            negate.add(name)
    key = readers.resolve_item_key([human_table, *tables.values()], sel.item_key)
    h = human_table.matrix(key)
    if sel.human_lower_better:
        h = h.negated()
        if hsys:
            hsys = {s: -v for s, v in hsys.items()}
    metrics = {name: t.matrix(key).negated() if name in negate else t.matrix(key) for name, t in tables.items()}
    drop = set(sel.exclude_systems)
    if not sel.include_refs:
        drop |= {s for s in h.systems if s in refs_used or s.startswith("ref")}
    return LanguagePair(lp, h, metrics, human_sys=hsys, metric_sys=msys, exclude_systems=sorted(drop),
                        missing_metric=sel.missing_metric)


__all__ = ["MtmeSelection", "mtme_language_pair", "parse_metric_spec"]
