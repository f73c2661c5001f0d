"""Typed agreement results of a consistency study: each judge's Cohen's κ with the reference language
and its Fleiss κ across languages, as the report renders them.

:func:`consistency_kappas` takes the study's rows computed in this process;
:func:`read_consistency` reads the same rows back from the ``study.json`` that
``polyjudge consistency`` writes (or the report's older hand-written shape
``{"reference", "results": [...], "fleiss": [...]}``); both build the rows
through :func:`_kappas`, so the report shows the same tables either way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from polyjudge.metaeval.ratings.consistency import ConsistencyRow
from polyjudge.metaeval.results import JsonDoc, Number

EXPECTED = ('the study.json of "polyjudge consistency" ({"reference", "rows": [{"judge", "per_language": {...}}, '
            '...]}) or {"results": [{"judge", "language", "kappa"}, ...]}')


@dataclass(frozen=True, slots=True)
class ReferenceKappa:
    """Cohen's κ between a judge's verdicts in the reference language and in ``language``."""

    judge: str
    language: str
    kappa: Number
    task: str = ""
    criterion: str = ""


@dataclass(frozen=True, slots=True)
class FleissKappa:
    """A judge's Fleiss κ across every language on one subset of the answers (``all``, ``gold``, ...)."""

    judge: str
    task: str
    criterion: str
    subset: str
    kappa: Number
    n_complete: Number = None
    accuracy: Number = None


@dataclass(frozen=True, slots=True)
class FactorTable:
    """One of Fu & Liu's factor tables (``key`` as in study.json's ``factors``), cells as written."""

    key: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]


@dataclass(frozen=True, slots=True)
class ConsistencyKappas:
    """The agreement tables of a consistency study: κ with ``reference`` per language (rows over all
    answers), Fleiss κ of every row, and the factor tables."""

    reference: str
    cohen: tuple[ReferenceKappa, ...]
    fleiss: tuple[FleissKappa, ...] = ()
    factors: tuple[FactorTable, ...] = ()


@dataclass(frozen=True, slots=True)
class _Row:
    """What the tables need of one study row."""

    judge: str
    task: str
    criterion: str
    subset: str
    languages: tuple[str, ...]
    cohen: Mapping[str, Number]
    fleiss: Number
    n_complete: Number
    accuracy: Number


def _kappas(reference: str, rows: Sequence[_Row], factors: Mapping[str, Any] | None) -> ConsistencyKappas:
    cohen = tuple(ReferenceKappa(r.judge, lang, r.cohen[lang], r.task, r.criterion) for r in rows
                  if r.subset == "all" for lang in r.languages if lang != reference and lang in r.cohen)
    fleiss = tuple(FleissKappa(r.judge, r.task, r.criterion, r.subset, r.fleiss, r.n_complete, r.accuracy)
                   for r in rows)
    return ConsistencyKappas(reference, cohen, fleiss, _factor_tables(factors))


def _factor_tables(factors: Mapping[str, Any] | None) -> tuple[FactorTable, ...]:
    tables = []
    for key, rows in (factors or {}).items():
        dicts = [r for r in rows or () if isinstance(r, dict)] if isinstance(rows, list) else []
        if dicts:
            cols = tuple(str(c) for c in dicts[0])
            tables.append(FactorTable(str(key), cols, tuple(tuple(r.get(c) for c in dicts[0]) for r in dicts)))
    return tuple(tables)


def consistency_kappas(rows: Sequence[ConsistencyRow], reference: str,
                       factors: Mapping[str, Any] | None = None) -> ConsistencyKappas:
    """The agreement tables of a study's rows (``factors``: the factor tables as study.json holds them)."""
    return _kappas(reference, [
        _Row(r.judge, r.task, r.criterion, r.subset, tuple(r.languages or r.per_language),
             {lang: st.cohen_vs_ref for lang, st in r.per_language.items()}, r.fleiss_kappa, r.n_complete,
             r.accuracy) for r in rows], factors)


def _study_rows(doc: JsonDoc, obj: dict[str, Any]) -> list[_Row]:
    rows = []
    for i, row in enumerate(doc.objects(obj["rows"], "rows", optional=False)):
        where = f"rows[{i}]"
        numbers = {k: doc.number(row.get(k), f"{where}.{k}") for k in ("fleiss_kappa", "n_complete", "accuracy")}
        langs = row.get("languages")
        if langs is not None and (not isinstance(langs, list) or not all(isinstance(x, str) for x in langs)):
            raise doc.fail(f"{where}.languages", "must be a list of strings")
        per = row.get("per_language")
        per = doc.obj(per, f"{where}.per_language") if per is not None else {}
        cohen = {str(lang): doc.number(st.get("cohen_vs_ref"), f"{where}.per_language.{lang}.cohen_vs_ref")
                 for lang, st in per.items() if isinstance(st, dict)}
        rows.append(_Row(str(row.get("judge")), str(row.get("task", "")), str(row.get("criterion", "")),
                         str(row.get("subset", "all")), tuple(langs or per), cohen, numbers["fleiss_kappa"],
                         numbers["n_complete"], numbers["accuracy"]))
    return rows


def _given(doc: JsonDoc, obj: dict[str, Any]) -> ConsistencyKappas:
    """The older hand-written shape, rows as given."""
    cohen = tuple(ReferenceKappa(doc.text(r.get("judge"), f"results[{i}].judge", "judge"),
                                 doc.text(r.get("language"), f"results[{i}].language", "None"),
                                 doc.number(r.get("kappa"), f"results[{i}].kappa"),
                                 doc.text(r.get("task"), f"results[{i}].task", ""),
                                 doc.text(r.get("criterion"), f"results[{i}].criterion", ""))
                  for i, r in enumerate(doc.objects(obj.get("results"), "results", optional=False)))
    fleiss = tuple(FleissKappa(doc.text(r.get("judge"), f"fleiss[{i}].judge", ""),
                               doc.text(r.get("task"), f"fleiss[{i}].task", ""),
                               doc.text(r.get("criterion"), f"fleiss[{i}].criterion", ""),
                               doc.text(r.get("subset"), f"fleiss[{i}].subset", "all"),
                               doc.number(r.get("kappa"), f"fleiss[{i}].kappa"))
                   for i, r in enumerate(doc.objects(obj.get("fleiss"), "fleiss")))
    factors = obj.get("factors")
    return ConsistencyKappas(str(obj.get("reference", "en")), cohen, fleiss,
                             _factor_tables(factors if isinstance(factors, dict) else None))


def is_study(obj: Any) -> bool:
    """True for the ``study.json`` that ``polyjudge consistency`` writes (``rows`` with ``per_language``)."""
    return (isinstance(obj, dict) and "results" not in obj and isinstance(obj.get("rows"), list)
            and any(isinstance(r, dict) and "per_language" in r for r in obj["rows"]))


def read_consistency(obj: Any, path: str) -> ConsistencyKappas:
    """The agreement tables in a parsed consistency document; one of another shape, or without a
    κ with the reference language, is an InputError naming ``path``, the place in the JSON and the
    shape expected."""
    doc = JsonDoc(path, EXPECTED)
    if is_study(obj):
        factors = obj.get("factors")
        res = _kappas(str(obj.get("reference", "en")), _study_rows(doc, obj),
                      factors if isinstance(factors, dict) else None)
    else:
        res = _given(doc, doc.obj(obj, "the file"))
    if not res.cohen:
        raise doc.fail("results", "no Cohen's kappa against the reference language")
    return res


__all__ = ["ConsistencyKappas", "FactorTable", "FleissKappa", "ReferenceKappa", "consistency_kappas", "is_study",
           "read_consistency"]
