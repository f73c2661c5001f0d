"""Error spans from an LLM judge: Tagged Span Annotation and its two ablations.

Three protocols share one prompt body (instructions, categories, severities,
precision emphasis, few-shot examples) and differ only in the answer format,
as in the TSA paper's ablation (Yeom et al., WMT 2025):

* ``tsa``: the translation copied with numbered inline tags ``<vk>...</vk>``
  (an empty pair marks an omission) plus one severity/category per tag;
* ``gemba-spans``: each error's text quoted from the translation;
* ``direct-index``: each error's start/end character offsets.

Every answer is turned into spans in code-point offsets of the *original*
translation (see :mod:`polyjudge.protocols.spans`). The annotation is::

    {"format": "tsa", "spans": [{"start", "end", "severity", "category", "text"}],
     "problems": [...], "exact": bool, "similarity": float}

A span has ``start == end`` for a located omission and ``start = end = None``
for an error without location. An answer whose spans cannot be located (an
error without its tag, a duplicate or unclosed tag, quoted text that does not
occur, offsets outside the text) or whose copy of the translation aligns too
poorly is a :class:`ParseFailure` naming the reason. The option
``on_unlocated=keep`` keeps such errors without location instead (a poor
alignment always fails).

Options (:class:`SpanOptions`): ``weights`` (``{"major": 5, "minor": 1}``),
``on_unlocated`` (fail), ``min_similarity`` (0.9), ``vote_threshold`` (0.5),
``precision_emphasis`` (true), ``with_reference`` (false), ``ref_name`` (refA),
and ``fewshot_pool``/``fewshot_k``/``fewshot_seed``/``fewshot_buckets``
(examples from a labelled pool in place of the built-in ones, see
:mod:`polyjudge.protocols.fewshot`).

``precision_emphasis=false`` is the paper's Table 2 ablation "TSA (no
precision emphasis)": the same prompt without the instructions that ask for
confident, minimal spans and prefer a missed error to a false alarm (the
signature then says ``precision:off``). ``with_reference=true`` shows the
item's reference translation too (see :mod:`polyjudge.protocols.reference`).
Either one switches the built-in prompt to ``tsa/prompt_variants.jinja``,
which renders exactly as ``tsa/prompt.jinja`` when both are at their
defaults (a test holds the two together), so the default signature and
prompt hash stay as they were.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any, ClassVar

from polyjudge.aggregate.spanvote import vote_spans
from polyjudge.data.chat import Message
from polyjudge.data.errors import InputError
from polyjudge.data.languages import language_name
from polyjudge.data.records import DocumentContext, Item
from polyjudge.protocols.base import JudgeProtocol, ParseFailure, ProtocolOptions
from polyjudge.protocols.fewshot import (
    buckets_field,
    fewshot_signature,
    k_field,
    pool_field,
    pool_for,
    seed_field,
)
from polyjudge.protocols.jsonparse import parse_json_object
from polyjudge.protocols.options import option
from polyjudge.protocols.reference import ReferenceUse, check_ref_name, ref_name_field, with_reference_field
from polyjudge.protocols.registry import register_protocol
from polyjudge.protocols.spans import (
    Extraction,
    extract_tagged_spans,
    locate_text_spans,
    tag_translation,
    validate_index_spans,
)
from polyjudge.protocols.templates import PromptTemplate
from polyjudge.protocols.units import entries_schema, unit_messages, unit_of

SEVERITIES = ("major", "minor")
DEFAULT_WEIGHTS = {"major": 5.0, "minor": 1.0}
MAX_ERRORS = 20
_SEVERITY_ALIASES = {"major": "major", "minor": "minor", "critical": "major"}
# The prompt of --unit document (the segments of one document between keyed markers).
DOCUMENT_TEMPLATE = "units/document_spans.jinja"


def _example_spans(translation: str, errors: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """Offsets of an example's errors: ``span`` (the erroneous text) or ``before`` (an omission
    just before this text); ValueError when one does not occur in the translation."""
    spans = []
    for err in errors:
        if "span" in err:
            s = translation.index(err["span"])
            spans.append((s, s + len(err["span"])))
        else:
            s = translation.index(err["before"])
            spans.append((s, s))
    return spans


def _load_examples() -> list[dict[str, Any]]:
    raw = resources.files("polyjudge").joinpath("templates", "tsa", "examples.json")
    examples: list[dict[str, Any]] = json.loads(raw.read_text(encoding="utf-8"))
    for ex in examples:
        ex["spans"] = _example_spans(ex["translation"], ex["errors"])
    return examples


def _default_weights() -> dict[str, float]:
    return dict(DEFAULT_WEIGHTS)


def _weights_text(weights: Mapping[str, float]) -> str:
    return ",".join(f"{k}={v:g}" for k, v in sorted(weights.items()))


@dataclass(frozen=True, slots=True)
class SpanOptions:
    """Options of the span protocols; ``weights`` holds the defaults merged with the given keys."""

    weights: dict[str, float] = field(default_factory=_default_weights, metadata=option(
        "points per error severity; given severities replace the defaults",
        signature="weights", format=_weights_text))
    on_unlocated: str = field(default="fail", metadata=option(
        "an error that cannot be located: 'fail' the answer or 'keep' it without location",
        signature="unlocated"))
    min_similarity: float = field(default=0.9, metadata=option(
        "least similarity of the answer's copy of the translation to the translation",
        signature="min_sim"))
    vote_threshold: float = field(default=0.5, metadata=option(
        "share of runs that must mark a character for it to be kept when runs are merged, in (0, 1]"))
    precision_emphasis: bool = field(default=True, metadata=option(
        "ask for confident, minimal spans (the TSA paper's main setting); false = its 'no precision "
        "emphasis' ablation"))
    with_reference: bool = with_reference_field()
    ref_name: str = ref_name_field()
    # seeded few-shot examples from a labelled pool, in place of the built-in ones
    fewshot_pool: str | None = pool_field()
    fewshot_k: int = k_field()
    fewshot_seed: int = seed_field()
    fewshot_buckets: tuple[float, ...] = buckets_field()

    def __post_init__(self) -> None:
        check_ref_name(self.ref_name)
        weights = _default_weights()
        weights.update({str(k).lower(): float(v) for k, v in self.weights.items()})
        object.__setattr__(self, "weights", weights)
        if self.on_unlocated not in ("fail", "keep"):
            raise InputError("on_unlocated must be 'fail' or 'keep'", field="on_unlocated")
        if not 0.0 < self.vote_threshold <= 1.0:
            raise InputError("vote_threshold must be in (0, 1]", field="vote_threshold")


class _SpanProtocol(JudgeProtocol):
    """Shared prompt, scoring and run merging; subclasses read their answer format."""

    answer_format: ClassVar[str]
    options_type = SpanOptions
    settings: SpanOptions
    template: PromptTemplate
    produces_spans = True
    default_runs = 1
    default_temperature = 0.0
    default_aggregator = "mean"
    max_tokens = 2048  # the TSA answer repeats the whole translation
    # --unit document: each segment's entry is an answer in the protocol's own format, about that segment
    document_units = True
    document_entries = True

    def __init__(self, options: ProtocolOptions | None = None) -> None:
        super().__init__(options)
        self.reference = ReferenceUse.of(self.settings)
        variant = self.reference.on or not self.settings.precision_emphasis
        self.template = PromptTemplate.load(self.options.template,
                                            "tsa/prompt_variants.jinja" if variant else "tsa/prompt.jinja")
        self.reference.check_template(self.template, "reference")
        if not self.settings.precision_emphasis and not self.template.uses("precision_emphasis"):
            raise InputError("precision_emphasis is off, but the template never uses 'precision_emphasis', "
                             "so the prompt would not change", path=self.template.origin,
                             field="precision_emphasis")
        self.examples = _load_examples()
        self._unit_template: PromptTemplate | None = None  # --unit document's prompt, loaded when first used
        # pool answers come from their errors, rendered in this protocol's format (see _pool_answer)
        self.fewshot = pool_for(self.settings, answers_as_turns=False, with_reference=self.reference.on)
        # each pool example's answer in this protocol's format, by pool line (checked before anything is sent)
        self._pool_answers = {ex.view["line"]: self._pool_answer(ex.view) for ex in self.fewshot.examples} \
            if self.fewshot is not None else {}

    def _pool_answer(self, ex: dict[str, Any]) -> str:
        """A pool example's answer: from its ``errors`` (the layout of ``tsa/examples.json``: ``span`` or
        ``before``, ``severity``, ``category``), rendered in this format, else its ``answer`` as given."""
        assert self.fewshot is not None
        errors = ex["fields"].get("errors")
        if errors is None:
            if not ex["answer"].strip():
                raise InputError("a few-shot example needs 'errors' (span/before, severity, category) or the "
                                 "'answer' to show", path=self.fewshot.path, line=ex["line"], field="errors")
            return str(ex["answer"])
        try:
            if not isinstance(errors, list) or not all(isinstance(e, dict) and isinstance(
                    e.get("span", e.get("before")), str) for e in errors):
                raise ValueError("each error needs a 'span' or 'before' string")
            spans = _example_spans(ex["translation"], errors)
            shown = [{"severity": str(e.get("severity", "")), "category": str(e.get("category", ""))}
                     for e in errors]
        except ValueError as exc:
            reason = str(exc) if "needs" in str(exc) else "an error's text does not occur in the translation"
            raise InputError(reason, path=self.fewshot.path, line=ex["line"], field="errors") from None
        return json.dumps(self.render_answer(ex["translation"], spans, shown), ensure_ascii=False)

    def signature_prefix(self) -> dict[str, str]:
        return {"format": self.answer_format}

    def signature_suffix(self) -> dict[str, str]:
        # Only the non-default settings, so signatures of default runs stay as they were.
        parts = self.reference.signature()
        if not self.settings.precision_emphasis:
            parts["precision"] = "off"
        return {**parts, **fewshot_signature(self.fewshot)}

    # -- prompt ------------------------------------------------------------
    def messages(self, item: Item, context: DocumentContext) -> list[Message]:
        """Render the template. Variables: ``format``, ``examples`` (each with ``source``,
        ``translation``, ``reference``, languages and the rendered ``answer``), ``source``,
        ``translation``, ``source_language``/``target_language``, ``reference`` (the
        reference with ``with_reference``, else None) and ``precision_emphasis``."""
        if (unit := unit_of(item)) is not None:  # --unit document: the whole unit's prompt
            if self._unit_template is None:
                self._unit_template = PromptTemplate.load(None, DOCUMENT_TEMPLATE)
            return unit_messages(self._unit_template, item, unit, with_spans=True, format=self.answer_format)
        reference = self.reference.for_prompt(item)
        if self.fewshot is not None:  # the pool's examples replace the built-in ones
            examples = [dict(ex, answer=self._pool_answers[ex["line"]],
                             source_language=ex["source_language"] or "source language",
                             target_language=ex["target_language"] or "target language")
                        for ex in self.fewshot.select(item)]
        else:
            examples = [dict(ex, answer=json.dumps(self.render_answer(ex["translation"], ex["spans"],
                                                                      ex["errors"]), ensure_ascii=False))
                        for ex in self.examples]
        return self.template.render(
            format=self.answer_format, examples=examples, source=item.src, translation=item.tgt,
            source_language=language_name(item.src_lang) or "source language",
            target_language=language_name(item.tgt_lang) or "target language",
            reference=reference, precision_emphasis=self.settings.precision_emphasis)

    def render_answer(self, translation: str, spans: list[tuple[int, int]],
                      errors: list[dict[str, Any]]) -> dict[str, Any]:
        raise NotImplementedError

    def output_schema(self, item: Item) -> dict[str, Any]:
        if (unit := unit_of(item)) is not None:  # bounds of the document's longest translation
            longest = replace(item, tgt=max((m["tgt"] for m in unit["members"]), key=len))
            return entries_schema(unit, self._answer_properties(longest))
        return {"type": "object", "properties": self._answer_properties(item),
                "required": list(self._answer_properties(item)), "additionalProperties": False}

    def _error_schema(self, extra: dict[str, Any]) -> dict[str, Any]:
        props = dict(extra)
        props["severity"] = {"type": "string", "enum": list(SEVERITIES)}
        props["category"] = {"type": "string", "maxLength": 60}
        return {"type": "array", "maxItems": MAX_ERRORS,
                "items": {"type": "object", "properties": props, "required": list(props),
                          "additionalProperties": False}}

    def _answer_properties(self, item: Item) -> dict[str, Any]:
        raise NotImplementedError

    # -- answer ------------------------------------------------------------
    def _errors(self, obj: dict[str, Any]) -> list[dict[str, Any]]:
        errors = obj.get("errors")
        if errors is None:
            raise ParseFailure("answer has no 'errors' list")
        if not isinstance(errors, list):
            raise ParseFailure("'errors' is not a list")
        if len(errors) > MAX_ERRORS:
            raise ParseFailure(f"{len(errors):,} errors; the answer schema allows at most {MAX_ERRORS}")
        out = []
        for k, err in enumerate(errors):
            if not isinstance(err, dict):
                raise ParseFailure(f"error {k} is not an object")
            sev = _SEVERITY_ALIASES.get(str(err.get("severity", "")).strip().lower())
            if sev is None:
                raise ParseFailure(f"error {k} has unknown severity {err.get('severity')!r}")
            cat = err.get("category", "")
            if not isinstance(cat, str):
                raise ParseFailure(f"error {k} has a category that is not a string")
            out.append(dict(err, severity=sev, category=cat.strip().lower()))
        return out

    def _annotation(self, x: Extraction, errors: list[dict[str, Any]], item: Item,
                    **extra: Any) -> dict[str, Any]:
        if x.fatal and (self.settings.on_unlocated == "fail" or not x.aligned):
            raise ParseFailure("; ".join(x.fatal))
        spans = []
        for loc, err in zip(x.spans, errors):
            text = None if loc.start is None else item.tgt[loc.start:loc.end]
            spans.append({"start": loc.start, "end": loc.end, "severity": err["severity"],
                          "category": err["category"], "text": text})
        ann = {"format": self.answer_format, "spans": spans, "problems": x.problems + x.fatal,
               "exact": x.exact, "similarity": round(x.similarity, 4)}
        ann.update(extra)
        return ann

    def score(self, annotation: Any, item: Item) -> float | None:
        """Negated MQM-weighted error count (major 5, minor 1 by default)."""
        if not isinstance(annotation, dict) or not isinstance(annotation.get("spans"), list):
            return None
        weights = self.settings.weights
        return -float(sum(weights.get(s["severity"], 0.0) for s in annotation["spans"]))

    def merge_runs(self, annotations: list[Any], item: Item) -> dict[str, Any] | None:
        """Character-level voting across runs (see :func:`vote_spans`)."""
        return merge_span_runs(annotations, item, self.settings.vote_threshold, self.answer_format)


def merge_span_runs(annotations: list[Any], item: Item, threshold: float,
                    answer_format: str) -> dict[str, Any] | None:
    """The span annotations of several runs merged by character voting, with each span's text."""
    anns = [a for a in annotations if isinstance(a, dict) and isinstance(a.get("spans"), list)]
    if not anns:
        return None
    spans, problems = vote_spans([a["spans"] for a in anns], len(item.tgt), threshold)
    for s in spans:
        s["text"] = item.tgt[s["start"]:s["end"]]
    return {"format": answer_format, "spans": spans, "problems": problems, "merged_runs": len(anns),
            "vote_threshold": threshold}


