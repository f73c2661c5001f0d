"""Judging units larger than one segment: a whole document, or several systems' translations of one source.

Both are built *around* the engine, which keeps judging one item per (system, segment): every item of a
unit carries the whole unit in ``extra["unit"]`` and renders the same prompt, so the engine's requests
(keyed by their prompt, :func:`polyjudge.engine.plan.distinct_tasks`) send one request per unit, and
every item reads its own part of that one answer. Scores, spans, failures and the outputs stay per
segment, and ``items.jsonl`` records each item's unit.

``--unit document`` (:func:`document_units`): the items of one system and one ``doc_id``, in input order,
become one unit; a document whose sources and translations exceed ``--unit-max-tokens`` (estimated as
UTF-8 bytes / 3, a bound that is on the safe side for Latin, CJK and Arabic scripts alike) is split at
segment boundaries into parts, each as large as fits (a single segment larger than the budget is a part
of its own). ``extra["unit"]`` records ``part`` and ``parts`` and the members of its part, so the split is
in the run directory. Segments are labelled ``S1``, ``S2``, ... by their place in the whole document.

``contrastive-esa`` (:func:`contrastive_units`): the items with one source (the same language pair,
``doc_id``, ``seg_id`` and source text) and different systems become one unit, the systems shown in an
order drawn from ``--seed`` and the unit's identity (another seed, another order; position bias is then
measured across units and seeds), labelled ``T1``, ``T2``, ... in the order shown.

Markers. Each text of a unit stands between marker lines carrying a key derived from the unit's texts
(SHA-256, 64 bits, re-derived until no text of the unit contains it), so no text can close its own block
or open another's: a text would have to contain a hash of itself. The answer names segments by label
(``{"segments": [{"id": "S1", "errors": [...], "score": N}, ...]}``; ``"translations"`` for
contrastive units); an answer with an unknown, repeated or missing label mislabels the unit and is a
:class:`ParseFailure` for every item of it, never a score. Spans are quoted from the item's own
translation and located in it (:func:`polyjudge.protocols.spans.locate_text_spans`), so their offsets are
the segment's own character offsets, whatever the script.

Protocols with ``document_entries`` (``mqm``, ``tsa``, ``gemba-spans``, ``direct-index``, ``error-free``)
write each label's entry in their own segment-level answer format (:func:`unit_entry`), read by their own
parser, so a segment's score is the segment-level protocol's function of its errors (or its label).
Whatever the protocol, a quoted span that is not in its segment's translation but runs across a segment
boundary, or is another segment's text, fails that segment (:func:`check_within_segment`): it is never
moved into a neighbour nor dropped. A malformed entry fails its own segment only; the other segments keep
their scores.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from polyjudge.data.chat import Message
from polyjudge.data.errors import InputError
from polyjudge.data.languages import language_name
from polyjudge.data.records import Item
from polyjudge.protocols.answers import ParseFailure
from polyjudge.protocols.jsonparse import parse_json_object
from polyjudge.protocols.spans import locate_text_spans

if TYPE_CHECKING:
    from polyjudge.protocols.templates import PromptTemplate

UNIT_KEY = "unit"
SEGMENT, DOCUMENT, CONTRASTIVE = "segment", "document", "contrastive"
UNITS = (SEGMENT, DOCUMENT)
DEFAULT_MAX_TOKENS = 3000
MAX_ERRORS_PER_MEMBER = 20
_LISTS = {DOCUMENT: "segments", CONTRASTIVE: "translations"}
_SEVERITIES = {"major": "major", "minor": "minor", "critical": "major"}
_TEMPLATES = {DOCUMENT: "units/document.jinja", CONTRASTIVE: "units/contrastive.jinja"}


def unit_of(item: Item) -> dict[str, Any] | None:
    """The unit an item was judged in (its ``extra["unit"]``), or None for a lone segment."""
    unit = item.extra.get(UNIT_KEY)
    return unit if isinstance(unit, dict) else None


def estimate_tokens(text: str) -> int:
    """Tokens a text takes at most, roughly: UTF-8 bytes / 3, rounded up."""
    return (len(text.encode("utf-8")) + 2) // 3


def marker_key(texts: Sequence[str]) -> str:
    """16 hex digits from the texts' SHA-256 that none of the texts contains."""
    digest = hashlib.sha256()
    for t in texts:
        digest.update(t.encode("utf-8", "surrogatepass") + b"\x00")
    for n in range(1000):
        d = digest.copy()
        d.update(str(n).encode())
        key = d.hexdigest()[:16]
        if not any(key in t for t in texts):
            return key
    raise InputError("no marker key found that the unit's texts do not contain")  # pragma: no cover


# -- building units ----------------------------------------------------------------------------

