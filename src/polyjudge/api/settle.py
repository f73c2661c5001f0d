"""Judging in rounds until the order of the systems is settled (``judge --until-settled``).

A round is one ordinary judging of a growing random subset of the test set into the same run
directory: segments (or whole documents) are drawn without replacement in a seeded order, every
system still in an open pair is judged on the segments drawn, and the store answers what earlier rounds
judged, so a round sends only its new segments and a later run without ``--until-settled`` sends only
what is missing. After each round :mod:`polyjudge.analysis.sequential` says which pairs of systems the
full test set cannot order otherwise (at ``--settle-alpha``, every look and pair included); a settled
pair is frozen, and a system whose every pair is settled is retired: later rounds no longer judge it
(its score and interval are from the units it was judged on). Judging stops when every pair is settled,
when the segments run out, or at the spending cap. Executors, batches (a round is a batch), runs and
panels are the engine's, unchanged.

With document context on, a segment's prompt shows its whole document, so drawing part of a
document would change the prompts: rounds then draw documents.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from polyjudge.engine.errors import BudgetExceeded
from polyjudge.engine.session import JudgeConfig, as_spec, build_protocol
from polyjudge.engine.session import judge as judge_all

if TYPE_CHECKING:
    import numpy as np

    from polyjudge.analysis.sequential import Retirement, SettleState
    from polyjudge.engine.result import RunResult
    from polyjudge.engine.spec import JudgingSpec
    from polyjudge.rundir.records import SystemRow

# The settings of judging in rounds (data/settings.py); a round is judged without them.
SETTLE_SETTINGS = ("until_settled", "settle_alpha", "settle_method", "settle_by", "settle_round", "settle_range")
METHODS = {
    "bernstein": "empirical-Bernstein confidence sequence for sampling without replacement (Waudby-Smith & "
                 "Ramdas 2020), Bonferroni over pairs and over systems",
    "asymptotic": "asymptotic confidence sequence (Waudby-Smith et al. 2024) of the without-replacement "
                  "martingale, Bonferroni over pairs and over systems"}


def judge(items: Sequence[Item] | str | Path, config: JudgeConfig | JudgingSpec | None = None, *,
          out: str | Path | None = None) -> RunResult:
    """Judge ``items`` as ``config`` says (:func:`polyjudge.engine.session.judge`); with
    ``until_settled`` in rounds until every pair of systems is settled (see the module's text).
    The result of a run in rounds is its last round's; ``result.manifest.settled`` says what was
    settled, what was left open (ties) and the calls made against a full run's."""
    spec = as_spec(config, out)
    if not spec.extra.get("until_settled"):
        return judge_all(items, spec)
    return judge_until_settled(items, spec)


@dataclass(frozen=True, slots=True)
class _Draw:
    """The test set's units in the order rounds draw them: each unit's item indices and its weight
    (segments in it, times units per segment of the test set: the mean of the weighted unit scores is
    the mean over segments)."""

    kind: str
    members: tuple[tuple[int, ...], ...]
    weights: tuple[float, ...]
    systems: tuple[str, ...]


def _read(items: Sequence[Item] | str | Path, spec: JudgingSpec) -> list[Item]:
    if isinstance(items, str | Path):
        from polyjudge.data.readers import read_items

        return read_items(items, src_lang=spec.data.src_lang, tgt_lang=spec.data.tgt_lang)
    return list(items)


def _unit_kind(items: Sequence[Item], spec: JudgingSpec) -> str:
    """Documents when asked, or when the judge sees document context and a document has several segments."""
    if spec.extra.get("settle_by", "segment") == "document":
        return "document"
    if spec.protocol.use_context:
        segments: dict[Any, set[Any]] = {}
        for it in items:
            if it.doc_id is not None:
                segments.setdefault((it.src_lang, it.tgt_lang, it.doc_id), set()).add(it.seg_id or it.src)
        if any(len(s) > 1 for s in segments.values()):
            return "document"
    return "segment"


def draw_units(items: Sequence[Item], kind: str, seed: int) -> _Draw:
    """The units of ``items`` (segments: language pair, document and segment id; documents: language
    pair and document) in a seeded random order; every system's item of a unit goes with it."""
    import numpy as np  # here, not at import: `polyjudge judge` without --until-settled needs no numpy

    members: dict[Any, list[int]] = {}
    segments: dict[Any, set[Any]] = {}
    for i, it in enumerate(items):
        segment = (it.src_lang, it.tgt_lang, it.doc_id, it.seg_id if it.seg_id is not None else it.src)
        key = (it.src_lang, it.tgt_lang, it.doc_id if it.doc_id is not None else segment) \
            if kind == "document" else segment
        members.setdefault(key, []).append(i)
        segments.setdefault(key, set()).add(segment)
    keys = sorted(members, key=repr)
    order = np.random.default_rng(seed).permutation(len(keys))
    total = sum(len(s) for s in segments.values())
    weights = tuple(len(segments[keys[k]]) * len(keys) / total for k in order)
    systems = tuple(sorted({it.system or "-" for it in items}))
    return _Draw(kind, tuple(tuple(members[keys[k]]) for k in order), weights, systems)


def _range(spec: JudgingSpec) -> tuple[float, float] | None:
    text = spec.extra.get("settle_range")
    if text is None:
        return None
    try:
        lo, hi = (float(x) for x in str(text).split(","))
    except ValueError:
        raise InputError(f"must be LOW,HIGH (two numbers), got {text!r}", field="settle_range",
                         setting=True) from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise InputError(f"must be LOW,HIGH with LOW below HIGH, got {text!r}", field="settle_range", setting=True)
    return lo, hi


def _round_specs(spec: JudgingSpec) -> tuple[JudgingSpec, JudgingSpec]:
    """The first round's spec and every later round's (a restart deletes the directory once)."""
    extra = {k: v for k, v in spec.extra.items() if k not in SETTLE_SETTINGS}
    first = dataclasses.replace(spec, extra=extra)
    return first, dataclasses.replace(first, output=dataclasses.replace(spec.output, restart=False))


@dataclass(slots=True)
class _Rounds:
    """What the rounds did so far."""

    retire: Retirement  # the settled pairs (frozen) and the retired systems
    rounds: int = 0
    taken: int = 0
    sent: int = 0
    clipped: int = 0
    stopped: str = ""
    given: tuple[float, float] | None = None  # --settle-range
    method: str = "bernstein"
    calls_at: dict[tuple[str, str], int] = dataclasses.field(default_factory=dict)  # pair -> calls when settled
    bounds: tuple[float, float] = (0.0, 1.0)  # the range used at the last look


def judge_until_settled(items: Sequence[Item] | str | Path, spec: JudgingSpec) -> RunResult:
    """Judge in rounds until every pair of systems is settled, the units run out or the cap is reached."""
    from polyjudge.analysis.sequential import Retirement

    given = _read(items, spec)
    protocol = build_protocol(spec)
    if protocol.compares_pairs:
        raise InputError(f"--until-settled needs a protocol that scores each translation; {protocol.name} "
                         "compares pairs", field="until_settled", setting=True)
    draw = draw_units(given, _unit_kind(given, spec), spec.generation.seed)
    if len(draw.systems) < 2:
        raise InputError("--until-settled orders systems; the input has one (give each item a 'system')",
                         field="until_settled", setting=True)
    size = spec.extra.get("settle_round") or max(10, math.ceil(len(draw.members) / 20))
    first, later = _round_specs(spec)
    state_of = _Rounds(Retirement(draw.systems), given=_range(spec),
                       method=str(spec.extra.get("settle_method", "bernstein")))
    alpha = float(spec.extra.get("settle_alpha", 0.05))
    while True:
        state_of.taken = min(len(draw.members), state_of.taken + size)
        chosen = _chosen(given, draw, state_of)
        stop: BudgetExceeded | None = None
        try:
            result = judge_all([given[i] for i in chosen], first if state_of.rounds == 0 else later)
        except BudgetExceeded as exc:
            result, stop = exc.result, exc
        state_of.rounds += 1
        state_of.sent += int(result.manifest.counts.get("sent_this_session", 0))
        state = _look(result, chosen, draw, state_of, alpha, protocol.higher_is_better)
        for p in state.settled:
            state_of.calls_at.setdefault((p.a, p.b), len(result.items) * result.runs * len(result.judges))
        if stop is not None or state.all_settled or state_of.taken == len(draw.members):
            state_of.stopped = "budget" if stop is not None else ("settled" if state.all_settled else "exhausted")
            break
    _record(result, state, state_of, draw, len(given), size)
    if spec.output.path is not None:
        from polyjudge.rundir import write_settled

        write_settled(spec.output.path, result.manifest, settled_rows(result, state))
    if stop is not None:
        raise stop
    return result


def _chosen(items: Sequence[Item], draw: _Draw, rounds: _Rounds) -> list[int]:
    """The items of the units drawn so far that a round judges: every system's up to the units it was
    judged on (a retired system's stop where it was retired; the store answers them again)."""
    units = rounds.retire.units(rounds.taken)
    return sorted(i for k, unit in enumerate(draw.members[:rounds.taken]) for i in unit
                  if k < units[items[i].system or "-"])


def _look(result: RunResult, chosen: Sequence[int], draw: _Draw, rounds: _Rounds, alpha: float,
          higher_is_better: bool) -> SettleState:
    """The state after a round: each unit's weighted mean score per system (NaN: none scored, or retired),
    tested; the pairs it settles are frozen and the systems left in no open pair retired."""
    import numpy as np

    from polyjudge.analysis.sequential import settle_state

    position = {item: k for k, unit in enumerate(draw.members[:rounds.taken]) for item in unit}
    column = {s: c for c, s in enumerate(draw.systems)}
    sums = np.zeros((rounds.taken, len(draw.systems)))
    counts = np.zeros_like(sums)
    for item_index, item, score in zip(chosen, result.items, result.segment_scores()):
        if score is not None and math.isfinite(score):
            cell = position[item_index], column[item.system or "-"]
            sums[cell] += score
            counts[cell] += 1
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts
    lo, hi = _bounds(means, rounds)
    weights = np.asarray(draw.weights[:rounds.taken])[:, None]
    units = lo + weights * (np.clip(means, lo, hi) - lo)
    top = lo + max(draw.weights) * (hi - lo)
    state = settle_state(units, draw.systems, len(draw.members), alpha, (lo, top), higher_is_better, rounds.method,
                         frozen=rounds.retire.frozen)
    rounds.retire.update(state)
    return state


def _bounds(means: np.ndarray, rounds: _Rounds) -> tuple[float, float]:
    """The score range: the one given (scores outside it are clipped and counted), else the range of the
    scores judged so far (then the guarantee is approximate, which the record says)."""
    import numpy as np

    seen = means[np.isfinite(means)]
    if rounds.given is not None:
        lo, hi = rounds.given
        rounds.clipped = int(((seen < lo) | (seen > hi)).sum())
    else:
        lo, hi = (float(seen.min()), float(seen.max())) if seen.size else (0.0, 1.0)
        hi = hi if hi > lo else lo + 1.0
    rounds.bounds = (lo, hi)
    return lo, hi


def settled_rows(result: RunResult, state: SettleState) -> list[SystemRow]:
    """``systems.tsv``'s rows with each system's interval and rank group (open pairs: one group)."""
    from polyjudge.analysis.sequential import tie_groups

    groups = tie_groups(state)
    bounds = {s.system: s for s in state.systems}
    return [dataclasses.replace(row, low=bounds[row.system].low, high=bounds[row.system].high,
                                group=groups.get(row.system)) if row.system in bounds else row
            for row in result.system_rows()]


def _record(result: RunResult, state: SettleState, rounds: _Rounds, draw: _Draw, n_items: int,
            size: int) -> None:
    """The manifest's ``settled`` record."""
    from polyjudge.analysis.sequential import tie_groups

    per_item = result.runs * len(result.judges)
    groups = tie_groups(state)
    units, settled_at = rounds.retire.units(rounds.taken), rounds.retire.settled_at
    result.manifest.settled = {
        "alpha": state.alpha, "method": rounds.method, "method_text": METHODS[rounds.method], "unit": draw.kind,
        "units_judged": rounds.taken,
        "units_total": len(draw.members), "rounds": rounds.rounds, "round_size": size,
        "calls": len(result.items) * per_item, "calls_full": n_items * per_item, "sent": rounds.sent,
        "stopped": rounds.stopped, "range": list(rounds.bounds), "range_given": rounds.given is not None,
        "clipped": rounds.clipped,
        "systems": [{"system": s.system, "score": s.score, "low": s.low, "high": s.high, "group": groups[s.system],
                     "units": units[s.system]} for s in state.systems],
        "settled": [{**_pair(p), "units": settled_at.get((p.a, p.b), rounds.taken),
                     "calls": rounds.calls_at.get((p.a, p.b))} for p in state.settled],
        "open": [{"a": p.a, "b": p.b, "diff": p.diff, "low": p.low, "high": p.high} for p in state.open],
    }


def _pair(p: Any) -> Mapping[str, Any]:
    better, worse = (p.a, p.b) if p.order > 0 else (p.b, p.a)
    sign = 1.0 if p.order > 0 else -1.0
    return {"better": better, "worse": worse, "diff": sign * p.diff,
            "low": min(sign * p.low, sign * p.high), "high": max(sign * p.low, sign * p.high)}


__all__ = ["METHODS", "SETTLE_SETTINGS", "draw_units", "judge", "judge_until_settled", "settled_rows"]
