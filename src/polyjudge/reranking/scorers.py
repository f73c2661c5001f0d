"""What scores a (source, hypothesis[, pseudo-reference]) request: a judge or chrF.

A :class:`Scorer` takes a batch of :class:`Request`s and gives one score each
(None when the judgment failed). :class:`JudgeScorer` sends them through the
judging path every command uses (:func:`polyjudge.engine.session.judge`), so the
shared response cache, batches, ``--max-cost`` and the run directory apply as
they do to ``polyjudge judge``; :class:`ChrF` is sacrebleu's sentence chrF, free
and local (the non-LLM utility, and the held-out metric against references).
Both go through the same selection code and the same mbrs adapter.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from polyjudge.data.records import Item
from polyjudge.reranking.candidates import SourceCandidates

if TYPE_CHECKING:
    from polyjudge.engine.estimate import Estimate
    from polyjudge.engine.result import RunResult
    from polyjudge.engine.spec import JudgingSpec


@dataclass(frozen=True, slots=True)
class Request:
    """One score wanted: ``hyp`` of source number ``index`` (0-based), judged against ``ref`` (a
    pseudo-reference in MBR, a human reference for a held-out judge; None: reference-free)."""

    index: int
    source: SourceCandidates
    hyp: str
    ref: str | None = None


class Scorer(Protocol):
    """Scores requests in batches (one per MBR round)."""

    name: str
    symmetric: bool

    def score(self, requests: Sequence[Request]) -> list[float | None]: ...


@dataclass
class ChrF:
    """sacrebleu's sentence chrF (character 6-grams, beta 2): what mbrs's ``MetricChrF`` computes."""

    name: str = "chrF"
    symmetric: bool = False  # beta = 2 weighs recall twice: u(a, b) != u(b, a)
    calls: int = 0

    def score(self, requests: Sequence[Request]) -> list[float | None]:
        from sacrebleu.metrics.chrf import CHRF

        metric = CHRF()
        self.calls += len(requests)
        return [float(metric.sentence_score(r.hyp, [r.ref or ""]).score) for r in requests]


def _label(request: Request) -> str:
    """The item's system name: which distinct candidate, against which (h2, h2-r5)."""
    order = {t: k for k, t in enumerate(request.source.distinct)}
    hyp = f"h{order[request.hyp] + 1}" if request.hyp in order else "hyp"
    if request.ref is None:
        return hyp
    ref = f"r{order[request.ref] + 1}" if request.ref in order else "ref"
    return f"{hyp}-{ref}"


def request_item(request: Request) -> Item:
    """The judged item of a request: the source's ids, its candidate as the translation."""
    s = request.source
    return Item(src=s.src, tgt=request.hyp, ref=request.ref, src_lang=s.src_lang, tgt_lang=s.tgt_lang,
                doc_id=s.doc_id, seg_id=s.seg_id or str(request.index + 1), system=_label(request),
                origin=s.origin)


@dataclass
class JudgeScorer:
    """A judging spec as a scorer: each batch is judged through the engine.

    With ``out`` every batch is judged *with the batches before it* into that run
    directory: the store answers the earlier ones (free), so the directory ends
    holding every request and a re-run resumes. Without it, only the new requests
    are judged (the shared response cache still answers repeats), and the spending
    cap given to each batch is what the earlier ones left.
    """

    spec: JudgingSpec
    out: Path | None = None
    name: str = "judge"
    symmetric: bool = False
    items: list[Item] = field(default_factory=list)
    spent: float = 0.0
    runs: list[RunResult] = field(default_factory=list, repr=False)

    def score(self, requests: Sequence[Request]) -> list[float | None]:
        from polyjudge.engine.session import judge

        if not requests:
            return []
        new = [request_item(r) for r in requests]
        spec = self.spec
        if self.out is None and spec.budget.max_cost is not None:
            left = max(0.0, spec.budget.max_cost - self.spent)
            spec = spec.replace(budget=dataclasses.replace(spec.budget, max_cost=left))
        todo = [*self.items, *new] if self.out is not None else new
        run = judge(todo, spec, out=self.out)
        self.runs.append(run)
        if self.spec.output.restart:  # --restart clears the run directory once, before the first batch
            self.spec = self.spec.replace(output=dataclasses.replace(self.spec.output, restart=False))
        if self.out is not None:
            self.items = todo
            self.spent = float(run.manifest.cost_usd or 0.0)
        else:
            self.spent += float(run.manifest.cost_usd or 0.0)
        scores = run.segment_scores()
        return scores[len(todo) - len(new):]

    def estimate(self, requests: Sequence[Request]) -> Estimate:
        """What judging ``requests`` would send and cost (nothing is sent or written)."""
        from polyjudge.engine.session import estimate

        return estimate([request_item(r) for r in requests], self.spec, out=self.out)


__all__ = ["ChrF", "JudgeScorer", "Request", "Scorer", "request_item"]
