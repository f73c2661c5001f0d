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
from collections.abc import Sequence
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
    instruction="Could this translation be used as it is?",
    descriptions=("Conveys the source faithfully and reads naturally.",
                  "Usable, but a reader could be misled or would notice problems.",
                  "Wrong, misleading or unreadable."))


# The default task's instruction as campaigns made before it was reworded store it (shown reworded).
_OLD_INSTRUCTION = ("Could this translation be used as it is? Pick the option that fits (forced choice) or every "
                    "option that could reasonably apply (response set).")

# What each category means, in a sentence an annotator reads before choosing it (the page shows the
# definition of the chosen category, and all of them one key away).
DEFINITIONS: dict[str, str] = {
    "Accuracy/Mistranslation": "The translation says something the source does not mean: a wrong word, sense, "
                               "number, negation or relation.",
    "Accuracy/Omission": "Something the source says is missing from the translation. Mark where it is missing "
                         "(a position in the translation) or the missing words in the source.",
    "Accuracy/Addition": "The translation says something the source does not say at all.",
    "Accuracy/Untranslated text": "Words were left in the source language that should have been translated.",
    "Fluency/Grammar": "Wrong agreement, inflection, word order or function words in the target language.",
    "Fluency/Spelling": "A misspelt word, wrong capitalisation or wrong diacritics.",
    "Fluency/Punctuation": "Missing, wrong or superfluous punctuation for the target language.",
    "Fluency/Register": "The wrong level of formality or politeness for the text and its readers.",
    "Fluency/Inconsistency": "The same thing is said in different ways within the text without reason.",
    "Fluency/Character encoding": "Garbled characters: mojibake, replacement marks, broken letters.",
    "Terminology/Inappropriate for context": "A term that is not the one used in this field or context.",
    "Terminology/Inconsistent use of terminology": "One term of the source translated by different terms.",
    "Style/Awkward": "Correct but unnatural: a native writer would not phrase it this way.",
    "Locale convention/Date format": "A date written the way the target locale does not write dates.",
    "Locale convention/Number format": "Decimal separators, digit grouping or units not in the target locale's "
                                       "convention.",
    "Source error": "An error that is already in the source text: mark it in the source.",
    "Non-translation!": "The whole output is not a translation of the source (unrelated, another language, "
                        "garbage). Mark the whole translation.",
    "Other": "An error none of the categories fits: say what it is in the comment (required).",
}


class AnnotationError(ValueError):
    """A posted annotation that does not fit the scheme: the message names the field."""


MAX_COMMENT = 1000
SIDES = ("target", "source")
OMISSION = "Accuracy/Omission"
# The category whose spans need a comment saying what the error is (as Anthea asks for "Other").
COMMENT_REQUIRED = ("Other",)
ORIGINS = ("kept", "edited", "added", "deleted")  # where an exported span came from (AI pre-annotation)


def _int_field(sp: dict[str, Any], i: int, name: str) -> int:
    v = sp.get(name)
    if not isinstance(v, int) or isinstance(v, bool):
        raise AnnotationError(f"field 'spans[{i}].{name}' must be an integer")
    return v


def _side(sp: dict[str, Any], i: int) -> str:
    side = sp.get("side", "target")
    if side not in SIDES:
        raise AnnotationError(f"field 'spans[{i}].side' must be 'target' or 'source'")
    return str(side)


def _comment(sp: dict[str, Any], i: int, category: str) -> str:
    raw = sp.get("comment", "")
    if raw is None:
        raw = ""
    if not isinstance(raw, str):
        raise AnnotationError(f"field 'spans[{i}].comment' must be a string")
    text = " ".join(raw.split())  # one line: white space (tabs, line ends) becomes one space
    if len(text) > MAX_COMMENT:
        raise AnnotationError(f"field 'spans[{i}].comment' is longer than {MAX_COMMENT} characters")
    if category in COMMENT_REQUIRED and not text:
        raise AnnotationError(f"field 'spans[{i}].comment' is required for the category {category!r}: say what "
                              "the error is")
    return text


def _bounds(sp: dict[str, Any], i: int, side: str, texts: dict[str, str]) -> tuple[int, int]:
    start, end = _int_field(sp, i, "start"), _int_field(sp, i, "end")
    length = len(texts[side])
    if side == "target" and 0 <= start == end <= length:
        return start, end  # an omission: a position in the translation where something is missing
    what = "tgt" if side == "target" else "src"
    if not 0 <= start < end <= length:
        raise AnnotationError(f"field 'spans[{i}]': need 0 <= start < end <= {length} (code points of {what})"
                              + ("; start == end marks an omission" if side == "target" else ""))
    return start, end


def _category(sp: dict[str, Any], i: int, scheme: Scheme, omission: bool) -> str:
    category = sp.get("category") or ""
    if category not in MQM_CATEGORIES and (category or scheme.categories_required):
        raise AnnotationError(f"field 'spans[{i}].category' must be one of the campaign's categories"
                              + ("" if scheme.categories_required else " (or empty)"))
    if omission and category not in ("", OMISSION):
        raise AnnotationError(f"field 'spans[{i}]': start == end marks an omission, whose category is {OMISSION} "
                              "(or empty); give a span of the text for another error")
    return str(category)


