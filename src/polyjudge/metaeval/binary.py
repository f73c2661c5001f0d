"""Meta-evaluation of binary labels: is a translation error-free (WMT26's error-free task)?

A metric (a judge, a QE model) says of each translation whether it is
error-free; the gold comes from ESA: a translation is error-free when its ESA
score is at least ``threshold`` (85 by default, the task's) and no error span
is marked (:func:`esa_error_free`; with several raters, their mean score and
every rater's spans). "Error-free" is the positive class.

Per language pair and metric, :func:`error_free_metaeval` counts true and false
positives and negatives and reports precision, recall, F1, Matthews' correlation
coefficient (MCC) and accuracy. Undefined values follow scikit-learn's
``zero_division=0``: precision is 0 when nothing is predicted error-free, recall
0 when nothing is, F1 0 when both are 0, and MCC 0 when a row or column of the
confusion matrix is empty. Metrics are ranked without ties: by ``rank_by``
(MCC by default), then by MCC, F1, accuracy, precision and recall, and last by
name, which the result flags (``tie_broken_by_name``) when it decided.

Labels are read by :func:`read_binary_labels` from the score files the project
reads (TSV, CSV or JSONL with ``system``, ``seg_id``, optional ``doc_id`` and
language-pair columns, and a label column: ``label``, ``error_free`` or the
score column), the label written ``1``/``0``, ``true``/``false``, ``yes``/``no``
(any case; JSON booleans too), or from any other score source (a run directory)
whose scores are 0 or 1, or are cut at ``cutoff`` (a score at or above it is
error-free: an expected probability, or an ESA score as a label).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polyjudge.data.errors import InputError
from polyjudge.data.readers import iter_jsonl
from polyjudge.data.textio import iter_lines, short

__all__ = ["ESA_ERROR_FREE", "LABEL_COLUMNS", "STATISTICS", "BinaryCounts", "ErrorFreeResult", "LabelKey",
           "error_free_metaeval", "esa_error_free", "gold_from_esa", "parse_label", "rank_metrics",
           "read_binary_labels"]

ESA_ERROR_FREE = 85.0  # WMT26: ESA score at least this, and no error span
LABEL_COLUMNS = ("label", "error_free", "error-free", "score")  # the label column: the first of these a file has
STATISTICS = ("mcc", "f1", "accuracy", "precision", "recall")  # the order ties are broken in
MISSING = ("negative", "skip", "error")
_TRUE = {"1", "1.0", "true", "yes", "y", "t"}
_FALSE = {"0", "0.0", "false", "no", "n", "f"}

LabelKey = tuple[str | None, str, str | None, str]
"""(language pair or None, system, doc_id or None, seg_id)."""


@dataclass(frozen=True, slots=True)
class BinaryCounts:
    """A confusion matrix (positive: error-free) and the statistics of it."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def accuracy(self) -> float:
        return (self.tp + self.tn) / self.n if self.n else 0.0

    @property
    def mcc(self) -> float:
        tp, fp, fn, tn = (float(x) for x in (self.tp, self.fp, self.fn, self.tn))
        denom = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
        return (tp * tn - fp * fn) / denom if denom else 0.0

    def statistic(self, name: str) -> float:
        if name not in STATISTICS:
            raise InputError(f"unknown statistic {name!r} (choose from {', '.join(STATISTICS)})", field="rank_by")
        value: float = getattr(self, name)
        return value

    def as_dict(self) -> dict[str, float | int]:
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1, "mcc": self.mcc,
                "accuracy": self.accuracy, "tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn, "n": self.n}

    @classmethod
    def of(cls, gold: Iterable[bool], pred: Iterable[bool]) -> BinaryCounts:
        tp = fp = fn = tn = 0
        for g, p in zip(gold, pred, strict=True):
            tp += g and p
            fp += p and not g
            fn += g and not p
            tn += not g and not p
        return cls(int(tp), int(fp), int(fn), int(tn))


