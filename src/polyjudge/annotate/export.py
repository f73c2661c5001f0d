"""A campaign's annotations in the formats polyjudge's (and the field's) readers read.

Only the newest version of each annotation counts; items nobody annotated yet
are left out. Every export reads back equal (items, scores, spans) through the
readers the docs name (``tests/annotate/test_export_roundtrip.py``).

* ``mqm-tsv``: the WMT MQM TSV (``system doc doc_id seg_id rater source target
  category severity comment``; no quoting): one row per error span, marked
  with ``<v>…</v>`` in the target (an omission: an empty ``<v></v>`` at its
  position), or in the source for a source-side span, as WMT's files mark
  omissions and source errors; or one ``No-error`` row. ``comment`` is the
  span's comment; a pre-annotated campaign adds an ``origin`` column (kept,
  edited, added). ``doc`` is the item's document, ``doc_id`` its 1-based
  position there (the input's order in the document, or the position the
  item declared, e.g. a WMT MQM file's own), ``seg_id`` the item's own;
  the readers key a segment by system, document and seg_id, so ids that
  restart in every document stay apart. The format has no quoting and no
  escape: a text or id holding a tab, a line feed or a carriage
  return, or a text holding ``<v>`` or ``</v>`` (which every reader of the
  format takes for span markup), is refused with one line naming the item
  (export it ``--to esa-jsonl``, which holds any text).
* ``esa-jsonl``: one line per annotator and segment, as WMT24/25 ESA releases:
  identifiers, ``lp``, ``annotator``, ``src``, ``hypothesis``, the 0-100
  ``score`` and ``esa_spans`` with ``start_i``/``end_i`` character offsets
  (code points) of the hypothesis (an omission: ``missing``, as WMT's ESA
  releases write it, with its ``position``), ``source_spans`` on the source,
  ``doc_pos``, ``active_ms`` and, pre-annotated, each span's ``origin`` and the
  ``deleted_spans``. An MQM campaign has no ESA score: its lines carry
  ``mqm_points`` (error points) and no field ending in ``score``, so a score
  reader refuses the file rather than take −25…0 for a 0-100 score.

Attention checks are never exported: they are tests of the annotators, not results.
* ``ratings``: forced-choice and response-set campaigns give the table
  ``validate`` reads (``item protocol answer``, letters); score campaigns the
  long table ``agreement`` reads (``item_id language task metric rater kind
  rating``, kind ``human``, ``language`` the pair ``src-tgt``; an MQM
  annotation's rating is its negated error points, higher is better).

Duplicate spans: one annotator's spans with the same start, end, category and
severity are one error (a double click), in every export and in the points
(:func:`unique_spans`); the same span marked by two annotators counts once for each.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from polyjudge.aggregate.mqm import mqm_points
from polyjudge.annotate.schemes import Scheme
from polyjudge.annotate.store import Annotation, CampaignStore, ItemRow
from polyjudge.data.errors import InputError

TARGETS = ("mqm-tsv", "esa-jsonl", "ratings")
MQM_HEADER = ("system", "doc", "doc_id", "seg_id", "rater", "source", "target", "category", "severity", "comment")
# What a TSV cell cannot hold: a field separator, or a line end (pandas' reader, which WMT's scripts use,
# also ends a line at a lone carriage return).
_TSV_UNSAFE = re.compile(r"[\t\n\r]")
_MARKUP = re.compile(r"</?v>")


def _tsv_cell(text: str, item: ItemRow, name: str) -> str:
    """``text`` as one cell of an export TSV, or an InputError naming the item and the character."""
    bad = _TSV_UNSAFE.search(text)
    if bad is not None:
        raise InputError(f"item {item.item_id!r}: its {name} holds {bad.group()!r}, which a TSV export cannot hold "
                         "(no quoting in the WMT TSV); export the campaign --to esa-jsonl", field=name)
    return text


def _mqm_text(text: str, item: ItemRow, name: str) -> str:
    """A source or target for the MQM TSV: no tab or line end, no literal ``<v>``/``</v>``."""
    tag = _MARKUP.search(text)
    if tag is not None:
        raise InputError(f"item {item.item_id!r}: its {name} holds a literal {tag.group()!r}, which the WMT MQM "
                         "TSV's readers take for span markup; export the campaign --to esa-jsonl", field=name)
    return _tsv_cell(text, item, name)


def _ordered(store: CampaignStore) -> list[tuple[ItemRow, Annotation]]:
    """(item, newest annotation), by item then annotator order; attention checks left out."""
    order = {n: k for k, (n, _) in enumerate(store.annotators())}
    latest = store.latest()
    keys = sorted((k for k in latest if not store.items[k[1]].check), key=lambda k: (k[1], order[k[0]]))
    return [(store.items[item], latest[(name, item)]) for name, item in keys]


def _doc_positions(items: list[ItemRow]) -> dict[int, int]:
    """1-based position of each item in its document: the one stored at init (the input's order in the
    document, or the item's own doc_pos); for a campaign made before positions were stored, the order
    among the campaign's items of the same (system, document)."""
    seen: dict[tuple[str, str], int] = {}
    out = {}
    for it in items:
        if it.check:
            continue
        key = (it.system, it.doc_id)
        seen[key] = seen.get(key, 0) + 1
        out[it.id] = it.doc_pos if it.doc_pos is not None else seen[key]
    return out


def unique_spans(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The annotation's spans, an exact repeat (same start, end, category, severity) dropped: one
    annotator's identical spans are one error (a double click), in every export and in the points."""
    spans = body.get("spans") or []
    assert isinstance(spans, list)
    seen: set[tuple[object, ...]] = set()
    out = []
    for sp in spans:
        key = (sp.get("side", "target"), sp["start"], sp["end"], sp.get("category") or "",
               str(sp["severity"]).lower())
        if key not in seen:
            seen.add(key)
            out.append(sp)
    return out


def mqm_points_of(body: dict[str, Any]) -> float:
    """Error points of one annotation, with polyjudge's MQM weights (:mod:`polyjudge.aggregate.mqm`);
    an exact repeat of a span counts once (:func:`unique_spans`)."""
    return mqm_points((str(s["severity"]), str(s.get("category", ""))) for s in unique_spans(body))


def _marked(text: str, start: int, end: int) -> str:
    return f"{text[:start]}<v>{text[start:end]}</v>{text[end:]}"


def _mqm_rows(item: ItemRow, ann: Annotation, position: int, origin: bool) -> list[str]:
    """One row per error: a target span (or an omission, ``<v></v>`` at its position) marked in the
    target, a source span in the source; the span's comment in ``comment``, and with ``origin`` (a
    pre-annotated campaign) where the span came from."""
    head = [_tsv_cell(item.system, item, "system"), _tsv_cell(item.doc_id, item, "doc_id"), str(position),
            _tsv_cell(item.seg_id, item, "seg_id"), _tsv_cell(ann.annotator, item, "annotator")]
    src, tgt = _mqm_text(item.src, item, "source"), _mqm_text(item.tgt, item, "target")
    spans = unique_spans(ann.body)
    if not spans:
        return ["\t".join([*head, src, tgt, "No-error", "No-error", "", *([""] if origin else [])]) + "\n"]
    rows = []
    for sp in spans:
        on_source = sp.get("side") == "source"
        texts = [_marked(src, sp["start"], sp["end"]), tgt] if on_source else [src, _marked(tgt, sp["start"],
                                                                                               sp["end"])]
        rows.append("\t".join([*head, *texts, _tsv_cell(str(sp.get("category") or ""), item, "category"),
                               str(sp["severity"]).capitalize(), _tsv_cell(sp.get("comment") or "", item, "comment"),
                               *([str(sp.get("origin") or "added")] if origin else [])]) + "\n")
    return rows


def mqm_tsv_lines(store: CampaignStore) -> Iterator[str]:
    """The MQM TSV's lines; every row is built (and checked) before the first is given."""
    pos = _doc_positions(store.items)
    origin = store.info.prefill is not None
    rows = [row for item, ann in _ordered(store) for row in _mqm_rows(item, ann, pos[item.id], origin)]
    return iter(["\t".join([*MQM_HEADER, *(["origin"] if origin else [])]) + "\n", *rows])


def _pair(item: ItemRow) -> str | None:
    return f"{item.src_lang}-{item.tgt_lang}" if item.src_lang and item.tgt_lang else None


def _esa_span(sp: dict[str, Any]) -> dict[str, Any]:
    """A span as the ESA JSONL holds it: ``start_i``/``end_i`` code points (an omission: ``missing``,
    as WMT's ESA releases write it, with its ``position``), severity, category, comment, origin."""
    out: dict[str, Any] = {"start_i": sp["start"], "end_i": sp["end"], "severity": sp["severity"],
                           "category": sp.get("category") or ""}
    if sp["start"] == sp["end"]:
        out.update(start_i="missing", end_i="missing", position=sp["start"])
    for key in ("comment", "origin"):
        if sp.get(key):
            out[key] = sp[key]
    return out


def esa_jsonl_lines(store: CampaignStore) -> Iterator[str]:
    """One line per annotator and segment (module docstring): ``esa_spans`` of the translation,
    ``source_spans`` of the source; a pre-annotated item's ``deleted_spans``; ``active_ms``, the active
    time of every saved version added up (null: the page recorded none)."""
    points = store.info.scheme.value == "points"
    pos = _doc_positions(store.items)
    seconds = store.active_seconds()
    for item, ann in _ordered(store):
        rec: dict[str, Any] = {"system": item.system, "doc_id": item.doc_id, "doc_pos": pos[item.id],
                               "seg_id": item.seg_id, "item_id": item.item_id, "lp": _pair(item),
                               "annotator": ann.annotator, "src": item.src, "hypothesis": item.tgt}
        if points:  # MQM points are no 0-100 ESA score, and no field of theirs ends in "score"
            rec["mqm_points"] = mqm_points_of(ann.body)
        else:
            rec["score"] = ann.body.get("score")
        spans = unique_spans(ann.body)
        rec["esa_spans"] = [_esa_span(s) for s in spans if s.get("side") != "source"]
        rec["source_spans"] = [_esa_span(s) for s in spans if s.get("side") == "source"]
        if item.prefill is not None:
            rec["deleted_spans"] = [_esa_span(s) for s in ann.body.get("deleted") or []]
        active = seconds.get((ann.annotator, item.id))
        rec["active_ms"] = None if active is None else round(active * 1000)  # every version's time added up
        yield json.dumps(rec, ensure_ascii=False) + "\n"


def _rating_value(scheme: Scheme, body: dict[str, object]) -> str:
    if scheme.value == "points":
        return repr(0.0 - mqm_points_of(body))
    return repr(body.get("score"))


def ratings_lines(store: CampaignStore) -> Iterator[str]:
    """The ratings table's lines; every row is built (and checked) before the first is given."""
    scheme = store.info.scheme
    if scheme.rating:
        proto = "fc" if scheme.answer == "choice" else "rs"
        return iter(["item\tprotocol\tanswer\n",
                     *(f"{_tsv_cell(item.item_id, item, 'item_id')}\t{proto}\t{''.join(ann.body[scheme.answer])}\n"
                       for item, ann in _ordered(store))])
    task = store.info.name
    return iter(["item_id\tlanguage\ttask\tmetric\trater\tkind\trating\n",
                 *(f"{_tsv_cell(item.item_id, item, 'item_id')}\t{_tsv_cell(_pair(item) or item.tgt_lang, item, 'lp')}"
                   f"\t{_tsv_cell(task, item, 'campaign name')}\t{scheme.name}"
                   f"\t{_tsv_cell(ann.annotator, item, 'annotator')}\thuman\t{_rating_value(scheme, ann.body)}\n"
                   for item, ann in _ordered(store))])


def export_lines(store: CampaignStore, to: str) -> Iterator[str]:
    """The lines of the export ``to`` (InputError, before any line, when the scheme has no such data
    or a TSV cannot hold a text)."""
    scheme = store.info.scheme
    if to == "mqm-tsv" and not scheme.spans:
        raise InputError(f"a {scheme.name} campaign has no error spans; export it --to ratings", field="to",
                         setting=True)
    if to == "esa-jsonl" and scheme.rating:
        raise InputError(f"a {scheme.name} campaign has no scores or spans; export it --to ratings", field="to",
                         setting=True)
    if to == "mqm-tsv":
        return mqm_tsv_lines(store)
    if to == "esa-jsonl":
        return esa_jsonl_lines(store)
    if to == "ratings":
        return ratings_lines(store)
    raise InputError(f"unknown export format {to!r} (choose from {', '.join(TARGETS)})", field="to", setting=True)


__all__ = ["MQM_HEADER", "TARGETS", "esa_jsonl_lines", "export_lines", "mqm_points_of", "mqm_tsv_lines",
           "ratings_lines", "unique_spans"]
