"""Typed meta-evaluation results: the rows meta-eval computes, its JSON holds and the report renders.

One contract, as for a run directory: :meth:`MetaEvalResults.to_json` is the
document ``polyjudge meta-eval --format json`` writes (unchanged since 0.1),
:func:`read_metaeval` reads such a document back into the same rows (and the
report's older hand-written shape, ``{"results": [...], "ranking": [...],
"preset"}`` or a bare list of results), and the report's meta-evaluation
section takes :class:`MetaEvalResults` as it is, whether it was computed in
this process or read from a file.

* :class:`MetaEvalCell`: one statistic of one metric on one language pair (a
  task column of the ranking table, with its rank and significance cluster, or
  a per-LP statistic);
* :class:`MetaEvalRank`: one metric's row of the ranking table (its weighted
  average, position and cluster) with its task columns;
* :class:`MetaEvalStats`: one metric's per-LP statistics and counts, as the
  per-LP table prints them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from polyjudge.data.jsondoc import JsonDoc as BaseJsonDoc
from polyjudge.data.numbers import undefined_to_none
from polyjudge.data.readers import json_type
from polyjudge.metaeval.statistics import COLUMNS, STATISTICS, Level, statistic_titles

Number = float | int | None

# What a meta-evaluation file may look like, for the message when it does not.
EXPECTED = ('the JSON of "polyjudge meta-eval --format json" ({"ranking": [...], "language_pairs": {...}}) or '
            '{"results": [{"metric", "lp", "level", "statistic", "value"}, ...]}')


@dataclass(frozen=True, slots=True)
class MetaEvalCell:
    """One statistic of one metric on one language pair (``all`` for a task pooling several) at one level.

    ``statistic`` is the registered statistic's name (a per-LP column's key for
    per-LP statistics, or the label a hand-written results file gives);
    ``title`` is how tables and the report head it. ``rank`` (position in the
    task column), ``cluster`` (significance cluster, 1 = top) and ``weight``
    are set for the ranking table's task columns only; ``ci`` when a results
    file gives an interval.
    """

    metric: str
    lp: str
    level: str
    statistic: str
    title: str
    value: Number
    rank: int | None = None
    cluster: int | None = None
    weight: float | None = None
    ci: tuple[float, float] | None = None

    def column(self) -> dict[str, Any]:
        """This task column as a ranking row of meta-eval's JSON holds it."""
        return {"lp": self.lp, "level": self.level, "statistic": self.statistic, "weight": self.weight,
                "value": self.value, "rank": self.rank, "cluster": self.cluster}


@dataclass(frozen=True, slots=True)
class MetaEvalRank:
    """One metric's row of the ranking table: position, significance cluster, weighted average
    (None without a task preset) and its task columns."""

    metric: str
    rank: int | None
    cluster: int | None
    average: Number
    columns: tuple[MetaEvalCell, ...] = ()


@dataclass(frozen=True, slots=True)
class PerLpColumn:
    """A per-LP statistic: the key it is stored under, the registered statistic, its level and title."""

    key: str
    statistic: str
    level: Level
    title: str


def standard_columns() -> tuple[PerLpColumn, ...]:
    """The standard per-LP statistics that have a report title (shown when there is no task preset)."""
    return tuple(PerLpColumn(c.key, c.statistic, c.level, c.title) for c in COLUMNS if c.title is not None)


def registered_columns() -> tuple[PerLpColumn, ...]:
    """Every registered statistic's per-LP column (plugins' included), shown whatever the preset."""
    return tuple(PerLpColumn(stat.column(level), name, level, stat.title) for name, stat in STATISTICS.items()
                 if stat.per_lp_column for level in stat.levels)


@dataclass(frozen=True, slots=True)
class MetaEvalStats:
    """One metric's statistics and counts on one language pair (``values``: key -> value, in the
    per-LP table's order; None where not applicable)."""

    lp: str
    metric: str
    values: tuple[tuple[str, Number], ...]

    def get(self, key: str) -> Number:
        return dict(self.values).get(key)

    def as_dict(self) -> dict[str, Number]:
        return dict(self.values)

    def cells(self, columns: Iterable[PerLpColumn]) -> list[MetaEvalCell]:
        """The cells of ``columns`` this row holds, in the columns' order."""
        got = dict(self.values)
        return [MetaEvalCell(self.metric, self.lp, c.level, c.key, c.title, got[c.key])
                for c in columns if c.key in got]


