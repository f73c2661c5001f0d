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

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from polyjudge.data.chat import Message
from polyjudge.data.errors import InputError
from polyjudge.data.languages import language_name
from polyjudge.data.records import DocumentContext, Item
from polyjudge.protocols.base import JudgeProtocol, ParseFailure, ProtocolOptions
from polyjudge.protocols.expected import Locator, ScoreMode, json_key_locator, score_mode_field
from polyjudge.protocols.fewshot import (
    buckets_field,
    fewshot_signature,
    insert_turns,
    k_field,
    pool_field,
    pool_for,
    seed_field,
)
from polyjudge.protocols.jsonparse import parse_json_object
from polyjudge.protocols.options import option
from polyjudge.protocols.reference import ReferenceUse, check_ref_name, ref_name_field, with_reference_field
from polyjudge.protocols.registry import register_protocol
from polyjudge.protocols.spans import locate_text_spans
from polyjudge.protocols.templates import PromptTemplate
from polyjudge.protocols.tsa import merge_span_runs
from polyjudge.protocols.units import unit_messages, unit_of, unit_schema

ANSWER_FORMAT = "gemba-esa"
SEVERITIES = ("major", "minor")
# "critical" is not an ESA severity, but judges trained on MQM use it: it is read as major.
_SEVERITY_ALIASES = {"major": "major", "minor": "minor", "critical": "major"}
SCORE_RANGE = (0.0, 100.0)
_LOCATE_SCORE = json_key_locator("score")
MAX_ERRORS = 20


@dataclass(frozen=True, slots=True)
class EsaOptions:
    """Options of ``gemba-esa``: what happens to unlocatable spans and how runs are merged."""

    on_unlocated: str = field(default="keep", metadata=option(
        "an error whose text is not in the translation: 'keep' it without location or 'fail' the answer",
        signature="unlocated"))
    vote_threshold: float = field(default=0.5, metadata=option(
        "share of runs that must mark a character for it to be kept when runs are merged, in (0, 1]"))
    score_mode: ScoreMode = score_mode_field()
    # reference-based variant (polyjudge.protocols.reference)
    with_reference: bool = with_reference_field()
    ref_name: str = ref_name_field()
    # seeded few-shot examples from a labelled pool (polyjudge.protocols.fewshot)
    fewshot_pool: str | None = pool_field()
    fewshot_k: int = k_field()
    fewshot_seed: int = seed_field()
    fewshot_buckets: tuple[float, ...] = buckets_field()

    def __post_init__(self) -> None:
        check_ref_name(self.ref_name)
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
    template: PromptTemplate
    produces_spans = True
    document_units = True
    default_runs = 1
    default_temperature = 0.0
    default_aggregator = "mean"
    max_tokens = 1024

    def __init__(self, options: ProtocolOptions | None = None) -> None:
        super().__init__(options)
        self.reference = ReferenceUse.of(self.settings)
        builtin = "esa/esa_reference.jinja" if self.reference.on else "esa/esa.jinja"
        self.template = PromptTemplate.load(self.options.template, builtin)
        self.reference.check_template(self.template, "reference")
        # a template that does not print the examples gets them as user/assistant turns
        self.fewshot = pool_for(self.settings, answers_as_turns=not self.template.uses("examples"),
                                with_reference=self.reference.on)

    def signature_suffix(self) -> dict[str, str]:
        """``ref:NAME`` for a reference-based run, ``fewshot:HASH/k/seed`` with a pool (nothing otherwise)."""
        return {**self.reference.signature(), **fewshot_signature(self.fewshot)}

    # -- prompt ------------------------------------------------------------
    def messages(self, item: Item, context: DocumentContext) -> list[Message]:
        """Render the template. Variables: ``source``, ``translation``, ``source_language``/
        ``target_language`` (names, or a generic phrase), ``src_lang``/``tgt_lang`` (codes),
        ``reference`` (None when the item has none; only the ``with_reference`` prompt shows
        it, and then every item needs one), ``examples`` (few-shot examples of ``fewshot_pool``;
        a template that does not use them gets each as a user/assistant turn) and ``extra``
        (the item's extra fields)."""
        if (unit := unit_of(item)) is not None:  # --unit document: the whole unit's prompt
            return unit_messages(None, item, unit, with_spans=True)
        reference = self.reference.for_prompt(item) if self.reference.on else item.ref
        examples = self.fewshot.select(item) if self.fewshot is not None else []
        messages = self._render(item.src, item.tgt, reference, item.src_lang, item.tgt_lang, item.extra, examples)
        if examples and not self.template.uses("examples"):
            turns = [(self._render(ex["source"], ex["translation"], ex["reference"] or "", ex["src_lang"],
                                   ex["tgt_lang"], {}, [])[-1].content, ex["answer"]) for ex in examples]
            messages = insert_turns(messages, turns)
        return messages

    def _render(self, source: str, translation: str, reference: str | None, src_lang: Any, tgt_lang: Any,
                extra: dict[str, Any], examples: list[dict[str, Any]]) -> list[Message]:
        src_code = src_lang if isinstance(src_lang, str) else None
        tgt_code = tgt_lang if isinstance(tgt_lang, str) else None
        return self.template.render(
            source=source, translation=translation, reference=reference,
            source_language=language_name(src_code) or "source language",
            target_language=language_name(tgt_code) or "target language",
            src_lang=src_code, tgt_lang=tgt_code, extra=extra, examples=examples)

    def output_schema(self, item: Item) -> dict[str, Any]:
        if (unit := unit_of(item)) is not None:
            return unit_schema(unit, with_spans=True)
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
        """The judge's 0–100 score, as given (``score_mode=expected``: its expectation over 0-100)."""
        if not isinstance(annotation, dict):
            return None
        if self.score_mode == "expected":
            return self.expected_value(annotation, "score")
        value = annotation.get("score")
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value)

    def score_targets(self, annotation: Any, item: Item) -> dict[str, tuple[Locator, Collection[int]]]:
        """The top-level ``"score"`` (span texts are JSON strings, so a quoted key in them is escaped)."""
        return {"score": (_LOCATE_SCORE, range(0, 101))}

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
    if len(raw) > MAX_ERRORS:
        raise ParseFailure(f"{len(raw):,} errors; the answer schema allows at most {MAX_ERRORS}")
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
