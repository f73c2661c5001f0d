"""Seeded few-shot examples chosen per class from a labelled pool (after Hada et al., 2024).

Hada et al. give the judge a few human-labelled examples of the task, up to
two per possible class of the metric, chosen from held-out data by the
majority label of the annotators. This module does the choosing for any
protocol, reproducibly:

* the pool is a JSONL file, one example per line, with ``src`` and ``tgt``
  (optional ``ref``, ``src_lang``, ``tgt_lang``, ``answer`` — the answer the
  judge is shown for it, a string or a JSON value — and any other fields) and
  its class: ``label`` (a string, number or bool), ``labels`` (several
  annotators' labels; the majority wins, a tie leaves the example out),
  ``severity`` (e.g. the worst MQM severity), or ``score`` cut into buckets
  by ``fewshot_buckets`` (ascending edges; ``[33, 66]`` gives the classes
  ``<33``, ``33-66`` and ``>=66``);
* for each item, up to ``fewshot_k`` examples per class are taken in an
  order fixed by ``fewshot_seed`` (a hash of the seed and the example, so the
  order does not depend on the pool's line order and the same seed always
  gives the same examples); an example with the item's own source and
  translation is never shown for it, the next one of its class is taken;
* the examples reach the template as the variable ``examples`` (class order
  by first appearance in the pool, seeded order within a class), each a dict
  with ``source``, ``translation`` (also ``target``), ``reference``,
  ``source_language``/``target_language`` (names), ``label``, ``answer``
  (text) and ``fields`` (the whole pool line);
* the run signature records ``fewshot:HASH/k/seed`` with the SHA-256 of the
  pool's bytes, never its path, so moving the file changes nothing and
  editing it changes the signature.

A pool line without a class, with a class of another type, or without
``src``/``tgt`` is an :class:`InputError` naming the file, line and field.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from polyjudge.data.chat import Message
from polyjudge.data.errors import InputError
from polyjudge.data.languages import language_name
from polyjudge.data.readers import iter_jsonl
from polyjudge.data.records import Item
from polyjudge.protocols.options import option

CLASS_FIELDS = ("label", "labels", "severity", "score")


def pool_field() -> Any:
    """The ``fewshot_pool`` option field; :func:`k_field`, :func:`seed_field` and
    :func:`buckets_field` are its companions (one default and help text for every protocol)."""
    return field(default=None, metadata=option(
        "JSONL pool of labelled examples to show the judge (see polyjudge.protocols.fewshot); "
        "its content hash goes into the signature"))


def k_field() -> Any:
    return field(default=2, metadata=option("most few-shot examples per class (with fewshot_pool)"))


def seed_field() -> Any:
    return field(default=0, metadata=option(
        "seed of the order in which few-shot examples are taken (with fewshot_pool)"))


def buckets_field() -> Any:
    return field(default=(), metadata=option(
        "ascending score edges that cut a pool example's 'score' into classes (with fewshot_pool)"))


class FewShotSettings(Protocol):
    """Options holding the four few-shot fields."""

    @property
    def fewshot_pool(self) -> str | None: ...

    @property
    def fewshot_k(self) -> int: ...

    @property
    def fewshot_seed(self) -> int: ...

    @property
    def fewshot_buckets(self) -> tuple[float, ...]: ...


@dataclass(frozen=True, slots=True)
class Example:
    """One pool example: its class, its order key for the seed, and what the template sees."""

    label: str
    rank: str  # sha256 of seed + content: the seeded order
    src: str
    tgt: str
    view: dict[str, Any]


def _text(value: Any, *, path: str, line: int, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError("must be a non-empty string", path=path, line=line, field=name)
    return value


def _label(row: dict[str, Any], buckets: Sequence[float], *, path: str, line: int) -> str | None:
    """The example's class as text; None for a tie of annotators (the example is not used)."""
    if "label" in row or "severity" in row:
        name = "label" if "label" in row else "severity"
        value = row[name]
        if isinstance(value, str) and value.strip():
            return value.strip()
        if isinstance(value, bool | int) or (isinstance(value, float) and math.isfinite(value)):
            return json.dumps(value)
        raise InputError("must be a non-empty string, a number or a bool", path=path, line=line, field=name)
    if "labels" in row:
        votes = row["labels"]
        if not isinstance(votes, list) or not votes or not all(
                isinstance(v, str | int | float | bool) and not isinstance(v, dict) for v in votes):
            raise InputError("must be a non-empty list of labels", path=path, line=line, field="labels")
        counts = Counter(v.strip() if isinstance(v, str) else json.dumps(v) for v in votes).most_common()
        if len(counts) > 1 and counts[0][1] == counts[1][1]:
            return None
        return counts[0][0]
    if "score" in row:
        if not buckets:
            raise InputError("a pool example with a 'score' needs fewshot_buckets to turn scores into classes",
                             path=path, line=line, field="score")
        value = row["score"]
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise InputError("must be a finite number", path=path, line=line, field="score")
        below = [b for b in buckets if value < b]
        if not below:
            return f">={buckets[-1]:g}"
        k = len(buckets) - len(below)
        return f"<{buckets[0]:g}" if k == 0 else f"{buckets[k - 1]:g}-{buckets[k]:g}"
    raise InputError(f"a pool example needs its class: one of {', '.join(CLASS_FIELDS)}", path=path, line=line,
                     field="label")


