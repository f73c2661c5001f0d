"""Pairwise judgments of systems: outcomes, position bias and a Bradley–Terry ranking.

The unit is a :class:`PairJudgment`: one source segment, two systems, and the
judge's verdict in each presentation order ("A", "B" or "tie", or None when
that order got no usable answer). Seen from the pair's first system, an order
scores 1 (preferred), 0.5 (tie) or 0 (the other preferred); the pair's score
is the mean over both orders, so a preference for a screen position cancels.

Outcomes (first system's view), for pairs with a verdict in both orders:
``win``/``lose``/``tie`` when both orders agree, ``inconsistent`` when the
verdict changes with the order (a *flip* when each order prefers the
candidate in the same position, so the two verdicts name opposite systems);
``missing`` when an order has no verdict. Missing pairs are left out of every
statistic below; they are never counted as ties.

Bradley–Terry: system ``i`` beats ``j`` with probability
``1 / (1 + exp(θj − θi))``; the log-strengths θ are centred to mean zero.
Ties count as half a win for each side. We chose that over Davidson's (1970)
tie parameter because it keeps the plain model, whose win-rate reading users
know, and a tie then says exactly "these two are equal" and nothing about
how often the judge ties. Each complete pair is one comparison whose win
share is the pair's score, so a position-inconsistent flip counts as a tie.
Strengths are the maximum-likelihood estimate, found with the MM algorithm
of Hunter (2004) (Zermelo's iteration), which raises the likelihood at every
step. ``prior`` adds
that many virtual ties between every two systems, which keeps the estimate
finite when a system wins (or loses) every comparison; ``prior=0`` is the
plain MLE, which exists only when every split of the systems into two groups
has wins in both directions (otherwise ValueError). Confidence intervals are
percentile intervals of a bootstrap that resamples source segments (all
pairs of a segment together) with replacement.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

Floats = NDArray[np.float64]

A: Final = "A"
B: Final = "B"
TIE: Final = "tie"
WIN, LOSE, INCONSISTENT, MISSING = "win", "lose", "inconsistent", "missing"
OUTCOMES: Final = (WIN, LOSE, TIE, INCONSISTENT, MISSING)
_SHOWN_FIRST = {A: 1.0, TIE: 0.5, B: 0.0}  # score of the system shown as A


def _check_verdict(v: str | None) -> None:
    if v is not None and v not in _SHOWN_FIRST:
        raise ValueError(f"verdict must be 'A', 'B', 'tie' or None, not {v!r}")


@dataclass(frozen=True, slots=True)
class PairJudgment:
    """Two systems' translations of one source, judged in both orders.

    ``first_as_a``: the verdict when ``first`` was candidate A (``second`` as B);
    ``second_as_a``: the verdict in the swapped order.
    """

    doc_id: str | None
    seg_id: str
    first: str
    second: str
    first_as_a: str | None
    second_as_a: str | None

    def __post_init__(self) -> None:
        _check_verdict(self.first_as_a)
        _check_verdict(self.second_as_a)
        if self.first == self.second:
            raise ValueError(f"a pair needs two different systems, got {self.first!r} twice")

    @property
    def segment(self) -> tuple[str | None, str]:
        return self.doc_id, self.seg_id

    def order_scores(self) -> tuple[float | None, float | None]:
        """The first system's score in each order (first as A, then second as A)."""
        ab = None if self.first_as_a is None else _SHOWN_FIRST[self.first_as_a]
        ba = None if self.second_as_a is None else 1.0 - _SHOWN_FIRST[self.second_as_a]
        return ab, ba

    @property
    def complete(self) -> bool:
        return self.first_as_a is not None and self.second_as_a is not None

    @property
    def score(self) -> float | None:
        """The first system's win share over both orders (None unless complete)."""
        ab, ba = self.order_scores()
        return None if ab is None or ba is None else (ab + ba) / 2

    @property
    def outcome(self) -> str:
        ab, ba = self.order_scores()
        if ab is None or ba is None:
            return MISSING
        if ab != ba:
            return INCONSISTENT
        return WIN if ab == 1.0 else LOSE if ab == 0.0 else TIE

    @property
    def flipped(self) -> bool:
        """Opposite winners in the two orders: the judge followed the position, not the text."""
        ab, ba = self.order_scores()
        return ab is not None and ba is not None and abs(ab - ba) == 1.0


