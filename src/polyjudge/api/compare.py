"""Span formats side by side (the TSA paper's Tables 2–3) from Python.

One run directory per answer format (``tsa``, ``gemba-spans``,
``direct-index``, ``gemba-esa``, or any protocol that produces spans), all
judged on the same items, scored against one gold: character-level F1,
precision and recall as ``span-f1`` computes them (a failed judgment counts
as predicting no errors, as the official WMT25 scorer counts it, unless
``missing`` says otherwise), next to what each format cost: the share of
judgments that failed (unparseable, truncated, request failed), prompt and
completion tokens, and time.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polyjudge.api.formats import SPAN_FORMATS
from polyjudge.api.spans import MISSING_POLICIES, SpanF1Config, check_raters, span_f1
from polyjudge.data.errors import InputError, check_choices
from polyjudge.data.numbers import NOT_AVAILABLE, stat_text, undefined_to_none
from polyjudge.data.shapes import normalise_fields
from polyjudge.rundir import OK, PENDING, RunDir
from polyjudge.studies.tables import aligned, data_frame

COLUMNS = ("format", "run", "f1", "precision", "recall", "judgments", "failed", "failure_rate",
           "missing_predictions", "prompt_tokens", "completion_tokens", "wall_time_s", "mean_latency_s")


@dataclass(frozen=True, slots=True)
class CompareFormatsConfig:
    """The runs to compare (one per span format) and how their spans are scored.

    ``gold`` and the scoring options mean what they mean for
    :class:`~polyjudge.api.SpanF1Config`; every run is scored the same way.
    """

    def __post_init__(self) -> None:
        normalise_fields(self)  # Python shapes; TypeError names a field

    runs: tuple[str | Path, ...]
    gold: str | Path
    gold_format: str = "auto"
    lp: str | None = None
    judge: str | None = None
    set_id: str | None = "official"
    missing: str = "empty"
    raters: str = "first"
    vote_threshold: float = 0.5

    def check(self) -> None:
        if not self.runs:
            raise InputError("give at least one run directory to compare", field="runs")
        check_choices(("gold-format", self.gold_format, SPAN_FORMATS), ("missing", self.missing, MISSING_POLICIES))
        check_raters(self.raters)
        for run in self.runs:
            RunDir.open(run)  # an InputError naming the path when it is not a run directory


@dataclass(frozen=True, slots=True)
class FormatRow:
    """One run: its span scores (macro averages over language pairs) and its costs."""

    format: str  # the run's protocol
    run: str  # the run directory's name
    path: str
    signature: str
    f1: float
    precision: float
    recall: float
    judgments: int  # judgments with an outcome (never-sent ones left out)
    failed: int
    missing_predictions: int  # gold segments without a prediction
    prompt_tokens: int
    completion_tokens: int
    wall_time_s: float  # of the run's last judging session (manifest)
    mean_latency_s: float  # per answered request, over every session
    failures: dict[str, int] = field(default_factory=dict)  # status -> count
    per_lp: dict[str, dict[str, float | int]] = field(default_factory=dict)

    @property
    def failure_rate(self) -> float:
        return self.failed / self.judgments if self.judgments else math.nan

    def as_dict(self) -> dict[str, Any]:
        return {"format": self.format, "run": self.run, "path": self.path, "signature": self.signature,
                "f1": self.f1, "precision": self.precision, "recall": self.recall, "judgments": self.judgments,
                "failed": self.failed, "failure_rate": self.failure_rate,
                "missing_predictions": self.missing_predictions, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "wall_time_s": self.wall_time_s,
                "mean_latency_s": self.mean_latency_s, "failures": dict(self.failures),
                "per_lp": {lp: dict(v) for lp, v in self.per_lp.items()}}


def _cell(v: Any) -> str:
    """A TSV cell: numbers to 6 significant digits, ``n/a`` when undefined (NaN, None)."""
    if v is None or isinstance(v, float):
        return stat_text(v, ".6g")
    return str(v)


def _text_cell(column: str, v: Any) -> str:
    """A cell of the text and TSV tables; an undefined number (NaN, None) is ``n/a``."""
    if column in ("f1", "precision", "recall", "failure_rate"):
        return stat_text(v)
    if column in ("wall_time_s", "mean_latency_s"):
        return stat_text(v, ".2f")
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return NOT_AVAILABLE
    return str(v)


@dataclass
class CompareFormatsResult:
    """One :class:`FormatRow` per run, in the order given."""

    config: CompareFormatsConfig
    rows: list[FormatRow]
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"gold": str(self.config.gold), "missing": self.config.missing,
                "runs": [r.as_dict() for r in self.rows], "warnings": list(self.warnings)}

    def to_json(self) -> str:
        """The JSON document; an undefined number is ``null`` (never ``NaN``, which is not JSON)."""
        return json.dumps(undefined_to_none(self.as_dict()), indent=2, ensure_ascii=False)

    def to_tsv(self) -> str:
        lines = ["\t".join(COLUMNS)]
        for r in self.rows:
            d = r.as_dict()
            lines.append("\t".join(_cell(d[c]) for c in COLUMNS))
        return "\n".join(lines) + "\n"

    def to_text(self) -> str:
        lines = ["\t".join(COLUMNS)]
        for r in self.rows:
            d = r.as_dict()
            lines.append("\t".join(_text_cell(c, d[c]) for c in COLUMNS))
        text = aligned("\n".join(lines) + "\n")
        how = {"empty": "scored as predicting no errors", "skip": "left out"}.get(self.config.missing,
                                                                                 self.config.missing)
        text += ("F1, precision, recall: character level, macro-averaged over language pairs;\n"
                 f"a gold segment without a prediction is {how}; failure_rate: failed / answered judgments.\n")
        text += "".join(f"warning: {w}\n" for w in self.warnings)
        return text

    def format(self, fmt: str = "text") -> str:
        """``text`` (aligned table), ``tsv`` or ``json``, as ``polyjudge compare-formats`` prints them."""
        if fmt == "json":
            return self.to_json() + "\n"
        if fmt == "tsv":
            return self.to_tsv()
        if fmt == "text":
            return self.to_text()
        raise InputError(f"unknown format {fmt!r} (text, tsv, json)", field="format")

    def to_pandas(self) -> Any:
        """One row per run."""
        return data_frame([r.as_dict() for r in self.rows], COLUMNS)


def _run_costs(rd: RunDir, judge: str | None) -> tuple[int, Counter[str], int, int, float]:
    """Answered judgments, failures by status, prompt and completion tokens, summed latency."""
    answered, prompt, completion, latency = 0, 0, 0, 0.0
    failed: Counter[str] = Counter()
    for j in rd.iter_judgments():
        if judge is not None and j.judge != judge:
            continue
        if j.status == PENDING:
            continue
        answered += 1
        if j.status != OK:
            failed[j.status] += 1
        prompt += j.prompt_tokens
        completion += j.completion_tokens
        latency += j.latency_s
    return answered, failed, prompt, completion, latency


def compare_formats(config: CompareFormatsConfig) -> CompareFormatsResult:
    """Score every run's spans against the gold and put them next to each run's costs.

    Each run must come from a protocol that produces spans; one that does not,
    or one with nothing to score, is an InputError naming the run.
    """
    config.check()
    rows: list[FormatRow] = []
    warnings: list[str] = []
    for run in config.runs:
        rd = RunDir.open(run)
        scored = span_f1(SpanF1Config(gold=config.gold, pred=run, gold_format=config.gold_format, pred_format="run",
                                      lp=config.lp, judge=config.judge, set_id=config.set_id,
                                      missing=config.missing, raters=config.raters,
                                      vote_threshold=config.vote_threshold))
        s = scored.scores
        answered, failed, prompt, completion, latency = _run_costs(rd, config.judge)
        fmt = rd.manifest.protocol or "?"
        rows.append(FormatRow(
            format=fmt, run=rd.name, path=str(run), signature=rd.manifest.signature, f1=s.avg_f1,
            precision=s.avg_precision, recall=s.avg_recall, judgments=answered, failed=sum(failed.values()),
            missing_predictions=s.total_missing, prompt_tokens=prompt, completion_tokens=completion,
            wall_time_s=rd.manifest.wall_time_s, mean_latency_s=latency / answered if answered else math.nan,
            failures=dict(sorted(failed.items())),
            per_lp={lp: {**score.as_dict(), "missing_predictions": s.missing_predictions.get(lp, 0)}
                    for lp, score in sorted(s.per_lp.items())}))
        warnings += [f"{rd.name}: {w}" for w in s.warnings if not w.startswith("judgments not ok")]
        if s.unmatched_predictions:
            warnings.append(f"{rd.name}: {s.unmatched_predictions} predictions match no gold segment")
    return CompareFormatsResult(config, rows, warnings)


__all__ = ["CompareFormatsConfig", "CompareFormatsResult", "FormatRow", "compare_formats"]
