"""Typed records for what is judged.

An :class:`Item` is one (source, translation) pair with the identifiers the
field uses to group it (system, document, segment). Anything else a user's
file carries is kept verbatim in ``extra`` so protocols and reports can use it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Column names understood by every reader; anything else goes to ``extra``.
CORE_FIELDS = ("src", "tgt", "ref", "src_lang", "tgt_lang", "doc_id", "seg_id", "system")


@dataclass(frozen=True, slots=True)
class Item:
    """One judged unit: a source text and a candidate (translation, answer...)."""

    src: str
    tgt: str
    ref: str | None = None
    src_lang: str | None = None
    tgt_lang: str | None = None
    doc_id: str | None = None
    seg_id: str | None = None
    system: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # Where the item came from, for error messages ("file.jsonl:12").
    origin: str | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        # CORE_FIELDS in order, written out: a display builds the dict at once (tests/data/test_item_to_dict.py)
        out: dict[str, Any] = {"src": self.src, "tgt": self.tgt, "ref": self.ref, "src_lang": self.src_lang,
                               "tgt_lang": self.tgt_lang, "doc_id": self.doc_id, "seg_id": self.seg_id,
                               "system": self.system}
        out.update(self.extra)
        return out


@dataclass(frozen=True, slots=True)
class DocumentContext:
    """The full source document an item belongs to, in input order.

    Judging with document context (GEMBA-MQM V2) shows the judge every source
    sentence of the document; ``position`` says which one is being judged.
    """

    doc_id: str | None
    sources: tuple[str, ...]
    position: int
    # The sources joined, shared by every item of the document (document_contexts sets it), so a
    # 10,000-segment document is joined once, not once per segment.
    joined: str | None = field(default=None, compare=False, repr=False)

    @property
    def text(self) -> str:
        return self.joined if self.joined is not None else "\n".join(self.sources)


def document_contexts(items: list[Item]) -> list[DocumentContext]:
    """Document context for every item: all distinct sources of its ``doc_id``.

    Sources are taken in first-appearance order and de-duplicated by segment,
    because the same source appears once per system in MT evaluation data.
    Items without a ``doc_id`` form a one-sentence document of their own.
    """
    docs: dict[str, list[str]] = {}
    seen: dict[str, dict[object, int]] = {}
    for it in items:
        if it.doc_id is None:
            continue
        key = it.seg_id if it.seg_id is not None else it.src
        index = seen.setdefault(it.doc_id, {})
        if key not in index:
            index[key] = len(docs.setdefault(it.doc_id, []))
            docs[it.doc_id].append(it.src)
    # One tuple and one joined text per document, shared by its items: memory stays linear in the
    # input (a tuple per item made a 10,000-segment document hold 10^8 references).
    shared = {doc: (tuple(sources), "\n".join(sources)) for doc, sources in docs.items()}
    out = []
    for it in items:
        if it.doc_id is None:
            out.append(DocumentContext(None, (it.src,), 0))
        else:
            key = it.seg_id if it.seg_id is not None else it.src
            sources, joined = shared[it.doc_id]
            out.append(DocumentContext(it.doc_id, sources, seen[it.doc_id][key], joined))
    return out
