"""From stored answers to judgments and scores.

Parsing happens here, after the store, so a recorded run can be re-parsed and
re-scored with a fixed parser without sending anything again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from polyjudge.aggregate.runs import get_aggregator
from polyjudge.backends.base import Usage
from polyjudge.data.records import Item
from polyjudge.data.spans import SpanSegment, spans_from_annotation
from polyjudge.engine.plan import Task
from polyjudge.engine.store import StoredResponse
from polyjudge.protocols.base import JudgeProtocol, ParseFailure
from polyjudge.rundir import (
    OK,
    PARSE_FAILED,
    PENDING,
    REQUEST_FAILED,
    TRUNCATED,
    JudgmentRecord,
    Manifest,
    MergedRow,
    RunContents,
    SegmentRow,
    SystemRow,
    write_run,
)


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

    def to_record(self, item: Item) -> JudgmentRecord:
        """The ``judgments.jsonl`` line of this judgment (identifiers from its item)."""
        return JudgmentRecord(
            item_index=self.item_index, system=item.system, doc_id=item.doc_id, seg_id=item.seg_id,
            run_index=self.run_index, judge=self.judge, status=self.status, error=self.error,
            raw_text=self.raw_text, annotation=self.annotation, score=self.score,
            prompt_tokens=self.usage.prompt_tokens, completion_tokens=self.usage.completion_tokens,
            latency_s=self.latency_s, finish_reason=self.finish_reason)


def judgment_from(task: Task, stored: StoredResponse | None, protocol: JudgeProtocol,
                  item: Item) -> Judgment:
    """Parse and score one stored answer; every failure becomes a status with its reason."""

    def made(status: str, error: str | None, annotation: Any = None, score: float | None = None) -> Judgment:
        if stored is None:
            return Judgment(task.item_index, task.run_index, task.judge, status, error, None, None, None)
        return Judgment(task.item_index, task.run_index, task.judge, status, error, stored.text, annotation,
                        score, stored.usage, stored.latency_s,
                        stored.finish_reason)

    if stored is None:
        return made(PENDING, "not sent (the run stopped before it; re-run the same command to resume)")
    if stored.status != "done":
        return made(REQUEST_FAILED, stored.error)
    if stored.finish_reason == "length":
        # A reply cut by the token limit is a failure, not an answer.
        return made(TRUNCATED, "answer cut by the max-token limit")
    try:
        annotation = protocol.parse(stored.text or "", item)
    except ParseFailure as exc:
        return made(PARSE_FAILED, exc.reason)
    score = protocol.score(annotation, item)
    if score is not None and not math.isfinite(score):
        return made(PARSE_FAILED, f"non-finite score {score}", annotation)
    return made(OK, None, annotation, score)


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
    manifest: Manifest = field(default_factory=Manifest)
    # A segment with fewer successful runs than this is left unscored.
    min_runs: int = 1
    # Why sending stopped before every request was tried ("interrupted", "rejected",
    # "unreachable"; see engine.runner), with a sentence for people; None when it did not.
    stop_kind: str | None = None
    stop_reason: str | None = None
    # The spending cap the run had (--max-cost), and the judges whose server would not give
    # several samples per request (what it did instead), for the summary.
    max_cost: float | None = None
    samples_fallback: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._segments: dict[str, list[SegmentResult]] = {}

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
        """Each item's aggregated score for one judge (computed once per result)."""
        cached = self._segments.get(judge)
        if cached is not None:
            return cached
        agg = get_aggregator(self.aggregator)
        out = []
        for item, per_judge in zip(self.items, self.by_item()):
            js = per_judge[judge]
            ok = [j for j in js if j.ok]
            scores = [j.score for j in ok if j.score is not None]
            merged = self.protocol.merge_runs([j.annotation for j in ok], item) if ok else None
            value = agg(scores) if scores and len(scores) >= self.min_runs else None
            out.append(SegmentResult(value, len(ok), len(js) - len(ok), scores, merged))
        self._segments[judge] = out
        return out

    def run_matrix(self, judge: str) -> np.ndarray:
        """items × runs array of run scores, NaN where a run failed or gave no score."""
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

    def answered_count(self) -> int:
        """Judgments with an outcome (ok or failed), i.e. all but those never sent."""
        return sum(1 for j in self.judgments if j.status != PENDING)

    def failed_count(self) -> int:
        """Judgments that were tried and failed (request, truncation or parse); never sent ones excluded."""
        return sum(1 for j in self.judgments if j.status not in (OK, PENDING))

    def request_failed_count(self) -> int:
        """Judgments whose request got no answer after its retries (what ``max_failure_rate`` limits)."""
        return sum(1 for j in self.judgments if j.status == REQUEST_FAILED)

    def status_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for j in self.judgments:
            counts[j.status] = counts.get(j.status, 0) + 1
        return counts

    def system_rows(self, seg_scores: list[float | None] | None = None) -> list[SystemRow]:
        """Mean score over each system's scored segments (panel scores by default), best first."""
        seg_scores = self.segment_scores() if seg_scores is None else seg_scores
        per: dict[str, list[float | None]] = {}
        for item, s in zip(self.items, seg_scores):
            per.setdefault(item.system or "-", []).append(s)
        rows = []
        for system, vals in per.items():
            got = [v for v in vals if v is not None]
            rows.append(SystemRow(system, sum(got) / len(got) if got else None, len(got), len(vals) - len(got)))
        sign = 1 if self.protocol.higher_is_better else -1
        rows.sort(key=lambda r: (r.score is None, -sign * (r.score if r.score is not None else 0.0)))
        return rows

    def contents(self, mtme_name: str | None = None) -> RunContents:
        """Everything the run directory holds, as typed records."""
        from polyjudge.analysis.runs import aggregate_table

        items = self.items
        per_judge = {j: self.segments(j) for j in self.judges}
        panel = self.segment_scores()
        segments = [SegmentRow(it.system, it.doc_id, it.seg_id, it.src_lang, it.tgt_lang, panel[i],
                               sum(per_judge[j][i].runs_ok for j in self.judges),
                               sum(per_judge[j][i].runs_failed for j in self.judges),
                               {j: per_judge[j][i].score for j in self.judges})
                    for i, it in enumerate(items)]
        merged = [MergedRow(i, j, items[i].system, items[i].seg_id, per_judge[j][i].merged)
                  for i in range(len(items)) for j in self.judges if per_judge[j][i].merged is not None]
        aggregates = None
        if self.runs > 1:
            tables = {j: aggregate_table(self.run_matrix(j), min_runs=self.min_runs) for j in self.judges}
            if not all(np.isnan(col).all() for t in tables.values() for col in t.values()):
                aggregates = tables  # categorical protocols have nothing numeric to compare
        spans = None
        if self.protocol.produces_spans:
            judge = self.judges[0]
            spans = []
            for it, seg in zip(items, per_judge[judge]):
                if seg.merged is None:
                    continue  # no ok judgment: left out, never written as "no error"
                lp = f"{it.src_lang}-{it.tgt_lang}" if it.src_lang and it.tgt_lang else None
                spans.append(SpanSegment(system=it.system, doc_id=it.doc_id, seg_id=it.seg_id,
                                         spans=spans_from_annotation(seg.merged), lp=lp, hypothesis=it.tgt,
                                         source=it.src, reference=it.ref, method=judge))
        return RunContents(
            manifest=self.manifest, items=items, judges=self.judges,
            judgments=[jd.to_record(items[jd.item_index]) for jd in self.judgments],
            segments=segments, systems=self.system_rows(panel),
            mtme_name=mtme_name or f"polyjudge-{self.protocol.name}", merged=merged,
            aggregates=aggregates, spans=spans)

    def write(self, out_dir: str | Path, mtme_name: str | None = None) -> None:
        """Write the run directory (through the one run-directory writer)."""
        write_run(out_dir, self.contents(mtme_name))
