"""Typed judge-validation results: what the report's validation section renders as they are.

``polyjudge validate`` returns a :class:`~polyjudge.validation.selection.SelectionReport`;
its :meth:`~polyjudge.validation.selection.SelectionReport.results` are the rows
the report shows, and :func:`~polyjudge.validation.selection.read_selection`
reads the JSON ``validate --format json`` wrote back into the same report (its
:func:`~polyjudge.validation.selection.selection_json` writes the same bytes).
:func:`~polyjudge.validation.selection.read_validation` reads either that JSON
or the report's hand-written shape (``{"selection", "class_distribution",
"notes"}``, see :mod:`polyjudge.report.sections`; :func:`read_tables` here) into
:class:`ValidationResults`.

* :class:`SelectionPick`: one definition of performance, the judge it selects,
  what that costs in the target (``loss``; None: the distance to the best
  judge) and each judge's value under the definition;
* :class:`SelectionTable`: one target (decision consistency or |estimation
  bias|) at one (β, τ), with each judge's value of the target and the picks;
* :class:`ClassCount`: how many items a rater put in a score class, per case of
  human agreement (the class-distribution figure).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from polyjudge.data.jsondoc import JsonDoc as BaseJsonDoc

# What a validation file may look like, for the message when it does not.
EXPECTED = ('the JSON of "polyjudge validate --format json" ({"judges", "rows": [{"beta", "tau", '
            '"definition", "selected"}, ...]}) or {"selection": [{"target_values", "rows"}, ...]}')

Values = tuple[tuple[str, float], ...]


@dataclass(frozen=True, slots=True)
class SelectionPick:
    """The judge one definition of performance (``metric``) selects, the loss that costs in the
    table's target (None: the distance between the best judge's target value and the selected one's)
    and each judge's value under the definition (only those that have one)."""

    metric: str
    selected: str
    loss: float | None
    metric_values: Values = ()


@dataclass(frozen=True, slots=True)
class SelectionTable:
    """Which judge each definition selects, against one target (``target_values``: each judge's
    value of it, NaN when unknown; ``higher_is_better`` says which way the best lies)."""

    label: str
    target: str
    higher_is_better: bool
    target_values: Values
    picks: tuple[SelectionPick, ...]


@dataclass(frozen=True, slots=True)
class ClassCount:
    """``count`` items that ``rater`` put in score class ``cls``, in agreement case ``case`` (of ``group``)."""

    case: str
    rater: str
    cls: str
    count: int
    group: str = ""


@dataclass(frozen=True, slots=True)
class ValidationResults:
    """A judge validation as the report shows it: a key/value summary, class distributions and
    selection tables."""

    notes: tuple[tuple[str, str], ...] = ()
    class_distribution: tuple[ClassCount, ...] = ()
    selection: tuple[SelectionTable, ...] = ()


def as_float(x: Any) -> float:
    """A number as a float; anything else (None included) as NaN."""
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else math.nan


# --------------------------------------------------------------------------- reading

class JsonDoc(BaseJsonDoc):
    """A validation document read with checks (see :class:`polyjudge.data.jsondoc.JsonDoc`)."""

    def __init__(self, path: str, expected: str = EXPECTED) -> None:
        super().__init__(path, expected)

    def numbers_of(self, v: Any, where: str) -> dict[str, Any]:
        """An object whose values are numbers or null (absent: empty)."""
        if v is None:
            return {}
        return {str(k): self.number(x, f"{where}.{k}") for k, x in self.obj(v, where).items()}

    def values(self, v: Any, where: str) -> Values:
        return tuple((k, as_float(x)) for k, x in self.numbers_of(v, where).items())


def whole(doc: JsonDoc, v: Any, where: str) -> int:
    """A count or index: a whole number (absent: 0)."""
    x = doc.number(v, where)
    if x is None:
        return 0
    if isinstance(x, float) and not (math.isfinite(x) and x == int(x)):
        raise doc.fail(where, f"must be a whole number, got {x!r}")
    return int(x)


def _pick(doc: JsonDoc, r: dict[str, Any], where: str) -> SelectionPick:
    loss = doc.number(r.get("loss"), f"{where}.loss")
    return SelectionPick(str(r.get("metric", "")), str(r.get("selected", "")), None if loss is None else float(loss),
                         doc.values(r.get("metric_values"), f"{where}.metric_values"))


def _hand_tables(doc: JsonDoc, sels: Any) -> tuple[SelectionTable, ...]:
    out = []
    for i, sel in enumerate(doc.objects(sels if isinstance(sels, list) or sels is None else [sels], "selection",
                                        optional=True)):
        tv = doc.values(sel.get("target_values"), f"selection[{i}].target_values")
        picks = tuple(_pick(doc, r, f"selection[{i}].rows[{j}]")
                      for j, r in enumerate(doc.objects(sel.get("rows"), f"selection[{i}].rows")))
        out.append(SelectionTable(str(sel.get("label") or ""), str(sel.get("target", "target")),
                                  bool(sel.get("higher_is_better", True)), tv, picks))
    return tuple(out)


def _class_counts(doc: JsonDoc, v: Any) -> tuple[ClassCount, ...]:
    out = []
    for i, c in enumerate(doc.objects(v, "class_distribution", optional=True)):
        count = c.get("count")
        if isinstance(count, bool) or not isinstance(count, int | float) or not 0 <= count < 2**53:
            raise doc.fail(f"class_distribution[{i}].count", "must be a non-negative number")
        out.append(ClassCount(str(c.get("case")), str(c.get("rater")), str(c.get("class")), int(count),
                              str(c.get("group", ""))))
    return tuple(out)


def read_tables(obj: Any, path: str) -> ValidationResults:
    """The report's hand-written validation shape (``{"selection", "class_distribution", "notes"}``)
    as typed rows; an InputError naming ``path`` and the place in the JSON when it is not, or when
    it has nothing to show."""
    doc = JsonDoc(path)
    d = doc.obj(obj, "the file")
    tables, cells = _hand_tables(doc, d.get("selection")), _class_counts(doc, d.get("class_distribution"))
    notes = d.get("notes")
    if notes is not None and (not isinstance(notes, list)
                              or not all(isinstance(n, list | tuple) and len(n) == 2 for n in notes)):
        raise doc.fail("notes", "must be a list of [name, value] pairs")
    if not tables and not cells:
        raise doc.fail("the file", "no selection table and no class distribution")
    return ValidationResults(tuple((str(k), str(v)) for k, v in notes or ()), cells, tables)


__all__ = ["EXPECTED", "ClassCount", "JsonDoc", "SelectionPick", "SelectionTable", "ValidationResults", "Values",
           "as_float", "read_tables", "whole"]
