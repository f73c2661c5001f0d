"""Has a judge changed? Paired tests of stored answers against fresh answers to the same requests.

Each request of a sample was answered twice: once when the run was judged (stored) and once now
(fresh). Every comparison is *paired*: under "nothing changed" the two answers of a request are
exchangeable, so swapping them is as likely as not, and a sign-flip permutation test of the mean
difference is exact at any sample size (no normality assumed). Binary outcomes (answer parsed,
answer refused) are compared with the exact McNemar test, which counts only the requests whose
outcome differs. The tests of one check are combined with Holm's step-down correction, so the
whole check raises a false alarm at most ``alpha`` of the time (the drift how-to states the rate
measured by simulation, ``benchmarks/drift_power.py``).

Pure numpy: arrays in, a :class:`DriftVerdict` out; reading runs and sending requests is
``polyjudge.api.drift``'s.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

DEFAULT_ALPHA = 0.05
DEFAULT_RESAMPLES = 10_000
EXACT_UP_TO = 14  # at most this many non-zero differences: all 2**n sign patterns are enumerated


def paired_permutation_p(differences: Sequence[float], *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> float:
    """Two-sided p-value of the mean of paired ``differences`` under random sign flips.

    Zero differences do not change the mean under a flip and are dropped. With at most
    :data:`EXACT_UP_TO` non-zero differences every sign pattern is counted (the exact p-value);
    otherwise ``resamples`` random patterns, counted with the observed one ((1 + k) / (1 + R),
    never 0). No differences, or all zero: 1.0.
    """
    import numpy as np

    d = np.asarray([x for x in differences if x != 0 and math.isfinite(x)], dtype=float)
    if d.size == 0:
        return 1.0
    observed = abs(d.sum())
    tol = 1e-9 * max(1.0, float(np.abs(d).sum()))
    if d.size <= EXACT_UP_TO:
        patterns = ((np.arange(2 ** d.size)[:, None] >> np.arange(d.size)) & 1) * 2 - 1
        sums = np.abs(patterns @ d)
        return float(np.mean(sums >= observed - tol))
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, resamples, 2000):
        k = min(2000, resamples - start)
        signs = rng.integers(0, 2, size=(k, d.size)) * 2 - 1
        hits += int(np.sum(np.abs(signs @ d) >= observed - tol))
    return (1 + hits) / (1 + resamples)


def mcnemar_exact_p(only_stored: int, only_fresh: int) -> float:
    """Two-sided exact McNemar p-value: of the pairs whose binary outcome differs, ``only_stored`` had it
    in the stored answer alone and ``only_fresh`` in the fresh one; under no change each is Binomial(n, 1/2)."""
    n = only_stored + only_fresh
    if n == 0:
        return 1.0
    k = min(only_stored, only_fresh)
    tail = float(sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n)
    return min(1.0, 2 * tail)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (the family-wise error rate held at any level)."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    adjusted = [1.0] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def paired_effect(differences: Sequence[float]) -> float | None:
    """Cohen's d_z of paired differences: their mean over their standard deviation (n - 1). None with
    fewer than two; with no spread, 0 for a zero mean and +/-inf otherwise (every pair moved alike)."""
    d = [x for x in differences if math.isfinite(x)]
    if len(d) < 2:
        return None
    mean = sum(d) / len(d)
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1))
    if sd == 0:
        return 0.0 if mean == 0 else math.copysign(math.inf, mean)
    return mean / sd


@dataclass(frozen=True, slots=True)
class DriftTest:
    """One comparison of stored and fresh answers (``what``: scores, parsed, refused, spans, logprobs)."""

    what: str
    n: int  # pairs compared
    stored: float  # mean (or rate) of the stored answers
    fresh: float  # of the fresh ones
    p: float
    effect: float | None = None  # d_z for differences; the change of the rate for binary outcomes
    p_holm: float = 1.0
    test: str = "paired permutation"
    # The smallest p-value the test could give with the pairs it had (all differences zero: 1): a test that
    # cannot reach the level is left out of the Holm family (Tarone's refinement), so it costs no power.
    min_p: float = 0.0

    def to_json(self) -> dict[str, Any]:
        effect = self.effect if self.effect is None or math.isfinite(self.effect) else str(self.effect)
        return {"what": self.what, "test": self.test, "n": self.n, "stored": self.stored, "fresh": self.fresh,
                "difference": self.fresh - self.stored, "effect": effect, "p": self.p, "p_holm": self.p_holm}


def difference_test(what: str, stored: Sequence[float], fresh: Sequence[float], *,
                    resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> DriftTest | None:
    """The paired permutation test of ``fresh - stored`` (None without pairs)."""
    if not stored:
        return None
    diffs = [f - s for s, f in zip(stored, fresh)]
    moved = sum(1 for d in diffs if d != 0 and math.isfinite(d))
    floor = 1.0 if moved == 0 else 2 / 2 ** moved if moved <= EXACT_UP_TO else 1 / (1 + resamples)
    return DriftTest(what, len(diffs), sum(stored) / len(stored), sum(fresh) / len(fresh),
                     paired_permutation_p(diffs, resamples=resamples, seed=seed), paired_effect(diffs),
                     min_p=min(1.0, floor))


def rate_test(what: str, stored: Sequence[bool], fresh: Sequence[bool]) -> DriftTest | None:
    """The exact McNemar test of a paired binary outcome (None without pairs)."""
    if not stored:
        return None
    only_stored = sum(1 for s, f in zip(stored, fresh) if s and not f)
    only_fresh = sum(1 for s, f in zip(stored, fresh) if f and not s)
    rs, rf = sum(stored) / len(stored), sum(fresh) / len(fresh)
    return DriftTest(what, len(stored), rs, rf, mcnemar_exact_p(only_stored, only_fresh), rf - rs,
                     test="exact McNemar", min_p=min(1.0, 2 * 0.5 ** (only_stored + only_fresh)))


@dataclass(frozen=True, slots=True)
class DriftVerdict:
    """The tests of one check, Holm-adjusted together; ``drift`` when any adjusted p is below ``alpha``."""

    tests: tuple[DriftTest, ...]
    alpha: float
    drift: bool
    p: float  # the smallest Holm-adjusted p (1.0 with no test)
    reasons: tuple[str, ...] = field(default=())  # the tests that found drift

    def to_json(self) -> dict[str, Any]:
        return {"drift": self.drift, "alpha": self.alpha, "p": self.p, "reasons": list(self.reasons),
                "tests": [t.to_json() for t in self.tests]}


def verdict(tests: Sequence[DriftTest | None], alpha: float = DEFAULT_ALPHA) -> DriftVerdict:
    """The check's verdict: the given tests Holm-adjusted as one family at level ``alpha``. A test whose
    smallest possible p-value is not below ``alpha`` (no pair moved, too few discordant pairs) cannot
    reject and is left out of the family (Tarone, 1990); its ``p_holm`` is its own p."""
    kept = [t for t in tests if t is not None]
    family = [i for i, t in enumerate(kept) if t.min_p < alpha]
    adjusted = [t.p for t in kept]
    for i, a in zip(family, holm([kept[i].p for i in family])):
        adjusted[i] = a
    done = tuple(dataclasses.replace(t, p_holm=a) for t, a in zip(kept, adjusted))
    found = tuple(t.what for t in done if t.p_holm < alpha)
    return DriftVerdict(done, alpha, bool(found), min(adjusted, default=1.0), found)


def projected_orderings(system_scores: dict[str, float], shifts: dict[str, float]) -> list[tuple[str, str]]:
    """The pairs of systems (better first, as the run has them) whose order flips when each system's score
    moves by its ``shifts`` entry (its sample's mean fresh - stored difference)."""
    names = sorted(system_scores, key=lambda s: -system_scores[s])
    moved = {s: system_scores[s] + shifts.get(s, 0.0) for s in names}
    return [(a, b) for i, a in enumerate(names) for b in names[i + 1:]
            if system_scores[a] > system_scores[b] and moved[a] < moved[b]]


__all__ = ["DEFAULT_ALPHA", "DriftTest", "DriftVerdict", "difference_test", "holm", "mcnemar_exact_p",
           "paired_effect", "paired_permutation_p", "projected_orderings", "rate_test", "verdict"]