def _with_unit(item: Item, unit: dict[str, Any]) -> Item:
    return replace(item, extra={**item.extra, UNIT_KEY: unit})


def _parts(sizes: Sequence[int], budget: int) -> list[range]:
    """Consecutive index ranges whose sizes add up to at most ``budget`` (one oversized index alone)."""
    parts, start, total = [], 0, 0
    for k, size in enumerate(sizes):
        if k > start and total + size > budget:
            parts.append(range(start, k))
            start, total = k, 0
        total += size
    parts.append(range(start, len(sizes)))
    return parts


def document_units(items: Sequence[Item], max_tokens: int = DEFAULT_MAX_TOKENS) -> list[Item]:
    """Each item with its document's unit (see the module's text); input order is kept."""
    docs: dict[tuple[str | None, str], list[int]] = {}
    for k, it in enumerate(items):
        docs.setdefault((it.system, it.doc_id if it.doc_id is not None else f"\x00{k}"), []).append(k)
    out = list(items)
    for (system, _), members in docs.items():
        pairs = {(items[k].src_lang, items[k].tgt_lang) for k in members}
        if len(pairs) > 1:
            raise InputError(f"document {items[members[0]].doc_id!r} of system {system!r} mixes language pairs; "
                             "--unit document judges one language pair per document",
                             path=items[members[0]].origin, field="doc_id")
        sizes = [estimate_tokens(items[k].src) + estimate_tokens(items[k].tgt) for k in members]
        parts = _parts(sizes, max_tokens)
        for p, part in enumerate(parts, start=1):
            shown: list[dict[str, Any]] = [
                {"label": f"S{j + 1}", "seg_id": items[members[j]].seg_id, "src": items[members[j]].src,
                 "tgt": items[members[j]].tgt} for j in part]
            key = marker_key([t for m in shown for t in (m["src"], m["tgt"])])
            for j in part:
                out[members[j]] = _with_unit(items[members[j]], {
                    "kind": DOCUMENT, "label": f"S{j + 1}", "key": key, "part": p, "parts": len(parts),
                    "members": shown})
    return out


