"""What a judging protocol is: prompt building + output schema + parser + scorer.

A protocol never talks to a backend and never touches the store; the engine
does that. This keeps every protocol testable on plain strings, and lets a
recorded run be re-parsed and re-scored without sending anything again.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from polyjudge.data.chat import Message, TokenLogprob
from polyjudge.data.records import DocumentContext, Item
from polyjudge.protocols.answers import MAX_ANSWER_CHARS as MAX_ANSWER_CHARS
from polyjudge.protocols.answers import MAX_NESTING as MAX_NESTING
from polyjudge.protocols.answers import ParseFailure as ParseFailure
from polyjudge.protocols.answers import check_answer_limits as check_answer_limits
from polyjudge.protocols.answers import nesting_depth as nesting_depth
from polyjudge.protocols.expected import TOP_LOGPROBS, Locator, score_distribution
from polyjudge.protocols.options import NoOptions, describe_options, options_signature, parse_options
from polyjudge.protocols.reference import ReferenceUse

if TYPE_CHECKING:  # annotations only: importing the base loads neither jinja2 nor the pool reader
    from polyjudge.protocols.fewshot import FewShotPool
    from polyjudge.protocols.templates import PromptTemplate


@dataclass(slots=True)
class ProtocolOptions:
    """User-settable knobs shared by protocols; protocol-specific ones go in ``extra``.

    ``extra`` holds the loose ``KEY=VALUE`` pairs as given (``-o`` on the command
    line); the protocol checks them against its ``options_type`` and keeps the
    typed result as ``settings``. ``extra`` itself is what the manifest records.
    """

    template: str | None = None  # path to a replacement prompt template
    use_context: bool = True  # document context where the protocol supports it
    extra: dict[str, Any] = field(default_factory=dict)


class JudgeProtocol(ABC):
    """Base class for protocols. Subclasses set the class attributes and implement
    :meth:`messages`, :meth:`parse` and :meth:`score`.

    The first line of a subclass's docstring is its one-line ``--help`` summary.
    """

    name: ClassVar[str]
    # Frozen dataclass of the protocol's own options (see polyjudge.protocols.options).
    options_type: ClassVar[type[Any]] = NoOptions
    # True when annotations hold located error spans (the engine then writes spans.tsv).
    produces_spans: ClassVar[bool] = False
    # True when a judgment compares two candidates of one source (the report then shows pairwise.json).
    compares_pairs: ClassVar[bool] = False
    # True when judging a translation against a reference gives the score of the reference judged against
    # the translation: an MBR utility (polyjudge rerank --method mbr) is then judged once per pair.
    symmetric_reference: ClassVar[bool] = False
    # True when the protocol judges several systems' translations of one source in one request
    # (protocols.units: every item is judged within its source's contrastive unit).
    contrasts_systems: ClassVar[bool] = False
    # True when ``--unit document`` may judge a whole document in one request (protocols.units); the
    # protocol's ``messages``/``output_schema`` then render a unit item's unit (``unit_messages``).
    document_units: ClassVar[bool] = False
    # True when a document answer holds, under each segment's label, that segment's own answer in the
    # protocol's segment format (``mqm``, ``tsa``, ...): :meth:`parse_document_entry` reads it.
    document_entries: ClassVar[bool] = False
    # True when the answer copies the translation (``tsa``): a document answer needs room for all of it.
    copies_translation: ClassVar[bool] = False
    # Published defaults; the CLI's --runs / --temperature override them.
    default_runs: ClassVar[int] = 1
    default_temperature: ClassVar[float] = 0.0
    default_aggregator: ClassVar[str] = "mean"
    max_tokens: ClassVar[int] = 512
    # True when scores are higher-is-better (all built-in protocols are).
    higher_is_better: ClassVar[bool] = True

    # The parts a protocol composes (set in its constructor; a subclass with a template narrows
    # the type with a class-level ``template: PromptTemplate``):
    template: PromptTemplate | None = None  # the prompt; its hash is template_hash
    reference: ReferenceUse = ReferenceUse()  # reference-based variant (protocols.reference); off
    fewshot: FewShotPool | None = None  # seeded few-shot examples (protocols.fewshot)

    def __init__(self, options: ProtocolOptions | None = None) -> None:
        self.options = options or ProtocolOptions()
        # Subclasses narrow the type with a class-level ``settings: TheirOptions``.
        self.settings: object = parse_protocol_options(type(self), self.options.extra)

    def missing_languages(self, item: Item) -> tuple[str, ...]:
        """The language fields ``item`` lacks that this protocol's prompt names; the engine refuses
        such items before anything is sent. Translation protocols need both; a protocol that
        judges one text in one language (or none) overrides this."""
        return tuple(name for name in ("src_lang", "tgt_lang") if not getattr(item, name))

    @classmethod
    def option_help(cls) -> list[tuple[str, str, str]]:
        """``(name, type, "help (default: ...)")`` for each option, for ``--help``."""
        return describe_options(cls.options_type)

    # -- prompt -------------------------------------------------------------
    @abstractmethod
    def messages(self, item: Item, context: DocumentContext) -> list[Message]:
        """The chat sent to the judge for one item (identical for every run)."""

    def output_schema(self, item: Item) -> dict[str, Any] | None:
        """JSON schema of the answer, for backends with structured output.

        A schema is never changed once returned (requests share it): one that depends on the item
        is a new dict each time; one that does not can be one object for every item."""
        return None

    @property
    def template_hash(self) -> str:
        """Short hash of the prompt template; goes into the signature ("none" without a template)."""
        return self.template.hash if self.template is not None else "none"

    @property
    def mtme_name(self) -> str:
        """The mt-metrics-eval metric name: ``polyjudge-PROTOCOL-src``, or ``-REF`` for a
        reference-based run (``polyjudge-mqm-refA``)."""
        return self.reference.metric_name(self.name)

    def signature_fields(self) -> dict[str, str]:
        """Protocol-specific ``key:value`` parts of the run signature.

        The options marked ``signature`` in ``options_type`` (in field order),
        between the protocol's own parts that are not options.
        """
        fields = {**self.signature_prefix(), **options_signature(self.settings), **self.signature_suffix()}
        if self.score_mode != "sample":  # only then, so sampled runs keep the signatures they had
            fields["scores"] = self.score_mode
        return fields

    def signature_prefix(self) -> dict[str, str]:
        """Signature parts before the options (e.g. an answer format)."""
        return {}

    def signature_suffix(self) -> dict[str, str]:
        """Signature parts after the options (e.g. document context, what a file held)."""
        return {}

    # -- answer -------------------------------------------------------------
    @abstractmethod
    def parse(self, text: str, item: Item) -> Any:
        """Turn raw model text into a JSON-serialisable annotation or raise ParseFailure."""

    @abstractmethod
    def score(self, annotation: Any, item: Item) -> float | None:
        """A segment score from one run's annotation (higher is better), or None."""

    def merge_runs(self, annotations: list[Any], item: Item) -> Any | None:
        """Optionally merge the annotations of several runs (e.g. span voting)."""
        return None

    # -- expected scores (score_mode=expected, see polyjudge.protocols.expected) --------------
    @property
    def score_mode(self) -> str:
        """``sample`` (the score the answer writes) or ``expected`` (from its token probabilities)."""
        return str(getattr(self.settings, "score_mode", "sample"))

    @property
    def top_logprobs(self) -> int:
        """Top alternatives per answer token the request must ask for (0: none)."""
        return TOP_LOGPROBS if self.score_mode == "expected" else 0

    def score_targets(self, annotation: Any, item: Item) -> dict[str, tuple[Locator, Collection[int]]]:
        """Each score of an answer by name: where it starts in the text and its valid values.

        Protocols with ``score_mode`` implement it; the expected score of each goes to
        ``annotation["expected"][name]``.
        """
        raise NotImplementedError(f"protocol '{self.name}' has no expected scores")

    def parse_answer(self, text: str, item: Item, logprobs: Sequence[TokenLogprob] = ()) -> Any:
        """:meth:`parse`, and in ``expected`` mode the score distributions read from ``logprobs``
        (what the engine calls; a missing or unusable distribution is a :class:`ParseFailure`).

        Answers are server data: one too long or nested too deep for any protocol is a
        :class:`ParseFailure` before a parser sees it, and so is any recursion a parser runs into."""
        check_answer_limits(text)
        try:
            # A unit's item carries its unit in ``extra`` (protocols.units): a lone segment's may be empty.
            annotation = self._parse_unit(text, item) if self.document_units and item.extra else None
            if annotation is None:
                annotation = self.parse(text, item)
        except RecursionError:
            raise ParseFailure("answer nested too deeply to read") from None
        if self.score_mode != "expected":
            return annotation
        expected = {name: score_distribution(logprobs, locate, valid, answer=text).to_json()
                    for name, (locate, valid) in self.score_targets(annotation, item).items()}
        return {**annotation, "expected": expected}

    def _parse_unit(self, text: str, item: Item) -> Any:
        """A document unit's item: its part of the unit's answer (None for a lone segment)."""
        from polyjudge.protocols.units import DOCUMENT, parse_unit_answer, unit_of

        unit = unit_of(item)
        if unit is None or unit.get("kind") != DOCUMENT:
            return None
        if self.document_entries:
            from polyjudge.protocols.units import unit_entry, unit_record

            return {**self.parse_document_entry(unit_entry(text, unit), item, unit), "unit": unit_record(unit)}
        strict = getattr(self.settings, "on_unlocated", "keep") == "fail"
        return parse_unit_answer(text, item, unit, with_spans=self.produces_spans, answer_format=self.name,
                                 strict_spans=strict)

    def parse_document_entry(self, entry: dict[str, Any], item: Item, unit: dict[str, Any]) -> dict[str, Any]:
        """This item's annotation from its entry of a document answer (``document_entries``): the entry is
        read exactly as a segment-level answer, so the score is the segment-level protocol's; a quoted span
        that runs into another segment fails this item (:func:`~polyjudge.protocols.units.check_within_segment`)."""
        import json

        from polyjudge.protocols.units import check_within_segment

        errors = entry.get("errors")
        if isinstance(errors, list):
            check_within_segment([e.get("span") for e in errors if isinstance(e, dict)], item, unit)
        annotation = self.parse(json.dumps(entry, ensure_ascii=False), item)
        if not isinstance(annotation, dict):  # pragma: no cover - the protocols with entries annotate dicts
            raise ParseFailure("the segment's answer is not an annotation object")
        return annotation

    def expected_value(self, annotation: Any, name: str) -> float | None:
        """The expected score ``name`` recorded in an annotation, or None."""
        block = annotation.get("expected") if isinstance(annotation, dict) else None
        entry = block.get(name) if isinstance(block, dict) else None
        value = entry.get("score") if isinstance(entry, dict) else None
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def parse_protocol_options(protocol_cls: type[JudgeProtocol], extra: Mapping[str, Any]) -> object:
    """``extra`` checked against the protocol's ``options_type`` (InputError when it does not fit)."""
    owner = f"protocol '{getattr(protocol_cls, 'name', protocol_cls.__name__)}'"
    return parse_options(protocol_cls.options_type, extra, owner=owner)