@register_protocol()
class TaggedSpanAnnotation(_SpanProtocol):
    """TSA: the translation copied with numbered inline error tags (Yeom et al., WMT 2025)."""

    name = "tsa"
    answer_format = "tsa"
    copies_translation = True

    def render_answer(self, translation: str, spans: list[tuple[int, int]],
                      errors: list[dict[str, Any]]) -> dict[str, Any]:
        return {"annotated_translation": tag_translation(translation, spans),
                "errors": [{"severity": e["severity"], "category": e["category"]} for e in errors]}

    def _answer_properties(self, item: Item) -> dict[str, Any]:
        # room for the copy, its tags, and a little reformatting
        limit = 2 * len(item.tgt) + 14 * MAX_ERRORS + 64
        return {"annotated_translation": {"type": "string", "maxLength": limit},
                "errors": self._error_schema({})}

    def parse(self, text: str, item: Item) -> dict[str, Any]:
        obj = parse_json_object(text)
        annotated = obj.get("annotated_translation")
        if not isinstance(annotated, str):
            raise ParseFailure("answer has no 'annotated_translation' string")
        errors = self._errors(obj)
        x = extract_tagged_spans(annotated, item.tgt, len(errors),
                                 min_similarity=self.settings.min_similarity)
        return self._annotation(x, errors, item, annotated_translation=annotated)


