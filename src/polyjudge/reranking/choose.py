"""Choosing one candidate per source: QE reranking and MBR, on scores already computed.

Nothing here sends a request: :class:`MbrSearch` says which utilities it needs
(:meth:`MbrSearch.wanted`, as pairs of candidate *texts*) and is given them back
(:meth:`MbrSearch.advance`); :mod:`polyjudge.reranking.run` batches the wanted pairs
of every source into one judging per round.

Rules (the documentation's "How the choice is made"):

* QE: the candidate with the highest score; a tie goes to the candidate that comes
  first in the input. A candidate whose judgment failed is never chosen.
* MBR: candidate i's expected utility is the mean of u(i, j) over the *other*
  candidates j (j != i, by position: a candidate repeated k times is k samples of
  the model's distribution, so a duplicate of i counts, through u(x, x)). A utility
  that failed is left out of the mean. Highest expected utility wins; a tie goes to
  the earlier candidate. With a constant u(x, x) (chrF: 100) this is the choice of
  mbrs's ``DecoderMBR``, whose mean also includes j = i.
* Identical texts are judged once: utilities are keyed by (hypothesis text,
  pseudo-reference text), or by the unordered pair when the utility is symmetric.
* Pruning (Cheng and Vlachos, 2023, the algorithm mbrs's ``DecoderPruningMBR``
  follows): the pseudo-references are taken in input order, ``schedule`` of them
  at each step (all N at the last); after a step, each remaining candidate's
  expected utility over the references so far is resampled ``n_boot`` times
  (bootstrap over the references, seeded), and a candidate that beats or equals
  the current best in at most ``1 - alpha`` of the resamples is dropped. Dropped
  candidates need no more utilities; the search stops when one candidate is left.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

PairKey = tuple[str, str]
DEFAULT_SCHEDULE = (8, 16, 32, 64, 128, 256)  # mbrs's default: safer than starting at 4 (benchmarks/rerank_cost.py)


@dataclass(frozen=True, slots=True)
class Pruning:
    """Confidence-based pruning of MBR candidates (see the module docstring)."""

    schedule: tuple[int, ...] = DEFAULT_SCHEDULE
    alpha: float = 0.99
    n_boot: int = 500
    seed: int = 0

    def steps(self, n: int) -> list[int]:
        """The numbers of pseudo-references of each step for ``n`` candidates (increasing, ending at n)."""
        out = sorted({min(max(1, r), n) for r in self.schedule} | {n})
        return out


def best_index(scores: Sequence[float | None]) -> int | None:
    """The index of the highest score, the first one on a tie; None when no score is known."""
    best: int | None = None
    for k, s in enumerate(scores):
        if s is None or math.isnan(s):
            continue
        if best is None or s > scores[best]:  # type: ignore[operator]
            best = k
    return best


def pair_key(hyp: str, ref: str, order: Mapping[str, int], symmetric: bool) -> PairKey:
    """The key a utility is stored under: the unordered pair when it is symmetric."""
    if symmetric and order[ref] < order[hyp]:
        return ref, hyp
    return hyp, ref


@dataclass
class MbrSearch:
    """The MBR choice of one source's candidates, step by step (one step without pruning)."""

    candidates: tuple[str, ...]
    symmetric: bool = False
    pruning: Pruning | None = None
    utilities: dict[PairKey, float | None] = field(default_factory=dict)
    alive: list[int] = field(init=False)
    refs: int = field(init=False, default=0)  # pseudo-references (the first ``refs`` candidates) used so far
    pruned_at: dict[int, int] = field(init=False, default_factory=dict)  # candidate -> references when dropped
    _steps: list[int] = field(init=False)

    def __post_init__(self) -> None:
        n = len(self.candidates)
        self.alive = list(range(n))
        self._steps = self.pruning.steps(n) if self.pruning is not None else [n]
        self._order = {t: k for k, t in enumerate(dict.fromkeys(self.candidates))}
        if n < 2:
            self._steps = []

    @property
    def done(self) -> bool:
        return not self._steps or len(self.alive) < 2

    def key(self, i: int, j: int) -> PairKey:
        return pair_key(self.candidates[i], self.candidates[j], self._order, self.symmetric)

    def wanted(self) -> list[PairKey]:
        """The utilities the next step needs that are not known yet (each key once)."""
        if self.done:
            return []
        r = self._steps[0]
        keys = dict.fromkeys(self.key(i, j) for i in self.alive for j in range(r) if j != i)
        return [k for k in keys if k not in self.utilities]

    def advance(self, found: Mapping[PairKey, float | None]) -> None:
        """Take the utilities of the step (those asked for by :meth:`wanted`) and prune."""
        for k in self.wanted():
            self.utilities[k] = found.get(k)
        r = self._steps.pop(0)
        self.refs = r
        if self.pruning is not None and self._steps:
            self._prune(r)

    def utility(self, i: int, j: int) -> float | None:
        return self.utilities.get(self.key(i, j))

    def expected(self, i: int, refs: int | None = None) -> float | None:
        """Candidate i's mean utility over the first ``refs`` other candidates (None: none known)."""
        vals = [u for j in range(self.refs if refs is None else refs) if j != i
                and (u := self.utility(i, j)) is not None and not math.isnan(u)]
        return math.fsum(vals) / len(vals) if vals else None  # exact sum: copies of one text tie exactly

    def expected_all(self) -> list[float | None]:
        """Every candidate's expected utility: over all the references used for the alive ones, over
        the references it had when it was pruned for the others."""
        return [self.expected(i, self.pruned_at.get(i)) for i in range(len(self.candidates))]

    def chosen(self) -> int | None:
        """The chosen candidate: among those left, the highest expected utility, first on a tie."""
        if len(self.candidates) == 1:
            return 0
        scores = [self.expected(i) if i in self.alive else None for i in range(len(self.candidates))]
        return best_index(scores)

    def _prune(self, r: int) -> None:
        import numpy as np

        assert self.pruning is not None
        alive = self.alive
        m = np.full((len(alive), r), np.nan)
        for a, i in enumerate(alive):
            for j in range(r):
                u = self.utility(i, j) if j != i else None
                if u is not None:
                    m[a, j] = u
        means = [self.expected(i, r) for i in alive]
        lead = best_index(means)
        if lead is None:
            return
        rng = np.random.default_rng(self.pruning.seed)
        samples = rng.integers(0, r, size=(self.pruning.n_boot, r))
        picked = m[:, samples]  # (alive, n_boot, r)
        counts = (~np.isnan(picked)).sum(axis=2)
        with np.errstate(invalid="ignore", divide="ignore"):
            boot = np.where(counts > 0, np.nansum(picked, axis=2) / np.maximum(counts, 1), np.nan)
        wins = (boot >= boot[lead]) | np.isnan(boot) | np.isnan(boot[lead])
        rate = wins.mean(axis=1)
        keep = [i for a, i in enumerate(alive) if a == lead or rate[a] > 1 - self.pruning.alpha]
        for i in alive:
            if i not in keep:
                self.pruned_at[i] = r
        self.alive = keep


def full_matrix_requests(n: int, *, symmetric: bool = False) -> int:
    """Utility requests of one source's full MBR matrix of ``n`` distinct candidates (no self pairs)."""
    return n * (n - 1) // 2 if symmetric else n * (n - 1)


__all__ = ["DEFAULT_SCHEDULE", "MbrSearch", "PairKey", "Pruning", "best_index", "full_matrix_requests",
           "pair_key"]
