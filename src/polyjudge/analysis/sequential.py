"""When is the order of two systems settled? Confidence sequences for judging in rounds.

``polyjudge judge --until-settled`` judges a random subset of the test set's segments (or documents)
in rounds and, after each round, asks of every pair of systems whether the *full* test set could
still order it the other way. The full test set is a finite population of ``N`` units drawn without
replacement, so the target is the population mean of the paired differences, not a mean of an
infinite superpopulation. We use the empirical-Bernstein confidence sequence for sampling without
replacement of Waudby-Smith & Ramdas ("Confidence sequences for sampling without replacement",
NeurIPS 2020; the predictable plug-in form of "Estimating means of bounded random variables by
betting", JRSS-B 2024) because:

* it is *anytime valid*: the bound holds at every sample size at once (Ville's inequality on a
  nonnegative supermartingale), so looking after every round and stopping when we like is safe,
  with no spending schedule to fix in advance;
* it is built for the finite population: the interval shrinks to the full data's exact mean as the
  sample exhausts it, so "settled" means "the full data cannot order it otherwise", which is the
  claim a user reads;
* it adapts to the variance of the differences (most segment pairs differ little), which a
  Hoeffding bound would not; it needs only bounds on the scores, no normality.

Its price is the range: when scores vary little against it, the width (which scales with the range
until the sample is large) needs many units. :func:`wor_clt_bounds` is the asymptotic alternative
(``--settle-method asymptotic``): the same without-replacement martingale under a time-uniform central
limit theorem, width following the standard deviation, valid as the sample grows.

The pairs share the test set; a Bonferroni split (``alpha / pairs``, each interval two-sided) keeps
the chance that *any* pair is settled in the wrong order at most ``alpha``, at every look. Holm's
step-down does not carry over to sequences read at many times, so it is not used.

Retiring settled systems (:class:`Retirement`): because each pair's interval holds at every sample size
at once, a pair settled at one look may be frozen there (its order, interval and units) and never tested
again. A system whose every pair is frozen then needs no more judging: later rounds judge only the
systems still in an open pair, and every open pair keeps both its sides judged on every unit drawn, so
its sequence is the one it would have had without retirement. Only the calls change.

Everything here is arrays in, arrays out. A unit one system of a pair was not scored on counts as no
difference for that pair, and is left out of that system's own interval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

Floats = NDArray[np.float64]

# The largest bet: WSR truncate at c = 1/2 or 3/4; judges' scores vary little against their range, so the
# larger bet pays (3/4 settled a third more pairs than 1/2 on the WMT MQM data at 60% of the segments).
_MAX_BET = 0.75


def _draws(x: Floats, population: int) -> Floats:
    """The draws as a matrix (one column per sequence); more draws than units is a caller's error."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if x.shape[0] > population:
        raise ValueError(f"{x.shape[0]} draws from a population of {population}")
    return x


def wor_eb_bounds(x: Floats, population: int, alpha: float) -> tuple[Floats, Floats]:
    """Running lower and upper bounds on the mean of a finite population of ``population`` values in
    [0, 1], from the values ``x[:, k]`` drawn without replacement in the order given (one column per
    sequence), each bound two-sided at level ``alpha`` and valid at every row at once.

    Rows are sample sizes 1..n. The bounds are intersected with what the draws fix whatever the rest
    holds (exact at ``n == population``) and over time (a confidence sequence's running intersection is
    one too), so they never widen."""
    x = _draws(x, population)
    n = x.shape[0]
    if n == 0:
        return np.zeros((0, x.shape[1])), np.zeros((0, x.shape[1]))
    t = np.arange(1, n + 1, dtype=np.float64)[:, None]
    log_term = math.log(2.0 / alpha)
    # predictable mean and variance estimates (value before row i is seen), started at 1/2 and 1/4
    mu_now = (0.5 + np.cumsum(x, axis=0)) / (t + 1.0)
    mu_prev = np.vstack([np.full((1, x.shape[1]), 0.5), mu_now[:-1]])
    var_now = (0.25 + np.cumsum((x - mu_now) ** 2, axis=0)) / (t + 1.0)
    var_prev = np.vstack([np.full((1, x.shape[1]), 0.25), var_now[:-1]])
    lam = np.minimum(np.sqrt(2.0 * log_term / (var_prev * t * np.log1p(t))), _MAX_BET)
    remaining = population - t + 1.0  # units left before draw i, this one included
    sum_prev = np.vstack([np.zeros((1, x.shape[1])), np.cumsum(x, axis=0)[:-1]])
    weight = population / remaining  # 1 + (i-1)/(N-i+1)
    psi = -np.log1p(-lam) - lam
    num = np.cumsum(lam * (x + sum_prev / remaining), axis=0)
    den = np.cumsum(lam * weight, axis=0)
    rad = (log_term + np.cumsum(psi * (x - mu_prev) ** 2, axis=0)) / den
    centre = num / den
    # What no draw can change: the units left lie in [0, 1] (exact once the population is drawn).
    drawn = np.cumsum(x, axis=0)
    lower = np.maximum.accumulate(np.maximum(centre - rad, drawn / population), axis=0)
    upper = np.minimum.accumulate(np.minimum(centre + rad, (drawn + population - t) / population), axis=0)
    return lower, upper


