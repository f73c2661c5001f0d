"""Contrastive ESA: several systems' translations of one source in one prompt, each annotated and scored.

WMT26's human evaluation is contrastive Error Span Annotation: a rater sees the source and the competing
translations side by side, marks the errors of each and scores each on 0-100. ``contrastive-esa`` asks a
judge for the same. The engine still holds one item per (system, segment); every item is put into its
source's unit by :func:`polyjudge.protocols.units.contrastive_units` (the systems that translated that
source, shown in an order drawn from ``--seed``), all items of a unit send the same prompt (one request),
and each reads its own entry of the answer::

    {"translations": [{"id": "T1", "errors": [{"span": "...", "severity": "major"}], "score": 62}, ...]}

The annotation of an item is ESA's (``score``, ``spans`` located in the item's own translation,
``problems``) plus ``unit`` with its ``label`` and ``position`` in the prompt (1-based), which the
position-bias table reads (:func:`polyjudge.analysis.position.position_bias`). Failures (never scores):
an answer that names an unknown label, repeats or leaves one out, an entry without a 0-100 ``score`` or
an ``errors`` list, and (``on_unlocated=fail``) a quoted text that is not in the translation.

Scores are ESA scores per system per segment, so the human side of a meta-evaluation is what the
existing score readers read (a TSV or JSONL of system, doc_id, seg_id, score).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from polyjudge.data.chat import Message
from polyjudge.data.errors import InputError
from polyjudge.data.records import DocumentContext, Item
from polyjudge.protocols.base import JudgeProtocol, ParseFailure, ProtocolOptions
from polyjudge.protocols.options import option
from polyjudge.protocols.registry import register_protocol
from polyjudge.protocols.templates import PromptTemplate
from polyjudge.protocols.tsa import merge_span_runs
from polyjudge.protocols.units import CONTRASTIVE, parse_unit_answer, unit_messages, unit_of, unit_schema

ANSWER_FORMAT = "contrastive-esa"
ON_UNLOCATED = ("keep", "fail")


@dataclass(frozen=True, slots=True)
class ContrastiveOptions:
    """Options of ``contrastive-esa``."""

    on_unlocated: str = field(default="keep", metadata=option(
        "a quoted error text not found in its translation: keep it without location, or fail the answer",
        signature="unlocated"))
    vote_threshold: float = field(default=0.5, metadata=option(
        "share of runs that must mark a character for merged spans"))

    def __post_init__(self) -> None:
        if self.on_unlocated not in ON_UNLOCATED:
            raise InputError(f"on_unlocated must be one of {', '.join(ON_UNLOCATED)}", field="on_unlocated")
        if not 0 < self.vote_threshold <= 1:
            raise InputError("vote_threshold must be in (0, 1]", field="vote_threshold")


@register_protocol()
class ContrastiveESA(JudgeProtocol):
    """Contrastive ESA: a source's translations side by side, error spans and a score each."""

    name = "contrastive-esa"
    options_type = ContrastiveOptions
    settings: ContrastiveOptions
    produces_spans = True
    contrasts_systems = True
    default_runs = 1
    default_temperature = 0.0
    max_tokens = 4096

    def __init__(self, options: ProtocolOptions | None = None) -> None:
        super().__init__(options)
        self.template = PromptTemplate.load(self.options.template, "units/contrastive.jinja") \
            if self.options.template else None

    def _unit(self, item: Item) -> dict[str, Any]:
        unit = unit_of(item)
        if unit is None or unit.get("kind") != CONTRASTIVE:
            raise InputError("contrastive-esa judges items grouped by source (polyjudge judge groups them); "
                             "this item has no contrastive unit", path=item.origin)
        return unit

    def messages(self, item: Item, context: DocumentContext) -> list[Message]:
        """The unit's prompt. Template variables: ``source``, ``members`` (``label``, ``system``, ``tgt``;
        in the order shown), ``key`` (the markers' code), ``source_language``, ``target_language``."""
        return unit_messages(self.template, item, self._unit(item), with_spans=True)

    def output_schema(self, item: Item) -> dict[str, Any]:
        return unit_schema(self._unit(item), with_spans=True)

    def parse(self, text: str, item: Item) -> dict[str, Any]:
        unit = unit_of(item)
        if unit is None:
            raise ParseFailure("item has no contrastive unit")
        return parse_unit_answer(text, item, unit, with_spans=True, answer_format=ANSWER_FORMAT,
                                 strict_spans=self.settings.on_unlocated == "fail")

    def score(self, annotation: Any, item: Item) -> float | None:
        value = annotation.get("score") if isinstance(annotation, dict) else None
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    def merge_runs(self, annotations: list[Any], item: Item) -> dict[str, Any] | None:
        """The runs' spans merged by character voting (scores are merged by the aggregator)."""
        return merge_span_runs(annotations, item, self.settings.vote_threshold, ANSWER_FORMAT)


__all__ = ["ContrastiveESA", "ContrastiveOptions"]
