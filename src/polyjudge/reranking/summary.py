"""A reranking output folder read back: ``rerank.json`` as typed rows (what the report renders).

``polyjudge rerank ... -o OUT`` writes ``OUT/rerank.json`` (:meth:`RerankResult.to_json
<polyjudge.reranking.run.RerankResult.to_json>`), with the judge's run directory in ``OUT/run`` and a
held-out judge's in ``OUT/held-out``. Before anything is judged the file says ``"status": "incomplete"``
(a choice stopped by the spending cap or Ctrl-C leaves it so): such a summary has no numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from polyjudge.data import textio
from polyjudge.data.errors import InputError
from polyjudge.data.readers import parse_json

RUN_DIR = "run"
HELD_OUT_DIR = "held-out"
CHOSEN = "chosen.jsonl"
SCORES = "scores.jsonl"
SUMMARY = "rerank.json"
COMPLETE, INCOMPLETE = "complete", "incomplete"
# Which check a gain is: the selecting scorer (self-reward), a held-out judge, chrF against references.
SELECTION, JUDGE, REFERENCES = "selection", "judge", "references"
CHECKS = (SELECTION, JUDGE, REFERENCES)
CHRF_REFERENCES = "chrF vs references"  # the name of the held-out chrF check (and how older files tell it)


@dataclass(frozen=True, slots=True)
class GainRow:
    """The mean score of the chosen translations and of the baselines under one scorer."""

    scorer: str
    check: str  # one of CHECKS
    chosen: float | None
    baseline: float | None
    gain: float | None
    sources: int

    @property
    def held_out(self) -> bool:
        return self.check != SELECTION


@dataclass(frozen=True, slots=True)
class RerankSummary:
    """``rerank.json``: the method, what was judged and the gains (none when ``incomplete``)."""

    method: str
    status: str = COMPLETE
    scorer: str = ""
    sources: int = 0
    candidates: int = 0
    requests: int = 0
    requests_full: int = 0
    symmetric: bool = False
    pruning: dict[str, Any] | None = None
    unchosen: int = 0
    gains: tuple[GainRow, ...] = ()
    path: str = ""

    @property
    def complete(self) -> bool:
        return self.status == COMPLETE

    def gain(self, check: str) -> GainRow | None:
        """The first gain of one check (``selection``, ``judge``, ``references``), or None when not run."""
        return next((g for g in self.gains if g.check == check), None)


def is_rerank_output(path: str | Path) -> bool:
    """Whether ``path`` is a folder ``polyjudge rerank -o`` wrote (it holds ``rerank.json``)."""
    p = Path(path)
    return p.is_dir() and (p / SUMMARY).is_file()


def rerank_folder(path: str | Path) -> Path | None:
    """The reranking output folder a report of ``path`` reads (``path`` itself, or the folder around its
    ``run``), or None: its files are the report's inputs too."""
    p = Path(path)
    if is_rerank_output(p):
        return p
    if p.name == RUN_DIR and is_rerank_output(p.parent):
        return p.parent
    return None


def read_rerank(folder: str | Path) -> RerankSummary:
    """``FOLDER/rerank.json`` as a :class:`RerankSummary`; a damaged file is an InputError naming the field."""
    path = Path(folder) / SUMMARY
    obj = parse_json(textio.read_text(path), path=str(path))
    return rerank_summary(obj, str(path))


def _field(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], path: str, *, optional: bool = False) -> Any:
    value = obj.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, kind) or (isinstance(value, bool) and kind in (int, (int, float))):
        raise InputError(f"'{key}' is missing or of the wrong type in a reranking summary", path=path, field=key)
    return value


def _finite(obj: dict[str, Any], key: str, path: str) -> float | None:
    value = _field(obj, key, (int, float), path, optional=True)
    if value is None:
        return None
    if not math.isfinite(value):
        raise InputError(f"'{key}' is not a finite number", path=path, field=key)
    return float(value)


def _gain(obj: Any, k: int, path: str) -> GainRow:
    if not isinstance(obj, dict):
        raise InputError(f"gain {k + 1} is not an object", path=path, field="gains")
    scorer = _field(obj, "scorer", str, path)
    check = obj.get("check")
    if check is None:  # written before gains named their check
        held = _field(obj, "held_out", bool, path)
        check = SELECTION if not held else REFERENCES if scorer == CHRF_REFERENCES else JUDGE
    if check not in CHECKS:
        raise InputError(f"unknown check {check!r} (known: {', '.join(CHECKS)})", path=path, field="check")
    return GainRow(scorer, check, _finite(obj, "chosen", path), _finite(obj, "baseline", path),
                   _finite(obj, "gain", path), _field(obj, "sources", int, path))


def rerank_summary(obj: Any, path: str = SUMMARY) -> RerankSummary:
    """Parsed ``rerank.json`` as typed rows (``path`` names the file in errors)."""
    if not isinstance(obj, dict):
        raise InputError("a reranking summary is a JSON object", path=path)
    method = _field(obj, "method", str, path)
    status = obj.get("status", COMPLETE)
    if status == INCOMPLETE:
        return RerankSummary(method, INCOMPLETE, path=path)
    if status != COMPLETE:
        raise InputError(f"unknown status {status!r}", path=path, field="status")
    gains = obj.get("gains")
    if not isinstance(gains, list):
        raise InputError("'gains' is missing or not a list", path=path, field="gains")
    pruning = _field(obj, "pruning", dict, path, optional=True)
    return RerankSummary(
        method, COMPLETE, _field(obj, "scorer", str, path), _field(obj, "sources", int, path),
        _field(obj, "candidates", int, path), _field(obj, "requests", int, path),
        _field(obj, "requests_full", int, path), bool(obj.get("symmetric", False)), pruning,
        int(_field(obj, "unchosen", int, path, optional=True) or 0),
        tuple(_gain(g, k, path) for k, g in enumerate(gains)), path)


__all__ = ["CHECKS", "CHOSEN", "CHRF_REFERENCES", "COMPLETE", "HELD_OUT_DIR", "INCOMPLETE", "JUDGE", "REFERENCES",
           "RUN_DIR", "SCORES", "SELECTION", "SUMMARY", "GainRow", "RerankSummary", "is_rerank_output",
           "read_rerank", "rerank_summary"]