# --------------------------------------------------------------------------- position bias

@dataclass(frozen=True, slots=True)
class PositionBias:
    """How much the judge's verdicts depend on which candidate is shown first.

    ``a_share`` is the share of decisive verdicts (A or B) that chose candidate
    A, over every order with a verdict; an unbiased judge is near 0.5 and
    ``p_value`` is the two-sided exact binomial test of that. Verdicts of
    consistent pairs choose A and B equally often by construction
    (``a_share_consistent`` is 0.5 whenever one is decisive), so any
    departure of ``a_share`` from 0.5 comes from the inconsistent pairs.
    Shares are NaN when they have no denominator.
    """

    pairs: int
    complete: int
    missing: int
    consistent: int
    inconsistent: int
    flips: int
    flips_to_a: int  # flips in which candidate A won both orders
    verdicts: int
    a_wins: int
    b_wins: int
    ties: int
    a_share: float
    a_share_consistent: float
    a_share_inconsistent: float
    p_value: float

    @property
    def inconsistency_rate(self) -> float:
        """Share of complete pairs whose verdict changes with the order."""
        return self.inconsistent / self.complete if self.complete else math.nan

    @property
    def flip_rate(self) -> float:
        """Share of complete pairs whose two verdicts name opposite systems."""
        return self.flips / self.complete if self.complete else math.nan

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["inconsistency_rate"] = self.inconsistency_rate
        out["flip_rate"] = self.flip_rate
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in out.items()}


def _a_share(a: int, b: int) -> float:
    return a / (a + b) if a + b else math.nan


def position_bias(pairs: Sequence[PairJudgment]) -> PositionBias:
    """Position statistics of the judged pairs (see :class:`PositionBias`)."""
    from scipy.stats import binomtest

    counts = {A: 0, B: 0, TIE: 0}
    cons = {A: 0, B: 0}
    incons = {A: 0, B: 0}
    complete = consistent = flips = flips_to_a = 0
    for p in pairs:
        shown = [v for v in (p.first_as_a, p.second_as_a) if v is not None]
        for v in shown:
            counts[v] += 1
        if not p.complete:
            continue
        complete += 1
        group = incons if p.outcome == INCONSISTENT else cons
        if p.outcome != INCONSISTENT:
            consistent += 1
        for v in shown:
            if v != TIE:
                group[v] += 1
        if p.flipped:
            flips += 1
            flips_to_a += int(p.first_as_a == A)
    decisive = counts[A] + counts[B]
    p_value = float(binomtest(counts[A], decisive, 0.5).pvalue) if decisive else math.nan
    return PositionBias(
        pairs=len(pairs), complete=complete, missing=len(pairs) - complete, consistent=consistent,
        inconsistent=complete - consistent, flips=flips, flips_to_a=flips_to_a,
        verdicts=sum(counts.values()), a_wins=counts[A], b_wins=counts[B], ties=counts[TIE],
        a_share=_a_share(counts[A], counts[B]), a_share_consistent=_a_share(cons[A], cons[B]),
        a_share_inconsistent=_a_share(incons[A], incons[B]), p_value=p_value)


# --------------------------------------------------------------------------- Bradley–Terry

def systems_of(pairs: Sequence[PairJudgment]) -> list[str]:
    """Every system named by the pairs, in first-seen order."""
    return list(dict.fromkeys(s for p in pairs for s in (p.first, p.second)))


