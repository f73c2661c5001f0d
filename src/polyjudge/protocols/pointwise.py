"""Pointwise judging of one candidate in any language (Fu & Liu, 2025).

The judge gets an English instruction that names the evaluation language, a
task-specific input block and the candidate, and answers with a short
justification followed by a verdict: ``correct``/``incorrect`` (``scale:
binary``) or a whole grade from 1 to 5 (``scale: grade``).

Options (:class:`PointwiseOptions`, given as ``-o KEY=VALUE``):

- ``task``: ``qa`` (extractive QA), ``math`` (math QA), ``translation``
  (default), ``summarization`` or ``dialogue``. Aliases: ``xquad``,
  ``extractive-qa``, ``mgsm``, ``math-qa``, ``mt``, ``summary``, ``dialog``.
- ``scale``: ``binary`` (default) or ``grade``.
- ``language``: the evaluation language's name, overriding the item's.
- ``score_mode``: ``sample`` (default) or ``expected``: with ``scale: grade``,
  the probability-weighted grade over 1-5 read from the answer's token
  probabilities (:mod:`polyjudge.protocols.expected`).

Which item field feeds which template slot (``src``/``tgt`` are the main
input/output; the rest comes from ``Item.extra``):

=============  ==========================================  ============
task           input                                        candidate
=============  ==========================================  ============
qa             ``extra["context"]`` (required) and           ``tgt``
               ``extra["question"]`` (default ``src``)
math           ``extra["question"]`` (default ``src``)       ``tgt``
translation    ``src`` (in ``src_lang``)                     ``tgt``
summarization  ``extra["document"]`` (default ``src``)       ``tgt``
dialogue       ``extra["history"]`` (default ``src``; a      ``tgt``
               list of turns is joined one per line)
=============  ==========================================  ============

A user template (``ProtocolOptions.template``) sees all of these variables
plus ``src``, ``tgt``, ``ref``, ``src_lang``, ``tgt_lang``, ``language``,
``language_code``, ``source_language``, ``scale``, ``task`` and ``extra``
(every ``Item.extra`` key is also available by its own name).

Parsing accepts the verdict in ``<verdict>``/``<grade>``/``<answer>`` tags,
a JSON object, or a ``Verdict: ...`` line, with markdown decoration; the
verdict itself must be exactly one allowed value, otherwise the answer is a
:class:`ParseFailure`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from polyjudge.data.chat import Message
from polyjudge.data.errors import InputError
from polyjudge.data.languages import language_name as _language_name
from polyjudge.data.records import DocumentContext, Item
from polyjudge.protocols.base import JudgeProtocol, ParseFailure, ProtocolOptions
from polyjudge.protocols.expected import Locator, ScoreMode, regex_locator, score_mode_field
from polyjudge.protocols.options import option
from polyjudge.protocols.registry import register_protocol
from polyjudge.protocols.templates import PromptTemplate

TASKS = ("qa", "math", "translation", "summarization", "dialogue")
_TASK_ALIASES = {
    "xquad": "qa", "extractive-qa": "qa", "extractive_qa": "qa",
    "mgsm": "math", "math-qa": "math", "math_qa": "math",
    "mt": "translation", "wmt": "translation",
    "summary": "summarization", "summarisation": "summarization", "wikilingua": "summarization",
    "dialog": "dialogue", "xdailydialog": "dialogue",
}
SCALES = ("binary", "grade")
BINARY_LABELS = ("correct", "incorrect")
GRADES = (1, 2, 3, 4, 5)


def load_template(user_path: str | None, builtin: str) -> PromptTemplate:
    """The user's template file, else the packaged one (``templates/<builtin>``)."""
    return PromptTemplate.load(user_path, builtin)


def language_name(code: str | None) -> str:
    """English name of a language code (``de`` -> German) for the instruction.

    The project's one table (:mod:`polyjudge.data.languages`) decides; unknown
    codes pass through, and a missing code still gives the prompt a phrase.
    """
    return _language_name(code) or "the language of the text"


def missing_languages(task: str, override: str | None, item: Item) -> tuple[str, ...]:
    """What a pointwise or rubric prompt would lose: the judged text's language (the ``language``
    option, else the item's target language; outside translation also its source language or an
    extra ``language``) and, for a translation, the source language."""
    missing = []
    if task == "translation" and not item.src_lang:
        missing.append("src_lang")
    own = item.tgt_lang if task == "translation" else item.tgt_lang or item.src_lang or item.extra.get("language")
    if not (override or own):
        missing.append("tgt_lang")
    return tuple(missing)


