"""Error-free meta-evaluation from Python: metrics' binary labels against gold derived from ESA.

The gold is an ESA file (scores, and spans in it or in ``gold_spans``): a
translation is error-free when its score is at least ``threshold`` (85) and no
error span is marked; or, with ``gold_labels``, a file of binary labels. Each
metric's labels are read by :func:`polyjudge.metaeval.binary.read_binary_labels`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from polyjudge.data.errors import InputError
from polyjudge.data.shapes import normalise_fields
from polyjudge.metaeval import binary
from polyjudge.studies.tables import aligned

COLUMNS = ("lp", "rank", "metric", *binary.STATISTICS, "tp", "fp", "fn", "tn", "n")
STATISTICS = binary.STATISTICS  # what metrics can be ranked by
MISSING_POLICIES = binary.MISSING  # what a gold segment without a metric's label counts as


@dataclass(frozen=True, slots=True)
class ErrorFreeConfig:
    """What to compare and how.

    ``metrics``: label (name) -> file or run directory of binary labels. ``cutoff``: metric scores at or
    above it are error-free (scores, probabilities); without it labels must be 1/0, true/false or yes/no.
    ``column``: the metrics' label column. ``rank_by``: one of ``mcc``, ``f1``, ``accuracy``, ``precision``,
    ``recall``. ``missing``: a gold segment a metric did not label is ``negative`` (not error-free),
    left out (``skip``) or an ``error``. ``lp``: evaluate this language pair only.
    """

    def __post_init__(self) -> None:
        from polyjudge.metaeval.mtme import parse_metric_spec  # NAME=PATH or PATH, as meta-eval names metrics

        normalise_fields(self, {"metrics": parse_metric_spec})  # Python shapes; TypeError names a field

    gold: str | Path
    metrics: Mapping[str, str | Path]
    gold_spans: str | Path | None = None
    gold_labels: bool = False
    threshold: float = binary.ESA_ERROR_FREE
    cutoff: float | None = None
    column: str | None = None
    rank_by: str = "mcc"
    missing: str = "negative"
    lp: str | None = None

    def check(self) -> None:
        for name, value in (("threshold", self.threshold), ("cutoff", self.cutoff)):
            if value is not None and not math.isfinite(value):
                raise InputError(f"{name} must be a finite number (got {value!r})", field=name)
        if not self.metrics:
            raise InputError("no metric labels to evaluate", field="metrics")
        binary.BinaryCounts().statistic(self.rank_by)


@dataclass
class ErrorFreeEvalResult:
    """The scores per language pair (``all``: pooled) and metric, ranked; ``result`` is the metaeval's."""

    config: ErrorFreeConfig
    result: binary.ErrorFreeResult

    def as_dict(self) -> dict[str, Any]:
        return {"threshold": None if self.config.gold_labels else self.config.threshold, **self.result.as_dict()}

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2, ensure_ascii=False)

    def to_tsv(self) -> str:
        def cell(v: Any) -> str:
            return f"{v:.6g}" if isinstance(v, float) else str(v)

        lines = ["\t".join(COLUMNS)] + ["\t".join(cell(r[c]) for c in COLUMNS) for r in self.result.rows()]
        return "\n".join(lines) + "\n"

    def to_text(self) -> str:
        text = aligned(self.to_tsv())
        r = self.result
        for name, n in r.missing.items():
            if n:
                how = {"negative": "counted as not error-free", "skip": "left out"}.get(r.missing_policy, "")
                text += f"{name}: {n} gold segment(s) without a label ({how})\n"
        for lp, pairs in r.tie_broken_by_name.items():
            text += "".join(f"{lp}: {a} and {b} tie on every statistic; ranked by name\n" for a, b in pairs)
        return text


def _only(labels: dict[binary.LabelKey, bool], lp: str | None) -> dict[binary.LabelKey, bool]:
    return labels if lp is None else {k: v for k, v in labels.items() if k[0] in (lp, None)}


def error_free_eval(config: ErrorFreeConfig) -> ErrorFreeEvalResult:
    """Read the gold and every metric's labels and evaluate them (see :mod:`polyjudge.metaeval.binary`)."""
    config.check()
    gold = (binary.read_binary_labels(config.gold, column=config.column) if config.gold_labels
            else binary.gold_from_esa(config.gold, config.gold_spans, threshold=config.threshold))
    gold = _only(gold, config.lp)
    if not gold:
        where = f" of language pair {config.lp}" if config.lp else ""
        raise InputError(f"no gold segment{where} with a score or label: nothing to evaluate against",
                         path=str(config.gold))
    metrics = {name: _only(binary.read_binary_labels(path, column=config.column, cutoff=config.cutoff), config.lp)
               for name, path in config.metrics.items()}
    result = binary.error_free_metaeval(gold, metrics, rank_by=config.rank_by, missing=config.missing)
    return ErrorFreeEvalResult(config, result)


__all__ = ["MISSING_POLICIES", "STATISTICS", "ErrorFreeConfig", "ErrorFreeEvalResult", "error_free_eval"]
