"""GEMBA-MQM V2: MQM error annotation as JSON, judged segment by segment.

The judge gets a system instruction (severities, error typology, a one-shot
example, and the full source document as context) and then one user message
per segment holding a JSON object with the source, the target and the
language names. It answers ``{"errors": {"critical": [...], "major": [...],
"minor": [...]}}`` with ``{"type", "desc"}`` objects. Every segment is sent
with the same system message and no history of earlier segments, as in the
paper. Published defaults: temperature 0.4, ten runs merged with ``rrwa``.

Output schema (for backends with structured output): ``{"errors": {critical,
major, minor}}`` with at most ``max_errors_per_severity`` errors per list
(8 by default, small enough for grammar-constrained decoders; 0 lifts the
bound). The paper's own answer format repeats the input fields before
``"errors"``; with ``echo_fields=auto`` (the default) the schema allows
``source_language``, ``source``, ``target_language`` and ``target`` as
optional keys whenever a replacement prompt is loaded with
``--prompt-template``, so a published prompt runs unchanged, while the
built-in prompt (which asks for ``"errors"`` only) keeps its exact schema.
``allow``/``forbid`` choose explicitly. The parser accepts echoed keys either way.

Reference-based variant (``with_reference=true``, ``--with-reference``): the
segment object also holds ``"reference"`` (a human translation, shown as one
correct translation among many), the built-in prompt is
``mqm/mqm_reference.jinja``, every item needs ``ref``, and the signature and
mt-metrics-eval name record it (see :mod:`polyjudge.protocols.reference`).

Parsing policy (what is accepted vs. a :class:`ParseFailure`), chosen so that
every accepted answer has an unambiguous MQM score and nothing is guessed:

accepted
  * text around the object, code fences (the first complete JSON object is used);
  * extra top-level keys (the paper's format echoes source/target and
    languages; anything else is ignored);
  * severity lists at the top level instead of under ``"errors"``;
  * ``"errors"`` as a list of objects that each carry a ``"severity"``;
  * severity keys in any letter case; ``null`` for an empty list;
  * a ``"neutral"`` or ``"no-error"`` list (weight 0, dropped);
  * extra keys inside an error object (ignored); a missing ``"desc"``;
    ``"category"`` instead of ``"type"``; a missing type (scored as ``other``);
  * a plain string instead of an error object: the severity list it sits in
    decides its weight; its type is the leading known type name if it starts
    with one (``"fluency/punctuation: comma missing"``), else ``other``.

a failure
  * no JSON object, or a truncated one (a cut answer may have lost errors, so
    scoring it would understate them);
  * a JSON value that is not an object, or an object with no errors at all
    (neither ``"errors"`` nor a severity key);
  * an unknown severity key (``"severe"``, ``"blocker"``): its weight is unknown;
  * an error that is neither an object nor a string (number, nested list...),
    a severity value that is not a list, an error type that is not a string.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import polyjudge.aggregate.rrwa  # noqa: F401  (registers rrwa, geo, ... as run aggregators)
from polyjudge.aggregate.mqm import SEVERITIES, MQMWeights, llm_mqm_score
from polyjudge.data.chat import Message
from polyjudge.data.errors import InputError
from polyjudge.data.languages import language_name
from polyjudge.data.records import DocumentContext, Item
from polyjudge.protocols.base import JudgeProtocol, ParseFailure, ProtocolOptions
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
from polyjudge.protocols.units import check_within_segment, entries_schema, unit_messages, unit_of

ERROR_TYPES = (
    "accuracy/addition", "accuracy/mistranslation", "accuracy/omission",
    "accuracy/untranslated text",
    "fluency/character encoding", "fluency/grammar", "fluency/inconsistency",
    "fluency/punctuation", "fluency/register", "fluency/spelling",
    "style/awkward",
    "terminology/inappropriate for context", "terminology/inconsistent use",
    "non-translation", "other",
)
# Severity keys that carry no weight and are dropped when present.
IGNORED_SEVERITIES = ("neutral", "no-error", "no_error", "none")
# Bounds of the JSON schema: small enough for grammar-constrained decoders.
MAX_ERRORS_PER_SEVERITY = 8
MAX_DESC_CHARS = 240
# Errors per severity the parser reads when the schema sets no bound (max_errors_per_severity=0).
HARD_MAX_ERRORS_PER_SEVERITY = 100
# The input fields the paper's answer format repeats, in its order.
ECHO_KEYS = ("source_language", "source", "target_language", "target")
# The same, with the reference of a reference-based run (where the segment object holds it).
ECHO_KEYS_WITH_REFERENCE = ("source_language", "source", "target_language", "reference", "target")
# The prompt of --unit document (the segments of one document between keyed markers).
DOCUMENT_TEMPLATE = "units/document_mqm.jinja"
_TYPES_LONGEST_FIRST = sorted(ERROR_TYPES, key=len, reverse=True)


def normalise_type(value: str) -> str:
    """``" Fluency / Punctuation "`` -> ``"fluency/punctuation"``."""
    t = value.strip().lower()
    if t.isascii() and not _NOT_PLAIN.search(t):
        return t  # already one ASCII space between words and none around a slash: the regexes change nothing
    t = re.sub(r"\s*/\s*", "/", t)
    return re.sub(r"\s+", " ", t)


# What the two substitutions of normalise_type act on in ASCII text: whitespace other than one space, runs
# of spaces, a space beside a slash.
_NOT_PLAIN = re.compile(r"[\t\n\x0b\x0c\r\x1c-\x1f]|  | /|/ ")


def _error_from_string(text: str) -> dict[str, str]:
    low = normalise_type(text)
    for t in _TYPES_LONGEST_FIRST:
        if low.startswith(t) and (len(low) == len(t) or not low[len(t)].isalnum()):
            return {"type": t, "desc": text.strip()}
    return {"type": "other", "desc": text.strip()}


def _error_from_value(value: Any, where: str) -> dict[str, str]:
    if isinstance(value, str):
        return _error_from_string(value)
    if not isinstance(value, dict):
        raise ParseFailure(f"{where}: an error must be an object or a string, "
                           f"got {type(value).__name__}")
    typ = value.get("type", value.get("category"))
    if typ is None:
        typ = "other"
    if not isinstance(typ, str):
        raise ParseFailure(f"{where}: error type must be a string, got {type(typ).__name__}")
    desc = value.get("desc", value.get("description", ""))
    return {"type": normalise_type(typ) or "other", "desc": desc if isinstance(desc, str) else json.dumps(desc)}


def parse_mqm_answer(text: str) -> dict[str, Any]:
    """Normalise a judge's answer to ``{"errors": {sev: [{"type","desc"}]}}`` (policy above)."""
    obj = parse_json_object(text)
    raw: Any
    if "errors" in obj:
        raw = obj["errors"]
    else:
        sev_keys = {k for k in obj if k.lower() in SEVERITIES or k.lower() in IGNORED_SEVERITIES}
        if not sev_keys:
            raise ParseFailure("the answer has no 'errors' object")
        raw = {k: v for k, v in obj.items() if k not in ECHO_KEYS_WITH_REFERENCE}
    out: dict[str, list[dict[str, str]]] = {s: [] for s in SEVERITIES}
    if raw is None:
        return {"errors": out}
    if isinstance(raw, list):  # [{"severity": "major", "type": ..., "desc": ...}, ...]
        for i, err in enumerate(raw):
            if not isinstance(err, dict) or not isinstance(err.get("severity"), str):
                raise ParseFailure(f"errors[{i}]: a list of errors needs objects with a 'severity'")
            sev = err["severity"].strip().lower()
            if sev in IGNORED_SEVERITIES:
                continue
            if sev not in SEVERITIES:
                raise ParseFailure(f"errors[{i}]: unknown severity '{err['severity']}'")
            out[sev].append(_error_from_value(err, f"errors[{i}]"))
        return {"errors": out}
    if not isinstance(raw, dict):
        raise ParseFailure(f"'errors' must be an object, got {type(raw).__name__}")
    for key, items in raw.items():
        sev = key.strip().lower()
        if sev in IGNORED_SEVERITIES:
            continue
        if sev not in SEVERITIES:
            raise ParseFailure(f"unknown severity '{key}'")
        if items is None:
            continue
        if not isinstance(items, list):
            raise ParseFailure(f"'{key}' must be a list, got {type(items).__name__}")
        found = out[sev]
        for i, v in enumerate(items):
            found.append(_plain_error(v) or _error_from_value(v, f"{key}[{i}]"))
    return {"errors": out}


