"""Error-free detection: is this translation free of errors? (WMT26's binary task, no reference).

The judge sees the source and the translation (never a reference, even when the item has one) and
answers ``{"error_free": 1}`` or ``{"error_free": 0}``. The gold of the task is derived from human
Error Span Annotation (an ESA score of at least 85 and no marked span); the meta-evaluation of the
labels is ``polyjudge.metaeval``'s business, this protocol only produces them.

Scores (higher is better, on 0-1):

- ``score_mode=sample`` (default): 1.0 for an error-free answer, 0.0 otherwise;
- ``score_mode=expected``: the probability the judge gave to ``1`` where it wrote its digit,
  renormalised over ``0`` and ``1`` (:mod:`polyjudge.protocols.expected`, with the valid values
  {0, 1}); an answer without token log-probabilities is a recorded parse failure, never a score.

The annotation is ``{"error_free": bool, "score": 0 | 1}`` (plus ``expected`` in expected mode);
``label`` of a judgment is ``error_free``. The answer is read strictly: a JSON object whose
``error_free`` is 0, 1, true or false; anything else is a :class:`ParseFailure`.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from polyjudge.data.chat import Message
from polyjudge.data.languages import language_name
from polyjudge.data.records import DocumentContext, Item
from polyjudge.protocols.base import JudgeProtocol, ParseFailure, ProtocolOptions
from polyjudge.protocols.expected import Locator, ScoreMode, json_key_locator, score_mode_field
from polyjudge.protocols.jsonparse import parse_json_object
from polyjudge.protocols.registry import register_protocol
from polyjudge.protocols.templates import PromptTemplate
from polyjudge.protocols.units import entries_schema, unit_messages, unit_of

ANSWER_KEY = "error_free"
LABELS = (0, 1)
_LOCATE = json_key_locator(ANSWER_KEY)
# The prompt of --unit document (the segments of one document between keyed markers).
DOCUMENT_TEMPLATE = "units/document_errorfree.jinja"
_SCHEMA: dict[str, Any] = {
    "type": "object", "properties": {ANSWER_KEY: {"type": "integer", "enum": list(LABELS)}},
    "required": [ANSWER_KEY], "additionalProperties": False}


@dataclass(frozen=True, slots=True)
class ErrorFreeOptions:
    """Options of ``error-free``."""

    score_mode: ScoreMode = score_mode_field(" (here: the probability of 'error-free')")


@register_protocol()
class ErrorFree(JudgeProtocol):
    """Error-free detection (WMT26): 1 when a translation has no error, else 0; no reference"""

    name = "error-free"
    options_type = ErrorFreeOptions
    settings: ErrorFreeOptions
    template: PromptTemplate
    default_runs = 1
    default_temperature = 0.0
    max_tokens = 16
    # --unit document: each segment's entry is its own answer, {"id": "S2", "error_free": 0}
    document_units = True
    document_entries = True

    def __init__(self, options: ProtocolOptions | None = None) -> None:
        super().__init__(options)
        self.template = PromptTemplate.load(self.options.template, "errorfree/errorfree.jinja")
        self._unit_template: PromptTemplate | None = None  # --unit document's prompt, loaded when first used

    def messages(self, item: Item, context: DocumentContext) -> list[Message]:
        """Variables: ``source``, ``translation``, ``source_language``/``target_language`` (names),
        ``src_lang``/``tgt_lang`` (codes) and ``extra``; the reference is never shown."""
        if (unit := unit_of(item)) is not None:  # --unit document: the whole unit's prompt
            if self._unit_template is None:
                self._unit_template = PromptTemplate.load(None, DOCUMENT_TEMPLATE)
            return unit_messages(self._unit_template, item, unit, with_spans=False)
        return self.template.render(
            source=item.src, translation=item.tgt, src_lang=item.src_lang, tgt_lang=item.tgt_lang,
            source_language=language_name(item.src_lang) or "source language",
            target_language=language_name(item.tgt_lang) or "target language", extra=item.extra)

    def output_schema(self, item: Item) -> dict[str, Any]:
        if (unit := unit_of(item)) is not None:
            return entries_schema(unit, _SCHEMA["properties"])
        return _SCHEMA

    def parse(self, text: str, item: Item) -> dict[str, Any]:
        obj = parse_json_object(text)
        if ANSWER_KEY not in obj:
            raise ParseFailure(f"answer has no '{ANSWER_KEY}'")
        value = obj[ANSWER_KEY]
        if isinstance(value, bool):
            label = int(value)
        elif isinstance(value, int) and value in LABELS:
            label = value
        else:
            raise ParseFailure(f"'{ANSWER_KEY}' must be 0 or 1, got {value!r}")
        return {ANSWER_KEY: bool(label), "score": label}

    def score(self, annotation: Any, item: Item) -> float | None:
        """1.0/0.0 as answered; with ``score_mode=expected`` the probability of error-free."""
        if not isinstance(annotation, dict):
            return None
        if self.score_mode == "expected":
            return self.expected_value(annotation, ANSWER_KEY)
        return float(annotation["score"])

    def score_targets(self, annotation: Any, item: Item) -> dict[str, tuple[Locator, Collection[int]]]:
        return {ANSWER_KEY: (_LOCATE, LABELS)}


__all__ = ["ErrorFree", "ErrorFreeOptions"]
