"""From stored answers to judgments and scores.

Parsing happens here, after the store, so a recorded run can be re-parsed and
re-scored with a fixed parser without sending anything again.
"""

from __future__ import annotations

import math
import struct
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, overload

from polyjudge.aggregate.runs import get_aggregator
from polyjudge.backends.reported import NOT_TEXT
from polyjudge.data.records import Item
from polyjudge.data.spans import SpanSegment, spans_from_annotation
from polyjudge.engine.plan import Task
from polyjudge.engine.store import (
    R_COMPLETION_TOKENS,
    R_ERROR,
    R_FINISH_REASON,
    R_LATENCY_S,
    R_LOGPROBS,
    R_PROMPT_TOKENS,
    R_REASONING,
    R_STATUS,
    R_TEXT,
    Row,
    Store,
    StoredResponse,
    logprobs_of,
)
from polyjudge.protocols.base import JudgeProtocol, ParseFailure
from polyjudge.rundir import (
    OK,
    PARSE_FAILED,
    PENDING,
    REQUEST_FAILED,
    TRUNCATED,
    JudgmentLines,
    JudgmentRecord,
    JudgmentSpool,
    Manifest,
    MergedRow,
    RunContents,
    SegmentRow,
    SystemRow,
    write_manifest,
    write_run,
)

# The engine's judgment is the run directory's record (``judgments.jsonl``'s line): one type, built here
# with its item's identifiers, so nothing converts one into the other.
Judgment = JudgmentRecord

if TYPE_CHECKING:  # numpy is imported when a run matrix is asked for: a run's outputs need none
    import numpy as np


class Planned(Protocol):
    """What a judgment needs of its task: which item, run and judge."""

    @property
    def item_index(self) -> int: ...

    @property
    def run_index(self) -> int: ...

    @property
    def judge(self) -> str: ...


def judgment_from(task: Task | Planned, stored: StoredResponse | None, protocol: JudgeProtocol,
                  item: Item) -> Judgment:
    """Parse and score one stored answer; every failure becomes a status with its reason."""
    return judgment_of(task.item_index, task.run_index, task.judge, stored, protocol, item)


# An answer's parse outcome: (status, error, annotation, score), as judgment_of makes it.
Parsed = tuple[str, str | None, Any, float | None]


def judgment_of(item_index: int, run_index: int, judge: str, stored: StoredResponse | None,
                protocol: JudgeProtocol, item: Item, memo: dict[tuple[str, str | None], Parsed] | None = None
                ) -> Judgment:
    """:func:`judgment_from` for one (item, run, judge) given as values (a million of them are parsed
    when a large run is summarised). ``memo`` (one per item: parsing depends on the answer, its token
    probabilities and the item only) parses an answer text the item's other runs gave already once: the
    judgments then share one annotation object, which nothing changes after parsing."""

    def made(status: str, error: str | None, annotation: Any = None, score: float | None = None) -> Judgment:
        if stored is None:
            return JudgmentRecord(item_index, item.system, item.doc_id, item.seg_id, run_index, judge, status, error,
                                  None, None, None)
        return JudgmentRecord(item_index, item.system, item.doc_id, item.seg_id, run_index, judge, status, error,
                              stored.text, annotation, score, stored.prompt_tokens,
                              stored.completion_tokens, stored.latency_s, stored.finish_reason,
                              stored.reasoning)

    if stored is None:
        return made(PENDING, NOT_SENT)
    if stored.status != "done":
        return made(REQUEST_FAILED, stored.error)
    if stored.finish_reason == "length":
        # A reply cut by the token limit is a failure, not an answer.
        return made(TRUNCATED, CUT)
    refusal = refusal_reason(stored.finish_reason)
    if refusal is not None:
        return made(REQUEST_FAILED, refusal)
    if memo is None:
        return made(*_parsed(stored, protocol, item))
    key = (stored.text or "", stored.logprobs)
    found = memo.get(key)
    if found is None:
        found = memo[key] = _parsed(stored, protocol, item)
    return made(*found)


