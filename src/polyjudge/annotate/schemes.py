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
from dataclasses import dataclass
from typing import Any

from polyjudge.data.errors import InputError
from polyjudge.data.rating_task import RatingTask

# The MQM typology's categories an annotator picks from (top level / sub-category, as in the WMT files).
MQM_CATEGORIES = (
    "Accuracy/Mistranslation", "Accuracy/Omission", "Accuracy/Addition", "Accuracy/Untranslated text",
    "Fluency/Grammar", "Fluency/Spelling", "Fluency/Punctuation", "Fluency/Register",
    "Fluency/Inconsistency", "Fluency/Character encoding", "Terminology/Inappropriate for context",
    "Terminology/Inconsistent use of terminology", "Style/Awkward", "Locale convention/Date format",
    "Locale convention/Number format", "Source error", "Non-translation!", "Other",
)
SCORE_RANGE = (0.0, 100.0)
MAX_SPANS = 200


@dataclass(frozen=True)
class Scheme:
    """What one scheme asks for, and how its annotations become numbers and files.

    The behaviour lives here as fields, so no other module branches on a scheme's name."""

    name: str
    severities: tuple[str, ...] = ()  # non-empty: error spans in the translation, with these severities
    categories_required: bool = False  # a span must name an MQM category (else: may)
    no_error: bool = False  # "no error" is an answer (and then a span is needed otherwise)
    score: bool = False  # a 0-100 score
    answer: str = ""  # "choice" (one option) or "choices" (a response set) of a rating task
    value: str = "score"  # the number status and exports use: "score", "points" (negated MQM points), "option", "set"

    @property
    def spans(self) -> bool:
        return bool(self.severities)

    @property
    def rating(self) -> bool:
        """Answers options of a rating task (the validation commands' ratings)."""
        return bool(self.answer)

    @property
    def level(self) -> str:
        """Krippendorff's level of measurement for the scheme's values."""
        return "nominal" if self.rating else "interval"


MQM = Scheme("mqm", ("minor", "major", "critical"), categories_required=True, no_error=True, value="points")
ESA = Scheme("esa", ("minor", "major"), score=True)
DA = Scheme("da", score=True)
FORCED_CHOICE = Scheme("forced-choice", answer="choice", value="option")
RESPONSE_SET = Scheme("response-set", answer="choices", value="set")
# The one table of schemes (the command's choices are read from it).
SCHEMES: dict[str, Scheme] = {s.name: s for s in (MQM, ESA, DA, FORCED_CHOICE, RESPONSE_SET)}


def get_scheme(name: str) -> Scheme:
    if name not in SCHEMES:
        raise InputError(f"unknown scheme {name!r} (choose from {', '.join(SCHEMES)})", field="scheme", setting=True)
    return SCHEMES[name]

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


def _spans(body: dict[str, Any], scheme: Scheme, length: int) -> list[dict[str, Any]]:
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
        if severity not in scheme.severities:
            raise AnnotationError(f"field 'spans[{i}].severity' must be one of {', '.join(scheme.severities)}")
        category = sp.get("category") or ""
        if category not in MQM_CATEGORIES and (category or scheme.categories_required):
            raise AnnotationError(f"field 'spans[{i}].category' must be one of the campaign's categories"
                                  + ("" if scheme.categories_required else " (or empty)"))
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


def check_annotation(body: Any, scheme: Scheme, task: RatingTask | None, tgt: str) -> dict[str, Any]:
    """The annotation to store for a posted ``body`` (AnnotationError naming the field otherwise).

    Offsets are code points of ``tgt`` (Python string indices)."""
    if not isinstance(body, dict):
        raise AnnotationError("the body must be a JSON object")
    no_error = body.get("no_error", False)
    if not isinstance(no_error, bool):
        raise AnnotationError("field 'no_error' must be true or false")
    out: dict[str, Any] = {"spans": [], "no_error": False, "score": None, "choice": None, "choices": None}
    if scheme.spans:
        out["spans"] = _spans(body, scheme, len(tgt))
    if scheme.no_error:
        if no_error and out["spans"]:
            raise AnnotationError("field 'no_error': give spans or no_error, not both")
        if not no_error and not out["spans"]:
            raise AnnotationError("field 'spans': mark at least one error or set no_error")
        out["no_error"] = no_error
    if scheme.score:
        out["score"] = _score(body)
    if scheme.answer == "choice" and task is not None:
        out["choice"] = _choice(body, task)
    if scheme.answer == "choices" and task is not None:
        out["choices"] = _choices(body, task)
    return out


def campaign_view(scheme: Scheme, task: RatingTask | None) -> dict[str, Any]:
    """The scheme-dependent fields of ``GET /api/campaign``."""
    rating = scheme.rating and task is not None
    return {
        "categories": list(MQM_CATEGORIES) if scheme.spans else [],
        "severities": list(scheme.severities),
        "options": [{"key": k, "label": o, "description": d}
                    for k, o, d in zip(task.letters, task.options, task.descriptions)] if rating and task else [],
        "question": task.instruction if rating and task else "",
        "score": {"min": 0, "max": 100} if scheme.score else None,
    }


__all__ = ["DEFAULT_TASK", "MQM_CATEGORIES", "SCHEMES", "AnnotationError", "Scheme", "campaign_view",
           "check_annotation", "get_scheme"]
