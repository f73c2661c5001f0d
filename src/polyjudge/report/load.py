"""A run directory as the report sees it: judgments as parallel columns, one
:class:`Segment` per judged item, and the typed manifest.

Everything is read through :class:`polyjudge.rundir.RunDir`, the one reader
of run directories; a broken line raises :class:`InputError` with its file and
line, never skipped.

Where the texts come from (the span browser shows the translation): the
run's ``items.jsonl``; else ``src``/``tgt`` columns of ``segments.tsv``; else
``src``/``tgt`` fields of the judgments (both written by older tools).
"""

from __future__ import annotations

import csv
import gc
import io
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from polyjudge.aggregate.panel import aggregate_panel
from polyjudge.analysis import aggregate_rows, available_run_aggregators
from polyjudge.data import textio
from polyjudge.data.errors import InputError
from polyjudge.data.readers import parse_json
from polyjudge.data.spans import Span
from polyjudge.data.textio import short
from polyjudge.protocols.registry import PROTOCOLS
from polyjudge.report.adapters import check_study, pairwise_verdict_shares
from polyjudge.reranking.summary import RUN_DIR as RERANK_RUN
from polyjudge.reranking.summary import SUMMARY as RERANK_JSON
from polyjudge.reranking.summary import is_rerank_output, read_rerank
from polyjudge.rundir import MANIFEST, OK, PARSE_FAILED, REQUEST_FAILED, TRUNCATED, Manifest, RunDir
from polyjudge.studies.pairwise_results import PairwiseRows

# The statuses the report counts one column each (a "pending" judgment never reaches a run directory).
STATUSES = (OK, PARSE_FAILED, REQUEST_FAILED, TRUNCATED)
# Optional study outputs of other commands, read when present in a run directory.
EXTRA_JSON = ("metaeval.json", "consistency.json", "validation.json")
# The pairwise study's outputs, read for runs of the pairwise protocol (see _pairwise_study).
PAIRWISE_JSON, PAIRWISE_TSV = "pairwise.json", "pairwise.tsv"

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]


@dataclass(slots=True)
class Judgments:
    """All judgments of a run as parallel columns (one entry per line of the file)."""

    item_index: Ints
    run_index: Ints
    judge: list[str]
    status: list[str]
    error: list[str | None]
    score: Floats  # NaN when unscored
    prompt_tokens: Ints
    completion_tokens: Ints
    latency_s: Floats
    raw_text: list[str]  # the answer of a failed judgment ("" for ok ones)
    spans: list[list[Span] | None]  # None when the annotation has no positioned spans

    def __len__(self) -> int:
        return len(self.status)

    def of_judge(self, judge: str) -> NDArray[np.bool_]:
        """Mask of one judge's judgments."""
        return np.fromiter((x == judge for x in self.judge), bool, len(self))


@dataclass(slots=True)
class Segment:
    """One input item: identifiers, texts (when recorded) and the final score."""

    system: str
    doc_id: str
    seg_id: str
    src: str | None = None
    tgt: str | None = None
    score: float = math.nan