def esa_error_free(score: float | None, n_spans: int, threshold: float = ESA_ERROR_FREE) -> bool | None:
    """Gold: error-free when the ESA ``score`` is at least ``threshold`` and no error span is marked
    (``None``: no score, no gold)."""
    if score is None or math.isnan(score):
        return None
    return score >= threshold and n_spans == 0


# ------------------------------------------------------------------ reading labels
def parse_label(value: Any, *, cutoff: float | None = None, path: str | None = None, line: int | None = None,
                column: str = "label") -> bool | None:
    """One label: 1/0, true/false, yes/no (any case), a JSON boolean; empty, ``None`` or ``nan``: missing.
    With ``cutoff``, a number is error-free when at least ``cutoff`` (words stay labels)."""
    if value is None or isinstance(value, bool):
        return value
    text = str(value).strip()
    if text in ("", "None", "none", "NA") or text.lower() == "nan":
        return None
    if cutoff is not None:
        try:
            number = float(text)
        except ValueError:
            number = None  # a word (true/false, yes/no) is a label as it is
        if number is not None:
            return None if math.isnan(number) else number >= cutoff
    word = text.lower()
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise InputError(f"not a binary label: {short(text)} (1/0, true/false or yes/no; give a cutoff to cut scores)",
                     path=path, line=line, field=column)


def _label_column(fields: Sequence[str], column: str | None, path: str, line: int) -> str:
    if column is not None:
        if column not in fields:
            raise InputError(f"no column {short(column)} (columns: {', '.join(map(short, fields))})", path=path,
                             line=line, field=column)
        return column
    found = next((c for c in LABEL_COLUMNS if c in fields), None)
    if found is None:
        raise InputError(f"no label column ({', '.join(LABEL_COLUMNS)}; columns: {', '.join(map(short, fields))})",
                         path=path, line=line)
    return found


def _pair(rec: Mapping[str, Any], path: str, line: int) -> str | None:
    from polyjudge.metaeval.readers import row_lp  # the one reading of pair columns

    return row_lp(rec, path=path, line=line)


