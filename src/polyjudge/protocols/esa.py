"""GEMBA-ESA: error spans with severities, then one 0–100 score (Kocmi et al., WMT 2024).

Error Span Annotation asks a rater to mark the wrong parts of a translation
first and to score the whole translation afterwards, so the score is anchored
in the errors just found. GEMBA-ESA asks an LLM for the same two steps; here
both come back in one JSON answer::

    {"errors": [{"span": "text copied from the translation", "severity": "major"}], "score": 72}

The segment score is the judge's own 0–100 number (higher is better), not a
count of the errors; the spans are located in the translation as in the
``gemba-spans`` protocol (:func:`polyjudge.protocols.spans.locate_text_spans`:
exact text first, repeated quotes take successive occurrences, case and
whitespace normalised as a fallback), so ``span-f1`` can score them and
``spans.tsv`` holds them. The annotation is::

    {"format": "gemba-esa", "score": 72.0,
     "spans": [{"start", "end", "severity", "category", "text"}], "problems": [...]}

An empty ``span`` is an omission without location (``start = end = None``;
the span scorer ignores it). A quoted text that does not occur in the
translation cannot be located; because the score, not the span, is what
GEMBA-ESA is scored by, such an error is kept without location by default
(``on_unlocated=keep``, reported in ``problems``) instead of failing the
whole answer; ``on_unlocated=fail`` fails it as the span protocols do.

Failures (never scores): no JSON object, no ``errors`` list, an error that is
not an object, an unknown severity, a ``span`` that is not a string, no
``score``, a score that is not a number or lies outside 0–100.

Several runs are merged as the span protocols merge them (character voting,
:func:`polyjudge.protocols.tsa.vote_spans`); their scores go through the run
aggregator (``mean`` by default).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from polyjudge.backends.base import Message
from polyjudge.data.errors import InputError
from polyjudge.data.languages import language_name
from polyjudge.data.records import DocumentContext, Item
from polyjudge.protocols.base import JudgeProtocol, ParseFailure, ProtocolOptions
from polyjudge.protocols.jsonparse import parse_json_object
from polyjudge.protocols.options import option
from polyjudge.protocols.registry import register_protocol
from polyjudge.protocols.spans import locate_text_spans
from polyjudge.protocols.templates import PromptTemplate
from polyjudge.protocols.tsa import merge_span_runs

ANSWER_FORMAT = "gemba-esa"
SEVERITIES = ("major", "minor")
# "critical" is not an ESA severity, but judges trained on MQM use it: it is read as major.
_SEVERITY_ALIASES = {"major": "major", "minor": "minor", "critical": "major"}
SCORE_RANGE = (0.0, 100.0)
MAX_ERRORS = 20


@dataclass(frozen=True, slots=True)
class EsaOptions:
    """Options of ``gemba-esa``: what happens to unlocatable spans and how runs are merged."""

    on_unlocated: str = field(default="keep", metadata=option(
        "an error whose text is not in the translation: 'keep' it without location or 'fail' the answer",
        signature="unlocated"))
    vote_threshold: float = field(default=0.5, metadata=option(
        "share of runs that must mark a character for it to be kept when runs are merged, in (0, 1]"))

    def __post_init__(self) -> None:
        if self.on_unlocated not in ("fail", "keep"):
            raise InputError("on_unlocated must be 'fail' or 'keep'", field="on_unlocated")
        if not 0.0 < self.vote_threshold <= 1.0:
            raise InputError("vote_threshold must be in (0, 1]", field="vote_threshold")


@register_protocol()
class GembaESA(JudgeProtocol):
    """GEMBA-ESA: error spans with severities, then a 0-100 score (spans scored by span-f1)."""

    name = "gemba-esa"
    options_type = EsaOptions
    settings: EsaOptions
    produces_spans = True
    default_runs = 1
    default_temperature = 0.0
    default_aggregator = "mean"
    max_tokens = 1024

    def __init__(self, options: ProtocolOptions | None = None) -> None:
        super().__init__(options)
        self.template = PromptTemplate.load(self.options.template, "esa/esa.jinja")

    @property
    def template_hash(self) -> str:
        return self.template.hash

    # -- prompt ------------------------------------------------------------
    def messages(self, item: Item, context: DocumentContext) -> list[Message]:
        """Render the template. Variables: ``source``, ``translation``, ``source_language``/
        ``target_language`` (names, or a generic phrase), ``src_lang``/``tgt_lang`` (codes),
        ``reference`` (None when the item has none; the built-in prompt does not use it)
        and ``extra`` (the item's extra fields)."""
        return self.template.render(
            source=item.src, translation=item.tgt, reference=item.ref,
            source_language=language_name(item.src_lang) or "source language",
            target_language=language_name(item.tgt_lang) or "target language",
            src_lang=item.src_lang, tgt_lang=item.tgt_lang, extra=item.extra)

    def output_schema(self, item: Item) -> dict[str, Any]:
        error = {"type": "object",
                 "properties": {"span": {"type": "string", "maxLength": len(item.tgt) + 16},
                                "severity": {"type": "string", "enum": list(SEVERITIES)}},
                 "required": ["span", "severity"], "additionalProperties": False}
        return {"type": "object",
                "properties": {"errors": {"type": "array", "maxItems": MAX_ERRORS, "items": error},
                               "score": {"type": "integer", "minimum": 0, "maximum": 100}},
                "required": ["errors", "score"], "additionalProperties": False}

    # -- answer ------------------------------------------------------------
    def parse(self, text: str, item: Item) -> dict[str, Any]:
        obj = parse_json_object(text)
        errors = _errors(obj)
        score = _score(obj)
        located = locate_text_spans([e["span"] for e in errors], item.tgt)
        if located.fatal and self.settings.on_unlocated == "fail":
            raise ParseFailure("; ".join(located.fatal))
        spans = []
        for loc, err in zip(located.spans, errors, strict=True):
            spans.append({"start": loc.start, "end": loc.end, "severity": err["severity"], "category": "",
                          "text": None if loc.start is None else item.tgt[loc.start:loc.end]})
        return {"format": ANSWER_FORMAT, "score": score, "spans": spans,
                "problems": located.problems + located.fatal}

    def score(self, annotation: Any, item: Item) -> float | None:
        """The judge's 0–100 score, as given."""
        if not isinstance(annotation, dict):
            return None
        value = annotation.get("score")
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value)

    def merge_runs(self, annotations: list[Any], item: Item) -> dict[str, Any] | None:
        """The runs' spans merged by character voting (scores are merged by the aggregator)."""
        return merge_span_runs(annotations, item, self.settings.vote_threshold, ANSWER_FORMAT)