# The asymptotic sequence decides nothing before this many units: its variance estimate needs some.
BURN_IN = 30


def wor_clt_bounds(x: Floats, population: int, alpha: float) -> tuple[Floats, Floats]:
    """Running bounds on a finite population's mean from draws without replacement, two-sided at ``alpha``:
    the asymptotic confidence sequence of Waudby-Smith, Arbour, Sinha, Kennedy & Ramdas ("Time-uniform
    central limit theory and asymptotic confidence sequences", AoS 2024; Robbins' normal mixture) applied
    to the martingale of draw minus the mean of the units not yet drawn (the sum Waudby-Smith & Ramdas
    bound in the bounded case). It needs no score range, and its width follows the standard deviation
    rather than the range, which is why it settles far more pairs; its guarantee holds as the sample
    grows (the tests check it by simulation), not at every size. Infinite before :data:`BURN_IN` units."""
    x = _draws(x, population)
    n = x.shape[0]
    t = np.arange(1, n + 1, dtype=np.float64)[:, None]
    remaining = population - t + 1.0
    sum_prev = np.vstack([np.zeros((1, x.shape[1])), np.cumsum(x, axis=0)[:-1]])
    num = np.cumsum(x + sum_prev / remaining, axis=0)
    den = np.cumsum(population / remaining, axis=0)
    mean = np.cumsum(x, axis=0) / t
    var = np.maximum(np.cumsum(x * x, axis=0) / t - mean**2, 0.0) * t / np.maximum(t - 1.0, 1.0)
    # the mixture tuned to be tightest near a quarter of the population (0.1 to 0.5 settle the same pairs)
    log_a = -2.0 * math.log(alpha)
    rho2 = (log_a + math.log(log_a + 1.0)) / max(population / 4.0, 1.0)
    half = np.sqrt(var * (t * rho2 + 1.0) / rho2 * 2.0 * np.log(np.sqrt(t * rho2 + 1.0) / alpha))
    low, high = (num - half) / den, (num + half) / den
    low[:BURN_IN], high[:BURN_IN] = -np.inf, np.inf
    drawn = np.cumsum(x, axis=0)
    exact = t == population  # every unit drawn: the mean is known
    low = np.where(exact, drawn / population, low)
    high = np.where(exact, drawn / population, high)
    return np.maximum.accumulate(low, axis=0), np.minimum.accumulate(high, axis=0)


METHODS = {"bernstein": wor_eb_bounds, "asymptotic": wor_clt_bounds}


@dataclass(frozen=True, slots=True)
class PairState:
    """One pair of systems after ``n`` units: the interval of the full data's mean difference
    (``a`` minus ``b``) and the order it settles, if any (1: ``a`` better, -1: ``b`` better, 0: open)."""

    a: str
    b: str
    diff: float
    low: float
    high: float
    order: int


@dataclass(frozen=True, slots=True)
class SystemState:
    """One system's mean over the units judged and the interval of its full-data mean, from ``n`` units
    (the units it has a score on)."""

    system: str
    score: float
    low: float
    high: float
    n: int = 0


@dataclass(frozen=True, slots=True)
class SettleState:
    """Where every pair stands after ``n`` of ``population`` units."""

    n: int
    population: int
    alpha: float
    bounds: tuple[float, float]
    systems: tuple[SystemState, ...]
    pairs: tuple[PairState, ...]
    higher_is_better: bool = True

    @property
    def settled(self) -> tuple[PairState, ...]:
        return tuple(p for p in self.pairs if p.order != 0)

    @property
    def open(self) -> tuple[PairState, ...]:
        return tuple(p for p in self.pairs if p.order == 0)

    @property
    def all_settled(self) -> bool:
        return all(p.order != 0 for p in self.pairs)


