"""MQM error weights: LLM annotations and human WMT annotations -> scores.

The same weighting serves both sides so judge and human scores are
comparable: critical 25, major 5, minor 1, a minor fluency/punctuation error
0.1, a non-translation 25 whatever its severity, neutral 0. A segment's MQM
*points* are the weighted sum (lower is better); protocol *scores* are the
negated points (higher is better), as mt-metrics-eval expects.

Human scoring follows Freitag et al. (2021): per (system, document, segment)
the mean over raters of each rater's points, then the system score is the
mean over segments. The TED tables in ``shared/data/README.md`` are reproduced
by :func:`human_mqm_scores` (tests check every value within 0.01).

The *classic* mode is the first GEMBA-MQM's scoring (Kocmi & Federmann, 2023),
not Freitag's: every critical error is 25, every major 5 and every *minor*
error 1, a minor punctuation error included (the 0.1 discount belongs to the
human weighting); a non-translation counts as a critical error; only the five
most severe errors count and the total is capped at 25. Default (non-classic)
scores, human or LLM, are unaffected by it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polyjudge.data.wmt_mqm import MQMAnnotation, MQMError, read_wmt_mqm

SEVERITIES = ("critical", "major", "minor")
# Freitag et al.'s points for a minor fluency/punctuation error (human MQM, GEMBA-MQM V2).
PUNCTUATION_DISCOUNT = 0.1


def _norm_type(error_type: str) -> str:
    """``"Fluency / Punctuation"`` -> ``"fluency/punctuation"`` (for matching only)."""
    low = error_type.strip().lower()
    if low.isascii() and not _SPACE_BY_SLASH.search(low):
        return low  # no whitespace beside a slash: stripping each part changes nothing (a parsed answer's type)
    return "/".join(p.strip() for p in low.split("/"))


# ASCII whitespace (as str.strip sees it) beside a slash: what _norm_type's per-part strip would remove.
_SPACE_BY_SLASH = re.compile(r"[ \t\n\x0b\x0c\r\x1c-\x1f]/|/[ \t\n\x0b\x0c\r\x1c-\x1f]")


@dataclass(frozen=True)
class MQMWeights:
    """Points per error. ``classic`` reproduces the first GEMBA-MQM's scoring:
    at most ``max_errors`` errors count (most severe first, a non-translation
    ranking as critical), the total is capped at ``cap``, and a minor
    punctuation error weighs as much as any minor error.

    ``minor_punctuation`` left unset (NaN) resolves to 0.1 (Freitag et al.'s
    human weighting) or, in classic mode, to ``minor``; a value given
    explicitly is kept in both modes.
    """

    critical: float = 25.0
    major: float = 5.0
    minor: float = 1.0
    minor_punctuation: float = math.nan  # a *minor* fluency/punctuation error; NaN = the mode's default
    neutral: float = 0.0
    non_translation: float = 25.0  # any severity: the segment is not a translation
    classic: bool = False
    max_errors: int = 5
    cap: float = 25.0

    def __post_init__(self) -> None:
        if math.isnan(self.minor_punctuation):
            object.__setattr__(self, "minor_punctuation", self.minor if self.classic else PUNCTUATION_DISCOUNT)

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None) -> MQMWeights:
        """Weights from ``ProtocolOptions.extra`` (keys ``weights`` and ``classic``).

        ``weights`` is a mapping with any of the field names, e.g.
        ``{"critical": 10}``; unknown keys raise ``ValueError`` so a typo is
        never silently ignored.
        """
        if not options:
            return cls()
        weights = options.get("weights") or {}
        if not isinstance(weights, Mapping):
            raise ValueError(f"MQM weights must be a mapping of names to numbers, got {type(weights).__name__}")
        given = dict(weights)
        known = {f for f in cls.__dataclass_fields__}
        bad = sorted(str(k) for k in set(given) - known)
        if bad:
            raise ValueError(f"unknown MQM weight(s): {', '.join(bad)}; known: {', '.join(sorted(known))}")
        if "classic" in options:
            given["classic"] = bool(options["classic"])
        for k, v in given.items():
            if k == "classic":
                given[k] = bool(v)
                continue
            try:
                number = int(v) if k == "max_errors" else float(v)
            except (TypeError, ValueError, OverflowError):
                number = math.nan
            if isinstance(v, bool) or not math.isfinite(number):
                raise ValueError(f"MQM weight '{k}' must be a finite number, got {str(v)[:40]!r}")
            given[k] = number
        return cls(**given)

    def signature(self) -> str:
        """Compact text for run signatures (changes whenever a score would)."""
        base = (f"{self.critical:g}/{self.major:g}/{self.minor:g}/p{self.minor_punctuation:g}"
                f"/nt{self.non_translation:g}/n{self.neutral:g}")
        return base + (f"/classic{self.max_errors}c{self.cap:g}" if self.classic else "")

    def error_points(self, severity: str, error_type: str) -> float:
        """Points of one error; raises ``KeyError`` for an unknown severity."""
        sev = severity.strip().lower()
        typ = _norm_type(error_type)
        if typ.startswith("non-translation"):
            return self.non_translation
        if sev == "minor" and typ == "fluency/punctuation":
            return self.minor_punctuation
        if sev == "critical":
            return self.critical
        if sev == "major":
            return self.major
        if sev == "minor":
            return self.minor
        if sev in ("neutral", "no-error"):
            return self.neutral
        raise KeyError(f"unknown MQM severity '{severity}'")


DEFAULT_WEIGHTS = MQMWeights()

_RANK = {"critical": 0, "major": 1, "minor": 2}


def _classic_rank(severity: str, error_type: str) -> int | None:
    """Order in which classic GEMBA-MQM counts an error (None: it does not count).

    GEMBA-MQM files a non-translation under critical; severities other than
    critical, major and minor (neutral, no-error) are not errors there.
    """
    if _norm_type(error_type).startswith("non-translation"):
        return 0
    return _RANK.get(severity.strip().lower())


def mqm_points(errors: Iterable[tuple[str, str]], weights: MQMWeights = DEFAULT_WEIGHTS) -> float:
    """Weighted sum of ``(severity, type)`` pairs (positive error points).

    In classic mode only the ``max_errors`` most severe errors count (stable
    order otherwise; a non-translation ranks as critical, neutral errors do not
    count) and the sum is capped at ``weights.cap``.
    """
    errs = list(errors)
    if weights.classic:
        ranked = [(rank, e) for e in errs if (rank := _classic_rank(*e)) is not None]
        errs = [e for _, e in sorted(ranked, key=lambda r: r[0])][: weights.max_errors]
    total = sum(weights.error_points(sev, typ) for sev, typ in errs)
    if weights.classic:
        total = min(total, weights.cap)
    return float(total)


def annotation_errors(annotation: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(severity, type)`` pairs of a parsed LLM answer
    ``{"errors": {"critical": [{"type":..,"desc":..}], "major": [...], "minor": [...]}}``."""
    errors = annotation.get("errors", {})
    out: list[tuple[str, str]] = []
    for sev in SEVERITIES:
        for err in errors.get(sev, []) or []:
            out.append((sev, str(err.get("type", "")) if isinstance(err, Mapping) else ""))
    return out