def _pair_arrays(pairs: Sequence[PairJudgment], systems: Sequence[str]
                 ) -> tuple[NDArray[np.int64], NDArray[np.int64], Floats, NDArray[np.int64], int]:
    """(first index, second index, first's score, segment index, number of segments) of the complete pairs."""
    index = {s: k for k, s in enumerate(systems)}
    seg_index: dict[tuple[str | None, str], int] = {}
    i, j, score, seg = [], [], [], []
    for p in pairs:
        s = p.score
        if s is None:
            continue
        if p.first not in index or p.second not in index:
            missing = p.first if p.first not in index else p.second
            raise ValueError(f"system {missing!r} of a pair is not among the systems ranked")
        i.append(index[p.first])
        j.append(index[p.second])
        score.append(s)
        seg.append(seg_index.setdefault(p.segment, len(seg_index)))
    return (np.array(i, dtype=np.int64), np.array(j, dtype=np.int64), np.array(score, dtype=np.float64),
            np.array(seg, dtype=np.int64), len(seg_index))


def _wins(i: NDArray[np.int64], j: NDArray[np.int64], score: Floats, k: int,
          weights: Floats | None = None) -> Floats:
    """k x k matrix: [a, b] = total win share of system a against system b."""
    w = np.ones_like(score) if weights is None else weights
    flat = (np.bincount(i * k + j, weights=w * score, minlength=k * k)
            + np.bincount(j * k + i, weights=w * (1.0 - score), minlength=k * k)).astype(np.float64)
    out: Floats = flat.reshape(k, k)
    return out


def comparison_matrix(pairs: Sequence[PairJudgment], systems: Sequence[str] | None = None) -> Floats:
    """Win shares between systems over the complete pairs: ``[a, b]`` is what ``a`` won
    against ``b`` (ties half); ``[a, b] + [b, a]`` is the number of their comparisons."""
    names = systems_of(pairs) if systems is None else list(systems)
    i, j, score, _, _ = _pair_arrays(pairs, names)
    return _wins(i, j, score, len(names))


def _strongly_connected(beats: NDArray[np.bool_]) -> bool:
    """Whether every system reaches every other along "won something against" edges."""
    k = beats.shape[0]
    for adjacency in (beats, beats.T):
        seen = np.zeros(k, dtype=bool)
        seen[0] = True
        frontier = seen.copy()
        while frontier.any():
            frontier = adjacency[frontier].any(axis=0) & ~seen
            seen |= frontier
        if not seen.all():
            return False
    return True


def bradley_terry(wins: Floats, *, prior: float = 0.0, tol: float = 1e-10, max_iter: int = 100_000,
                  start: Floats | None = None) -> Floats:
    """Maximum-likelihood log-strengths (mean zero) from a win matrix (see the module docstring).

    ``wins[a, b]``: what system ``a`` won against ``b`` (ties as half wins);
    ``prior``: virtual ties added between every two systems; ``start``: initial
    log-strengths (a bootstrap starts from the full-data estimate).
    """
    w = np.array(wins, dtype=np.float64)
    k = w.shape[0]
    if w.ndim != 2 or w.shape != (k, k):
        raise ValueError(f"wins must be a square matrix, got shape {w.shape}")
    if np.any(w < 0) or not np.all(np.isfinite(w)):
        raise ValueError("wins must be finite and non-negative")
    if prior < 0 or not math.isfinite(prior):
        raise ValueError(f"prior must be a non-negative number, got {prior}")
    np.fill_diagonal(w, 0.0)
    if k == 1:
        return np.zeros(1)
    if prior > 0:
        w = w + prior / 2
        np.fill_diagonal(w, 0.0)
    elif not _strongly_connected(w > 0):
        raise ValueError("no finite maximum-likelihood strengths: some group of systems never won (or never "
                         "lost) against the others; give a prior > 0")
    played = w + w.T
    won = w.sum(axis=1)
    p = np.ones(k) if start is None else np.exp(np.asarray(start, dtype=np.float64) - np.mean(start))
    for _ in range(max_iter):
        # Hunter (2004), MM step: p_i <- W_i / sum_j n_ij / (p_i + p_j)
        new = won / (played / (p[:, None] + p[None, :])).sum(axis=1)
        new /= math.exp(float(np.mean(np.log(new))))
        step = float(np.max(np.abs(np.log(new) - np.log(p))))
        p = new
        if step < tol:
            break
    theta: Floats = np.log(p)
    centred: Floats = theta - theta.mean()
    return centred