@register_protocol()
class GembaSpans(_SpanProtocol):
    """TSA ablation: each error quoted from the translation and located by search."""

    name = "gemba-spans"
    answer_format = "gemba-spans"

    def render_answer(self, translation: str, spans: list[tuple[int, int]],
                      errors: list[dict[str, Any]]) -> dict[str, Any]:
        return {"errors": [{"span": translation[s:e], "severity": err["severity"],
                            "category": err["category"]} for (s, e), err in zip(spans, errors)]}

    def _answer_properties(self, item: Item) -> dict[str, Any]:
        return {"errors": self._error_schema({"span": {"type": "string",
                                                       "maxLength": len(item.tgt) + 16}})}

    def parse(self, text: str, item: Item) -> dict[str, Any]:
        errors = self._errors(parse_json_object(text))
        quotes: list[str | None] = []
        for k, err in enumerate(errors):
            q = err.get("span")
            if q is not None and not isinstance(q, str):
                raise ParseFailure(f"error {k} has a 'span' that is not a string")
            quotes.append(q)
        return self._annotation(locate_text_spans(quotes, item.tgt), errors, item)


@register_protocol()
class DirectIndex(_SpanProtocol):
    """TSA ablation: each error given as start/end character offsets."""

    name = "direct-index"
    answer_format = "direct-index"

    def render_answer(self, translation: str, spans: list[tuple[int, int]],
                      errors: list[dict[str, Any]]) -> dict[str, Any]:
        return {"errors": [{"start": s, "end": e, "severity": err["severity"],
                            "category": err["category"]} for (s, e), err in zip(spans, errors)]}

    def _answer_properties(self, item: Item) -> dict[str, Any]:
        n = len(item.tgt)
        bound = {"type": "integer", "minimum": 0, "maximum": n}
        return {"errors": self._error_schema({"start": bound, "end": bound})}

    def parse(self, text: str, item: Item) -> dict[str, Any]:
        errors = self._errors(parse_json_object(text))
        bounds = [(e.get("start"), e.get("end")) for e in errors]
        return self._annotation(validate_index_spans(bounds, item.tgt), errors, item)