@dataclass(frozen=True, slots=True)
class MetaEvalResults:
    """A meta-evaluation: the ranking table (``ranking``, in rank order), the per-LP statistics
    (``per_lp``) and those of system-level-only metrics (``system_level_only``), with the preset,
    permutation draws, seed and the tables' caveats (``notes``; None when not recorded).
    ``given`` holds the cells of a hand-written results file (the report's older input shape)."""

    preset: str | None
    permutations: int | None = None
    seed: int | None = None
    ranking: tuple[MetaEvalRank, ...] = ()
    per_lp: tuple[MetaEvalStats, ...] = ()
    system_level_only: tuple[MetaEvalStats, ...] = ()
    notes: tuple[str, ...] | None = None
    given: tuple[MetaEvalCell, ...] = ()

    def task_cells(self) -> list[MetaEvalCell]:
        """Every task column of every ranking row, in rank order."""
        return [c for r in self.ranking for c in r.columns]

    def cells(self) -> list[MetaEvalCell]:
        """The cells the tables show: a results file's own, else the task columns (rank order) then
        each LP's per-LP statistics with a title (the standard ones only without task columns;
        registered statistics' always), LP by LP and metric by metric."""
        if self.given:
            return list(self.given)
        tasks = self.task_cells()
        columns = registered_columns() if tasks else standard_columns() + registered_columns()
        return tasks + [c for row in self.per_lp for c in row.cells(columns)]

    def averaged(self) -> list[MetaEvalRank]:
        """The ranking rows with an average (a results file's rows all), in rank order."""
        return list(self.ranking) if self.given else [r for r in self.ranking if r.average is not None]

    def to_json(self) -> dict[str, Any]:
        """The document ``polyjudge meta-eval --format json`` writes; an undefined statistic (NaN) is ``null``."""
        out: dict[str, Any] = {"task": self.preset, "permutations": self.permutations, "seed": self.seed,
                               "language_pairs": _nested(self.per_lp),
                               "ranking": [{"metric": r.metric, "rank": r.rank, "cluster": r.cluster,
                                            "average": r.average, "columns": [c.column() for c in r.columns]}
                                           for r in self.ranking]}
        if self.notes is not None:
            out["notes"] = list(self.notes)
        if self.system_level_only:
            out["system_level_only"] = _nested(self.system_level_only)
        if self.given:
            out["results"] = [{"metric": c.metric, "lp": c.lp, "level": c.level, "statistic": c.statistic,
                               "value": c.value, **({"ci": list(c.ci)} if c.ci is not None else {}),
                               **({"rank": c.rank} if c.rank is not None else {}),
                               **({"cluster": c.cluster} if c.cluster is not None else {})} for c in self.given]
        cleaned: dict[str, Any] = undefined_to_none(out)
        return cleaned


def _nested(rows: Sequence[MetaEvalStats]) -> dict[str, dict[str, dict[str, Number]]]:
    out: dict[str, dict[str, dict[str, Number]]] = {}
    for row in rows:
        out.setdefault(row.lp, {})[row.metric] = row.as_dict()
    return out


def stats_rows(by_lp: Mapping[str, Mapping[str, Mapping[str, Number]]]) -> tuple[MetaEvalStats, ...]:
    """``lp -> metric -> key -> value`` as rows, in the mapping's order."""
    return tuple(MetaEvalStats(lp, metric, tuple(values.items()))
                 for lp, by_metric in by_lp.items() for metric, values in by_metric.items())


def task_cell(metric: str, lp: str, level: str, statistic: str, value: Number, *, rank: int | None,
              cluster: int | None, weight: float | None) -> MetaEvalCell:
    """A ranking-table cell; its title is the registered statistic's (else its name)."""
    return MetaEvalCell(metric, lp, level, statistic, statistic_titles().get(statistic, statistic), value,
                        rank, cluster, weight)


# --------------------------------------------------------------------------- reading

class JsonDoc(BaseJsonDoc):
    """A meta-evaluation document read with checks (see :class:`polyjudge.data.jsondoc.JsonDoc`)."""

    def __init__(self, path: str, expected: str = EXPECTED) -> None:
        super().__init__(path, expected)

    def objects(self, v: Any, where: str, *, optional: bool = True) -> list[dict[str, Any]]:
        """A list of objects (when optional, absent or null is empty)."""
        return super().objects(v, where, optional=optional)

    def whole(self, v: Any, where: str) -> int | None:
        """A rank or cluster: a whole number (1.0 reads as 1), or null."""
        x = self.number(v, where)
        if x is None:
            return None
        if isinstance(x, float) and not (math.isfinite(x) and x == int(x)):
            raise self.fail(where, f"must be a whole number, got {x!r}")
        return int(x)

    def text(self, v: Any, where: str, default: str) -> str:
        if v is None:
            return default
        if isinstance(v, dict | list):
            raise self.fail(where, f"must be a string, got {json_type(v)}")
        return str(v)

    def values(self, v: Any, where: str) -> tuple[tuple[str, Number], ...]:
        return tuple((str(k), self.number(x, f"{where}.{k}")) for k, x in self.obj(v, where).items())


