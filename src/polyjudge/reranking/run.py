"""Reranking: every source's candidates scored, one chosen, the choice checked by a held-out scorer.

QE reranking judges each distinct candidate once (reference-free). MBR judges
candidates against each other as pseudo-references (see
:mod:`polyjudge.reranking.choose`), in rounds when pruning: each round's requests of
every source are one judging. The held-out guard scores the chosen translation
and the baseline (each source's first candidate) with a second scorer that took
no part in the choice: a judge the caller names, or chrF against references.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from polyjudge.data.errors import InputError
from polyjudge.reranking.candidates import SourceCandidates
from polyjudge.reranking.choose import MbrSearch, PairKey, Pruning, best_index, full_matrix_requests
from polyjudge.reranking.scorers import Request, Scorer

METHODS = ("qe", "mbr")


@dataclass(frozen=True, slots=True)
class SourceChoice:
    """One source's outcome: the chosen candidate (None when no score was known), its score, every
    candidate's score (QE score or expected utility) and, for MBR, the utility matrix (rows:
    hypotheses, columns: pseudo-references, None where not judged)."""

    index: int
    source: SourceCandidates
    chosen: int | None
    scores: tuple[float | None, ...]
    matrix: tuple[tuple[float | None, ...], ...] | None = None
    pruned: tuple[int, ...] = ()
    requests: int = 0

    @property
    def score(self) -> float | None:
        return None if self.chosen is None else self.scores[self.chosen]

    @property
    def translation(self) -> str | None:
        return None if self.chosen is None else self.source.candidates[self.chosen]

    def to_dict(self) -> dict[str, Any]:
        s = self.source
        return {"index": self.index + 1, "doc_id": s.doc_id, "seg_id": s.seg_id, "src": s.src,
                "chosen": None if self.chosen is None else self.chosen + 1, "translation": self.translation,
                "score": _num(self.score)}


@dataclass(frozen=True, slots=True)
class Gain:
    """Mean score of the chosen translations against that of the baselines (each source's first
    candidate), under one scorer; ``held_out`` says whether it took part in the choice."""

    scorer: str
    held_out: bool
    chosen: float | None
    baseline: float | None
    sources: int
    check: str = ""  # selection, judge or references (reranking.summary.CHECKS); from held_out when empty

    @property
    def gain(self) -> float | None:
        if self.chosen is None or self.baseline is None:
            return None
        return self.chosen - self.baseline

    def to_dict(self) -> dict[str, Any]:
        check = self.check or ("judge" if self.held_out else "selection")
        return {"scorer": self.scorer, "held_out": self.held_out, "check": check, "chosen": _num(self.chosen),
                "baseline": _num(self.baseline), "gain": _num(self.gain), "sources": self.sources}


def _num(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _mean(values: Sequence[float | None]) -> float | None:
    got = [v for v in values if v is not None and not math.isnan(v)]
    return sum(got) / len(got) if got else None


# --------------------------------------------------------------------------- QE

def qe_requests(sources: Sequence[SourceCandidates]) -> list[Request]:
    """One request per distinct candidate of each source (reference-free)."""
    return [Request(k, s, text) for k, s in enumerate(sources) for text in s.distinct]


def rerank_qe(sources: Sequence[SourceCandidates], scorer: Scorer) -> list[SourceChoice]:
    """Each source's candidate with the highest score (the first on a tie)."""
    requests = qe_requests(sources)
    found = scorer.score(requests)
    by_text: dict[tuple[int, str], float | None] = {(r.index, r.hyp): s for r, s in zip(requests, found)}
    out = []
    for k, s in enumerate(sources):
        scores = tuple(by_text[(k, c)] for c in s.candidates)
        out.append(SourceChoice(k, s, best_index(scores), scores, requests=len(s.distinct)))
    return out


# --------------------------------------------------------------------------- MBR

def mbr_searches(sources: Sequence[SourceCandidates], *, symmetric: bool,
                 pruning: Pruning | None) -> list[MbrSearch]:
    return [MbrSearch(s.candidates, symmetric=symmetric, pruning=pruning) for s in sources]