def normalise_task(task: str) -> str:
    t = task.strip().lower()
    t = _TASK_ALIASES.get(t, t)
    if t not in TASKS:
        raise InputError(f"unknown pointwise task '{task}'; known: {', '.join(TASKS)}",
                         field="task")
    return t


# -- parsing ------------------------------------------------------------------

_VERDICT_KEYS = ("verdict", "grade", "answer", "score", "judgment", "judgement", "rating")
_TAG_RE = re.compile(
    r"<\s*(verdict|grade|answer|score|judg(?:e)?ment|rating)\s*>(.*?)<\s*/\s*\1\s*>",
    re.IGNORECASE | re.DOTALL)
_JUST_TAG_RE = re.compile(r"<\s*justification\s*>(.*?)<\s*/\s*justification\s*>",
                          re.IGNORECASE | re.DOTALL)
_LABEL_RE = re.compile(
    r"^[ \t>#*_\-]*(verdict|grade|answer|score|judg(?:e)?ment|rating|final verdict|final grade)"
    r"[ \t*_]*[:=][ \t]*(.+?)[ \t]*$", re.IGNORECASE | re.MULTILINE)
_JUST_LABEL_RE = re.compile(r"^[ \t>#*_\-]*(?:justification|reason|explanation)[ \t*_]*:[ \t]*(.+)$",
                            re.IGNORECASE | re.MULTILINE)
_JSON_RE = re.compile(r"\{.*\}", re.DOTALL)
_DECOR = " \t\r\n*_`'\"[](){}.!,;:"
_GRADE_RE = re.compile(r"^([0-9]+)(?:\.0+)?(?:\s*(?:/|out of|of)\s*5)?$", re.IGNORECASE)


def _clean(value: str) -> str:
    return re.sub(r"\s+", " ", value.strip(_DECOR)).strip(_DECOR).lower()


_SECONDARY = ("answer", "score")


def _prefer(found: list[tuple[str, str]]) -> list[str]:
    """Values under verdict-like names win over ``answer``/``score``, which a
    judge may also use for the judged answer itself."""
    primary = [v for k, v in found if k.lower() not in _SECONDARY]
    return primary or [v for _, v in found]


def _candidates(text: str) -> tuple[list[str], str | None]:
    """Verdict strings in priority order of source (tags, JSON, labelled lines,
    bare answer) plus a justification if one is found."""
    just_m = _JUST_TAG_RE.search(text)
    justification = just_m.group(1).strip() if just_m else None
    tags = _prefer([(m.group(1), m.group(2)) for m in _TAG_RE.finditer(text)])
    if tags:
        return tags, justification
    jm = _JSON_RE.search(text)
    if jm:
        try:
            obj = json.loads(jm.group(0))
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            vals = [str(obj[k]) for k in obj if str(k).lower() in _VERDICT_KEYS
                    and isinstance(obj[k], (str, int, float)) and not isinstance(obj[k], bool)]
            if vals:
                just = obj.get("justification") or obj.get("reason") or obj.get("explanation")
                return vals, (str(just) if just is not None else justification)
    labels = _prefer([(m.group(1), m.group(2)) for m in _LABEL_RE.finditer(text)])
    if justification is None:
        jl = _JUST_LABEL_RE.search(text)
        justification = jl.group(1).strip() if jl else None
    if labels:
        return labels, justification
    stripped = text.strip()
    if stripped and "\n" not in stripped and len(stripped) <= 20:
        return [stripped], justification
    return [], justification


def parse_verdict(text: str, scale: str) -> tuple[str | int, str | None]:
    """The verdict (``correct``/``incorrect`` or a grade 1-5) and justification.

    Raises ParseFailure when no verdict is found, when it is not an allowed
    value, or when the answer states two different verdicts.
    """
    raw, justification = _candidates(text)
    if not raw:
        raise ParseFailure("no verdict found in the answer")
    values: list[str | int] = []
    for r in raw:
        c = _clean(r)
        if scale == "binary":
            if c in ("correct", "incorrect"):
                values.append(c)
            elif c == "not correct":
                values.append("incorrect")
            else:
                raise ParseFailure(f"verdict '{r.strip()[:40]}' is not 'correct' or 'incorrect'")
        else:
            m = _GRADE_RE.match(c)
            if not m or int(m.group(1)) not in GRADES:
                raise ParseFailure(f"grade '{r.strip()[:40]}' is not a whole number from 1 to 5")
            values.append(int(m.group(1)))
    if len(set(values)) > 1:
        raise ParseFailure(f"conflicting verdicts: {', '.join(map(str, values))}")
    return values[0], justification


