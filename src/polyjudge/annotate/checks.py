"""Attention checks and AI pre-annotation: the items ``annotate init`` adds or fills, and what they say.

Attention checks (``--attention-checks RATE``): each annotator's queue gets
``round(RATE * length)`` (at least one) extra items, each a copy of an item of
the same queue shown later than it:

* ``bad``: the translation with an injected error: words (or, in scripts
  written without spaces, grapheme clusters) shuffled by
  :func:`polyjudge.studies.perturb.perturb_text`, the perturbation ``polyjudge
  probe`` uses, here on half of the units so the damage is plain. An
  annotator passes when a span overlaps the changed part, or, for schemes
  without spans, when the score drops by at least :data:`BAD_DROP` below the
  original's (Appraise's BAD items), or a rating option is worse.
* ``repeat``: the same item again. An annotator passes when the two answers
  agree: scores within :data:`REPEAT_TOLERANCE`, MQM points within
  :data:`REPEAT_POINTS`, the same option or set.

A check whose original the annotator has not annotated yet is pending. Checks
are never results: status, agreement and exports leave them out.

AI pre-annotation (``--prefill RUN``, ESA^AI): the merged spans of a span
protocol's run over the same items are shown as suggestions on a seeded share
of the items (``--prefill-share``); the page keeps, edits or deletes them, and
the stored spans say which (:func:`polyjudge.annotate.schemes.check_annotation`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from polyjudge.annotate.schemes import MQM_CATEGORIES, Scheme
from polyjudge.annotate.store import Annotation, ItemRow
from polyjudge.data.errors import InputError
from polyjudge.data.spans import SpanSegment

MAX_CHECK_RATE = 0.5
BAD_FRACTION = 0.5  # share of the units a bad item's translation has shuffled
BAD_DROP = 10.0  # a 0-100 score this much lower than the original's: the error was seen
REPEAT_TOLERANCE = 10.0  # two 0-100 scores of one item this close agree
REPEAT_POINTS = 5.0  # two MQM error-point totals of one item this close agree


def changed_range(old: str, new: str) -> tuple[int, int] | None:
    """The code points of ``new`` that differ from ``old`` (common prefix and suffix left out)."""
    if old == new:
        return None
    a = 0
    while a < min(len(old), len(new)) and old[a] == new[a]:
        a += 1
    b = 0
    while b < min(len(old), len(new)) - a and old[-1 - b] == new[-1 - b]:
        b += 1
    return a, len(new) - b


def _bad_copy(row: ItemRow, rng: np.random.Generator) -> tuple[str, tuple[int, int]] | None:
    from polyjudge.studies.perturb import perturb_text

    new, _unit = perturb_text(row.tgt, BAD_FRACTION, rng, row.tgt_lang or None)
    where = changed_range(row.tgt, new)
    return None if where is None else (new, where)


def _check_row(row: ItemRow, new_id: int, item_id: str, kind: str, rng: np.random.Generator) -> ItemRow:
    if kind == "bad":
        bad = _bad_copy(row, rng)
        if bad is not None:
            return replace(row, id=new_id, item_id=item_id, tgt=bad[0], judge_score=None, check="bad",
                           check_of=row.id, injected=bad[1], prefill=None)
    return replace(row, id=new_id, item_id=item_id, judge_score=None, check="repeat", check_of=row.id)


def add_checks(rows: list[ItemRow], queues: dict[str, list[int]], rate: float, seed: int
               ) -> tuple[list[ItemRow], dict[str, list[int]]]:
    """``rows`` with the attention checks appended, and the queues with them dealt in (see the module)."""
    pick = random.Random(seed)
    rng = np.random.default_rng(seed)
    taken = {r.item_id for r in rows}
    out, dealt = list(rows), {}
    for name, queue in queues.items():
        q = list(queue)
        n = max(1, round(rate * len(queue))) if queue else 0
        for j, orig in enumerate(pick.sample(queue, min(n, len(queue)))):
            item_id = f"q{pick.getrandbits(40):010x}"
            while item_id in taken:
                item_id = f"q{pick.getrandbits(40):010x}"
            taken.add(item_id)
            row = _check_row(rows[orig], len(out), item_id, "bad" if j % 2 == 0 else "repeat", rng)
            out.append(row)
            q.insert(pick.randint(q.index(orig) + 1, len(q)), row.id)
        dealt[name] = q
    return out, dealt


# ---------------------------------------------------------------- whether an annotator passed a check

@dataclass(frozen=True, slots=True)
class CheckResult:
    """One attention check of one annotator: passed, failed, or (original not annotated yet) pending."""

    annotator: str
    item_id: str
    kind: str
    passed: bool | None


def _overlaps(body: dict[str, Any], where: tuple[int, int]) -> bool:
    a, b = where
    for sp in body.get("spans") or []:
        if sp.get("side", "target") != "target":
            continue
        s, e = int(sp["start"]), int(sp["end"])
        if (s < b and e > a) or (s == e and a <= s <= b):
            return True
    return False


def _option_rank(scheme: Scheme, body: dict[str, Any], letters: Sequence[str]) -> int:
    """How bad a rating answer is: the index of its worst option (options run from best to worst)."""
    picked = [body["choice"]] if scheme.answer == "choice" else list(body.get("choices") or [])
    return max(letters.index(x) for x in picked)


def check_passed(scheme: Scheme, kind: str, check: Annotation, original: Annotation,
                 injected: tuple[int, int] | None, letters: Sequence[str]) -> bool:
    """Whether the answers to a check and to its original show attention (see the module docstring)."""
    from polyjudge.annotate.export import mqm_points_of

    c, o = check.body, original.body
    if scheme.rating:
        if kind == "bad":
            rank = _option_rank(scheme, c, letters)
            return rank > _option_rank(scheme, o, letters) or rank == len(letters) - 1
        return (c.get("choice"), c.get("choices")) == (o.get("choice"), o.get("choices"))
    if kind == "bad":
        if scheme.spans and injected is not None and _overlaps(c, injected):
            return True
        if scheme.score:
            return float(c["score"]) <= float(o["score"]) - BAD_DROP
        return mqm_points_of(c) > mqm_points_of(o)
    if scheme.score:
        return abs(float(c["score"]) - float(o["score"])) <= REPEAT_TOLERANCE
    return c.get("no_error") == o.get("no_error") and abs(mqm_points_of(c) - mqm_points_of(o)) <= REPEAT_POINTS


def check_results(items: Sequence[ItemRow], scheme: Scheme, letters: Sequence[str],
                  latest: dict[tuple[str, int], Annotation]) -> list[CheckResult]:
    """Every annotated attention check's result, by item then annotator order of ``latest``."""
    out = []
    for (name, item), ann in sorted(latest.items(), key=lambda kv: kv[0][1]):
        row = items[item]
        if not row.check or row.check_of is None:
            continue
        original = latest.get((name, row.check_of))
        passed = None if original is None else check_passed(scheme, row.check, ann, original, row.injected, letters)
        out.append(CheckResult(name, row.item_id, row.check, passed))
    return out