def contrastive_units(items: Sequence[Item], seed: int) -> list[Item]:
    """Each item with its source's unit: the systems that translated it, in a seeded order."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for k, it in enumerate(items):
        groups.setdefault((it.src_lang, it.tgt_lang, it.doc_id, it.seg_id, it.src), []).append(k)
    out = list(items)
    for ident, members in groups.items():
        systems = [items[k].system for k in members]
        if len(set(systems)) < len(systems):
            raise InputError(f"system {next(s for s in systems if systems.count(s) > 1)!r} translates segment "
                             f"{ident[3]!r} of document {ident[2]!r} twice; contrastive judging needs one "
                             "translation per system and source", path=items[members[0]].origin, field="system")
        order = list(members)
        random.Random(f"{seed}\x00{ident!r}").shuffle(order)
        shown: list[dict[str, Any]] = [{"label": f"T{n + 1}", "system": items[k].system, "tgt": items[k].tgt}
                                       for n, k in enumerate(order)]
        key = marker_key([items[members[0]].src, *(m["tgt"] for m in shown)])
        for n, k in enumerate(order):
            out[k] = _with_unit(items[k], {"kind": CONTRASTIVE, "label": f"T{n + 1}", "position": n + 1,
                                           "key": key, "members": shown})
    return out


def prepare_units(items: Sequence[Item], protocol: Any, *, unit: str = SEGMENT,
                  max_tokens: int = DEFAULT_MAX_TOKENS, seed: int = 0,
                  document_protocols: Sequence[str] = ()) -> list[Item]:
    """The items as ``protocol`` (a :class:`~polyjudge.protocols.base.JudgeProtocol`, which imports this
    module) judges them with ``unit``: unchanged for segments, else with their units.

    A protocol that compares systems (``contrastive-esa``) always gets its units; ``--unit document`` is
    refused (InputError) for a protocol that cannot judge documents and with ``score_mode=expected``
    (one answer holds many scores, and token probabilities are read for one). ``document_protocols``: the
    names the refusal lists (the registry's, which this module does not import)."""
    if unit not in UNITS:
        raise InputError(f"unknown unit {unit!r}; known: {', '.join(UNITS)}", field="unit", setting=True)
    if protocol.contrasts_systems:
        if unit != SEGMENT:
            raise InputError(f"protocol '{protocol.name}' judges one source at a time; --unit document does "
                             "not apply", field="unit", setting=True)
        return contrastive_units(items, seed)
    if unit == SEGMENT:
        return list(items)
    if not protocol.document_units:
        known = ", ".join(document_protocols) or "the protocols that mark spans or score each segment"
        raise InputError(f"protocol '{protocol.name}' does not judge whole documents; --unit document works "
                         f"with {known}", field="unit", setting=True)
    if protocol.score_mode == "expected":
        raise InputError("--unit document reads the scores an answer writes; score_mode=expected is for one "
                         "score per answer", field="unit", setting=True)
    if protocol.reference.on or protocol.fewshot is not None:
        raise InputError("--unit document shows the document's sources and translations only: "
                         f"{'references' if protocol.reference.on else 'few-shot examples'} are for segment "
                         "units", field="unit", setting=True)
    units = document_units(items, max_tokens)
    longest = max((len(u["members"]) for it in units if (u := unit_of(it)) is not None), default=1)
    # an answer that copies the translations (tsa) needs room for the copy and its tags as well
    copied = max((sum(estimate_tokens(m["tgt"]) for m in u["members"]) for it in units
                  if (u := unit_of(it)) is not None), default=0) if protocol.copies_translation else 0
    protocol.__dict__["max_tokens"] = max(protocol.max_tokens, min(longest * 200 + 2 * copied, 16384))
    return units


# -- prompts and answers -----------------------------------------------------------------------

def unit_messages(template: PromptTemplate | None, item: Item, unit: dict[str, Any], *,
                  with_spans: bool, **variables: Any) -> list[Message]:
    """The unit's prompt (the same for every item of the unit), from ``template`` or the built-in one;
    ``variables`` are passed on to the template."""
    from polyjudge.protocols.templates import PromptTemplate

    chosen = template or PromptTemplate.load(None, _TEMPLATES[unit["kind"]])
    return chosen.render(
        members=unit["members"], key=unit["key"], source=item.src, with_spans=with_spans,
        source_language=language_name(item.src_lang) or "source language",
        target_language=language_name(item.tgt_lang) or "target language", **variables)


def entries_schema(unit: dict[str, Any], properties: dict[str, Any]) -> dict[str, Any]:
    """The answer's JSON schema when each label's entry is a segment-level answer with ``properties``."""
    props = {"id": {"type": "string", "enum": [m["label"] for m in unit["members"]]}, **properties}
    entry = {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}
    return {"type": "object", "properties": {_LISTS[unit["kind"]]: {"type": "array", "items": entry}},
            "required": [_LISTS[unit["kind"]]], "additionalProperties": False}


def unit_schema(unit: dict[str, Any], *, with_spans: bool) -> dict[str, Any]:
    """The answer's JSON schema for structured output (labels as an enum)."""
    error = {"type": "object", "properties": {"span": {"type": "string"},
                                              "severity": {"type": "string", "enum": ["major", "minor"]}},
             "required": ["span", "severity"], "additionalProperties": False}
    props: dict[str, Any] = {"id": {"type": "string", "enum": [m["label"] for m in unit["members"]]},
                             "score": {"type": "integer", "minimum": 0, "maximum": 100}}
    if with_spans:
        props["errors"] = {"type": "array", "maxItems": MAX_ERRORS_PER_MEMBER, "items": error}
    entry = {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}
    return {"type": "object", "properties": {_LISTS[unit["kind"]]: {"type": "array", "items": entry}},
            "required": [_LISTS[unit["kind"]]], "additionalProperties": False}


def _entries(obj: dict[str, Any], unit: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The answer's entries by label; any mislabelling is a ParseFailure."""
    key = _LISTS[unit["kind"]]
    raw = obj.get(key)
    if not isinstance(raw, list):
        raise ParseFailure(f"answer has no '{key}' list")
    labels = [m["label"] for m in unit["members"]]
    found: dict[str, dict[str, Any]] = {}
    for k, entry in enumerate(raw):
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise ParseFailure(f"entry {k} of '{key}' is not an object with an 'id'")
        label = entry["id"].strip()
        if label not in labels:
            raise ParseFailure(f"entry {k} names {label[:40]!r}, which is none of the unit's labels "
                               f"({labels[0]}..{labels[-1]})")
        if label in found:
            raise ParseFailure(f"label {label} appears twice in the answer")
        found[label] = entry
    missing = [lb for lb in labels if lb not in found]
    if missing:
        raise ParseFailure(f"the answer leaves out {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
    return found


def _score(entry: dict[str, Any], label: str) -> float:
    value = entry.get("score")
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
        raise ParseFailure(f"{label}: score must be a number from 0 to 100, got {str(value)[:20]!r}")
    return float(value)


def _errors(entry: dict[str, Any], label: str) -> list[tuple[str | None, str]]:
    raw = entry.get("errors")
    if raw is None:
        raise ParseFailure(f"{label}: no 'errors' list")
    if not isinstance(raw, list) or len(raw) > MAX_ERRORS_PER_MEMBER:
        raise ParseFailure(f"{label}: 'errors' must be a list of at most {MAX_ERRORS_PER_MEMBER}")
    out = []
    for k, err in enumerate(raw):
        severity = _SEVERITIES.get(str(err.get("severity", "")).strip().lower()) if isinstance(err, dict) else None
        span = err.get("span") if isinstance(err, dict) else None
        if severity is None or (span is not None and not isinstance(span, str)):
            raise ParseFailure(f"{label}: error {k} needs a text 'span' and a severity major or minor")
        out.append((span, severity))
    return out


def unit_record(unit: dict[str, Any]) -> dict[str, Any]:
    """What a judgment's annotation records of its unit (``annotation["unit"]``)."""
    return {k: unit[k] for k in ("kind", "label", "part", "parts", "position", "key") if k in unit}


def unit_entry(text: str, unit: dict[str, Any]) -> dict[str, Any]:
    """This item's entry of the unit's answer, without its ``id``: for a protocol whose document answer
    holds one segment-level answer per label (``mqm``, ``tsa``, ...), the object its own parser reads.
    A mislabelled answer is a :class:`ParseFailure` (of every item of the unit, see the module's text)."""
    entry = _entries(parse_json_object(text), unit)[unit["label"]]
    return {k: v for k, v in entry.items() if k != "id"}


def _crosses(quote: str, left: str, right: str) -> bool:
    """Whether ``quote`` is the end of ``left`` followed by the start of ``right`` (whitespace between)."""
    for k in range(1, len(quote)):
        head, tail = quote[:k].rstrip(), quote[k:].lstrip()
        if head and tail and left.endswith(head) and right.startswith(tail):
            return True
    return False


def check_within_segment(quotes: Sequence[Any], item: Item, unit: dict[str, Any]) -> None:
    """A :class:`ParseFailure` of this item when a quoted span is not in its own translation but runs
    across a segment boundary (the end of one translation and the start of the next, or a marker) or is
    another segment's text: such an error belongs to no segment it could be located in, so it is neither
    moved into another segment nor dropped. Quotes that are not strings, are empty or occur in the item's
    own translation pass."""
    texts = [m["tgt"] for m in unit["members"]]
    k = [m["label"] for m in unit["members"]].index(unit["label"])
    pairs = list(zip(texts, texts[1:], strict=False))[max(k - 1, 0):k + 1]
    for n, quote in enumerate(quotes):
        if not isinstance(quote, str) or not quote.strip() or quote in item.tgt:
            continue
        if unit["key"] in quote or any(_crosses(quote, left, right) for left, right in pairs):
            raise ParseFailure(f"{unit['label']}: error {n}'s span {quote[:40]!r} runs across a segment boundary")
        if any(quote in other for j, other in enumerate(texts) if j != k):
            raise ParseFailure(f"{unit['label']}: error {n}'s span {quote[:40]!r} is another segment's text")


def parse_unit_answer(text: str, item: Item, unit: dict[str, Any], *, with_spans: bool,
                      answer_format: str, strict_spans: bool = False) -> dict[str, Any]:
    """This item's annotation from the unit's answer: its score and (``with_spans``) its spans located in
    its own translation. ``strict_spans``: a quoted text not found fails the answer (else it is kept
    without location and reported in ``problems``)."""
    entry = _entries(parse_json_object(text), unit)[unit["label"]]
    annotation: dict[str, Any] = {"format": answer_format, "score": _score(entry, unit["label"]),
                                  "unit": unit_record(unit)}
    if not with_spans:
        return annotation
    errors = _errors(entry, unit["label"])
    if unit["kind"] == DOCUMENT:  # contrastive translations are alternatives: they share text by nature
        check_within_segment([span for span, _ in errors], item, unit)
    located = locate_text_spans([span for span, _ in errors], item.tgt)
    if located.fatal and strict_spans:
        raise ParseFailure(f"{unit['label']}: " + "; ".join(located.fatal))
    annotation["spans"] = [{"start": loc.start, "end": loc.end, "severity": sev, "category": "",
                            "text": None if loc.start is None else item.tgt[loc.start:loc.end]}
                           for loc, (_, sev) in zip(located.spans, errors, strict=True)]
    annotation["problems"] = located.problems + located.fatal
    return annotation


__all__ = ["CONTRASTIVE", "DEFAULT_MAX_TOKENS", "DOCUMENT", "SEGMENT", "UNITS", "UNIT_KEY",
           "check_within_segment", "contrastive_units", "document_units", "entries_schema",
           "estimate_tokens", "marker_key", "parse_unit_answer", "prepare_units", "unit_entry", "unit_messages",
           "unit_of", "unit_record", "unit_schema"]
