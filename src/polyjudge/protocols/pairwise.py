"""Pairwise comparison: which of two translations of one source is better, or a tie.

The judge sees the source and two candidates labelled A and B. An item holds
candidate A in ``tgt`` and candidate B in ``extra["tgt_b"]``; ``extra``'s
``system_a`` and ``system_b`` name the systems shown in each position (the
pairwise study, :mod:`polyjudge.studies.pairwise`, builds such items in both
orders, so that position bias can be measured and cancelled).

The answer is parsed strictly: a JSON object ``{"winner": "A" | "B" | "tie"}``,
or, without JSON, exactly one of those words (case-insensitive; whitespace, a
final period and wrapping quotes, backticks or asterisks are ignored). Any
other answer, and "tie" when ``allow_tie=false``, is a ParseFailure.

The protocol is categorical: :meth:`PairwiseJudge.score` returns None and the
annotation holds the verdict with the systems shown as A and B. Several runs
are merged by majority (:func:`merge_verdicts`).

Template variables (for ``--prompt-template``): ``src``, ``tgt_a``, ``tgt_b``,
``ref`` (None unless ``with_reference``), ``src_lang``, ``tgt_lang``,
``src_lang_name``, ``tgt_lang_name``, ``allow_tie`` and ``extra``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from polyjudge.data.chat import Message
from polyjudge.data.errors import InputError
from polyjudge.data.languages import language_name
from polyjudge.data.records import DocumentContext, Item
from polyjudge.protocols.answers import bare_answer
from polyjudge.protocols.base import JudgeProtocol, ParseFailure, ProtocolOptions
from polyjudge.protocols.jsonparse import find_json_object, parse_json_object
from polyjudge.protocols.options import option
from polyjudge.protocols.registry import register_protocol
from polyjudge.protocols.templates import PromptTemplate

A: Final = "A"
B: Final = "B"
TIE: Final = "tie"
VERDICTS: Final = (A, B, TIE)
# Keys of Item.extra this protocol reads.
TGT_B: Final = "tgt_b"
SYSTEM_A: Final = "system_a"
SYSTEM_B: Final = "system_b"


@dataclass(frozen=True, slots=True)
class PairwiseOptions:
    """Options of the ``pairwise`` protocol."""

    allow_tie: bool = field(default=True, metadata=option(
        "the judge may answer that neither translation is better", signature="tie"))
    with_reference: bool = field(default=False, metadata=option(
        "show the reference translation too (every item needs one)", signature="ref"))


def _verdict(word: str) -> str | None:
    """``word`` as one of VERDICTS, or None."""
    w = word.strip()
    if w.upper() in (A, B):
        return w.upper()
    return TIE if w.lower() == TIE else None


def merge_verdicts(verdicts: Sequence[str]) -> str | None:
    """The majority verdict of several runs; equally common top verdicts make a tie.

    None when there is no verdict at all (every run failed).
    """
    if not verdicts:
        return None
    counts = Counter(verdicts).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return TIE
    return counts[0][0]


@register_protocol()
class PairwiseJudge(JudgeProtocol):
    """Pairwise: which of two translations (A or B) of one source is better, or a tie."""

    name = "pairwise"
    compares_pairs = True
    options_type = PairwiseOptions
    settings: PairwiseOptions
    template: PromptTemplate
    default_runs = 1
    default_temperature = 0.0
    max_tokens = 24

    def __init__(self, options: ProtocolOptions | None = None) -> None:
        super().__init__(options)
        self.template = PromptTemplate.load(self.options.template, "pairwise/pairwise.jinja")

    def messages(self, item: Item, context: DocumentContext) -> list[Message]:
        tgt_b = item.extra.get(TGT_B)
        if not isinstance(tgt_b, str):
            raise InputError("a pairwise item needs the second candidate as text in 'tgt_b'",
                             path=item.origin, field=TGT_B)
        if self.settings.with_reference and not item.ref:
            raise InputError("with_reference is set but the item has no reference", path=item.origin,
                             field="ref")
        return self.template.render(
            src=item.src, tgt_a=item.tgt, tgt_b=tgt_b, ref=item.ref if self.settings.with_reference else None,
            src_lang=item.src_lang, tgt_lang=item.tgt_lang,
            src_lang_name=language_name(item.src_lang) or "source-language",
            tgt_lang_name=language_name(item.tgt_lang) or "target-language",
            allow_tie=self.settings.allow_tie, extra=item.extra)

    def output_schema(self, item: Item) -> dict[str, Any]:
        allowed = list(VERDICTS) if self.settings.allow_tie else [A, B]
        return {"type": "object", "properties": {"winner": {"type": "string", "enum": allowed}},
                "required": ["winner"], "additionalProperties": False}

    def parse(self, text: str, item: Item) -> dict[str, Any]:
        """``{"verdict": "A"|"B"|"tie", "system_a": ..., "system_b": ...}`` or ParseFailure."""
        if find_json_object(text) is not None:
            value = parse_json_object(text).get("winner")
            if not isinstance(value, str):
                raise ParseFailure("JSON answer has no string 'winner'")
            verdict = _verdict(value)
            if verdict is None:
                raise ParseFailure(f"'winner' must be A, B or tie, got {value[:40]!r}")
        else:
            verdict = _verdict(bare_answer(text))
            if verdict is None:
                raise ParseFailure(f"expected A, B or tie, got {text.strip()[:40]!r}")
        if verdict == TIE and not self.settings.allow_tie:
            raise ParseFailure("answered tie, but ties are not allowed (allow_tie=false)")
        return {"verdict": verdict, SYSTEM_A: item.extra.get(SYSTEM_A), SYSTEM_B: item.extra.get(SYSTEM_B)}

    def score(self, annotation: Any, item: Item) -> float | None:
        return None

    def merge_runs(self, annotations: list[Any], item: Item) -> Any | None:
        """The majority verdict over the runs that answered, with the vote counts."""
        if not annotations:
            return None
        verdicts = [str(a["verdict"]) for a in annotations]
        return {"verdict": merge_verdicts(verdicts), "votes": {v: verdicts.count(v) for v in VERDICTS},
                SYSTEM_A: item.extra.get(SYSTEM_A), SYSTEM_B: item.extra.get(SYSTEM_B)}


__all__ = ["A", "B", "SYSTEM_A", "SYSTEM_B", "TGT_B", "TIE", "VERDICTS", "PairwiseJudge", "PairwiseOptions",
           "merge_verdicts"]