def llm_mqm_score(annotation: Mapping[str, Any], weights: MQMWeights = DEFAULT_WEIGHTS) -> float:
    """Score of one run's annotation: the negated MQM points (higher is better)."""
    if weights.classic:
        return -mqm_points(annotation_errors(annotation), weights)
    # mqm_points(annotation_errors(...)) in one loop (a million answers are scored when a large run is
    # summarised): the same points added in the same order, so the same float.
    errors = annotation.get("errors", {})
    total: float = 0
    for sev, points in (("critical", weights.critical), ("major", weights.major), ("minor", weights.minor)):
        for err in errors.get(sev, []) or []:
            typ = _norm_type(str(err.get("type", "")) if isinstance(err, Mapping) else "")
            if typ.startswith("non-translation"):
                total += weights.non_translation
            elif sev == "minor" and typ == "fluency/punctuation":
                total += weights.minor_punctuation
            else:
                total += points
    return -float(total)


# -- human annotations ---------------------------------------------------------

def human_error_points(err: MQMError, weights: MQMWeights = DEFAULT_WEIGHTS) -> float:
    """Points of one human error row (Freitag et al. weighting)."""
    return weights.error_points(err.severity, err.category.rstrip("!"))


@dataclass(frozen=True)
class SegmentMQM:
    """Human MQM of one system's translation of one segment (mean over raters)."""

    system: str
    doc: str
    seg_id: str
    points: float  # positive error points, lower is better
    n_raters: int

    @property
    def score(self) -> float:
        """Negated points: higher is better, like every protocol score."""
        return -self.points


@dataclass
class HumanMQMScores:
    """Segment and system MQM from a WMT TSV. ``systems`` holds positive error
    points (as published); use :meth:`system_scores` for higher-is-better."""

    segments: list[SegmentMQM]
    systems: dict[str, float]
    n_segments: dict[str, int] = field(default_factory=dict)

    def ranking(self) -> list[tuple[str, float]]:
        """Systems best first (fewest error points), ties by name."""
        return sorted(self.systems.items(), key=lambda kv: (kv[1], kv[0]))

    def system_scores(self) -> dict[str, float]:
        return {k: -v for k, v in self.systems.items()}

    def segment_scores(self) -> dict[tuple[str, str, str], float]:
        """(system, doc, seg_id) -> negated points."""
        return {(s.system, s.doc, s.seg_id): s.score for s in self.segments}


def score_human_annotations(annotations: list[MQMAnnotation],
                            weights: MQMWeights = DEFAULT_WEIGHTS) -> HumanMQMScores:
    """Mean over raters per (system, document, segment), then mean over segments per system.

    Segments are keyed with their document, so files whose seg_id restarts in
    every document never pool two segments' raters.
    """
    per_seg: dict[tuple[str, str, str], list[float]] = {}
    for ann in annotations:
        key = (ann.system, ann.doc, ann.seg_id)
        if weights.classic:
            pts = mqm_points([(e.severity, e.category.rstrip("!")) for e in ann.errors], weights)
        else:
            pts = sum(human_error_points(e, weights) for e in ann.errors)
        per_seg.setdefault(key, []).append(pts)
    segments = [SegmentMQM(system=k[0], doc=k[1], seg_id=k[2], points=sum(v) / len(v),
                           n_raters=len(v)) for k, v in per_seg.items()]
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for s in segments:
        sums[s.system] = sums.get(s.system, 0.0) + s.points
        counts[s.system] = counts.get(s.system, 0) + 1
    systems = {k: sums[k] / counts[k] for k in sums}
    return HumanMQMScores(segments=segments, systems=systems, n_segments=counts)


def human_mqm_scores(path: str | Path, weights: MQMWeights = DEFAULT_WEIGHTS) -> HumanMQMScores:
    """Read a WMT MQM TSV and score it (segment and system level)."""
    return score_human_annotations(read_wmt_mqm(path), weights)


__all__ = ["DEFAULT_WEIGHTS", "PUNCTUATION_DISCOUNT", "HumanMQMScores", "MQMWeights", "SegmentMQM", "annotation_errors",
           "human_error_points", "human_mqm_scores", "llm_mqm_score", "mqm_points",
           "score_human_annotations"]