def bootstrap_strengths(pairs: Sequence[PairJudgment], systems: Sequence[str], *, n_boot: int = 1000,
                        seed: int = 0, prior: float = 1.0, start: Floats | None = None) -> Floats:
    """(n_boot x systems) log-strengths, each fitted to source segments resampled with replacement."""
    i, j, score, seg, n_seg = _pair_arrays(pairs, systems)
    k = len(systems)
    out = np.empty((n_boot, k))
    if n_seg == 0:
        out.fill(math.nan)
        return out
    rng = np.random.default_rng(seed)
    for b in range(n_boot):
        weights = np.bincount(rng.integers(0, n_seg, n_seg), minlength=n_seg).astype(np.float64)[seg]
        out[b] = bradley_terry(_wins(i, j, score, k, weights), prior=prior, start=start)
    return out


@dataclass(frozen=True, slots=True)
class SystemStrength:
    """One system's Bradley–Terry log-strength (mean zero) with its bootstrap interval.

    ``win_rate``: the share of its comparisons it won (ties half), as observed;
    ``comparisons``: the complete pairs it was in.
    """

    system: str
    score: float
    ci_low: float
    ci_high: float
    win_rate: float
    comparisons: int


def bradley_terry_ranking(pairs: Sequence[PairJudgment], systems: Sequence[str] | None = None, *,
                          n_boot: int = 1000, level: float = 0.95, seed: int = 0,
                          prior: float = 1.0) -> list[SystemStrength]:
    """Systems best first by Bradley–Terry log-strength, each with a percentile bootstrap
    interval over source segments (``n_boot=0``: no interval, NaN bounds)."""
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    if n_boot < 0:
        raise ValueError(f"n_boot must be at least 0, got {n_boot}")
    names = systems_of(pairs) if systems is None else list(systems)
    if not names:
        return []
    wins = comparison_matrix(pairs, names)
    theta = bradley_terry(wins, prior=prior)
    if n_boot:
        boot = bootstrap_strengths(pairs, names, n_boot=n_boot, seed=seed, prior=prior, start=theta)
        a = (1 - level) / 2
        lo, hi = np.quantile(boot, [a, 1 - a], axis=0)
    else:
        lo = hi = np.full(len(names), math.nan)
    played = wins + wins.T
    n = played.sum(axis=1)
    won = wins.sum(axis=1)
    rows = [SystemStrength(s, float(theta[k]), float(lo[k]), float(hi[k]),
                           float(won[k] / n[k]) if n[k] else math.nan, int(round(n[k])))
            for k, s in enumerate(names)]
    rows.sort(key=lambda r: (-r.score, r.system))
    return rows


# --------------------------------------------------------------------------- segment level

@dataclass(frozen=True, slots=True)
class SegmentWinShare:
    """A system's mean win share over the complete pairs it was in for one source segment."""

    system: str
    doc_id: str | None
    seg_id: str
    score: float
    comparisons: int


def segment_win_shares(pairs: Sequence[PairJudgment]) -> list[SegmentWinShare]:
    """Per source segment and system, its mean win share: a segment-level score that
    segment-level meta-evaluation can read (systems whose pairs all miss a verdict are left out)."""
    totals: dict[tuple[str | None, str, str], list[float]] = {}
    for p in pairs:
        s = p.score
        if s is None:
            continue
        totals.setdefault((p.doc_id, p.seg_id, p.first), []).append(s)
        totals.setdefault((p.doc_id, p.seg_id, p.second), []).append(1.0 - s)
    return [SegmentWinShare(system, doc, seg, sum(v) / len(v), len(v)) for (doc, seg, system), v in totals.items()]


__all__ = ["INCONSISTENT", "LOSE", "MISSING", "OUTCOMES", "TIE", "WIN", "PairJudgment", "PositionBias",
           "SegmentWinShare", "SystemStrength", "bootstrap_strengths", "bradley_terry", "bradley_terry_ranking",
           "comparison_matrix", "position_bias", "segment_win_shares", "systems_of"]