NOT_SENT = "not sent (the run stopped before it; re-run the same command to resume)"
CUT = "answer cut by the max-token limit"
_PENDING: Parsed = (PENDING, NOT_SENT, None, None)


# refusal_reason of the finish reasons met (a few distinct texts in a million rows).
_REFUSALS_SEEN: dict[str, str | None] = {}


def outcome_of(row: Row | None, protocol: JudgeProtocol, item: Item, memo: dict[tuple[Any, Any], Parsed]) -> Parsed:
    """:func:`judgment_of`'s outcome (status, error, annotation, score) of a stored row as read
    (:data:`~polyjudge.engine.store.Row`), for the readers of a million rows. ``memo`` (one per item) keeps each
    answer text parsed once, keyed by the text and its token probabilities as stored: equal outcomes are then
    one object, whose parts nothing changes after parsing."""
    if row is None:
        return _PENDING
    if row[R_STATUS] != "done":
        return REQUEST_FAILED, row[R_ERROR], None, None
    finish = row[R_FINISH_REASON]
    if finish is not None:
        if finish == "length":
            return TRUNCATED, CUT, None, None
        if finish in _REFUSALS_SEEN:
            refusal = _REFUSALS_SEEN[finish]
        else:
            refusal = refusal_reason(finish)
            if type(finish) is str and len(_REFUSALS_SEEN) < 1024:
                _REFUSALS_SEEN[finish] = refusal
        if refusal is not None:
            return REQUEST_FAILED, refusal, None, None
    key = (row[R_TEXT], row[R_LOGPROBS])
    found = memo.get(key)
    if found is None:
        found = memo[key] = _parsed_text(key[0] or "", key[1], protocol, item)
    return found


def record_of(item_index: int, item: Item, run_index: int, judge: str, row: Row | None, outcome: Parsed) -> Judgment:
    """The judgment of a stored row as read and its outcome (:func:`outcome_of`): :func:`judgment_of`'s."""
    status, error, annotation, score = outcome
    if row is None:
        return JudgmentRecord(item_index, item.system, item.doc_id, item.seg_id, run_index, judge, status, error,
                              None, None, None)
    return JudgmentRecord(item_index, item.system, item.doc_id, item.seg_id, run_index, judge, status, error,
                          row[R_TEXT], annotation, score, row[R_PROMPT_TOKENS] or 0, row[R_COMPLETION_TOKENS] or 0,
                          row[R_LATENCY_S] or 0.0, row[R_FINISH_REASON], row[R_REASONING])


def _parsed(stored: StoredResponse, protocol: JudgeProtocol, item: Item) -> Parsed:
    """Parse and score an answer the server gave whole (status, error, annotation, score)."""
    return _parsed_text(stored.text or "", stored.logprobs, protocol, item)


def _parsed_text(text: str, logprobs: str | None, protocol: JudgeProtocol, item: Item) -> Parsed:
    try:
        annotation = protocol.parse_answer(text, item, logprobs_of(logprobs))
    except ParseFailure as exc:
        return PARSE_FAILED, exc.reason, None, None
    score = protocol.score(annotation, item)
    if score is not None and not math.isfinite(score):
        return PARSE_FAILED, f"non-finite score {score}", annotation, None
    return OK, None, annotation, score


# Finish reasons that say the provider withheld the answer: what text came back is not a verdict.
REFUSALS = {"content_filter": "the provider's content filter withheld the answer",
            "refusal": "the model refused to answer", "safety": "the provider stopped the answer for safety",
            "recitation": "the provider stopped the answer (recitation)",
            "prohibited_content": "the provider withheld the answer (prohibited content)",
            NOT_TEXT: "the answer's content is not text"}


def _is_refusal(failure: str) -> bool:
    """Whether a ``failures()`` key (``status: reason``) is an answer the provider withheld."""
    status, _, reason = failure.partition(": ")
    return status == REQUEST_FAILED and reason.endswith("; not scored") and reason.startswith(tuple(REFUSALS.values()))