def _records(p: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    """Rows of a TSV, CSV or JSONL file as dicts (line numbers 1-based)."""
    if p.suffix.lower() in (".jsonl", ".json"):
        yield from iter_jsonl(p, user_text=True)
        return
    import csv

    lines = iter_lines(p)
    first = next(lines, None)
    if first is None:
        raise InputError("empty file", path=str(p))
    is_csv = p.suffix.lower() == ".csv"  # CSV quotes (RFC 4180); TSV cells are taken as written

    def split(text: str) -> list[str]:
        return next(csv.reader([text])) if is_csv else text.split("\t")

    header = [h.strip() for h in split(first[1])]
    for n, text in lines:
        if not text.strip():
            continue
        cells = [c.strip() for c in split(text)]
        if len(cells) != len(header):
            raise InputError(f"expected {len(header)} fields, got {len(cells)}", path=str(p), line=n)
        yield n, dict(zip(header, cells, strict=True))


def read_binary_labels(path: str | Path, *, column: str | None = None, cutoff: float | None = None,
                       fmt: str = "auto") -> dict[LabelKey, bool]:
    """Binary labels by (lp, system, doc_id, seg_id) from a TSV/CSV/JSONL file (``column``: the label
    column, default the first of :data:`LABEL_COLUMNS` it has) or any score source the project reads
    (``fmt``; e.g. a run directory), whose scores must be 0/1 unless ``cutoff`` cuts them.
    A segment labelled twice is an InputError naming both lines; missing labels are left out."""
    p = Path(path)
    if p.is_file() and p.suffix.lower() in (".tsv", ".csv", ".jsonl", ".json") and fmt in ("auto", "labels"):
        return _file_labels(p, column, cutoff)
    from polyjudge.metaeval.readers import read_score_table  # here: reading label files needs none of it

    table = read_score_table(p, fmt)
    lps = table.lps or (None,) * len(table.rows)
    out: dict[LabelKey, bool] = {}
    for (system, doc, seg, score, line), lp in zip(table.rows, lps, strict=True):
        label = parse_label(None if score is None else repr(score), cutoff=cutoff, path=str(p), line=line,
                            column="score")
        if label is not None:
            out[(lp, system, doc, seg)] = label
    return out


def _file_labels(p: Path, column: str | None, cutoff: float | None) -> dict[LabelKey, bool]:
    out: dict[LabelKey, bool] = {}
    where: dict[LabelKey, int] = {}
    col: str | None = None
    for n, rec in _records(p):
        col = col or _label_column(list(rec), column, str(p), n)
        for f in ("system", "seg_id"):
            if rec.get(f) in (None, ""):
                raise InputError("missing field", path=str(p), line=n, field=f)
        doc = rec.get("doc_id")
        key: LabelKey = (_pair(rec, str(p), n), str(rec["system"]), None if doc in (None, "") else str(doc),
                         str(rec["seg_id"]))
        if key in where:
            raise InputError(f"segment labelled twice (first at line {where[key]})", path=str(p), line=n)
        where[key] = n
        label = parse_label(rec.get(col), cutoff=cutoff, path=str(p), line=n, column=col)
        if label is not None:
            out[key] = label
    return out


def gold_from_esa(scores: str | Path, spans: str | Path | None = None, *,
                  threshold: float = ESA_ERROR_FREE, scores_format: str = "auto",
                  spans_format: str = "auto") -> dict[LabelKey, bool]:
    """Gold labels from ESA: a segment is error-free when its score (the mean over raters) is at least
    ``threshold`` and no rater marked an error span. ``spans`` defaults to the score file (ESA JSONL holds
    both); a segment whose spans are absent from it has none."""
    from polyjudge.metaeval.readers import read_score_table
    from polyjudge.metaeval.spans import read_spans

    table = read_score_table(scores, scores_format)
    segs, _ = read_spans(spans if spans is not None else scores, fmt=spans_format, raters="all")
    marked: dict[tuple[str | None, str | None, str | None], int] = {}
    for s in segs:
        key3 = (s.system, s.doc_id, s.seg_id)
        marked[key3] = marked.get(key3, 0) + len(s.spans)
    lps = table.lps or (None,) * len(table.rows)
    out: dict[LabelKey, bool] = {}
    for (system, doc, seg, score, _), lp in zip(table.rows, lps, strict=True):
        label = esa_error_free(score, marked.get((system, doc, seg), 0), threshold)
        if label is not None:
            out[(lp, system, doc, seg)] = label
    return out


# ------------------------------------------------------------------ meta-evaluation
@dataclass(frozen=True, slots=True)
class ErrorFreeResult:
    """Per language pair (``"all"``: every pair pooled) and metric, the counts and statistics, the ranking
    (best first) and, per metric, how many gold segments it gave no label (``missing``)."""

    counts: dict[str, dict[str, BinaryCounts]]
    ranking: dict[str, list[str]]
    rank_by: str
    missing: dict[str, int] = field(default_factory=dict)
    missing_policy: str = "negative"
    tie_broken_by_name: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def rows(self) -> list[dict[str, Any]]:
        """One row per language pair and metric, in rank order."""
        return [{"lp": lp, "metric": m, "rank": k + 1, **self.counts[lp][m].as_dict()}
                for lp, order in self.ranking.items() for k, m in enumerate(order)]

    def as_dict(self) -> dict[str, Any]:
        return {"rank_by": self.rank_by, "missing_policy": self.missing_policy, "missing": dict(self.missing),
                "ranking": {lp: list(o) for lp, o in self.ranking.items()},
                "tie_broken_by_name": {lp: [list(p) for p in ps] for lp, ps in self.tie_broken_by_name.items()},
                "scores": {lp: {m: c.as_dict() for m, c in by.items()} for lp, by in self.counts.items()}}


def rank_metrics(counts: Mapping[str, BinaryCounts], rank_by: str = "mcc") -> tuple[list[str], list[tuple[str, str]]]:
    """Metrics best first, without ties (``rank_by``, then :data:`STATISTICS` in order, then name), and the
    neighbours whose order only their names decided."""
    order_stats = [rank_by, *(s for s in STATISTICS if s != rank_by)]

    def key(name: str) -> tuple[float, ...]:
        return tuple(-counts[name].statistic(s) for s in order_stats)

    order = sorted(counts, key=lambda name: (key(name), name))
    by_name = [(a, b) for a, b in zip(order, order[1:], strict=False) if key(a) == key(b)]
    return order, by_name


def _match(gold: Mapping[LabelKey, bool],
           pred: Mapping[LabelKey, bool]) -> dict[LabelKey, bool | None]:
    """Each gold segment's predicted label (None: none), a prediction naming no pair or document matching a
    gold segment of any."""
    loose: dict[tuple[str, str], list[tuple[LabelKey, bool]]] = {}
    for k, v in pred.items():
        loose.setdefault((k[1], k[3]), []).append((k, v))
    out: dict[LabelKey, bool | None] = {}
    for g in gold:
        found = [v for k, v in loose.get((g[1], g[3]), ()) if (k[0] is None or k[0] == g[0])
                 and (k[2] is None or g[2] is None or k[2] == g[2])]
        if len(found) > 1:
            raise InputError(f"{len(found)} labels match gold segment system={g[1]!r} seg_id={g[3]!r}: give "
                             "doc_id or the language pair", field="seg_id")
        out[g] = found[0] if found else None
    return out


def error_free_metaeval(gold: Mapping[LabelKey, bool], metrics: Mapping[str, Mapping[LabelKey, bool]], *,
                        rank_by: str = "mcc", missing: str = "negative") -> ErrorFreeResult:
    """Each metric's labels against ``gold``, per language pair and pooled (``all``), ranked tie-free.

    A gold segment a metric gave no label counts as "not error-free" (``missing="negative"``: a failed
    answer claims nothing), is left out (``skip``, which flatters metrics that fail often) or is an
    InputError (``error``); the number is reported per metric either way.
    """
    if missing not in MISSING:
        raise InputError(f"unknown missing-label policy {missing!r} (choose from {', '.join(MISSING)})",
                         field="missing")
    BinaryCounts().statistic(rank_by)  # an unknown statistic is refused before any work
    if not gold:
        raise InputError("no gold labels: nothing to evaluate against", field="gold")
    if not metrics:
        raise InputError("no metric labels to evaluate", field="metrics")
    pairs = sorted({k[0] or "all" for k in gold})
    lps = pairs + (["all"] if len(pairs) > 1 else [])
    counts: dict[str, dict[str, BinaryCounts]] = {lp: {} for lp in lps}
    n_missing: dict[str, int] = {}
    for name, labels in metrics.items():
        matched = _match(gold, labels)
        n_missing[name] = sum(v is None for v in matched.values())
        if n_missing[name] == len(matched):
            raise InputError(f"no label of {name!r} matches a gold segment (check system, doc_id, seg_id and "
                             "language pair)", field="metrics")
        if n_missing[name] and missing == "error":
            raise InputError(f"{name!r} gave {n_missing[name]} gold segment(s) no label", field="missing")
        kept = [(g, p if p is not None else False) for g, p in matched.items()
                if p is not None or missing == "negative"]
        for lp in lps:
            sel = [(gold[g], p) for g, p in kept if lp == "all" or (g[0] or "all") == lp]
            counts[lp][name] = BinaryCounts.of([a for a, _ in sel], [b for _, b in sel])
    ranking: dict[str, list[str]] = {}
    ties: dict[str, list[tuple[str, str]]] = {}
    for lp in lps:
        ranking[lp], by_name = rank_metrics(counts[lp], rank_by)
        if by_name:
            ties[lp] = by_name
    return ErrorFreeResult(counts, ranking, rank_by, n_missing, missing, ties)
