"""Rating elicitation protocols for judge validation (Guerdan et al.).

``forced-choice``: the judge picks one option; ``response-set``: the judge picks
every option that could reasonably apply (one admissible set of the task).
The rating task comes from a task file (option ``task=PATH``, see
:mod:`polyjudge.data.rating_task`; from Python a :class:`RatingTask` works
too). Judges are sampled several times per item (default 10 runs at
temperature 1) so that each item gets a distribution.

Answers are parsed strictly: after trimming whitespace, a trailing period,
and wrapping quotes/backticks/asterisks, the answer must be exactly one valid
letter (forced choice) or distinct valid letters naming an admissible set
(response set). Anything else is a ParseFailure, recorded and never counted.
These protocols are categorical: ``score`` returns None; the annotation holds
the choice and the item key used by ``polyjudge validate``.

The rating task itself (options O, admissible sets Q, letters, the task file
format) is :class:`polyjudge.data.rating_task.RatingTask`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

from polyjudge.data.chat import Message
from polyjudge.data.errors import InputError
from polyjudge.data.rating_task import RatingTask, all_subsets, load_task
from polyjudge.data.records import DocumentContext, Item
from polyjudge.protocols.answers import bare_answer
from polyjudge.protocols.base import JudgeProtocol, ParseFailure, ProtocolOptions
from polyjudge.protocols.options import option
from polyjudge.protocols.registry import register_protocol
from polyjudge.protocols.templates import PromptTemplate

__all__ = ["ElicitationOptions", "ForcedChoice", "ResponseSet", "item_key", "RatingTask", "all_subsets",
           "load_task"]


def item_key(item: Item) -> str | None:
    """The key that links a judged item to human ratings: ``extra['item_id']`` or
    ``extra['id']``, else ``system:doc_id:seg_id`` of the non-empty parts."""
    for k in ("item_id", "id"):
        if item.extra.get(k) not in (None, ""):
            return str(item.extra[k])
    parts = [str(p) for p in (item.system, item.doc_id, item.seg_id) if p not in (None, "")]
    return ":".join(parts) if parts else None


@dataclass(frozen=True, slots=True)
class ElicitationOptions:
    """Options of ``forced-choice`` and ``response-set``."""

    task: str | RatingTask | None = field(default=None, metadata=option(
        "rating task file (.json or .toml): options, admissible response sets, letters"))


class _Elicitation(JudgeProtocol):
    builtin_template: ClassVar[str]
    options_type = ElicitationOptions
    settings: ElicitationOptions
    template: PromptTemplate
    default_runs = 10
    default_temperature = 1.0
    default_aggregator = "mean"
    max_tokens = 16

    def __init__(self, options: ProtocolOptions | None = None) -> None:
        super().__init__(options)
        given = self.settings.task
        if isinstance(given, RatingTask):
            self.task = given
        elif given:
            self.task = load_task(given)
        else:
            raise InputError(f"protocol '{self.name}' needs a rating task file "
                             f"(protocol option task=PATH)", field="task")
        self.template = PromptTemplate.load(self.options.template, self.builtin_template)
        self._task_hash = hashlib.sha256(json.dumps(self.task.to_dict(), sort_keys=True)
                                         .encode("utf-8")).hexdigest()[:10]

    def signature_suffix(self) -> dict[str, str]:
        return {"task": self.task.name, "task_hash": self._task_hash}

    def messages(self, item: Item, context: DocumentContext) -> list[Message]:
        t = self.task
        view = {"name": t.name, "instruction": t.instruction, "letters": list(t.letters),
                "options": [{"letter": x, "label": o, "description": d}
                            for x, o, d in zip(t.letters, t.options, t.descriptions)]}
        return self.template.render(task=view, src=item.src, tgt=item.tgt, ref=item.ref,
                                    src_lang=item.src_lang, tgt_lang=item.tgt_lang, extra=item.extra)

    def score(self, annotation: Any, item: Item) -> float | None:
        return None


@register_protocol()
class ForcedChoice(_Elicitation):
    """The judge picks the one option of a rating task that fits (Guerdan et al.)."""

    name = "forced-choice"
    builtin_template = "elicitation/forced_choice.jinja"

    def output_schema(self, item: Item) -> dict[str, Any]:
        return {"type": "string", "enum": list(self.task.letters)}

    def parse(self, text: str, item: Item) -> dict[str, Any]:
        ans = bare_answer(text)
        if len(ans) != 1:
            raise ParseFailure(f"expected one letter of {''.join(self.task.letters)}, got {text.strip()[:40]!r}")
        try:
            k = self.task.option_of_letter(ans)
        except InputError as exc:
            raise ParseFailure(exc.reason) from None
        return {"option": self.task.options[k], "letter": self.task.letters[k], "index": k,
                "item_id": item_key(item)}


@register_protocol()
class ResponseSet(_Elicitation):
    """The judge picks every option of a rating task that could apply (Guerdan et al.)."""

    name = "response-set"
    builtin_template = "elicitation/response_set.jinja"

    def parse(self, text: str, item: Item) -> dict[str, Any]:
        ans = bare_answer(text)
        if not ans or any(c.isspace() or c in ",;/+&" for c in ans):
            raise ParseFailure(f"expected letters written together, got {text.strip()[:40]!r}")
        try:
            v = self.task.set_of_letters(ans)
        except InputError as exc:
            raise ParseFailure(exc.reason) from None
        members = sorted(self.task.response_sets[v])
        return {"set": [self.task.options[k] for k in members], "letters": self.task.set_letters(v),
                "set_index": v, "item_id": item_key(item)}