@dataclass(slots=True)
class RunData:
    """Everything the report needs from one run directory."""

    rundir: RunDir
    segments: list[Segment]
    judgments: Judgments
    extras: dict[str, Any] = field(default_factory=dict)  # file name -> parsed JSON
    label: str | None = None  # the name shown, when not the folder's (a reranking output's run: OUT/run)

    @property
    def path(self) -> Path:
        return self.rundir.path

    @property
    def name(self) -> str:
        return self.label or self.rundir.name

    @property
    def manifest(self) -> Manifest:
        return self.rundir.manifest

    @property
    def recorded(self) -> bool:
        """Whether the run has a manifest (without one, its settings and costs are unknown)."""
        return self.rundir.has_manifest

    @property
    def signature(self) -> str | None:
        return self.manifest.signature or None

    @property
    def protocol(self) -> str | None:
        return self.manifest.protocol or None

    @property
    def judges(self) -> list[str]:
        return self.rundir.judges

    @property
    def aggregator(self) -> str:
        return self.manifest.config.aggregator

    @property
    def temperature(self) -> float | None:
        return self.manifest.config.temperature if self.recorded else None

    @property
    def wall_time_s(self) -> float | None:
        return self.manifest.wall_time_s if self.recorded else None

    @property
    def cost_usd(self) -> float | None:
        """What the run cost, as recorded at judge time."""
        return self.manifest.cost_usd if self.recorded else None

    @property
    def n_runs(self) -> int:
        return self.rundir.n_runs

    def tokens(self, judge: str | None = None) -> tuple[int, int]:
        """(prompt, completion) tokens of the run or of one judge, each request once, as the manifest
        and the store count them (a shared answer is in many judgments but was billed once)."""
        recorded = self.manifest.unknown.get("tokens_by_judge") if self.recorded else None
        if isinstance(recorded, dict):
            rows = [v for k, v in recorded.items() if judge is None or k == judge]
            return (sum(_int(r.get("prompt")) for r in rows if isinstance(r, dict)),
                    sum(_int(r.get("completion")) for r in rows if isinstance(r, dict)))
        if judge is None and self.recorded and {"prompt", "completion"} <= set(self.manifest.tokens):
            return self.manifest.tokens["prompt"], self.manifest.tokens["completion"]
        return _distinct_tokens(self.judgments, judge)

    def score_matrix(self, judge: str) -> Floats:
        """``items x runs`` scores of one judge; NaN where the run failed or is absent."""
        scores: Floats = self.rundir.run_scores(judge).scores
        return scores

    def unpriced(self) -> list[str]:
        """The paid judges the run had no price for: their recorded $0 is unknown, not free."""
        found = self.manifest.unknown.get("price_unknown") if self.recorded else None
        return [str(m) for m in found] if isinstance(found, list) else []

    def judge_costs(self) -> dict[str, float] | None:
        """Each judge's cost at the prices recorded in the manifest.

        Runs written before prices were recorded (format 0) only know their
        total: it is the judge's cost when there is one judge, and every judge's
        cost is zero when it is zero; otherwise the split is unknown (None).
        """
        if not self.recorded:
            return None
        recorded = self.manifest.unknown.get("cost_by_judge")
        if isinstance(recorded, dict):  # as charged at judge time (cached and batch prices included)
            return {judge: _number(recorded.get(judge)) for judge in self.judges}
        if self.manifest.format_version >= 1 or self.manifest.prices:
            out = {}
            for judge in self.judges:
                inp, outp = self.manifest.prices.get(judge, (0.0, 0.0))
                prompt, completion = self.tokens(judge)
                out[judge] = (prompt * inp + completion * outp) / 1e6
            return out
        if len(self.judges) == 1:
            return {self.judges[0]: self.manifest.cost_usd}
        if self.manifest.cost_usd == 0:  # nothing was charged, so no judge was
            return dict.fromkeys(self.judges, 0.0)
        return None

    def final_scores(self) -> Floats:
        """Per-item final score: ``segments.tsv``'s when it has any, else the panel mean
        of each judge's runs under the run's aggregator."""
        s = np.array([seg.score for seg in self.segments], dtype=np.float64)
        if np.isfinite(s).any() or not self.judges:
            return s
        per_judge = [aggregate_rows(self.score_matrix(j), self.aggregator) for j in self.judges]
        panel: Floats = aggregate_panel(np.column_stack(per_judge), "mean").value
        return panel


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _number(value: Any) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
    return float(value) if ok else 0.0


