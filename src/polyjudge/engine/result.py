"""From stored answers to judgments and scores.

Parsing happens here, after the store, so a recorded run can be re-parsed and
re-scored with a fixed parser without sending anything again.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from polyjudge.aggregate.runs import get_aggregator
from polyjudge.backends.base import Usage
from polyjudge.data.records import Item
from polyjudge.engine.plan import Task
from polyjudge.engine.store import StoredResponse
from polyjudge.protocols.base import JudgeProtocol, ParseFailure

OK, PARSE_FAILED, REQUEST_FAILED, TRUNCATED, PENDING = (
    "ok", "parse_failed", "request_failed", "truncated", "pending")


@dataclass(slots=True)
class Judgment:
    item_index: int
    run_index: int
    judge: str
    status: str
    error: str | None
    raw_text: str | None
    annotation: Any
    score: float | None
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    finish_reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == OK

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["usage"] = asdict(self.usage)
        return d


def judgment_from(task: Task, stored: StoredResponse | None, protocol: JudgeProtocol,
                  item: Item) -> Judgment:
    base = dict(item_index=task.item_index, run_index=task.run_index, judge=task.judge)
    if stored is None:
        return Judgment(**base, status=PENDING, error="not run (interrupted or dry run)",
                        raw_text=None, annotation=None, score=None)
    usage = Usage(stored.prompt_tokens, stored.completion_tokens)
    common = dict(base, raw_text=stored.text, usage=usage, latency_s=stored.latency_s,
                  finish_reason=stored.finish_reason)
    if stored.status != "done":
        return Judgment(**common, status=REQUEST_FAILED, error=stored.error, annotation=None, score=None)
    if stored.finish_reason == "length":
        # A reply cut by the token limit is a failure, not an answer.
        return Judgment(**common, status=TRUNCATED, error="answer cut by the max-token limit",
                        annotation=None, score=None)
    try:
        annotation = protocol.parse(stored.text or "", item)
    except ParseFailure as exc:
        return Judgment(**common, status=PARSE_FAILED, error=exc.reason, annotation=None, score=None)
    score = protocol.score(annotation, item)
    if score is not None and not math.isfinite(score):
        return Judgment(**common, status=PARSE_FAILED, error=f"non-finite score {score}",
                        annotation=annotation, score=None)
    return Judgment(**common, status=OK, error=None, annotation=annotation, score=score)


@dataclass(slots=True)
class SegmentResult:
    """One item's outcome for one judge: the aggregated score over its ok runs."""

    score: float | None
    runs_ok: int
    runs_failed: int
    run_scores: list[float]
    merged: Any = None


@dataclass
class RunResult:
    items: list[Item]
    judges: list[str]
    protocol: JudgeProtocol
    runs: int
    aggregator: str
    judgments: list[Judgment]
    manifest: dict[str, Any] = field(default_factory=dict)
    # A segment with fewer successful runs than this is left unscored.
    min_runs: int = 1

    def by_item(self) -> list[dict[str, list[Judgment]]]:
        """Judgments per item, per judge, in run order."""
        out: list[dict[str, list[Judgment]]] = [{j: [] for j in self.judges} for _ in self.items]
        for jd in self.judgments:
            out[jd.item_index][jd.judge].append(jd)
        for per_judge in out:
            for lst in per_judge.values():
                lst.sort(key=lambda j: j.run_index)
        return out

    def segments(self, judge: str) -> list[SegmentResult]:
        agg = get_aggregator(self.aggregator)
        out = []
        for item, per_judge in zip(self.items, self.by_item()):
            js = per_judge[judge]
            ok = [j for j in js if j.ok]
            scores = [j.score for j in ok if j.score is not None]
            merged = self.protocol.merge_runs([j.annotation for j in ok], item) if ok else None
            value = agg(scores) if scores and len(scores) >= self.min_runs else None
            out.append(SegmentResult(value, len(ok), len(js) - len(ok), scores, merged))
        return out

    def run_matrix(self, judge: str) -> Any:
        """items × runs array of run scores, NaN where a run failed or gave no score."""
        import numpy as np
        m = np.full((len(self.items), self.runs), np.nan)
        for j in self.judgments:
            if j.judge == judge and j.ok and j.score is not None:
                m[j.item_index, j.run_index] = j.score
        return m

    def segment_scores(self, judge: str | None = None) -> list[float | None]:
        """Per item: the judge's aggregated score, or with ``judge=None`` the panel
        mean over judges that scored the item (failed judges are left out)."""
        if judge is not None:
            return [s.score for s in self.segments(judge)]
        per = [self.segment_scores(j) for j in self.judges]
        out: list[float | None] = []
        for vals in zip(*per):
            got = [v for v in vals if v is not None]
            out.append(sum(got) / len(got) if got else None)
        return out

    def failures(self) -> dict[str, int]:
        """Failure reasons with counts (status: reason)."""
        counts: dict[str, int] = {}
        for j in self.judgments:
            if not j.ok:
                key = f"{j.status}: {j.error}"
                counts[key] = counts.get(key, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: -kv[1]))

    def status_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for j in self.judgments:
            counts[j.status] = counts.get(j.status, 0) + 1
        return counts

    def write(self, out_dir: Any) -> None:
        from polyjudge.engine.outputs import write_run_dir
        write_run_dir(self, out_dir)
