"""A campaign's annotations in the formats polyjudge's (and the field's) readers read.

Only the newest version of each annotation counts; items nobody annotated yet
are left out.

* ``mqm-tsv``: the WMT MQM TSV (``system doc doc_id seg_id rater source target
  category severity comment``; no quoting): one row per error span, marked
  with ``<v>…</v>`` in the target, or one ``No-error`` row. ``doc`` is the
  item's document, ``doc_id`` its 1-based position there, as in the WMT files,
  so ``human-mqm``, ``meta-eval --human`` and ``span-f1`` read it.
* ``esa-jsonl``: one line per annotator and segment, as WMT24/25 ESA releases:
  identifiers, ``lp``, ``src``, ``hypothesis``, the 0-100 ``score`` and
  ``esa_spans`` with ``start_i``/``end_i`` character offsets (code points) of
  the hypothesis.
* ``ratings``: forced-choice and response-set campaigns give the table
  ``validate`` reads (``item protocol answer``, letters); score campaigns the
  long table ``agreement`` reads (``item_id language task metric rater kind
  rating``, kind ``human``; an MQM annotation's rating is its negated error
  points, higher is better).

Tabs and line breaks inside a text become spaces in the TSV formats (one
character for one, so offsets still hold): the WMT TSV has no quoting.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from polyjudge.aggregate.mqm import mqm_points
from polyjudge.annotate.schemes import Scheme
from polyjudge.annotate.store import Annotation, CampaignStore, ItemRow
from polyjudge.data.errors import InputError

TARGETS = ("mqm-tsv", "esa-jsonl", "ratings")
MQM_HEADER = ("system", "doc", "doc_id", "seg_id", "rater", "source", "target", "category", "severity", "comment")
_BREAKS = re.compile(r"[\t\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def _cell(text: str) -> str:
    return _BREAKS.sub(" ", text)


def _ordered(store: CampaignStore) -> list[tuple[ItemRow, Annotation]]:
    """(item, newest annotation), by item then annotator order."""
    order = {n: k for k, (n, _) in enumerate(store.annotators())}
    latest = store.latest()
    keys = sorted(latest, key=lambda k: (k[1], order[k[0]]))
    return [(store.items[item], latest[(name, item)]) for name, item in keys]


def _doc_positions(items: list[ItemRow]) -> dict[int, int]:
    """1-based position of each item in its (system, document)."""
    seen: dict[tuple[str, str], int] = {}
    out = {}
    for it in items:
        key = (it.system, it.doc_id)
        seen[key] = seen.get(key, 0) + 1
        out[it.id] = seen[key]
    return out


def _marked(tgt: str, start: int, end: int) -> str:
    return f"{_cell(tgt[:start])}<v>{_cell(tgt[start:end])}</v>{_cell(tgt[end:])}"


def mqm_points_of(body: dict[str, object]) -> float:
    """Error points of one annotation, with polyjudge's MQM weights (:mod:`polyjudge.aggregate.mqm`)."""
    spans = body.get("spans") or []
    assert isinstance(spans, list)
    return mqm_points((str(s["severity"]), str(s.get("category", ""))) for s in spans)


def mqm_tsv_lines(store: CampaignStore) -> Iterator[str]:
    pos = _doc_positions(store.items)
    yield "\t".join(MQM_HEADER) + "\n"
    for item, ann in _ordered(store):
        head = [_cell(item.system), _cell(item.doc_id), str(pos[item.id]), _cell(item.seg_id), ann.annotator,
                _cell(item.src)]
        spans = ann.body.get("spans") or []
        if not spans:
            yield "\t".join([*head, _cell(item.tgt), "No-error", "No-error", ""]) + "\n"
        for sp in spans:
            yield "\t".join([*head, _marked(item.tgt, sp["start"], sp["end"]), _cell(sp.get("category") or ""),
                             str(sp["severity"]).capitalize(), ""]) + "\n"


def esa_jsonl_lines(store: CampaignStore) -> Iterator[str]:
    for item, ann in _ordered(store):
        lp = f"{item.src_lang}-{item.tgt_lang}" if item.src_lang and item.tgt_lang else None
        rec = {"system": item.system, "doc_id": item.doc_id, "seg_id": item.seg_id, "item_id": item.item_id,
               "lp": lp, "annotator": ann.annotator, "src": item.src, "hypothesis": item.tgt,
               "score": ann.body.get("score"),
               "esa_spans": [{"start_i": s["start"], "end_i": s["end"], "severity": s["severity"],
                              "category": s.get("category") or ""} for s in ann.body.get("spans") or []]}
        if store.info.scheme.value == "points":
            rec["score"] = -mqm_points_of(ann.body)
        yield json.dumps(rec, ensure_ascii=False) + "\n"


def _rating_value(scheme: Scheme, body: dict[str, object]) -> str:
    if scheme.value == "points":
        return repr(-mqm_points_of(body))
    return repr(body.get("score"))


def ratings_lines(store: CampaignStore) -> Iterator[str]:
    scheme = store.info.scheme
    if scheme.rating:
        yield "item\tprotocol\tanswer\n"
        proto = "fc" if scheme.answer == "choice" else "rs"
        for item, ann in _ordered(store):
            answer = "".join(ann.body[scheme.answer])
            yield f"{_cell(item.item_id)}\t{proto}\t{answer}\n"
        return
    yield "item_id\tlanguage\ttask\tmetric\trater\tkind\trating\n"
    for item, ann in _ordered(store):
        yield (f"{_cell(item.item_id)}\t{_cell(item.tgt_lang)}\t{store.info.name}\t{scheme.name}\t{ann.annotator}\t"
               f"human\t{_rating_value(scheme, ann.body)}\n")


def export_lines(store: CampaignStore, to: str) -> Iterator[str]:
    """The lines of the export ``to`` (InputError, before any line, when the scheme has no such data)."""
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
           "ratings_lines"]