def _span(sp: Any, i: int, scheme: Scheme, texts: dict[str, str]) -> dict[str, Any]:
    """One posted span in its stored shape: ``start end category severity``, then ``side`` (only
    ``source``), ``comment`` (only when given) and ``prefill`` (the suggestion it came from)."""
    if not isinstance(sp, dict):
        raise AnnotationError(f"field 'spans[{i}]' must be an object")
    side = _side(sp, i)
    start, end = _bounds(sp, i, side, texts)
    severity = sp.get("severity")
    if severity not in scheme.severities:
        raise AnnotationError(f"field 'spans[{i}].severity' must be one of {', '.join(scheme.severities)}")
    category = _category(sp, i, scheme, start == end)
    if start == end and scheme.categories_required:
        category = OMISSION
    out: dict[str, Any] = {"start": start, "end": end, "category": category, "severity": severity}
    if side == "source":
        out["side"] = side
    comment = _comment(sp, i, category)
    if comment:
        out["comment"] = comment
    return out


def _spans(body: dict[str, Any], scheme: Scheme, texts: dict[str, str]) -> list[dict[str, Any]]:
    raw = body.get("spans")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise AnnotationError("field 'spans' must be a list")
    if len(raw) > MAX_SPANS:
        raise AnnotationError(f"field 'spans' holds more than {MAX_SPANS} spans")
    return [_span(sp, i, scheme, texts) for i, sp in enumerate(raw)]


def same_span(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two spans mark the same error: side, offsets, category and severity."""
    return all((a.get(k) or d) == (b.get(k) or d) for k, d in (("side", "target"), ("start", 0), ("end", 0),
                                                               ("category", ""), ("severity", "")))


def _provenance(body: dict[str, Any], spans: list[dict[str, Any]], suggestions: Sequence[dict[str, Any]]
                ) -> list[dict[str, Any]]:
    """Each span's ``origin`` against the AI's suggestions (a span names the one it came from in
    ``prefill``: kept when unchanged, edited otherwise; none: added); the suggestions no span came
    from are returned, marked ``deleted``."""
    raw = body.get("spans") or []
    used: set[int] = set()
    for i, (sp, posted) in enumerate(zip(spans, raw)):
        k = posted.get("prefill") if isinstance(posted, dict) else None
        if k is None:
            sp["origin"] = "added"
            continue
        if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k < len(suggestions) or k in used:
            raise AnnotationError(f"field 'spans[{i}].prefill' must name one suggestion of the item, once")
        used.add(k)
        sp["origin"] = "kept" if same_span(sp, suggestions[k]) else "edited"
        sp["prefill"] = k
    return [{**s, "origin": "deleted", "prefill": k} for k, s in enumerate(suggestions) if k not in used]


MAX_ACTIVE_MS = 24 * 3600 * 1000


def _active_ms(body: dict[str, Any]) -> int | None:
    """The page's measure of the time spent on the item (focus and input, idle time left out), in ms."""
    v = body.get("active_ms")
    if v is None:
        return None
    if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v) or not 0 <= v <= MAX_ACTIVE_MS:
        raise AnnotationError(f"field 'active_ms' must be a number of milliseconds from 0 to {MAX_ACTIVE_MS}")
    return int(v)


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


def check_annotation(body: Any, scheme: Scheme, task: RatingTask | None, tgt: str, *, src: str = "",
                     suggestions: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The annotation to store for a posted ``body`` (AnnotationError naming the field otherwise).

    Offsets are code points of ``tgt`` (or, ``side: "source"``, of ``src``: Python string indices).
    ``suggestions`` are the item's AI pre-annotation: each span's ``origin`` is set against them and
    the ones removed are kept under ``deleted``. ``active_ms`` is kept when posted."""
    if not isinstance(body, dict):
        raise AnnotationError("the body must be a JSON object")
    no_error = body.get("no_error", False)
    if not isinstance(no_error, bool):
        raise AnnotationError("field 'no_error' must be true or false")
    out: dict[str, Any] = {"spans": [], "no_error": False, "score": None, "choice": None, "choices": None}
    if scheme.spans:
        out["spans"] = _spans(body, scheme, {"target": tgt, "source": src})
        if suggestions:
            out["deleted"] = _provenance(body, out["spans"], suggestions)
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
    active = _active_ms(body)
    if active is not None:
        out["active_ms"] = active
    return out


def _question(scheme: Scheme, task: RatingTask) -> str:
    """The task's question, without the words the default one used to name the schemes by."""
    if task.instruction == _OLD_INSTRUCTION:
        return DEFAULT_TASK.instruction
    return task.instruction


def campaign_view(scheme: Scheme, task: RatingTask | None) -> dict[str, Any]:
    """The scheme-dependent fields of ``GET /api/campaign``."""
    rating = scheme.rating and task is not None
    categories = list(MQM_CATEGORIES) if scheme.spans else []
    return {
        "categories": categories,
        "definitions": {c: DEFINITIONS[c] for c in categories},
        "comment_required": [c for c in COMMENT_REQUIRED if c in categories],
        "omission": OMISSION if scheme.spans else "",
        "severities": list(scheme.severities),
        "options": [{"key": k, "label": o, "description": d}
                    for k, o, d in zip(task.letters, task.options, task.descriptions)] if rating and task else [],
        "question": _question(scheme, task) if rating and task else "",
        "score": {"min": 0, "max": 100} if scheme.score else None,
    }


__all__ = ["DEFAULT_TASK", "MQM_CATEGORIES", "SCHEMES", "AnnotationError", "Scheme", "campaign_view",
           "check_annotation", "get_scheme"]