def _errors(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The answer's errors as ``{"span": str | None, "severity": "major" | "minor"}``."""
    if "errors" not in obj:
        raise ParseFailure("answer has no 'errors' list")
    raw = obj["errors"]
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ParseFailure(f"'errors' must be a list, got {type(raw).__name__}")
    out = []
    for k, err in enumerate(raw):
        if not isinstance(err, dict):
            raise ParseFailure(f"error {k} is not an object")
        severity = _SEVERITY_ALIASES.get(str(err.get("severity", "")).strip().lower())
        if severity is None:
            raise ParseFailure(f"error {k} has unknown severity {err.get('severity')!r}")
        span = err.get("span")
        if span is not None and not isinstance(span, str):
            raise ParseFailure(f"error {k} has a 'span' that is not a string")
        out.append({"span": span, "severity": severity})
    return out


def _score(obj: dict[str, Any]) -> float:
    """The 0–100 score of the answer (a JSON number; numeric text is not guessed at)."""
    if "score" not in obj:
        raise ParseFailure("answer has no 'score'")
    value = obj["score"]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParseFailure(f"'score' must be a number, got {type(value).__name__}")
    low, high = SCORE_RANGE
    if not low <= value <= high:
        raise ParseFailure(f"score {value} outside 0–100")
    return float(value)


__all__ = ["ANSWER_FORMAT", "EsaOptions", "GembaESA"]