def refusal_reason(finish_reason: str | None) -> str | None:
    """The recorded reason of an answer the provider refused or gave as something other than text; None otherwise."""
    if finish_reason is None:
        return None
    what = REFUSALS.get(finish_reason.strip().lower())
    return None if what is None else f"{what} (finish_reason {finish_reason[:80]}); not scored"


@dataclass(slots=True)
class SegmentResult:
    """One item's outcome for one judge: the aggregated score over its ok runs."""

    score: float | None
    runs_ok: int
    runs_failed: int
    run_scores: list[float]
    merged: Any = None


# What a reader of a run's store sees of each chunk: its items' keys and their rows as read.
RowsHook = Callable[[dict[int, Sequence[str]], dict[str, Row]], None]


class StoredJudgments(Sequence[Judgment]):
    """A run's judgments read back from its store when asked for, never all held at once.

    Iteration parses the stored answers item by item (input order, then judge
    and run), so a run of a million judgments is summarised and written in
    bounded memory. Indexing reads them all once and keeps them (small runs,
    tests). ``keys(i)`` gives item ``i``'s cache keys in (judge, run) order.
    """

    def __init__(self, items: Sequence[Item], judges: Sequence[str], runs: int, protocol: JudgeProtocol,
                 keys: Callable[[int], Sequence[str]], open_store: Callable[[], Store], *,
                 close_store: bool = True, chunk: int = 2000) -> None:
        self.items, self.runs, self.protocol = items, runs, protocol
        self.order = sorted(judges)  # judgments are sorted by (item, judge, run)
        self._keys, self._open, self._close, self._chunk = keys, open_store, close_store, chunk
        self._all: list[Judgment] | None = None

    def __len__(self) -> int:
        return len(self.items) * len(self.order) * self.runs

    def by_item(self, store: Store | None = None, on_rows: RowsHook | None = None
                ) -> Iterator[tuple[int, list[Judgment]]]:
        """(item index, its judgments sorted by judge and run), items in input order; from ``store``
        when given (else one opened for the purpose); ``on_rows`` sees each chunk's stored rows."""
        if self._all is not None and store is None:
            per = len(self.order) * self.runs
            for i in range(len(self.items)):
                yield i, self._all[i * per:(i + 1) * per]
            return
        runs, order = self.runs, self.order
        for i, rows, outcomes in self.outcomes(store, on_rows):
            item = self.items[i]
            yield i, [record_of(i, item, k % runs, order[k // runs], row, p)
                      for k, (row, p) in enumerate(zip(rows, outcomes))]

    def outcomes(self, store: Store | None = None, on_rows: RowsHook | None = None
                 ) -> Iterator[tuple[int, list[Row | None], list[Parsed]]]:
        """(item index, its stored rows as read, their outcomes (:func:`outcome_of`)), sorted by judge and
        run, items in input order: :meth:`by_item` without the judgments (a million of them are summarised)."""
        own = store is None
        db = self._open() if store is None else store
        scan = db.scan()  # the chunks' keys come in about the order they were stored: one pass over the table
        items, protocol = self.items, self.protocol
        try:
            for start in range(0, len(items), self._chunk):
                stop = min(len(items), start + self._chunk)
                keys = {i: self._keys(i) for i in range(start, stop)}
                rows = scan.get_rows([k for ks in keys.values() for k in ks])
                if on_rows is not None:
                    on_rows(keys, rows)
                get = rows.get
                for i in range(start, stop):
                    item = items[i]
                    memo: dict[tuple[Any, Any], Parsed] = {}
                    mine = [get(k) for k in keys[i]]
                    yield i, mine, [outcome_of(row, protocol, item, memo) for row in mine]
        finally:
            scan.close()
            if own and self._close:
                db.close()

    def __iter__(self) -> Iterator[Judgment]:
        for _, js in self.by_item():
            yield from js

    @overload
    def __getitem__(self, index: int) -> Judgment: ...

    @overload
    def __getitem__(self, index: slice) -> list[Judgment]: ...

    def __getitem__(self, index: int | slice) -> Judgment | list[Judgment]:
        if self._all is None:
            self._all = list(self)
        return self._all[index]


@dataclass(slots=True)
class _Summary:
    """Everything the outputs and the summary need, gathered in one pass over the judgments."""

    status: dict[str, int]
    failures: dict[str, int]
    # None when the outputs were reused (computed from the judgments if asked for)
    segments: dict[str, list[SegmentResult]] | None = None
    matrix: dict[str, RunScores] | None = None
    systems: list[SystemRow] | None = None  # the panel's system rows, as last written


@dataclass(slots=True)
class _Tally:
    """What :meth:`RunResult.summarise` counts as it goes: statuses, failures, segment results, run matrices."""

    status: dict[str, int]
    failures: dict[str, int]
    segments: dict[str, list[SegmentResult]]
    matrix: dict[str, RunScores]


class RunScores:
    """A judge's run scores, items × runs, NaN where a run gave none: flat doubles, read as an array by
    :meth:`RunResult.run_matrix` (numpy is loaded then, not for a run's outputs)."""

    __slots__ = ("runs", "values")

    def __init__(self, items: int, runs: int) -> None:
        self.runs = runs
        self.values = array("d", [math.nan]) * (items * runs)

    def __setitem__(self, where: tuple[int, int], score: float) -> None:
        self.values[where[0] * self.runs + where[1]] = score

    def tobytes(self) -> bytes:
        """The scores as the matrix's bytes (row-major doubles)."""
        return self.values.tobytes()

    def array(self) -> np.ndarray:
        import numpy as np

        return np.array(self.values, dtype=float).reshape(-1, self.runs)


def _outcome(j: Judgment) -> Parsed:
    return j.status, j.error, j.annotation, j.score


class _ItemLines:
    """An item's ``judgments.jsonl`` lines from its stored rows and their outcomes (:meth:`StoredJudgments.outcomes`,
    sorted by judge and run), through :class:`~polyjudge.rundir.JudgmentLines`: the line of each row is the one its
    judgment (:func:`record_of`) would have. An outcome's part (its text, annotation and score) is encoded once
    per item: one outcome object always goes with one answer text (the parse memo's key holds the text; the
    other outcomes are made for one row each, or are pending: no row)."""

    def __init__(self, lines: JudgmentLines, order: Sequence[str], runs: int) -> None:
        self.lines = lines
        # The line's part from the run index's value to the status, for each (judge, run) in order.
        self.between = [lines.run(r) + lines.judge(j) for j in order for r in range(runs)]
        self.no_row = lines.tail(0, 0, 0.0, None, None)

    def __call__(self, i: int, item: Item, rows: Sequence[Row | None], outcomes: Sequence[Parsed]) -> str:
        lines = self.lines
        head, tail, value, no_row = lines.head(i, item.system, item.doc_id, item.seg_id), lines.tail, lines.value, \
            self.no_row
        middles: dict[int, str] = {}
        out = []
        for between, row, p in zip(self.between, rows, outcomes):
            middle = middles.get(id(p))
            if middle is None:
                middle = middles[id(p)] = lines.middle(p[0], p[1], value(None if row is None else row[R_TEXT]),
                                                       value(p[2]), p[3])
            if row is None:
                out.append(head + between + middle + no_row)
            else:
                out.append(head + between + middle + tail(row[R_PROMPT_TOKENS] or 0, row[R_COMPLETION_TOKENS] or 0,
                                                          row[R_LATENCY_S] or 0.0, row[R_FINISH_REASON],
                                                          row[R_REASONING]))
        out.append("")
        return "\n".join(out)


def _segment_rows(items: Sequence[Item], judges: Sequence[str], per_judge: Mapping[str, Sequence[SegmentResult]],
                  panel: Sequence[float | None]) -> list[SegmentRow]:
    """``segments.tsv``'s rows: each item's panel score, runs ok and failed over the judges, each judge's score."""
    return [SegmentRow(it.system, it.doc_id, it.seg_id, it.src_lang, it.tgt_lang, panel[i],
                       sum(per_judge[j][i].runs_ok for j in judges), sum(per_judge[j][i].runs_failed for j in judges),
                       {j: per_judge[j][i].score for j in judges})
            for i, it in enumerate(items)]


def _remembering(agg: Callable[[list[float]], float | None]) -> Callable[[list[float]], float | None]:
    """``agg``, computed once per list of run scores met (a million judgments repeat few of them: scores
    are few distinct numbers, and runs at temperature 0 often agree); an aggregator is a function of its
    scores alone (aggregate.runs)."""
    seen: dict[tuple[tuple[type, ...], bytes], float | None] = {}

    def aggregate(scores: list[float]) -> float | None:
        # The scores' exact bits and types: -0.0 is not 0.0 here (a mean of -0.0 writes "-0.0").
        try:
            key = (tuple(map(type, scores)), struct.pack(f"{len(scores)}d", *scores))
        except (struct.error, OverflowError, TypeError):
            return agg(scores)
        if key in seen:
            return seen[key]
        value = agg(scores)
        if len(seen) >= 100_000:
            seen.clear()
        seen[key] = value
        return value

    return aggregate


@dataclass
class RunResult:
    items: list[Item]
    judges: list[str]
    protocol: JudgeProtocol
    runs: int
    aggregator: str
    # A list, or a StoredJudgments read back from the store when iterated.
    judgments: Sequence[Judgment]
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
    # What the outputs depend on and what the run used (engine.core.remember_outputs), for runs with a store.
    outputs_note: tuple[str, dict[str, Any]] | None = None
    # Requests each judge served by a pool of servers sent to each server (masked URL -> count).
    server_counts: dict[str, dict[str, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._segments: dict[str, list[SegmentResult]] = {}
        self._summary: _Summary | None = None
        self._spool: JudgmentSpool | None = None
        # The run directory whose outputs (all but the manifest) are already these (see reuse_outputs).
        self._current_in: Path | None = None

    def reuse_outputs(self, out_dir: Path, status: Mapping[str, int], failures: Mapping[str, int],
                      systems: Sequence[SystemRow]) -> None:
        """Take the summary of outputs already written to ``out_dir`` from the same store and
        configuration: writing there again rewrites only the manifest."""
        self._summary = _Summary(dict(status), dict(failures), systems=list(systems))
        self._current_in = out_dir.resolve()

    def summarise(self, spool: JudgmentSpool | None = None, *, store: Store | None = None,
                  on_rows: RowsHook | None = None) -> None:
        """One pass over the judgments: statuses, failures, each judge's segment scores (each item
        aggregated once) and run matrices; with ``spool``, every judgment's line goes there too."""
        agg = _remembering(get_aggregator(self.aggregator))
        tally = _Tally({}, {}, {j: [] for j in self.judges},
                       {j: RunScores(len(self.items), self.runs) for j in self.judges})
        stored = self.judgments if isinstance(self.judgments, StoredJudgments) else None
        if stored is not None and (store is not None or stored._all is None):
            self._summarise_rows(stored, tally, agg, spool, store, on_rows)
        else:
            self._summarise_records(tally, agg, spool, store, on_rows)
        failures = dict(sorted(tally.failures.items(), key=lambda kv: -kv[1]))
        self._summary = _Summary(tally.status, failures, tally.segments, tally.matrix)
        self._segments.update(tally.segments)
        if spool is not None:
            self._spool = spool

    def _summarise_rows(self, stored: StoredJudgments, tally: _Tally, agg: Callable[[list[float]], float | None],
                        spool: JudgmentSpool | None, store: Store | None, on_rows: RowsHook | None) -> None:
        """:meth:`summarise` from the store's rows and their outcomes, without a judgment record: what the
        records give (:meth:`_summarise_records`, tests/engine/test_summary_rows.py), in less time."""
        status, failures, runs, items = tally.status, tally.failures, self.runs, self.items
        per_judge = [(n, tally.matrix[j], tally.segments[j]) for n, j in enumerate(stored.order)]
        lines = None if spool is None else _ItemLines(spool.lines, stored.order, runs)
        for i, rows, outcomes in stored.outcomes(store, on_rows):
            item = items[i]
            if lines is not None and spool is not None:
                spool.add_text(lines(i, item, rows, outcomes), len(outcomes))
            for n, matrix, segments in per_judge:
                mine = outcomes[n * runs:(n + 1) * runs]
                for r, (st, error, _, score) in enumerate(mine):
                    status[st] = status.get(st, 0) + 1
                    if st != OK:
                        key = f"{st}: {error}"
                        failures[key] = failures.get(key, 0) + 1
                    elif score is not None:
                        matrix[i, r] = score
                segments.append(self._segment(agg, item, mine))

    def _summarise_records(self, tally: _Tally, agg: Callable[[list[float]], float | None],
                           spool: JudgmentSpool | None, store: Store | None, on_rows: RowsHook | None) -> None:
        """:meth:`summarise` from the judgment records (a list, or kept ones)."""
        status, failures, matrix = tally.status, tally.failures, tally.matrix
        for i, js in self._by_item_sorted(store, on_rows):
            item = self.items[i]
            per: dict[str, list[Judgment]] = {j: [] for j in self.judges}
            for jd in js:
                status[jd.status] = status.get(jd.status, 0) + 1
                if jd.status != OK:
                    key = f"{jd.status}: {jd.error}"
                    failures[key] = failures.get(key, 0) + 1
                elif jd.score is not None and 0 <= jd.run_index < self.runs:
                    matrix[jd.judge][i, jd.run_index] = jd.score
                per[jd.judge].append(jd)
                if spool is not None:
                    spool.add(jd)
            for judge, mine in per.items():
                mine.sort(key=lambda j: j.run_index)
                tally.segments[judge].append(self._segment(agg, item, [_outcome(j) for j in mine]))

    def _by_item_sorted(self, store: Store | None = None, on_rows: RowsHook | None = None
                        ) -> Iterator[tuple[int, list[Judgment]]]:
        """Judgments grouped by item in input order (file order within an item)."""
        if isinstance(self.judgments, StoredJudgments):
            yield from self.judgments.by_item(store, on_rows)
            return
        groups: list[list[Judgment]] = [[] for _ in self.items]
        for jd in self.judgments:
            groups[jd.item_index].append(jd)
        yield from enumerate(groups)

    def _segment(self, agg: Callable[[list[float]], float | None], item: Item,
                 outcomes: Sequence[Parsed]) -> SegmentResult:
        """An item's result for one judge from its runs' outcomes (status, error, annotation, score)."""
        ok = [p for p in outcomes if p[0] == OK]
        scores = [p[3] for p in ok if p[3] is not None]
        merged = self.protocol.merge_runs([p[2] for p in ok], item) if ok else None
        value = agg(scores) if scores and len(scores) >= self.min_runs else None
        return SegmentResult(value, len(ok), len(outcomes) - len(ok), scores, merged)

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
        out = [self._segment(agg, item, [_outcome(j) for j in per_judge[judge]])
               for item, per_judge in zip(self.items, self.by_item())]
        self._segments[judge] = out
        return out

    def run_matrix(self, judge: str) -> np.ndarray:
        """items × runs array of run scores, NaN where a run failed or gave no score."""
        if self._summary is not None and self._summary.matrix is not None and judge in self._summary.matrix:
            return self._summary.matrix[judge].array()
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
        if self._summary is not None:
            return dict(self._summary.failures)
        counts: dict[str, int] = {}
        for j in self.judgments:
            if not j.ok:
                key = f"{j.status}: {j.error}"
                counts[key] = counts.get(key, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: -kv[1]))

    def answered_count(self) -> int:
        """Judgments with an outcome (ok or failed), i.e. all but those never sent."""
        if self._summary is not None:
            return len(self.judgments) - self._summary.status.get(PENDING, 0)
        return sum(1 for j in self.judgments if j.status != PENDING)

    def failed_count(self) -> int:
        """Judgments that were tried and failed (request, truncation or parse); never sent ones excluded."""
        if self._summary is not None:
            return sum(n for k, n in self._summary.status.items() if k not in (OK, PENDING))
        return sum(1 for j in self.judgments if j.status not in (OK, PENDING))

    def request_failed_count(self) -> int:
        """Judgments whose request got no answer after its retries (what ``max_failure_rate`` limits)."""
        if self._summary is not None:
            return self._summary.status.get(REQUEST_FAILED, 0)
        return sum(1 for j in self.judgments if j.status == REQUEST_FAILED)

    def failure_kinds(self) -> dict[str, int]:
        """Failed judgments by kind, what ``max_failure_rate`` limits: ``request`` (no answer after
        retries), ``refused`` (the provider withheld the answer), ``parse`` (an answer no verdict could be
        read from) and ``truncated`` (cut at the token limit)."""
        status = self.status_counts()
        refused = sum(n for key, n in self.failures().items() if _is_refusal(key))
        return {"request": status.get(REQUEST_FAILED, 0) - refused, "refused": refused,
                "parse": status.get(PARSE_FAILED, 0), "truncated": status.get(TRUNCATED, 0)}

    def status_counts(self) -> dict[str, int]:
        if self._summary is not None:
            return dict(self._summary.status)
        counts: dict[str, int] = {}
        for j in self.judgments:
            counts[j.status] = counts.get(j.status, 0) + 1
        return counts

    def system_rows(self, seg_scores: list[float | None] | None = None) -> list[SystemRow]:
        """Mean score over each system's scored segments (panel scores by default), best first."""
        if seg_scores is None and self._summary is not None and self._summary.systems is not None:
            return list(self._summary.systems)
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

    @property
    def default_mtme_name(self) -> str:
        """The metric name of the mt-metrics-eval files (reference-based variants say so: ``-refA``)."""
        return self.protocol.mtme_name

    def contents(self, mtme_name: str | None = None) -> RunContents:
        """Everything the run directory holds, as typed records."""
        items = self.items
        per_judge = {j: self.segments(j) for j in self.judges}
        panel = self.segment_scores()
        segments = _segment_rows(items, self.judges, per_judge, panel)
        merged = [MergedRow(i, j, items[i].system, items[i].seg_id, per_judge[j][i].merged)
                  for i in range(len(items)) for j in self.judges if per_judge[j][i].merged is not None]
        aggregates = None
        if self.runs > 1:
            import numpy as np

            from polyjudge.analysis.runs import aggregate_table

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
        judgments: Iterable[JudgmentRecord] | JudgmentSpool
        if self._spool is not None and self._spool.available:
            judgments = self._spool
        else:
            judgments = iter(self.judgments)
        return RunContents(
            manifest=self.manifest, items=items, judges=self.judges,
            judgments=judgments,
            segments=segments, systems=self.system_rows(panel),
            mtme_name=mtme_name or self.default_mtme_name, merged=merged,
            aggregates=aggregates, spans=spans)

    def write(self, out_dir: str | Path, mtme_name: str | None = None) -> None:
        """Write the run directory (through the one run-directory writer); where its outputs are
        current already (:meth:`reuse_outputs`), only the manifest."""
        if self._current_in is not None and mtme_name is None and Path(out_dir).resolve() == self._current_in:
            self.manifest.outputs = {"mtme_name": self.default_mtme_name}
            write_manifest(out_dir, self.manifest)
            return
        if isinstance(self.judgments, StoredJudgments) and (self._summary is None or self._summary.segments is None):
            self.summarise()  # one pass for every judge, not one per judge
        write_run(out_dir, self.contents(mtme_name))