# ---------------------------------------------------------------- AI pre-annotation

def _category(name: str) -> str:
    low = name.strip().lower()
    for cat in MQM_CATEGORIES:
        if low in (cat.lower(), cat.split("/")[-1].lower()):
            return cat
    return ""


def _severity(name: str, scheme: Scheme) -> str:
    low = name.strip().lower()
    if low in scheme.severities:
        return low
    return scheme.severities[-1] if low == "critical" else scheme.severities[0]


def suggestions_of(segment: SpanSegment, tgt: str, scheme: Scheme) -> tuple[dict[str, Any], ...]:
    """A judge's spans of one translation as suggestions (located spans that fit the text, one each)."""
    out: list[dict[str, Any]] = []
    for sp in segment.spans:
        if sp.start is None or sp.end is None or not 0 <= sp.start < sp.end <= len(tgt):
            continue
        s = {"start": sp.start, "end": sp.end, "category": _category(sp.category) if scheme.categories_required
             else "", "severity": _severity(sp.severity, scheme)}
        if s not in out:
            out.append(s)
    return tuple(out)


def _segments_by_row(rows: Sequence[ItemRow], segments: Sequence[SpanSegment], run: str) -> list[SpanSegment | None]:
    """The run's segment of each row: by order when the run judged the same texts, else by ids."""
    if len(segments) == len(rows) and all(s.hypothesis in (None, r.tgt) for s, r in zip(segments, rows)):
        return list(segments)
    keyed = {(s.system or "", s.doc_id or "", s.seg_id or ""): s for s in segments}
    out = [keyed.get((r.system, r.doc_id, r.seg_id)) for r in rows]
    if not any(out):
        raise InputError("the run's spans are of other items than the campaign's (no system, doc_id and seg_id "
                         "in common)", path=run, field="prefill", setting=True)
    return out


def with_suggestions(rows: list[ItemRow], run: str | Path, scheme: Scheme, share: float, seed: int) -> list[ItemRow]:
    """``rows`` with the run's spans as suggestions on a seeded ``share`` of the shown items."""
    from polyjudge.rundir import RunDir

    segments, _warnings = RunDir.open(run).span_segments()
    by_row = _segments_by_row(rows, segments, str(run))
    shown = [r.id for r in rows if r.sampled]
    chosen = set(random.Random(seed + 1).sample(shown, round(share * len(shown)))) if share < 1 else set(shown)
    return [replace(r, prefill=suggestions_of(seg, r.tgt, scheme) if seg is not None else ())
            if r.id in chosen else r for r, seg in zip(rows, by_row)]


__all__ = ["BAD_DROP", "MAX_CHECK_RATE", "REPEAT_POINTS", "REPEAT_TOLERANCE", "CheckResult", "add_checks",
           "changed_range", "check_passed", "check_results", "suggestions_of", "with_suggestions"]
