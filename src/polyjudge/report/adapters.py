"""Read the study outputs the report shows, as the study commands really write them.

A meta-evaluation is read into its typed results
(:func:`polyjudge.metaeval.results.read_metaeval`, the reader of the JSON
``polyjudge meta-eval --format json`` writes), which the report renders as
they are. The consistency study's ``study.json`` and ``polyjudge validate --format
json`` are read into their typed rows likewise
(:func:`polyjudge.metaeval.kappas.read_consistency`,
:func:`polyjudge.validation.selection.read_validation`), and so is ``polyjudge
simulate --format json``
(:func:`polyjudge.validation.simulation_results.read_simulation`); the pairwise
study's output is checked here and rendered as written.
:func:`check_study` refuses a file of no known shape (or with nothing to show)
with an InputError naming the file and the shape expected, so a wrong file
never just disappears from the report.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from polyjudge.data import textio
from polyjudge.data.errors import InputError
from polyjudge.data.readers import json_type, parse_json, plain
from polyjudge.metaeval.kappas import EXPECTED as CONSISTENCY_EXPECTED
from polyjudge.metaeval.kappas import read_consistency
from polyjudge.metaeval.results import EXPECTED as METAEVAL_EXPECTED
from polyjudge.metaeval.results import read_metaeval
from polyjudge.validation.results import EXPECTED as VALIDATION_EXPECTED
from polyjudge.validation.selection import read_validation
from polyjudge.validation.simulation_results import EXPECTED as SIMULATION_EXPECTED
from polyjudge.validation.simulation_results import read_simulation

# --------------------------------------------------------------------------- shape checks

# What each study file may look like, for the message when it does not.
EXPECTED = {
    "metaeval.json": METAEVAL_EXPECTED,
    "consistency.json": CONSISTENCY_EXPECTED,
    "validation.json": VALIDATION_EXPECTED,
    "simulation.json": SIMULATION_EXPECTED,
    "pairwise.json": 'the pairwise.json of "polyjudge pairwise" ({"ranking": [{"system", "score", "ci_low", '
                     '"ci_high"}, ...], "position": {...}})',
}


class _Shape:
    """Checks one study file's JSON; the first mismatch is an InputError naming the file,
    where in the JSON it is, and the shape the file should have."""

    def __init__(self, path: str, kind: str) -> None:
        self.path, self.kind = path, kind

    def fail(self, where: str, detail: str) -> InputError:
        return InputError(f"{plain(where, 160)}: {detail}; expected {EXPECTED[self.kind]}", path=self.path)

    def obj(self, v: Any, where: str) -> dict[str, Any]:
        if not isinstance(v, dict):
            raise self.fail(where, f"must be an object, got {json_type(v)}")
        return v

    def objects(self, v: Any, where: str, *, optional: bool = False) -> list[dict[str, Any]]:
        """A list of objects (None when optional and absent)."""
        if v is None and optional:
            return []
        if not isinstance(v, list):
            raise self.fail(where, f"must be a list, got {json_type(v)}")
        return [self.obj(x, f"{where}[{i}]") for i, x in enumerate(v)]

    def texts(self, v: Any, where: str) -> None:
        if v is not None and (not isinstance(v, list) or not all(isinstance(x, str) for x in v)):
            raise self.fail(where, "must be a list of strings")

    def number(self, v: Any, where: str) -> None:
        """A JSON number that fits a float, or null."""
        if v is None:
            return
        ok = isinstance(v, int | float) and not isinstance(v, bool)
        if ok and isinstance(v, int):
            try:
                float(v)
            except OverflowError:
                ok = False
        if not ok:
            raise self.fail(where, f"must be a number or null, got {json_type(v)}")

    def numbers(self, d: dict[str, Any], keys: tuple[str, ...], where: str) -> None:
        for key in keys:
            self.number(d.get(key), f"{where}.{key}")

    def numbers_of(self, v: Any, where: str) -> None:
        """An object whose values are numbers or null (absent is fine)."""
        if v is not None:
            for k, x in self.obj(v, where).items():
                self.number(x, f"{where}.{k}")


def _check_pairwise(obj: Any, shape: _Shape) -> None:
    doc = shape.obj(obj, "the file")
    ranking = shape.objects(doc.get("ranking"), "ranking")
    for i, r in enumerate(ranking):
        if not isinstance(r.get("system"), str):
            raise shape.fail(f"ranking[{i}].system", "must be a string")
        shape.numbers(r, ("score", "ci_low", "ci_high", "win_rate", "comparisons", "human"), f"ranking[{i}]")
    shape.numbers_of(doc.get("position"), "position")
    shape.numbers_of(doc.get("failures"), "failures")
    agreement = doc.get("agreement")
    if agreement is not None:
        shape.numbers(shape.obj(agreement, "agreement"), ("pairwise_accuracy", "pearson", "kendall"), "agreement")
    shares = doc.get("verdict_shares")
    if shares is not None:
        for k, v in shape.obj(shares, "verdict_shares").items():
            if not isinstance(v, list):
                raise shape.fail(f"verdict_shares.{k}", "must be a list")
            for j, x in enumerate(v):
                shape.number(x, f"verdict_shares.{k}[{j}]")
    if not ranking and doc.get("position") is None:
        raise shape.fail("the file", "no ranking and no position bias")


_CHECKS = {"pairwise.json": _check_pairwise}


# --------------------------------------------------------------------------- pairwise

VERDICT_GROUPS = ("all verdicts", "consistent pairs", "inconsistent pairs")


def pairwise_verdict_shares(rows: list[dict[str, str]]) -> dict[str, list[float]]:
    """Share of A, B and tie verdicts over all verdicts, over those of consistent pairs and
    over those of position-inconsistent pairs, from the rows of ``pairwise.tsv``
    (``verdict_ab``, ``verdict_ba``: the verdict in each order, empty when missing;
    ``outcome``). NaN for a group without verdicts."""
    from polyjudge.analysis.pairwise import INCONSISTENT, MISSING

    counts = {g: {"A": 0, "B": 0, "tie": 0} for g in VERDICT_GROUPS}
    for row in rows:
        verdicts = [v for v in (row.get("verdict_ab"), row.get("verdict_ba")) if v in ("A", "B", "tie")]
        outcome = row.get("outcome")
        groups = [VERDICT_GROUPS[0]]
        if outcome != MISSING:
            groups.append(VERDICT_GROUPS[2] if outcome == INCONSISTENT else VERDICT_GROUPS[1])
        for g in groups:
            for v in verdicts:
                counts[g][v] += 1
    return {v: [counts[g][v] / n if (n := sum(counts[g].values())) else math.nan for g in VERDICT_GROUPS]
            for v in ("A", "B", "tie")}


def check_study(obj: Any, kind: str, path: str) -> Any:
    """What the report renders of ``obj`` for ``kind`` (one of :data:`STUDY_FILES`): the typed
    :class:`~polyjudge.metaeval.results.MetaEvalResults` of a meta-evaluation, ``obj`` itself for the
    others, when it has a shape the report reads; otherwise an InputError naming ``path``, the place
    in the JSON and the shape expected, so a wrong file is never silently left out of the report."""
    if kind == "metaeval.json":
        return read_metaeval(obj, path)
    if kind == "consistency.json":
        return read_consistency(obj, path)
    if kind == "validation.json":
        return read_validation(obj, path)
    if kind == "simulation.json":
        return read_simulation(obj, path)
    _CHECKS[kind](obj, _Shape(path, kind))
    return obj


# --------------------------------------------------------------------------- files

STUDY_FILES = ("metaeval.json", "consistency.json", "validation.json", "simulation.json", "pairwise.json")


def read_study(path: str | Path, kind: str) -> Any:
    """Parsed JSON of one study output given on the command line, checked by :func:`check_study`.

    ``kind`` is one of :data:`STUDY_FILES`; for ``consistency.json`` a
    directory means the ``--out`` folder of ``polyjudge consistency`` (its
    ``study.json``, else a ``consistency.json`` in it).
    """
    p = Path(path)
    if p.is_dir():
        if kind != "consistency.json":
            raise InputError("expected a file, got a directory", path=str(p))
        for name in ("study.json", "consistency.json"):
            if (p / name).is_file():
                p = p / name
                break
        else:
            raise InputError("no study.json in this folder (the --out of polyjudge consistency)", path=str(p))
    return check_study(parse_json(textio.read_text(p), path=str(p)), kind, str(p))
