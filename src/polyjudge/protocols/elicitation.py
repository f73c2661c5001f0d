"""Rating elicitation protocols for judge validation (Guerdan et al.).

``forced-choice``: the judge picks one option; ``response-set``: the judge picks
every option that could reasonably apply (one admissible set of the task).
The rating task comes from a task file (option ``task=PATH``, see
:mod:`polyjudge.validation.task`; from Python a :class:`RatingTask` works
too). Judges are sampled several times per item (default 10 runs at
temperature 1) so that each item gets a distribution.

Answers are parsed strictly: after trimming whitespace, a trailing period,
and wrapping quotes/backticks/asterisks, the answer must be exactly one valid
letter (forced choice) or distinct valid letters naming an admissible set
(response set). Anything else is a ParseFailure, recorded and never counted.
These protocols are categorical: ``score`` returns None; the annotation holds
the choice and the item key used by ``polyjudge validate``.

Rating tasks live here too (protocols sit below validation, which re-exports
them from :mod:`polyjudge.validation.task`).

Rating tasks: response options O and admissible response sets Q.

A rating task (Guerdan et al., §2) has ordered options ``O = (o_1..o_q)`` and an
ordered list ``Q`` of admissible response sets (non-empty subsets of O). Under
forced choice a rater picks one option; under response-set elicitation a rater
picks every option that could reasonably apply, i.e. one set in Q.

Judges answer with letters: option ``k`` (0-based) is letter ``chr(ord('A')+k)``
unless the task names its own letters. A response-set answer is the letters of
its options in any order ("BA" = "AB"); it maps to the index *in Q* of the set
with exactly those options, built here from set equality rather than from
positional arithmetic (the authors' code gets the position wrong by one).

Task file (JSON, or TOML read with the standard library)::

    {"name": "toxicity",
     "instruction": "Rate the toxicity of the comment.",
     "options": [{"label": "Very toxic", "description": "..."}, "Toxic", "Not toxic"],
     "response_sets": [["Very toxic"], ["Toxic"], ["Not toxic"], ["Very toxic", "Toxic"]],
     "letters": ["A", "B", "C"]}

``response_sets`` may be omitted or set to ``"all"`` (every non-empty subset,
by size then option order) or ``"singletons"`` (a fully specified task).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from polyjudge.backends.base import Message
from polyjudge.data.errors import InputError
from polyjudge.data.records import DocumentContext, Item
from polyjudge.protocols.base import JudgeProtocol, ParseFailure, ProtocolOptions
from polyjudge.protocols.options import option
from polyjudge.protocols.registry import register_protocol
from polyjudge.protocols.templates import PromptTemplate

__all__ = ["ElicitationOptions", "ForcedChoice", "ResponseSet", "item_key", "RatingTask", "all_subsets",
           "load_task"]

def all_subsets(n_options: int) -> list[frozenset[int]]:
    """Every non-empty subset of ``range(n_options)``, by size then lexicographic order."""
    out: list[frozenset[int]] = []
    for size in range(1, n_options + 1):
        out.extend(frozenset(c) for c in itertools.combinations(range(n_options), size))
    return out


@dataclass(frozen=True)
class RatingTask:
    """Options, admissible response sets and the letters judges answer with."""

    options: tuple[str, ...]
    response_sets: tuple[frozenset[int], ...]
    name: str = "task"
    instruction: str = ""
    descriptions: tuple[str, ...] = ()
    letters: tuple[str, ...] = ()
    _set_index: dict[frozenset[int], int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        q = len(self.options)
        if q < 2:
            raise InputError("a rating task needs at least two options", field="options")
        if len(set(self.options)) != q:
            raise InputError("option labels must be distinct", field="options")
        letters = self.letters or tuple(chr(ord("A") + k) for k in range(q))
        if len(letters) != q or len(set(letters)) != q or any(len(x) != 1 for x in letters):
            raise InputError("letters must be one distinct character per option", field="letters")
        object.__setattr__(self, "letters", tuple(letters))
        if not self.descriptions:
            object.__setattr__(self, "descriptions", ("",) * q)
        elif len(self.descriptions) != q:
            raise InputError("one description per option", field="options")
        index: dict[frozenset[int], int] = {}
        for v, s in enumerate(self.response_sets):
            if not s or not all(0 <= k < q for k in s):
                raise InputError(f"response set {v} must be a non-empty subset of the options",
                                 field="response_sets")
            if s in index:
                raise InputError(f"response set {sorted(s)} is listed twice", field="response_sets")
            index[frozenset(s)] = v
        if not self.response_sets:
            raise InputError("no admissible response sets", field="response_sets")
        object.__setattr__(self, "_set_index", index)

    # -- shape --------------------------------------------------------------
    @property
    def n_options(self) -> int:
        return len(self.options)

    @property
    def n_sets(self) -> int:
        return len(self.response_sets)

    @property
    def membership(self) -> np.ndarray:
        """Λ: ``|O| x |Q|`` 0/1 matrix, ``Λ[k, v] = 1`` iff option k is in set v."""
        lam = np.zeros((self.n_options, self.n_sets))
        for v, s in enumerate(self.response_sets):
            lam[list(s), v] = 1.0
        return lam

    @property
    def fully_specified(self) -> bool:
        """Q is exactly the singletons {o_k} (Theorem 3.4: θ* identifiable from O)."""
        return (self.n_sets == self.n_options
                and set(self.response_sets) == {frozenset([k]) for k in range(self.n_options)})

    @property
    def singleton_index(self) -> list[int | None]:
        """For each option, the index in Q of its singleton set (None if not admissible)."""
        return [self._set_index.get(frozenset([k])) for k in range(self.n_options)]

    def set_label(self, v: int) -> str:
        return "{" + ", ".join(self.options[k] for k in sorted(self.response_sets[v])) + "}"

    def set_letters(self, v: int) -> str:
        return "".join(self.letters[k] for k in sorted(self.response_sets[v]))

    # -- answers ------------------------------------------------------------
    def option_of_letter(self, letter: str) -> int:
        """Index of the option a single letter names (case-insensitive)."""
        up = letter.strip().upper()
        for k, x in enumerate(self.letters):
            if x.upper() == up:
                return k
        raise InputError(f"'{letter}' is not one of the letters {', '.join(self.letters)}")

    def set_of_letters(self, letters: str) -> int:
        """Index in Q of the response set whose options are exactly ``letters``.

        Order does not matter; a repeated letter, an unknown letter, or a set
        that is not admissible raises InputError.
        """
        chars = [c for c in letters.strip()]
        if not chars:
            raise InputError("empty response set")
        ks = [self.option_of_letter(c) for c in chars]
        if len(set(ks)) != len(ks):
            raise InputError(f"'{letters}' repeats a letter")
        s = frozenset(ks)
        if s not in self._set_index:
            raise InputError(f"'{letters}' is not an admissible response set")
        return self._set_index[s]

    # -- construction -------------------------------------------------------
    @classmethod
    def build(cls, options: list[str], response_sets: Any = "all", **kw: Any) -> RatingTask:
        """Build from option labels and sets given as label lists, index lists,
        letter strings, or the keywords ``"all"`` / ``"singletons"``."""
        q = len(options)
        if response_sets is None or response_sets == "all":
            sets = all_subsets(q)
        elif response_sets == "singletons":
            sets = [frozenset([k]) for k in range(q)]
        elif isinstance(response_sets, list):
            sets = []
            letters = kw.get("letters") or tuple(chr(ord("A") + k) for k in range(q))
            for v, s in enumerate(response_sets):
                members = s if isinstance(s, list) else [s]
                idx = []
                for m in members:
                    if isinstance(m, int) and not isinstance(m, bool):
                        idx.append(m)
                    elif m in options:
                        idx.append(options.index(m))
                    elif isinstance(m, str) and all(c in letters for c in m):
                        idx.extend(letters.index(c) for c in m)
                    else:
                        raise InputError(f"response set {v}: unknown option {m!r}", field="response_sets")
                sets.append(frozenset(idx))
        else:
            raise InputError("response_sets must be a list, 'all' or 'singletons'", field="response_sets")
        return cls(options=tuple(options), response_sets=tuple(sets), **kw)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "instruction": self.instruction,
                "options": [{"label": o, "description": d} for o, d in zip(self.options, self.descriptions)],
                "letters": list(self.letters),
                "response_sets": [[self.options[k] for k in sorted(s)] for s in self.response_sets]}


def load_task(path: str | Path) -> RatingTask:
    """Read a task file (``.json`` or ``.toml``); errors name the file and field."""
    p = Path(path)
    if not p.is_file():
        raise InputError("task file not found", path=str(p))
    text = p.read_text(encoding="utf-8")
    try:
        raw = tomllib.loads(text) if p.suffix.lower() == ".toml" else json.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"cannot parse task file: {exc}", path=str(p)) from None
    if not isinstance(raw, dict):
        raise InputError("task file must hold an object", path=str(p))
    opts = raw.get("options")
    if not isinstance(opts, list) or not opts:
        raise InputError("'options' must be a non-empty list", path=str(p), field="options")
    labels, descs = [], []
    for o in opts:
        if isinstance(o, str):
            labels.append(o)
            descs.append("")
        elif isinstance(o, dict) and isinstance(o.get("label"), str):
            labels.append(o["label"])
            descs.append(str(o.get("description", "")))
        else:
            raise InputError("each option is a label or {label, description}", path=str(p), field="options")
    letters = raw.get("letters")
    try:
        return RatingTask.build(labels, raw.get("response_sets", "all"),
                                name=str(raw.get("name", p.stem)),
                                instruction=str(raw.get("instruction", "")),
                                descriptions=tuple(descs),
                                letters=tuple(letters) if letters else ())
    except InputError as exc:
        raise InputError(exc.reason, path=str(p), field=exc.field) from None


_WRAP = "\"'`*"


def item_key(item: Item) -> str | None:
    """The key that links a judged item to human ratings: ``extra['item_id']`` or
    ``extra['id']``, else ``system:doc_id:seg_id`` of the non-empty parts."""
    for k in ("item_id", "id"):
        if item.extra.get(k) not in (None, ""):
            return str(item.extra[k])
    parts = [str(p) for p in (item.system, item.doc_id, item.seg_id) if p not in (None, "")]
    return ":".join(parts) if parts else None


def _clean(text: str) -> str:
    t = text.strip()
    if t.endswith("."):
        t = t[:-1].rstrip()
    while len(t) >= 2 and t[0] == t[-1] and t[0] in _WRAP:
        t = t[1:-1].strip()
    return t


@dataclass(frozen=True, slots=True)
class ElicitationOptions:
    """Options of ``forced-choice`` and ``response-set``."""

    task: str | RatingTask | None = field(default=None, metadata=option(
        "rating task file (.json or .toml): options, admissible response sets, letters"))


class _Elicitation(JudgeProtocol):
    builtin_template: ClassVar[str]
    options_type = ElicitationOptions
    settings: ElicitationOptions
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

    @property
    def template_hash(self) -> str:
        return self.template.hash

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
        ans = _clean(text)
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
        ans = _clean(text)
        if not ans or any(c.isspace() or c in ",;/+&" for c in ans):
            raise ParseFailure(f"expected letters written together, got {text.strip()[:40]!r}")
        try:
            v = self.task.set_of_letters(ans)
        except InputError as exc:
            raise ParseFailure(exc.reason) from None
        members = sorted(self.task.response_sets[v])
        return {"set": [self.task.options[k] for k in members], "letters": self.task.set_letters(v),
                "set_index": v, "item_id": item_key(item)}