def settle_state(scores: Floats, systems: Sequence[str], population: int, alpha: float,
                 bounds: tuple[float, float], higher_is_better: bool = True, method: str = "bernstein",
                 frozen: Mapping[tuple[str, str], PairState] | None = None) -> SettleState:
    """Where every pair of ``systems`` stands after the units ``scores`` (rows, in the order they were
    drawn; one column per system; NaN: not scored) out of ``population``, every score within ``bounds``,
    by the confidence sequence ``method`` (a key of :data:`METHODS`). A pair ``(a, b)`` (in the order of
    ``systems``) found in ``frozen`` is that state, not tested again (it was settled at an earlier look).

    Pairs are tested at ``alpha / pairs`` (Bonferroni over all pairs, frozen ones included), the
    systems' intervals at ``alpha / systems``, so each family holds at ``alpha`` at every look."""
    scores = np.asarray(scores, dtype=np.float64)
    lo, hi = bounds
    span = hi - lo if hi > lo else 1.0
    n, k = scores.shape[0], len(systems)
    frozen = frozen or {}
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    tested = [(i, j) for i, j in pairs if (systems[i], systems[j]) not in frozen]
    sys_rows = []
    for i in range(k):  # a system's unscored units are left out of its own interval
        col = scores[np.isfinite(scores[:, i]), i]
        low, high = _bounds_at_end(((col - lo) / span)[:, None], population, alpha / max(k, 1), method)
        sys_rows.append(SystemState(systems[i], float(col.mean()) if col.size else math.nan,
                                    float(lo + span * low[0]), float(lo + span * high[0]), int(col.size)))
    if tested and n:
        # a unit either system of a pair lacks counts as no difference (the caller's choice, documented)
        diffs = np.nan_to_num(np.stack([scores[:, i] - scores[:, j] for i, j in tested], axis=1), nan=0.0)
        p_low, p_high = _bounds_at_end((diffs + span) / (2.0 * span), population, alpha / len(pairs), method)
    else:
        p_low = p_high = np.full(len(tested), 0.5)
    sign = 1 if higher_is_better else -1
    tol = 1e-9 * span  # sums in another order differ in the last digits: an exact tie is never an order
    found = {}
    for m, (i, j) in enumerate(tested):
        low, high = 2.0 * span * p_low[m] - span, 2.0 * span * p_high[m] - span
        order = sign if low > tol else (-sign if high < -tol else 0)
        diff = float(np.nanmean(scores[:, i]) - np.nanmean(scores[:, j])) if n else math.nan
        found[(i, j)] = PairState(systems[i], systems[j], diff, float(low), float(high), order)
    out = tuple(found[(i, j)] if (i, j) in found else frozen[(systems[i], systems[j])] for i, j in pairs)
    return SettleState(n, population, alpha, (lo, hi), tuple(sys_rows), out, higher_is_better)


@dataclass(slots=True)
class Retirement:
    """What the looks so far settled, for judging in rounds that retires settled systems.

    After each look :meth:`update` freezes every settled pair (its state and the units ``settled_at``
    which it was settled) and retires every system none of whose pairs is open (``retired_at``: the units
    it was judged on). Later looks pass :attr:`frozen` to :func:`settle_state`; the caller judges only
    :meth:`active` systems on the units it draws next (a retired system's later units are NaN)."""

    systems: tuple[str, ...]
    frozen: dict[tuple[str, str], PairState] = field(default_factory=dict)
    settled_at: dict[tuple[str, str], int] = field(default_factory=dict)
    retired_at: dict[str, int] = field(default_factory=dict)

    def update(self, state: SettleState) -> None:
        """Freeze the pairs ``state`` settles and retire the systems left in no open pair."""
        for p in state.settled:
            if (p.a, p.b) not in self.frozen:
                self.frozen[(p.a, p.b)] = p
                self.settled_at[(p.a, p.b)] = state.n
        still = {p.a for p in state.open} | {p.b for p in state.open}
        for s in self.systems:
            if s not in still:
                self.retired_at.setdefault(s, state.n)

    def active(self) -> tuple[str, ...]:
        """The systems still in an open pair (to be judged on the next units drawn)."""
        return tuple(s for s in self.systems if s not in self.retired_at)

    def units(self, taken: int) -> dict[str, int]:
        """The units each system was judged on, ``taken`` units drawn in all."""
        return {s: min(self.retired_at.get(s, taken), taken) for s in self.systems}


def _bounds_at_end(x: Floats, population: int, alpha: float, method: str) -> tuple[Floats, Floats]:
    if x.shape[0] == 0:
        return np.zeros(x.shape[1]), np.ones(x.shape[1])
    low, high = METHODS[method](np.clip(x, 0.0, 1.0), population, alpha)
    return np.clip(low[-1], 0.0, 1.0), np.clip(high[-1], 0.0, 1.0)


def tie_groups(state: SettleState) -> dict[str, int]:
    """Each system's rank group: systems in one group are not all separated from each other (open pairs
    are ties, never an order). Group 1 is best; a system starts a new group when every system before it
    is settled as better than it (systems sorted by their mean)."""
    sign = 1.0 if state.higher_is_better else -1.0
    ordered = sorted(state.systems, key=lambda s: -sign * s.score)
    better: set[tuple[str, str]] = set()
    for p in state.pairs:
        if p.order > 0:
            better.add((p.a, p.b))
        elif p.order < 0:
            better.add((p.b, p.a))
    groups: dict[str, int] = {}
    group = 0
    for idx, s in enumerate(ordered):
        if idx == 0 or all((o.system, s.system) in better for o in ordered[:idx]):
            group += 1
        groups[s.system] = group
    return groups


__all__ = ["BURN_IN", "METHODS", "PairState", "Retirement", "SettleState", "SystemState", "settle_state",
           "tie_groups", "wor_clt_bounds", "wor_eb_bounds"]