def _answer(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class FewShotPool:
    """A labelled pool read once; :meth:`select` gives an item its examples."""

    def __init__(self, path: str | Path, *, k: int, seed: int, buckets: Sequence[float] = ()) -> None:
        p = Path(path)
        if k < 1:
            raise InputError(f"fewshot_k must be at least 1, got {k}", field="fewshot_k")
        if list(buckets) != sorted(set(buckets)) or not all(math.isfinite(b) for b in buckets):
            raise InputError("fewshot_buckets must be finite and strictly ascending", field="fewshot_buckets")
        try:
            raw = p.read_bytes()
        except OSError:
            raise InputError("few-shot pool not found or unreadable", path=str(p), field="fewshot_pool") from None
        self.k, self.seed, self.path = k, seed, str(p)
        self.hash = hashlib.sha256(raw).hexdigest()[:10]
        self.tied = 0  # examples left out because their annotators tied
        self.examples: list[Example] = []
        self.classes: list[str] = []
        name = str(p)
        for n, row in iter_jsonl(p):
            src = _text(row.get("src"), path=name, line=n, name="src")
            tgt = _text(row.get("tgt"), path=name, line=n, name="tgt")
            label = _label(row, buckets, path=name, line=n)
            if label is None:
                self.tied += 1
                continue
            if label not in self.classes:
                self.classes.append(label)
            content = json.dumps(row, sort_keys=True, ensure_ascii=False)
            rank = hashlib.sha256(f"{seed}\x1f{content}".encode()).hexdigest()
            src_lang, tgt_lang = row.get("src_lang"), row.get("tgt_lang")
            view = {"source": src, "translation": tgt, "target": tgt, "reference": row.get("ref"),
                    "src_lang": src_lang, "tgt_lang": tgt_lang,
                    "source_language": language_name(src_lang) if isinstance(src_lang, str) else None,
                    "target_language": language_name(tgt_lang) if isinstance(tgt_lang, str) else None,
                    "label": label, "answer": _answer(row.get("answer")), "fields": row, "line": n}
            self.examples.append(Example(label, rank, src, tgt, view))
        if not self.examples:
            raise InputError("the few-shot pool has no usable example", path=name, field="fewshot_pool")
        self._ordered = sorted(self.examples, key=lambda e: e.rank)

    def signature(self) -> str:
        """``HASH/k/seed``: what the examples depend on (the pool's content, not its path)."""
        return f"{self.hash}/k{self.k}/s{self.seed}"

    def select(self, item: Item) -> list[dict[str, Any]]:
        """Up to ``k`` examples per class for ``item``, never one with its source and translation."""
        own = (item.src.strip(), item.tgt.strip())
        taken: dict[str, list[Example]] = {c: [] for c in self.classes}
        for ex in self._ordered:
            group = taken[ex.label]
            if len(group) < self.k and (ex.src.strip(), ex.tgt.strip()) != own:
                group.append(ex)
        return [dict(ex.view) for c in self.classes for ex in taken[c]]


def require_answers(pool: FewShotPool) -> None:
    """Every example needs an ``answer`` when the protocol shows it as a question-answer turn."""
    for ex in pool.examples:
        if not ex.view["answer"].strip():
            raise InputError("a few-shot example needs the 'answer' the judge is shown for it", path=pool.path,
                             line=ex.view["line"], field="answer")


def require_references(pool: FewShotPool) -> None:
    """A reference-based judge is shown each example's reference too: every example needs ``ref``."""
    for ex in pool.examples:
        ref = ex.view["reference"]
        if not isinstance(ref, str) or not ref.strip():
            raise InputError("with_reference needs a reference ('ref') for every few-shot example too",
                             path=pool.path, line=ex.view["line"], field="ref")


def insert_turns(messages: list[Message], examples: Sequence[tuple[str, str]]) -> list[Message]:
    """The chat with one user/assistant pair per example inserted before its last (user) message."""
    if not examples:
        return messages
    turns = [m for question, answer in examples for m in (Message("user", question), Message("assistant", answer))]
    return [*messages[:-1], *turns, messages[-1]]


def load_pool(path: str | None, k: int, seed: int, buckets: Sequence[float] = ()) -> FewShotPool | None:
    """The pool an options object names, or None without one."""
    return None if path is None else FewShotPool(path, k=k, seed=seed, buckets=buckets)


def pool_for(settings: FewShotSettings, *, answers_as_turns: bool, with_reference: bool) -> FewShotPool | None:
    """The settings' pool (None without one), checked before anything is sent: every example needs an
    answer when the examples are shown as user/assistant turns, and a reference in a reference-based run."""
    pool = load_pool(settings.fewshot_pool, settings.fewshot_k, settings.fewshot_seed, settings.fewshot_buckets)
    if pool is not None and answers_as_turns:
        require_answers(pool)
    if pool is not None and with_reference:
        require_references(pool)
    return pool


def fewshot_signature(pool: FewShotPool | None) -> dict[str, str]:
    """``{"fewshot": HASH/kK/sSEED}`` with a pool, else nothing."""
    return {} if pool is None else {"fewshot": pool.signature()}


__all__ = ["CLASS_FIELDS", "Example", "FewShotPool", "FewShotSettings", "buckets_field", "fewshot_signature",
           "insert_turns", "k_field", "load_pool", "pool_field", "pool_for", "require_answers", "require_references",
           "seed_field"]