def _plain_error(value: Any) -> dict[str, str] | None:
    """:func:`_error_from_value` of the usual error, an object whose type and description are strings
    (None for anything else, which the full function handles): a million are read per large run."""
    if type(value) is not dict:
        return None
    typ = value.get("type", value.get("category"))
    desc = value.get("desc", value.get("description", ""))
    if type(typ) is not str or type(desc) is not str:
        return None
    return {"type": normalise_type(typ) or "other", "desc": desc}


ECHO_CHOICES = ("auto", "allow", "forbid")


@dataclass(frozen=True, slots=True)
class MQMOptions:
    """How the errors of an ``mqm`` answer become points (``scoring`` is the result), and
    what the answer schema allows."""

    weights: dict[str, float] = field(default_factory=dict, metadata=option(
        "points per error by MQMWeights field: critical, major, minor, minor_punctuation, "
        "neutral, non_translation, max_errors, cap"))
    classic: bool = field(default=False, metadata=option(
        "first GEMBA-MQM scoring: at most max_errors errors count, the total capped at cap"))
    max_errors_per_severity: int = field(default=MAX_ERRORS_PER_SEVERITY, metadata=option(
        "most errors per severity list the answer schema allows (structured output); 0 = no bound"))
    echo_fields: str = field(default="auto", metadata=option(
        "answer schema allows the echoed input fields (source, target, languages): 'allow', "
        "'forbid', or 'auto' (allowed with a replacement --prompt-template)"))
    with_reference: bool = with_reference_field()
    ref_name: str = ref_name_field()
    # seeded few-shot examples from a labelled pool (polyjudge.protocols.fewshot)
    fewshot_pool: str | None = pool_field()
    fewshot_k: int = k_field()
    fewshot_seed: int = seed_field()
    fewshot_buckets: tuple[float, ...] = buckets_field()
    # Resolved from the weight options; the signature records it, so it
    # changes whenever a score would.
    scoring: MQMWeights = field(init=False, compare=False, metadata=option(
        "weights in effect", signature="weights", format=MQMWeights.signature))

    def __post_init__(self) -> None:
        given: dict[str, Any] = {"weights": dict(self.weights)}
        if self.classic or "classic" not in self.weights:
            given["classic"] = self.classic
        try:
            scoring = MQMWeights.from_options(given)
        except ValueError as exc:  # an unknown weight name
            raise InputError(str(exc), field="weights") from None
        object.__setattr__(self, "scoring", scoring)
        if self.max_errors_per_severity < 0:
            raise InputError("max_errors_per_severity must be >= 0 (0 = no bound)",
                             field="max_errors_per_severity")
        if self.echo_fields not in ECHO_CHOICES:
            raise InputError(f"echo_fields must be one of {', '.join(ECHO_CHOICES)}, not {self.echo_fields!r}",
                             field="echo_fields")
        check_ref_name(self.ref_name)