def mbr_round(sources: Sequence[SourceCandidates], searches: Sequence[MbrSearch]) -> list[Request]:
    """The requests of every unfinished search's next step."""
    return [Request(k, s, hyp, ref) for k, (s, search) in enumerate(zip(sources, searches))
            for hyp, ref in search.wanted()]


def rerank_mbr(sources: Sequence[SourceCandidates], scorer: Scorer, *,
               pruning: Pruning | None = None) -> list[SourceChoice]:
    """MBR over each source's candidates, with the scorer as the utility (see :mod:`choose`)."""
    searches = mbr_searches(sources, symmetric=scorer.symmetric, pruning=pruning)
    while True:
        requests = mbr_round(sources, searches)
        if not requests and all(s.done for s in searches):
            break
        found = scorer.score(requests) if requests else []
        per_source: dict[int, dict[PairKey, float | None]] = {}
        for r, value in zip(requests, found):
            assert r.ref is not None
            per_source.setdefault(r.index, {})[(r.hyp, r.ref)] = value
        for k, search in enumerate(searches):
            if not search.done:
                search.advance(per_source.get(k, {}))
    return [_mbr_choice(k, s, search) for k, (s, search) in enumerate(zip(sources, searches))]


def _mbr_choice(k: int, source: SourceCandidates, search: MbrSearch) -> SourceChoice:
    n = len(source.candidates)
    matrix = tuple(tuple(search.utility(i, j) if i != j else None for j in range(n)) for i in range(n))
    return SourceChoice(k, source, search.chosen(), tuple(search.expected_all()), matrix,
                        tuple(sorted(search.pruned_at)), len(search.utilities))


def mbr_requests_per_source(candidates: Sequence[str], *, symmetric: bool = False) -> int:
    """Utility requests of one source's full MBR matrix: distinct ordered text pairs of different
    positions (unordered when symmetric)."""
    return len(MbrSearch(tuple(candidates), symmetric=symmetric).wanted())


def cost_row(n: int, *, symmetric: bool, pruning: Pruning | None,
             utility: Callable[[int, int], float] | None = None) -> int:
    """Requests per source for ``n`` distinct candidates; with ``pruning`` the count depends on the
    utilities, so ``utility(i, j)`` gives them (a simulation)."""
    if pruning is None or utility is None:
        return full_matrix_requests(n, symmetric=symmetric)
    cands = tuple(f"candidate {i}" for i in range(n))
    search = MbrSearch(cands, symmetric=symmetric, pruning=pruning)
    while not search.done:
        wanted = search.wanted()
        search.advance({key: utility(int(key[0].split()[1]), int(key[1].split()[1])) for key in wanted})
    return len(search.utilities)


# --------------------------------------------------------------------------- the held-out guard

def baseline_index(choice: SourceChoice) -> int:
    """The baseline of a source: its first candidate (e.g. the greedy or beam-search output)."""
    return 0


def selection_gain(choices: Sequence[SourceChoice], name: str) -> Gain:
    """The gain under the scorer that chose (self-reward: it rates its own choices)."""
    chosen = [c.score for c in choices]
    base = [c.scores[baseline_index(c)] if c.scores else None for c in choices]
    return Gain(name, False, _mean(chosen), _mean(base), len(choices))


def held_out_gain(choices: Sequence[SourceChoice], scorer: Scorer, *, with_reference: bool) -> Gain:
    """The chosen translations and the baselines scored by ``scorer``, which took no part in the choice
    (``with_reference``: against each source's reference)."""
    requests: list[Request] = []
    for c in choices:
        ref = c.source.ref if with_reference else None
        if with_reference and not ref:
            raise InputError("the held-out chrF needs a reference for every source", path=c.source.origin,
                             field="ref")
        for i in dict.fromkeys(i for i in (c.chosen, baseline_index(c)) if i is not None):
            requests.append(Request(c.index, c.source, c.source.candidates[i], ref))
    found = scorer.score(requests)
    table = {(r.index, r.hyp): s for r, s in zip(requests, found)}
    chosen = [table.get((c.index, c.translation or "")) if c.chosen is not None else None for c in choices]
    base = [table.get((c.index, c.source.candidates[baseline_index(c)])) for c in choices]
    return Gain(scorer.name, True, _mean(chosen), _mean(base), len(choices),
                "references" if with_reference else "judge")


