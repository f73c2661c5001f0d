"""Typed results of the pairwise study (``polyjudge pairwise``), as the report renders them.

:meth:`polyjudge.studies.pairwise.PairwiseResult.results` gives them from a
study run in this process, :func:`read_pairwise` from the ``pairwise.json`` it
wrote (the writer, :meth:`~polyjudge.studies.pairwise.PairwiseResult.to_json`,
is unchanged); both go through one constructor, so the report is the same
either way. The report adds the verdict shares of ``pairwise.tsv`` and a note
when the file does not match its run (:func:`dataclasses.replace`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from polyjudge.data.jsondoc import JsonDoc
from polyjudge.data.readers import json_type

Number = float | int | None

# What a pairwise study file may look like, for the message when it does not.
EXPECTED = ('the pairwise.json of "polyjudge pairwise" ({"ranking": [{"system", "score", "ci_low", '
            '"ci_high"}, ...], "position": {...}})')

RANK_NUMBERS = ("score", "ci_low", "ci_high", "win_rate", "comparisons", "human")


@dataclass(frozen=True, slots=True)
class RankedSystem:
    """One system's row of the Bradley–Terry ranking (best first): log-strength with its interval,
    win rate and comparisons; ``human`` is the human score a file may give (None: not given)."""

    system: str
    score: float
    ci_low: float
    ci_high: float
    win_rate: float
    comparisons: Number
    human: float | None = None


@dataclass(frozen=True, slots=True)
class PairwiseAgreement:
    """The ranking against human system scores."""

    source: str
    systems: Number
    pairwise_accuracy: float
    pearson: float
    kendall: float


@dataclass(frozen=True, slots=True)
class PairwiseRows:
    """What the report shows of a pairwise study. ``position``: the position-bias statistics
    (``pairs``, ``a_share``, ``p_value``, ...) as written; ``verdict_shares``: per verdict (A, B, tie)
    its share over all verdicts and over those of consistent and inconsistent pairs (from
    ``pairwise.tsv``); ``failures``: failed judgments per judge; ``note``: a caveat to print first."""

    ranking: tuple[RankedSystem, ...] = ()
    position: tuple[tuple[str, Number], ...] = ()
    judges: tuple[str, ...] = ()
    level: float = math.nan
    n_boot: Number = None
    ties: str = ""
    n_segments: Number = None
    n_pairs: Number = None
    unranked: tuple[str, ...] = ()
    agreement: PairwiseAgreement | None = None
    failures: tuple[tuple[str, Number], ...] = ()
    verdict_shares: tuple[tuple[str, tuple[float, ...]], ...] = ()
    note: str = ""

    def at(self, key: str) -> Number:
        """A position-bias statistic (None when not recorded)."""
        return dict(self.position).get(key)


class _Doc(JsonDoc):
    """A pairwise study's document read with checks (see :class:`polyjudge.data.jsondoc.JsonDoc`)."""

    def __init__(self, path: str) -> None:
        super().__init__(path, EXPECTED)

    def numbers_of(self, v: Any, where: str) -> tuple[tuple[str, Number], ...]:
        if v is None:
            return ()
        return tuple((str(k), self.number(x, f"{where}.{k}")) for k, x in self.obj(v, where).items())



def _float(x: Number) -> float:
    return math.nan if x is None else float(x)


def _ranking(doc: _Doc, v: Any) -> tuple[RankedSystem, ...]:
    if not isinstance(v, list):
        raise doc.fail("ranking", f"must be a list, got {json_type(v)}")
    out = []
    for i, x in enumerate(v):
        r = doc.obj(x, f"ranking[{i}]")
        if not isinstance(r.get("system"), str):
            raise doc.fail(f"ranking[{i}].system", "must be a string")
        n = {k: doc.number(r.get(k), f"ranking[{i}].{k}") for k in RANK_NUMBERS}
        out.append(RankedSystem(r["system"], _float(n["score"]), _float(n["ci_low"]), _float(n["ci_high"]),
                                _float(n["win_rate"]), n["comparisons"],
                                _float(n["human"]) if "human" in r else None))
    return tuple(out)


def _agreement(doc: _Doc, v: Any) -> PairwiseAgreement | None:
    if v is None:
        return None
    a = doc.obj(v, "agreement")
    systems = a.get("systems")
    # the statistics are the agreement's float fields, each a number or null in the file
    stats = {f.name: _float(doc.number(a.get(f.name), f"agreement.{f.name}"))
             for f in fields(PairwiseAgreement) if f.type == "float"}
    return PairwiseAgreement(str(a.get("source", "")),
                             systems if isinstance(systems, int | float) and not isinstance(systems, bool) else None,
                             **stats)


def _shares(doc: _Doc, v: Any) -> tuple[tuple[str, tuple[float, ...]], ...]:
    if v is None:
        return ()
    out = []
    for k, x in doc.obj(v, "verdict_shares").items():
        if not isinstance(x, list):
            raise doc.fail(f"verdict_shares.{k}", "must be a list")
        out.append((str(k), tuple(_float(doc.number(y, f"verdict_shares.{k}[{j}]")) for j, y in enumerate(x))))
    return tuple(out)


def read_pairwise(obj: Any, path: str) -> PairwiseRows:
    """The typed rows of a ``pairwise.json`` (parsed, or as
    :meth:`~polyjudge.studies.pairwise.PairwiseResult.to_dict` returns it); an InputError naming
    ``path`` and the place in the JSON when it is not one, or has no ranking and no position bias."""
    doc = _Doc(path)
    d = doc.obj(obj, "the file")
    ranking = _ranking(doc, d.get("ranking"))
    position = d.get("position")
    if not ranking and position is None:
        raise doc.fail("the file", "no ranking and no position bias")
    settings: dict[str, Any] = d["settings"] if isinstance(d.get("settings"), dict) else {}
    n_boot = settings.get("n_boot")
    return PairwiseRows(
        ranking, doc.numbers_of(position, "position"), doc.texts(settings.get("judges"), "settings.judges"),
        _float(doc.number(settings.get("level"), "settings.level")),
        n_boot if isinstance(n_boot, int | float) and not isinstance(n_boot, bool) else None,
        str(settings.get("ties", "")),
        doc.number(d.get("n_segments"), "n_segments"), doc.number(d.get("n_pairs"), "n_pairs"),
        doc.texts(d.get("unranked"), "unranked"), _agreement(doc, d.get("agreement")),
        doc.numbers_of(d.get("failures"), "failures"), _shares(doc, d.get("verdict_shares")),
        str(d.get("note") or ""))


__all__ = ["EXPECTED", "PairwiseAgreement", "PairwiseRows", "RankedSystem", "read_pairwise"]
