"""Direct assessment: one 0–100 quality score per segment (GEMBA-DA style).

The smallest complete protocol; it exercises the whole pipeline and is the
default of ``polyjudge score`` and ``polyjudge demo``.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from polyjudge.data.chat import Message
from polyjudge.data.languages import language_name
from polyjudge.data.records import DocumentContext, Item
from polyjudge.protocols.base import JudgeProtocol, ParseFailure, ProtocolOptions
from polyjudge.protocols.expected import Locator, ScoreMode, json_key_locator, regex_locator, score_mode_field
from polyjudge.protocols.jsonparse import find_json_object, json_object_in
from polyjudge.protocols.registry import register_protocol
from polyjudge.protocols.templates import PromptTemplate
from polyjudge.protocols.units import unit_messages, unit_of, unit_schema

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?!\w|\.\d)")
SCORES = range(0, 101)
# The score of a JSON answer, else the (one) bare number of a plain answer.
_LOCATE_JSON = json_key_locator("score")
_LOCATE_BARE = regex_locator(r"(?<![\w.\-])(?P<n>\d)")


@dataclass(frozen=True, slots=True)
class DaOptions:
    """Options of ``da``."""

    score_mode: ScoreMode = score_mode_field()


_SCORE_SCHEMA: dict[str, Any] = {
    "type": "object", "properties": {"score": {"type": "integer", "minimum": 0, "maximum": 100}},
    "required": ["score"], "additionalProperties": False}


@register_protocol()
class DirectAssessment(JudgeProtocol):
    """GEMBA-DA: one 0-100 quality score per segment, as a bare number or {"score": N}."""

    name = "da"
    options_type = DaOptions
    settings: DaOptions
    document_units = True
    template: PromptTemplate
    default_runs = 1
    default_temperature = 0.0
    max_tokens = 24

    def __init__(self, options: ProtocolOptions | None = None) -> None:
        super().__init__(options)
        self.template = PromptTemplate.load(self.options.template, "da/da.jinja")

    def messages(self, item: Item, context: DocumentContext) -> list[Message]:
        if (unit := unit_of(item)) is not None:  # --unit document: the whole unit's prompt
            return unit_messages(None, item, unit, with_spans=False)
        return self.template.render(
            src=item.src, tgt=item.tgt, ref=item.ref, src_lang=item.src_lang, tgt_lang=item.tgt_lang,
            src_lang_name=language_name(item.src_lang) or "source-language",
            tgt_lang_name=language_name(item.tgt_lang) or "target-language", extra=item.extra)

    def output_schema(self, item: Item) -> dict[str, Any]:
        """The same for every item: one object (never changed), so a plan writes its JSON once."""
        if (unit := unit_of(item)) is not None:
            return unit_schema(unit, with_spans=False)
        return _SCORE_SCHEMA

    def parse(self, text: str, item: Item) -> dict[str, Any]:
        """``{"score": N}``; without JSON, a text holding exactly one number.

        Several different numbers, or a number outside 0–100, is a failure.
        """
        obj = json_object_in(text)
        if obj is not None:
            value = obj.get("score")
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ParseFailure("JSON answer has no numeric 'score'")
        else:
            numbers = {float(m) for m in _NUMBER.findall(text)}
            if len(numbers) != 1:
                raise ParseFailure("no score in the answer" if not numbers
                                   else f"ambiguous answer: {len(numbers)} different numbers")
            value = numbers.pop()
        if not 0 <= value <= 100:
            raise ParseFailure(f"score {value} outside 0–100")
        return {"score": float(value)}

    def score(self, annotation: dict[str, Any], item: Item) -> float | None:
        """The answer's score, or with ``score_mode=expected`` its expectation over 0-100."""
        if self.score_mode == "expected":
            return self.expected_value(annotation, "score")
        return float(annotation["score"])

    def score_targets(self, annotation: Any, item: Item) -> dict[str, tuple[Locator, Collection[int]]]:
        def locate(text: str) -> int | None:
            return _LOCATE_JSON(text) if find_json_object(text) is not None else _LOCATE_BARE(text)
        return {"score": (locate, SCORES)}