def _distinct_tokens(j: Judgments, judge: str | None) -> tuple[int, int]:
    """Tokens of the distinct answers among judgments (runs written before the manifest kept tokens
    per judge): judgments that share an answer repeat its judge, run, score, usage and latency."""
    seen: set[tuple[Any, ...]] = set()
    prompt = completion = 0
    for k in range(len(j)):
        if judge is not None and j.judge[k] != judge:
            continue
        score = float(j.score[k])
        key = (j.judge[k], int(j.run_index[k]), None if math.isnan(score) else score, int(j.prompt_tokens[k]),
               int(j.completion_tokens[k]), float(j.latency_s[k]), j.raw_text[k])
        if key in seen:
            continue
        seen.add(key)
        prompt += int(j.prompt_tokens[k])
        completion += int(j.completion_tokens[k])
    return prompt, completion


def extract_spans(annotation: Any) -> list[Span] | None:
    """Positioned error spans of one annotation, or None when it has none.

    Accepts a list of span objects or an object holding one under ``spans``
    or ``errors``. Objects without integer ``start``/``end`` are not spans
    (an MQM error list has none); ``start == end`` is an omission.
    """
    if isinstance(annotation, dict):
        annotation = annotation.get("spans", annotation.get("errors"))
    if not isinstance(annotation, list):
        return None
    out: list[Span] = []
    for e in annotation:
        if not isinstance(e, dict):
            return None
        s, t = e.get("start"), e.get("end")
        if not (isinstance(s, int) and isinstance(t, int)) or isinstance(s, bool):
            return None
        out.append(Span(s, t, str(e.get("severity") or "unknown").lower(),
                        str(e.get("category") or "other"), str(e.get("description") or "")))
    return out


def _judgment_columns(rd: RunDir) -> Judgments:
    recs = rd.judgments
    return Judgments(
        item_index=np.fromiter((r.item_index for r in recs), np.int64, len(recs)),
        run_index=np.fromiter((r.run_index for r in recs), np.int64, len(recs)),
        judge=[r.judge for r in recs], status=[r.status for r in recs], error=[r.error for r in recs],
        score=np.fromiter((math.nan if r.score is None else r.score for r in recs), np.float64, len(recs)),
        prompt_tokens=np.fromiter((r.prompt_tokens for r in recs), np.int64, len(recs)),
        completion_tokens=np.fromiter((r.completion_tokens for r in recs), np.int64, len(recs)),
        latency_s=np.fromiter((r.latency_s for r in recs), np.float64, len(recs)),
        raw_text=["" if r.ok else (r.raw_text or "") for r in recs],
        spans=[extract_spans(r.annotation) if r.ok else None for r in recs])


def _text(v: Any) -> str | None:
    return None if v is None or v == "" else str(v)