@register_protocol()
class GembaMQM(JudgeProtocol):
    """GEMBA-MQM V2: MQM errors by severity as JSON, 10 runs merged by RRWA."""

    name = "mqm"
    options_type = MQMOptions
    settings: MQMOptions
    template: PromptTemplate
    default_runs = 10
    default_temperature = 0.4
    default_aggregator = "rrwa"
    max_tokens = 1536
    # --unit document: each segment's entry is an mqm answer whose errors also quote their span
    document_units = True
    document_entries = True

    def __init__(self, options: ProtocolOptions | None = None) -> None:
        super().__init__(options)
        self.reference = ReferenceUse.of(self.settings)
        builtin = "mqm/mqm_reference.jinja" if self.reference.on else "mqm/mqm.jinja"
        self.template = PromptTemplate.load(self.options.template, builtin)
        self.reference.check_template(self.template, "reference", "segment_json")
        self.weights = self.settings.scoring
        self._unit_template: PromptTemplate | None = None  # --unit document's prompt, loaded when first used
        # a template that does not print the examples gets them as user/assistant turns
        self.fewshot = pool_for(self.settings, answers_as_turns=not self.template.uses("examples"),
                                with_reference=self.reference.on)

    @property
    def echo_allowed(self) -> bool:
        """Whether the answer schema lets the judge repeat the input fields (see the module doc)."""
        if self.settings.echo_fields == "auto":
            return self.options.template is not None
        return self.settings.echo_fields == "allow"

    def signature_suffix(self) -> dict[str, str]:
        # Schema parts only when they differ from the built-in prompt's schema, so that
        # signatures of runs made before these options existed stay as they were.
        parts = {"context": "doc" if self.options.use_context else "none", **self.reference.signature(),
                 **fewshot_signature(self.fewshot)}
        if self.settings.max_errors_per_severity != MAX_ERRORS_PER_SEVERITY:
            parts["schema_cap"] = str(self.settings.max_errors_per_severity or "none")
        if self.echo_allowed:
            parts["schema_echo"] = "yes"
        return parts

    # -- prompt ------------------------------------------------------------
    def segment_payload(self, item: Item) -> dict[str, str]:
        """The JSON object sent for one segment (languages omitted when unknown; the
        reference only in a reference-based run, where a missing one is an InputError)."""
        payload: dict[str, str] = {}
        src_name, tgt_name = language_name(item.src_lang), language_name(item.tgt_lang)
        if src_name:
            payload["source_language"] = src_name
        payload["source"] = item.src
        if tgt_name:
            payload["target_language"] = tgt_name
        reference = self.reference.for_prompt(item)
        if reference is not None:
            payload["reference"] = reference
        payload["target"] = item.tgt
        return payload

    def messages(self, item: Item, context: DocumentContext) -> list[Message]:
        """Render the template. Variables a replacement template can use:
        ``segment_json`` (the payload as indented JSON), ``document`` (source
        document, "" without context), ``use_context``, ``source``, ``target``,
        ``source_language``/``target_language`` (names or None), ``src_lang``/
        ``tgt_lang`` (codes), ``reference`` (the reference translation with
        ``with_reference``, else None), ``examples`` (the few-shot examples of
        ``fewshot_pool``, see :mod:`polyjudge.protocols.fewshot`; a template that
        does not use them gets each as a user/assistant turn before the segment)
        and ``extra`` (the item's extra fields)."""
        if (unit := unit_of(item)) is not None:  # --unit document: the whole unit's prompt
            if self._unit_template is None:
                self._unit_template = PromptTemplate.load(None, DOCUMENT_TEMPLATE)
            return unit_messages(self._unit_template, item, unit, with_spans=True)
        # A one-sentence "document" is the segment itself: no context section.
        document = ""
        if self.options.use_context and len(context.sources) > 1:
            document = context.text
        payload = self.segment_payload(item)
        examples = self.fewshot.select(item) if self.fewshot is not None else []
        messages = self.template.render(
            segment_json=json.dumps(payload, ensure_ascii=False, indent=2),
            document=document, use_context=self.options.use_context,
            source=item.src, target=item.tgt, reference=payload.get("reference"),
            source_language=payload.get("source_language"),
            target_language=payload.get("target_language"),
            src_lang=item.src_lang, tgt_lang=item.tgt_lang, extra=item.extra, examples=examples)
        if examples and not self.template.uses("examples"):
            messages = insert_turns(messages, [(self._example_json(ex), ex["answer"]) for ex in examples])
        return messages

    def _example_json(self, ex: dict[str, Any]) -> str:
        """A few-shot example as the segment object the judge gets (its reference when it has one)."""
        shown: dict[str, str] = {}
        if ex["source_language"]:
            shown["source_language"] = ex["source_language"]
        shown["source"] = ex["source"]
        if ex["target_language"]:
            shown["target_language"] = ex["target_language"]
        if self.reference.on and isinstance(ex["reference"], str):
            shown["reference"] = ex["reference"]
        shown["target"] = ex["translation"]
        return json.dumps(shown, ensure_ascii=False, indent=2)

    def output_schema(self, item: Item) -> dict[str, Any]:
        unit = unit_of(item)
        error_props: dict[str, Any] = {
            "type": {"type": "string", "enum": list(ERROR_TYPES)},
            "desc": {"type": "string", "maxLength": MAX_DESC_CHARS},
        }
        if unit is not None:  # --unit document: each error quotes its span from its segment's translation
            error_props["span"] = {"type": "string", "maxLength": max(len(m["tgt"]) for m in unit["members"]) + 16}
        error = {"type": "object", "properties": error_props, "required": list(error_props),
                 "additionalProperties": False}
        severity_list: dict[str, Any] = {"type": "array", "items": error}
        if self.settings.max_errors_per_severity:
            severity_list["maxItems"] = self.settings.max_errors_per_severity
        properties: dict[str, Any] = {}
        if self.echo_allowed:  # optional, in the order the paper's answer repeats them
            keys = ECHO_KEYS_WITH_REFERENCE if self.reference.on else ECHO_KEYS
            properties.update({k: {"type": "string"} for k in keys})
        properties["errors"] = {
            "type": "object",
            "properties": {s: severity_list for s in SEVERITIES},
            "required": list(SEVERITIES),
            "additionalProperties": False,
        }
        if unit is not None:
            return entries_schema(unit, {"errors": properties["errors"]})
        return {
            "type": "object",
            "properties": properties,
            "required": ["errors"],
            "additionalProperties": False,
        }

    # -- answer ------------------------------------------------------------
    def parse(self, text: str, item: Item) -> dict[str, Any]:
        """The normalised answer; a severity list longer than the schema allows is a parse failure
        (a runaway answer is not a verdict, and cutting it would pick errors at random)."""
        annotation = parse_mqm_answer(text)
        bound = self.settings.max_errors_per_severity or HARD_MAX_ERRORS_PER_SEVERITY
        for severity, errors in annotation["errors"].items():
            if len(errors) > bound:
                raise ParseFailure(f"{len(errors):,} {severity} errors; the answer schema allows at most {bound}")
        return annotation

    def parse_document_entry(self, entry: dict[str, Any], item: Item, unit: dict[str, Any]) -> dict[str, Any]:
        """A segment's entry of a document answer: its errors read as a segment answer (:meth:`parse`, so
        the score is the segment-level one), and each error's ``span`` located in the segment's own
        translation. A span that is not there is a failure of this segment (it runs into another
        segment, or was made up): an MQM score counts every error, so none is kept without its place."""
        annotation = self.parse(json.dumps(entry, ensure_ascii=False), item)
        found = _quoted_errors(entry.get("errors"))
        check_within_segment([quote for _, _, quote in found], item, unit)
        located = locate_text_spans([quote for _, _, quote in found], item.tgt)
        if located.fatal:
            raise ParseFailure(f"{unit['label']}: " + "; ".join(located.fatal))
        annotation["spans"] = [{"start": loc.start, "end": loc.end, "severity": severity, "category": typ,
                                "text": None if loc.start is None else item.tgt[loc.start:loc.end]}
                               for loc, (severity, typ, _) in zip(located.spans, found, strict=True)]
        annotation["problems"] = located.problems
        return annotation

    def score(self, annotation: dict[str, Any], item: Item) -> float:
        return llm_mqm_score(annotation, self.weights)


def _quoted_errors(raw: Any) -> list[tuple[str, str, str | None]]:
    """``(severity, type, span)`` of each weighted error of an answer :func:`parse_mqm_answer` accepted,
    in its order; a ``span`` that is given and not a string is a failure."""
    if isinstance(raw, dict):
        listed = [(str(key).strip().lower(), v) for key, values in raw.items() for v in (values or [])]
    else:
        listed = [(str(v.get("severity", "")).strip().lower(), v) for v in raw or []]
    out: list[tuple[str, str, str | None]] = []
    for severity, value in listed:
        if severity not in SEVERITIES:
            continue
        span = value.get("span") if isinstance(value, dict) else None
        if span is not None and not isinstance(span, str):
            raise ParseFailure(f"a {severity} error has a 'span' that is not a string")
        typ = _error_from_value(value, severity)["type"]
        out.append((severity, typ, span))
    return out


__all__ = ["ECHO_CHOICES", "ECHO_KEYS", "ECHO_KEYS_WITH_REFERENCE", "ERROR_TYPES", "GembaMQM", "MQMOptions",
           "normalise_type", "parse_mqm_answer"]