@dataclass(frozen=True, slots=True)
class PointwiseOptions:
    """Options of ``pointwise``; ``task`` is stored as its canonical name, ``scale`` in lower case."""

    task: str = field(default="translation", metadata=option(
        f"what is judged: {', '.join(TASKS)} (or an alias such as xquad, mgsm, mt)", signature="task"))
    scale: str = field(default="binary", metadata=option(
        "binary (correct/incorrect) or grade (1-5)", signature="scale"))
    language: str | None = field(default=None, metadata=option(
        "evaluation language named in the prompt, instead of the item's"))
    score_mode: ScoreMode = score_mode_field(" (scale grade only)")

    def __post_init__(self) -> None:
        object.__setattr__(self, "task", normalise_task(self.task))
        scale = self.scale.lower()
        if scale not in SCALES:
            raise InputError(f"unknown scale '{scale}'; use binary or grade", field="scale")
        object.__setattr__(self, "scale", scale)
        if self.score_mode == "expected" and scale != "grade":
            raise InputError("score_mode=expected needs scale=grade (a 1-5 grade to take the expectation of)",
                             field="score_mode")


# Where the grade starts, in the order parse_verdict reads it: a tag, a JSON value, a labelled
# line, a bare answer.
_LOCATE_GRADE = regex_locator(
    r"<\s*(?:verdict|grade|answer|score|judg(?:e)?ment|rating)\s*>\s*[*_`'\"]*(?P<n>\d)",
    r'"(?:verdict|grade|answer|score|judg(?:e)?ment|rating)"\s*:\s*"?(?P<n>\d)',
    r"(?m)^[ \t>#*_\-]*(?:final )?(?:verdict|grade|answer|score|judg(?:e)?ment|rating)"
    r"[ \t*_]*[:=][ \t*_`'\"]*(?P<n>\d)",
    r"^\s*[*_`'\"]*(?P<n>\d)")


@register_protocol()
class Pointwise(JudgeProtocol):
    """One candidate, any language: correct/incorrect or a 1-5 grade (Fu & Liu, 2025)."""

    name = "pointwise"
    options_type = PointwiseOptions
    settings: PointwiseOptions
    template: PromptTemplate
    default_runs = 1
    default_temperature = 0.0
    default_aggregator = "mean"
    max_tokens = 256

    def __init__(self, options: ProtocolOptions | None = None) -> None:
        super().__init__(options)
        self.task = self.settings.task
        self.scale = self.settings.scale
        self.language_override = self.settings.language
        self.template = load_template(self.options.template, f"pointwise/{self.task}.jinja")

    def missing_languages(self, item: Item) -> tuple[str, ...]:
        return missing_languages(self.task, self.language_override, item)

    def variables(self, item: Item) -> dict[str, Any]:
        """Template variables for one item (documented in the module docstring)."""
        extra = dict(item.extra)
        lang_code = item.tgt_lang or item.src_lang or extra.get("language")
        history = extra.get("history", item.src)
        if isinstance(history, (list, tuple)):
            history = "\n".join(str(t) for t in history)
        where = item.origin
        if self.task == "qa" and not extra.get("context"):
            raise InputError("extractive QA items need a 'context'", path=where, field="context")
        out: dict[str, Any] = {k: v for k, v in extra.items() if k.isidentifier()}
        out.update(
            src=item.src, tgt=item.tgt, ref=item.ref, src_lang=item.src_lang,
            tgt_lang=item.tgt_lang, extra=extra, task=self.task, scale=self.scale,
            language=self.language_override or language_name(lang_code),
            language_code=lang_code, source_language=language_name(item.src_lang),
            context=extra.get("context", ""), question=extra.get("question", item.src),
            document=extra.get("document", item.src), history=history,
        )
        return out

    def messages(self, item: Item, context: DocumentContext) -> list[Message]:
        return self.template.render(**self.variables(item))

    def parse(self, text: str, item: Item) -> dict[str, Any]:
        verdict, justification = parse_verdict(text, self.scale)
        return {"scale": self.scale, "verdict": verdict, "justification": justification}

    def score(self, annotation: Any, item: Item) -> float | None:
        """1/0 for correct/incorrect; the grade itself on the 1-5 scale."""
        verdict = annotation.get("verdict") if isinstance(annotation, dict) else None
        if verdict is None:
            return None
        if annotation.get("scale", self.scale) == "binary":
            return 1.0 if verdict == "correct" else 0.0
        if self.score_mode == "expected":
            return self.expected_value(annotation, "grade")
        return float(verdict)

    def score_targets(self, annotation: Any, item: Item) -> dict[str, tuple[Locator, Collection[int]]]:
        return {"grade": (_LOCATE_GRADE, GRADES)}