def _segments(rd: RunDir, judgments: Judgments) -> list[Segment]:
    items = rd.items
    n = len(items)
    if len(judgments) and int(judgments.item_index.max()) >= n:
        raise InputError(f"a judgment refers to item {int(judgments.item_index.max())}, but the run "
                         f"has {n} items", path=rd.judgments_path, field="item_index")
    rows = rd.segment_rows
    table = rd.segment_table()
    texts: list[tuple[str | None, str | None]] = [(_text(it.src), _text(it.tgt)) for it in items]
    for k, cols in enumerate(table[:n]):
        src, tgt = texts[k]
        texts[k] = (src or _text(cols.get("src")), tgt or _text(cols.get("tgt")))
    if any(src is None or tgt is None for src, tgt in texts):
        seen: set[int] = set()
        for _, d in rd.iter_judgment_dicts():
            idx = d.get("item_index")
            if isinstance(idx, int) and 0 <= idx < n and idx not in seen:
                seen.add(idx)
                src, tgt = texts[idx]
                texts[idx] = (src or _text(d.get("src")), tgt or _text(d.get("tgt")))
    out = []
    for i, it in enumerate(items):
        row = rows[i] if i < len(rows) else None
        system = _text(it.system) or (row.system if row else None)
        doc_id = _text(it.doc_id) or (row.doc_id if row else None)
        seg_id = _text(it.seg_id) or (row.seg_id if row else None)
        score = row.score if row is not None and row.score is not None else math.nan
        out.append(Segment(system=system or "system", doc_id=doc_id or "", seg_id=seg_id or str(i),
                           src=texts[i][0], tgt=texts[i][1], score=score))
    return out


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Reading makes several objects per judgment and no reference cycles; the cyclic
    garbage collector would rescan them all again and again (over half the load time)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def load_run(path: str | Path) -> RunData:
    """Read one run directory (any format version; see DEVELOPERS.md), or the judge's run of a
    reranking output folder (``polyjudge rerank -o OUT``: ``OUT/run``) with the folder's summary."""
    label = None
    if not RunDir.is_run_dir(path) and is_rerank_output(path):
        label = f"{Path(path).resolve().name}/{RERANK_RUN}"
        path = Path(path) / RERANK_RUN
    rd = RunDir.open(path)
    aggregator = rd.manifest.config.aggregator
    if aggregator not in available_run_aggregators():  # a damaged or hand-edited manifest
        raise InputError(f"unknown aggregator {short(aggregator)} (known: {', '.join(available_run_aggregators())})",
                         path=str(rd.path / MANIFEST), field="config.aggregator")
    with _collector_paused():
        judgments = _judgment_columns(rd)
        segments = _segments(rd, judgments)
    extras = {name: check_study(obj, name, str(rd.path / name))
              for name in EXTRA_JSON if (obj := rd.extra_json(name)) is not None}
    study = _pairwise_study(rd, len(segments))
    if study is not None:
        extras[PAIRWISE_JSON] = study
    if rd.path.name == RERANK_RUN and is_rerank_output(rd.path.parent):  # the judge's run of a reranking
        extras[RERANK_JSON] = read_rerank(rd.path.parent)
        label = label or f"{rd.path.parent.resolve().name}/{RERANK_RUN}"
    return RunData(rundir=rd, segments=segments, judgments=judgments, extras=extras, label=label)


def _pairwise_study(rd: RunDir, n_items: int) -> PairwiseRows | None:
    """The ``pairwise.json`` of a pairwise study, in the run directory or next to it (the study
    writes ``OUT/run`` and its tables into ``OUT``), with the verdict shares of the
    ``pairwise.tsv`` beside it. Only for runs of the ``pairwise`` protocol."""
    protocol = rd.manifest.protocol
    if protocol not in PROTOCOLS or not PROTOCOLS.get(protocol).compares_pairs:
        return None
    for folder in (rd.path, rd.path.parent):
        path = folder / PAIRWISE_JSON
        if path.is_file():
            break
    else:
        return None
    obj = parse_json(textio.read_text(path), path=str(path))
    doc: PairwiseRows = check_study(obj, PAIRWISE_JSON, str(path))
    n_pairs = doc.n_pairs
    if isinstance(n_pairs, int) and 2 * n_pairs != n_items:
        doc = replace(doc, note=f"{path} describes {n_pairs} pairs but this run judged {n_items} items (two per "
                                "pair): it may belong to another run of the study.")
    tsv = folder / PAIRWISE_TSV
    if tsv.is_file() and not (isinstance(obj, dict) and "verdict_shares" in obj):
        rows = list(csv.DictReader(io.StringIO(textio.read_text(tsv)), delimiter="\t"))
        missing = {"verdict_ab", "verdict_ba", "outcome"} - set(rows[0] if rows else ())
        if rows and missing:
            raise InputError(f"no column {', '.join(sorted(missing))}", path=str(tsv), line=1)
        doc = replace(doc, verdict_shares=tuple((v, tuple(x)) for v, x in pairwise_verdict_shares(rows).items()))
    return doc


__all__ = ["EXTRA_JSON", "PAIRWISE_JSON", "PAIRWISE_TSV", "RERANK_JSON", "STATUSES",
           "Judgments", "RunData", "Segment", "Span", "extract_spans", "load_run"]
