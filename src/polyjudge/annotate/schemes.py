"""What an annotator is asked, per scheme, and the check of what they answer.

Five schemes: ``mqm`` (error spans with an MQM category and a severity, or "no
error"), ``esa`` (error spans with minor/major, then a 0-100 score: Kocmi et
al.'s error span annotation), ``da`` (a 0-100 score), ``forced-choice`` (one
option of a rating task) and ``response-set`` (every option that could apply,
one admissible set of the task: Guerdan et al.). The last two read their
options from a :class:`~polyjudge.data.rating_task.RatingTask`.

:func:`check_annotation` turns a posted JSON body into the stored annotation or
raises :class:`AnnotationError` with one line naming the field: the server
answers 422 with it, so a script learns what to fix.
"""

from __future__ import annotations

import math
from typing import Any

from polyjudge.data.rating_task import RatingTask

SCHEMES = ("mqm", "esa", "da", "forced-choice", "response-set")
SPAN_SCHEMES = ("mqm", "esa")
SCORE_SCHEMES = ("esa", "da")
RATING_SCHEMES = ("forced-choice", "response-set")

# The MQM typology's categories an annotator picks from (top level / sub-category, as in the WMT files).
MQM_CATEGORIES = (
    "Accuracy/Mistranslation", "Accuracy/Omission", "Accuracy/Addition", "Accuracy/Untranslated text",
    "Fluency/Grammar", "Fluency/Spelling", "Fluency/Punctuation", "Fluency/Register",
    "Fluency/Inconsistency", "Fluency/Character encoding", "Terminology/Inappropriate for context",
    "Terminology/Inconsistent use of terminology", "Style/Awkward", "Locale convention/Date format",
    "Locale convention/Number format", "Source error", "Non-translation!", "Other",
)
SEVERITIES = {"mqm": ("minor", "major", "critical"), "esa": ("minor", "major")}
SCORE_RANGE = (0.0, 100.0)
MAX_SPANS = 200

# The task a forced-choice or response-set campaign uses when none is given (--task FILE).
DEFAULT_TASK = RatingTask.build(
    ["Acceptable", "Borderline", "Unacceptable"], "all", name="translation-acceptability",
    instruction="Could this translation be used as it is? Pick the option that fits (forced choice) or "
                "every option that could reasonably apply (response set).",
    descriptions=("Conveys the source faithfully and reads naturally.",
                  "Usable, but a reader could be misled or would notice problems.",
                  "Wrong, misleading or unreadable."))


class AnnotationError(ValueError):
    """A posted annotation that does not fit the scheme: the message names the field."""


def _spans(body: dict[str, Any], scheme: str, length: int) -> list[dict[str, Any]]:
    raw = body.get("spans")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise AnnotationError("field 'spans' must be a list")
    if len(raw) > MAX_SPANS:
        raise AnnotationError(f"field 'spans' holds more than {MAX_SPANS} spans")
    out = []
    for i, sp in enumerate(raw):
        if not isinstance(sp, dict):
            raise AnnotationError(f"field 'spans[{i}]' must be an object")
        start, end = sp.get("start"), sp.get("end")
        for name, v in (("start", start), ("end", end)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise AnnotationError(f"field 'spans[{i}].{name}' must be an integer")
        assert isinstance(start, int) and isinstance(end, int)
        if not 0 <= start < end <= length:
            raise AnnotationError(f"field 'spans[{i}]': need 0 <= start < end <= {length} (code points of tgt)")
        severity = sp.get("severity")
        if severity not in SEVERITIES[scheme]:
            raise AnnotationError(f"field 'spans[{i}].severity' must be one of {', '.join(SEVERITIES[scheme])}")
        category = sp.get("category", "")
        if scheme == "mqm" and category not in MQM_CATEGORIES:
            raise AnnotationError(f"field 'spans[{i}].category' must be one of the campaign's categories")
        if scheme == "esa" and category not in ("", None, *MQM_CATEGORIES):
            raise AnnotationError(f"field 'spans[{i}].category' must be empty or one of the campaign's categories")
        out.append({"start": start, "end": end, "category": category or "", "severity": severity})
    return out


def _score(body: dict[str, Any]) -> float:
    v = body.get("score")
    if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v):
        raise AnnotationError("field 'score' must be a number from 0 to 100")
    if not SCORE_RANGE[0] <= v <= SCORE_RANGE[1]:
        raise AnnotationError("field 'score' must be a number from 0 to 100")
    return float(v)


def _choice(body: dict[str, Any], task: RatingTask) -> str:
    v = body.get("choice")
    if not isinstance(v, str) or v not in task.letters:
        raise AnnotationError(f"field 'choice' must be one of {', '.join(task.letters)}")
    return v


def _choices(body: dict[str, Any], task: RatingTask) -> list[str]:
    v = body.get("choices")
    if not isinstance(v, list) or not v or not all(isinstance(x, str) and x in task.letters for x in v):
        raise AnnotationError(f"field 'choices' must be a non-empty list of {', '.join(task.letters)}")
    if len(set(v)) != len(v):
        raise AnnotationError("field 'choices' repeats an option")
    letters = "".join(sorted(v, key=task.letters.index))
    if frozenset(task.letters.index(x) for x in letters) not in set(task.response_sets):
        raise AnnotationError("field 'choices' is not an admissible response set of the task")
    return list(letters)


def check_annotation(body: Any, scheme: str, task: RatingTask | None, tgt: str) -> dict[str, Any]:
    """The annotation to store for a posted ``body`` (AnnotationError naming the field otherwise).

    Offsets are code points of ``tgt`` (Python string indices)."""
    if not isinstance(body, dict):
        raise AnnotationError("the body must be a JSON object")
    no_error = body.get("no_error", False)
    if not isinstance(no_error, bool):
        raise AnnotationError("field 'no_error' must be true or false")
    out: dict[str, Any] = {"spans": [], "no_error": False, "score": None, "choice": None, "choices": None}
    if scheme in SPAN_SCHEMES:
        out["spans"] = _spans(body, scheme, len(tgt))
    if scheme == "mqm":
        if no_error and out["spans"]:
            raise AnnotationError("field 'no_error': give spans or no_error, not both")
        if not no_error and not out["spans"]:
            raise AnnotationError("field 'spans': mark at least one error or set no_error")
        out["no_error"] = no_error
    if scheme in SCORE_SCHEMES:
        out["score"] = _score(body)
    if scheme == "forced-choice":
        assert task is not None
        out["choice"] = _choice(body, task)
    if scheme == "response-set":
        assert task is not None
        out["choices"] = _choices(body, task)
    return out


def campaign_view(scheme: str, task: RatingTask | None) -> dict[str, Any]:
    """The scheme-dependent fields of ``GET /api/campaign``."""
    rating = scheme in RATING_SCHEMES and task is not None
    return {
        "categories": list(MQM_CATEGORIES) if scheme in SPAN_SCHEMES else [],
        "severities": list(SEVERITIES.get(scheme, ())),
        "options": [{"key": k, "label": o} for k, o in zip(task.letters, task.options)] if rating and task else [],
        "question": task.instruction if rating and task else "",
        "score": {"min": 0, "max": 100} if scheme in SCORE_SCHEMES else None,
    }


__all__ = ["DEFAULT_TASK", "MQM_CATEGORIES", "RATING_SCHEMES", "SCHEMES", "SCORE_SCHEMES", "SEVERITIES",
           "SPAN_SCHEMES", "AnnotationError", "campaign_view", "check_annotation"]
