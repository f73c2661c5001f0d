"""Rating tasks: the response options O and admissible response sets Q a rater chooses from.

A rating task (Guerdan et al., §2) orders its options ``O = (o_1..o_q)`` and
lists the admissible response sets ``Q`` (non-empty subsets of O). Forced
choice asks a rater for one option; response-set elicitation asks for every
option that could reasonably apply, i.e. one set of Q.

Judges answer with letters. Option ``k`` (0-based) is ``chr(ord('A') + k)``
unless the task names its own letters. A response-set answer is the letters
of its options in any order ("BA" is "AB") and maps to the index *in Q* of
the set with exactly those options; the index is looked up by set equality,
never computed from positions (the authors' code is off by one there).

Task file (JSON, or TOML read with the standard library)::

    {"name": "toxicity",
     "instruction": "Rate the toxicity of the comment.",
     "options": [{"label": "Very toxic", "description": "..."}, "Toxic", "Not toxic"],
     "response_sets": [["Very toxic"], ["Toxic"], ["Not toxic"], ["Very toxic", "Toxic"]],
     "letters": ["A", "B", "C"]}

``response_sets`` may be left out or be ``"all"`` (every non-empty subset, by
size then option order) or ``"singletons"`` (a fully specified task).

The task sits in the data layer because both the elicitation protocols (which
ask judges) and validation (which compares their answers with humans') use it.
"""

from __future__ import annotations

import itertools
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyjudge.data import textio
from polyjudge.data.errors import InputError

if TYPE_CHECKING:
    import numpy as np
from polyjudge.data.readers import json_type, parse_json, plain

__all__ = ["RatingTask", "all_subsets", "load_task"]

# "all" response sets grow as 2^q - 1; beyond this many options a task must list its sets.
MAX_ALL_OPTIONS = 16


def all_subsets(n_options: int) -> list[frozenset[int]]:
    """Every non-empty subset of ``range(n_options)``, by size then lexicographic order."""
    out: list[frozenset[int]] = []
    for size in range(1, n_options + 1):
        out.extend(frozenset(c) for c in itertools.combinations(range(n_options), size))
    return out


def _default_letters(n_options: int) -> tuple[str, ...]:
    return tuple(chr(ord("A") + k) for k in range(n_options))


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
        letters = self.letters or _default_letters(q)
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
        import numpy as np  # here: protocols read tasks when --help lists them, which needs no numpy

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
        raise InputError(f"{textio.short(letter)} is not one of the letters {', '.join(self.letters)}")

    def set_of_letters(self, letters: str) -> int:
        """Index in Q of the response set whose options are exactly ``letters``.

        Order does not matter; a repeated letter, an unknown letter, or a set
        that is not admissible raises InputError.
        """
        chars = list(letters.strip())
        if not chars:
            raise InputError("empty response set")
        ks = [self.option_of_letter(c) for c in chars]
        if len(set(ks)) != len(ks):
            raise InputError(f"{textio.short(letters)} repeats a letter")
        s = frozenset(ks)
        if s not in self._set_index:
            raise InputError(f"{textio.short(letters)} is not an admissible response set")
        return self._set_index[s]

    # -- construction -------------------------------------------------------
    @classmethod
    def build(cls, options: list[str], response_sets: Any = "all", **kw: Any) -> RatingTask:
        """Build from option labels and sets given as label lists, index lists,
        letter strings, or the keywords ``"all"`` / ``"singletons"``."""
        q = len(options)
        sets: list[frozenset[int]]
        if response_sets is None or response_sets == "all":
            if q > MAX_ALL_OPTIONS:
                raise InputError(f"'all' response sets of {q} options would be {2 ** q - 1} sets; list the "
                                 f"admissible ones (at most {MAX_ALL_OPTIONS} options for 'all')",
                                 field="response_sets")
            sets = all_subsets(q)
        elif response_sets == "singletons":
            sets = [frozenset([k]) for k in range(q)]
        elif isinstance(response_sets, list):
            letters: Sequence[str] = kw.get("letters") or _default_letters(q)
            sets = [_parse_set(v, s, options, letters) for v, s in enumerate(response_sets)]
        else:
            raise InputError("response_sets must be a list, 'all' or 'singletons'", field="response_sets")
        return cls(options=tuple(options), response_sets=tuple(sets), **kw)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "instruction": self.instruction,
                "options": [{"label": o, "description": d} for o, d in zip(self.options, self.descriptions)],
                "letters": list(self.letters),
                "response_sets": [[self.options[k] for k in sorted(s)] for s in self.response_sets]}


def _parse_set(v: int, given: Any, options: list[str], letters: Sequence[str]) -> frozenset[int]:
    """One response set of a task definition: option indices, labels or letter strings."""
    members = given if isinstance(given, list) else [given]
    idx: list[int] = []
    for m in members:
        if isinstance(m, int) and not isinstance(m, bool):
            idx.append(m)
        elif m in options:
            idx.append(options.index(m))
        elif isinstance(m, str) and all(c in letters for c in m):
            idx.extend(letters.index(c) for c in m)
        else:
            raise InputError(f"response set {v}: unknown option {m!r}", field="response_sets")
    return frozenset(idx)


def load_task(path: str | Path) -> RatingTask:
    """Read a task file (``.json`` or ``.toml``); errors name the file and field."""
    p = Path(path)
    if not p.is_file():
        raise InputError("task file not found", path=str(p))
    text = textio.read_text(p)
    if p.suffix.lower() == ".toml":
        try:
            raw = tomllib.loads(text)
        except RecursionError:
            raise InputError("cannot parse task file: nested too deeply", path=str(p)) from None
        except ValueError as exc:  # TOMLDecodeError, or an integer too long to convert
            raise InputError(f"cannot parse task file: {plain(exc, 200)}", path=str(p)) from None
    else:
        raw = parse_json(text, path=str(p))
    if not isinstance(raw, dict):
        raise InputError(f"task file must hold an object, got {json_type(raw)}", path=str(p))
    opts = raw.get("options")
    if not isinstance(opts, list) or not opts:
        raise InputError("'options' must be a non-empty list", path=str(p), field="options")
    labels: list[str] = []
    descs: list[str] = []
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
    if letters is not None and (not isinstance(letters, list) or not all(isinstance(x, str) for x in letters)):
        raise InputError("'letters' must be a list of one-character strings", path=str(p), field="letters")
    try:
        return RatingTask.build(labels, raw.get("response_sets", "all"),
                                name=str(raw.get("name", p.stem)),
                                instruction=str(raw.get("instruction", "")),
                                descriptions=tuple(descs),
                                letters=tuple(letters) if letters else ())
    except InputError as exc:
        raise InputError(exc.reason, path=str(p), field=exc.field) from None
