"""Read the study outputs the report shows, as the study commands really write them.

A meta-evaluation is read into its typed results
(:func:`polyjudge.metaeval.results.read_metaeval`, the reader of the JSON
``polyjudge meta-eval --format json`` writes), which the report renders as
they are. The consistency study's ``study.json`` and ``polyjudge validate --format
json`` are read into their typed rows likewise
(:func:`polyjudge.metaeval.kappas.read_consistency`,
:func:`polyjudge.validation.selection.read_validation`), and so is ``polyjudge
simulate --format json``
(:func:`polyjudge.validation.simulation_results.read_simulation`) and the
``pairwise.json`` of ``polyjudge pairwise``
(:func:`polyjudge.studies.pairwise_results.read_pairwise`).
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
from polyjudge.data.readers import parse_json
from polyjudge.metaeval.kappas import EXPECTED as CONSISTENCY_EXPECTED
from polyjudge.metaeval.kappas import read_consistency
from polyjudge.metaeval.results import EXPECTED as METAEVAL_EXPECTED
from polyjudge.metaeval.results import read_metaeval
from polyjudge.metaeval.spans.ranking import read_variant_ranking
from polyjudge.studies.pairwise_results import EXPECTED as PAIRWISE_EXPECTED
from polyjudge.studies.pairwise_results import read_pairwise
from polyjudge.validation.results import EXPECTED as VALIDATION_EXPECTED
from polyjudge.validation.selection import read_validation
from polyjudge.validation.simulation_results import EXPECTED as SIMULATION_EXPECTED
from polyjudge.validation.simulation_results import read_simulation

# What each study file may look like, for the message when it does not.
EXPECTED = {
    "metaeval.json": METAEVAL_EXPECTED,
    "consistency.json": CONSISTENCY_EXPECTED,
    "validation.json": VALIDATION_EXPECTED,
    "simulation.json": SIMULATION_EXPECTED,
    "pairwise.json": PAIRWISE_EXPECTED,
}


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
    """What the report renders of ``obj`` for ``kind`` (one of :data:`STUDY_FILES`): its typed rows
    (the study's reader), when it has a shape the report reads; otherwise an InputError naming
    ``path``, the place in the JSON and the shape expected, so a wrong file is never silently left
    out of the report."""
    if kind == "metaeval.json":
        return read_metaeval(obj, path)
    if kind == "consistency.json":
        return read_consistency(obj, path)
    if kind == "validation.json":
        return read_validation(obj, path)
    if kind == "simulation.json":
        return read_simulation(obj, path)
    if kind == "pairwise.json":
        return read_pairwise(obj, path)
    if kind == SPAN_RANKING:
        return read_variant_ranking(obj, path)
    raise KeyError(kind)


# --------------------------------------------------------------------------- files

# span-f1 --rank --format json's output: given with report --span-ranking, under this key.
SPAN_RANKING = "span-ranking.json"
STUDY_FILES = ("metaeval.json", "consistency.json", "validation.json", "simulation.json", "pairwise.json",
               SPAN_RANKING)


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