@dataclass
class RerankResult:
    """Every source's choice, the requests it took and the gains (selection and held-out)."""

    method: str
    scorer: str
    choices: list[SourceChoice]
    gains: list[Gain] = field(default_factory=list)
    pruning: Pruning | None = None
    symmetric: bool = False

    @property
    def requests(self) -> int:
        """Distinct scores asked of the scorer (after identical candidates, symmetry and pruning)."""
        return sum(c.requests for c in self.choices)

    @property
    def requests_full(self) -> int:
        """What the plain method would ask: N per source for QE, N(N-1) for an MBR matrix."""
        return sum(len(c.source.candidates) if self.method == "qe" else
                   full_matrix_requests(len(c.source.candidates)) for c in self.choices)

    def chosen_jsonl(self) -> str:
        import json

        return "".join(json.dumps(c.to_dict(), ensure_ascii=False) + "\n" for c in self.choices)

    def scores_jsonl(self) -> str:
        """Every candidate's score per source and, for MBR, the utility matrix."""
        import json

        lines = []
        for c in self.choices:
            row: dict[str, Any] = {"index": c.index + 1, "seg_id": c.source.seg_id,
                                   "candidates": list(c.source.candidates),
                                   "scores": [_num(s) for s in c.scores]}
            if c.matrix is not None:
                row["matrix"] = [[_num(u) for u in r] for r in c.matrix]
                row["pruned"] = [i + 1 for i in c.pruned]
            lines.append(json.dumps(row, ensure_ascii=False) + "\n")
        return "".join(lines)

    def to_dict(self) -> dict[str, Any]:
        p = self.pruning
        return {"method": self.method, "scorer": self.scorer, "sources": len(self.choices),
                "candidates": sum(len(c.source.candidates) for c in self.choices),
                "requests": self.requests, "requests_full": self.requests_full, "symmetric": self.symmetric,
                "pruning": None if p is None else {"schedule": list(p.schedule), "alpha": p.alpha,
                                                    "n_boot": p.n_boot, "seed": p.seed},
                "unchosen": sum(1 for c in self.choices if c.chosen is None),
                "gains": [g.to_dict() for g in self.gains]}

    def to_json(self) -> str:
        import json

        return json.dumps(self.to_dict(), indent=1, ensure_ascii=False)

    def to_text(self) -> str:
        """The summary: requests, then the gain over the baseline under each scorer."""
        what = "QE reranking" if self.method == "qe" else "MBR"
        lines = [f"{what} with {self.scorer}: {len(self.choices)} sources, "
                 f"{sum(len(c.source.candidates) for c in self.choices)} candidates; {self.requests} distinct "
                 f"requests (the plain method: {self.requests_full})."]
        unchosen = sum(1 for c in self.choices if c.chosen is None)
        if unchosen:
            lines.append(f"{unchosen} source(s) without a choice: every judgment of their candidates failed.")
        lines.append("Mean score of the chosen translations against the baseline (each source's first candidate):")
        for g in self.gains:
            tag = "held out" if g.held_out else "the selecting scorer: self-reward, not evidence"
            lines.append(f"  {g.scorer} ({tag}): chosen {_fmt(g.chosen)}, baseline {_fmt(g.baseline)}, "
                         f"gain {_fmt(g.gain, sign=True)}")
        if not any(g.held_out for g in self.gains):
            lines.append("  no held-out scorer: give --held-out JUDGE or references to check the gain")
        return "\n".join(lines) + "\n"


def _fmt(x: float | None, *, sign: bool = False) -> str:
    if x is None:
        return "n/a"
    return f"{x:+.4g}" if sign else f"{x:.4g}"


__all__ = ["METHODS", "Gain", "RerankResult", "SourceChoice", "cost_row", "held_out_gain", "mbr_requests_per_source",
           "mbr_round", "qe_requests", "rerank_mbr", "rerank_qe", "selection_gain"]