def _stats(doc: JsonDoc, v: Any, where: str) -> tuple[MetaEvalStats, ...]:
    if v is None:
        return ()
    return tuple(MetaEvalStats(str(lp), str(metric), doc.values(st, f"{where}.{lp}.{metric}"))
                 for lp, by_metric in doc.obj(v, where).items()
                 for metric, st in doc.obj(by_metric, f"{where}.{lp}").items())


def _ranking(doc: JsonDoc, v: Any) -> tuple[MetaEvalRank, ...]:
    rows = []
    for i, row in enumerate(doc.objects(v, "ranking")):
        where = f"ranking[{i}]"
        metric = doc.text(row.get("metric"), f"{where}.metric", "?")
        cells = tuple(task_cell(metric, doc.text(c.get("lp"), f"{where}.columns[{j}].lp", "None"),
                                doc.text(c.get("level"), f"{where}.columns[{j}].level", ""),
                                doc.text(c.get("statistic"), f"{where}.columns[{j}].statistic", "None"),
                                doc.number(c.get("value"), f"{where}.columns[{j}].value"),
                                rank=doc.whole(c.get("rank"), f"{where}.columns[{j}].rank"),
                                cluster=doc.whole(c.get("cluster"), f"{where}.columns[{j}].cluster"),
                                weight=_float(doc.number(c.get("weight"), f"{where}.columns[{j}].weight")))
                      for j, c in enumerate(doc.objects(row.get("columns"), f"{where}.columns")))
        rows.append(MetaEvalRank(metric, doc.whole(row.get("rank"), f"{where}.rank"),
                                 doc.whole(row.get("cluster"), f"{where}.cluster"),
                                 doc.number(row.get("average"), f"{where}.average"), cells))
    return tuple(rows)


def _float(x: Number) -> float | None:
    return None if x is None else float(x)


def _given(doc: JsonDoc, v: Any) -> tuple[MetaEvalCell, ...]:
    """The cells of the hand-written shape, labels as given."""
    cells = []
    for i, r in enumerate(doc.objects(v, "results", optional=False)):
        where = f"results[{i}]"
        ci = r.get("ci")
        interval = None
        if ci is not None:
            if not isinstance(ci, list) or len(ci) != 2:
                raise doc.fail(f"{where}.ci", "must be [low, high]")
            lo, hi = doc.number(ci[0], f"{where}.ci[0]"), doc.number(ci[1], f"{where}.ci[1]")
            interval = (math.nan if lo is None else float(lo), math.nan if hi is None else float(hi))
        stat = doc.text(r.get("statistic"), f"{where}.statistic", "value")
        cells.append(MetaEvalCell(doc.text(r.get("metric", r.get("judge")), f"{where}.metric", "?"),
                                  doc.text(r.get("lp"), f"{where}.lp", "all"),
                                  doc.text(r.get("level"), f"{where}.level", ""), stat, stat,
                                  doc.number(r.get("value"), f"{where}.value"),
                                  doc.whole(r.get("rank"), f"{where}.rank"),
                                  doc.whole(r.get("cluster"), f"{where}.cluster"), ci=interval))
    return tuple(cells)


def read_metaeval(obj: Any, path: str) -> MetaEvalResults:
    """The results in a parsed meta-evaluation document (meta-eval's JSON, or the report's older
    ``{"results": [...]}`` shape or bare list). A document of neither shape, or one with nothing to
    show, is an InputError naming ``path``, the place in the JSON and the shape expected."""
    doc = JsonDoc(path)
    if isinstance(obj, list) or (isinstance(obj, dict) and "results" in obj):
        body = {"results": obj} if isinstance(obj, list) else obj
        given = _given(doc, body.get("results"))
        if not given:
            raise doc.fail("results", "no meta-evaluation results")
        preset = body.get("preset")
        return MetaEvalResults(preset=str(preset) if preset else None, ranking=_ranking(doc, body.get("ranking")),
                               given=given)
    body = doc.obj(obj, "the file")
    if not isinstance(body.get("ranking"), list) and not isinstance(body.get("language_pairs"), dict):
        raise doc.fail("results", "must be a list, got null")
    notes = body.get("notes")
    res = MetaEvalResults(
        preset=str(body["task"]) if body.get("task") is not None else None,
        permutations=doc.whole(body.get("permutations"), "permutations"), seed=doc.whole(body.get("seed"), "seed"),
        ranking=_ranking(doc, body.get("ranking")), per_lp=_stats(doc, body.get("language_pairs"), "language_pairs"),
        system_level_only=_stats(doc, body.get("system_level_only"), "system_level_only"),
        notes=tuple(str(n) for n in notes) if isinstance(notes, list) else None)
    if not res.cells():
        raise doc.fail("results", "no meta-evaluation results")
    return res


__all__ = ["EXPECTED", "JsonDoc", "MetaEvalCell", "MetaEvalRank", "MetaEvalResults", "MetaEvalStats", "PerLpColumn",
           "read_metaeval", "registered_columns", "standard_columns", "stats_rows", "task_cell"]
