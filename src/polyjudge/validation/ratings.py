"""Rating data: counts per item, the distributions derived from them, and file readers.

Ratings file formats (humans and judges alike; one rater's rating per entry):

* **JSONL**, one object per line, lines with the same ``item`` accumulate::

      {"item": "doc1:3", "forced_choice": ["A", "B", "A"]}
      {"item": "doc1:3", "response_sets": ["AB", "A"]}
      {"item": "doc1:4", "fc_counts": [2, 1, 0], "rs_counts": [0, 0, 0, 1, 0, 0, 0]}

  Answers are letters (``"AB"``) or option labels (``"Toxic"``; a response
  set as a list of labels). Counts follow the task's option / set order.
* **TSV** with header ``item<TAB>protocol<TAB>answer``; protocol is ``fc`` or
  ``rs`` (also ``forced-choice`` / ``response-set``); one rating per row.
* **Run directory** of ``polyjudge judge`` with the ``forced-choice`` or
  ``response-set`` protocol: ``judgments.jsonl`` rows with status ``ok`` count;
  failed rows are counted and reported, never used. The item key is the
  annotation's ``item_id`` (the item's ``extra['item_id']`` or ``id``, else
  ``system:doc_id:seg_id`` of the non-empty parts, else the item index).

An item's language pair, where the source names one: a JSONL line's ``lp``
(or ``langs``) or its ``src_lang`` and ``tgt_lang``; the TSV's optional
``lp`` or ``src_lang`` and ``tgt_lang`` columns after the first three; a run
directory's judgments' ``src_lang`` and ``tgt_lang``. ``validate`` evaluates
each pair on its own (:meth:`RatingCounts.pairs`, :meth:`RatingCounts.only`);
an item named with two pairs is an InputError.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from polyjudge.data import textio
from polyjudge.data.columns import PAIR_COLUMNS, split_pair
from polyjudge.data.errors import InputError
from polyjudge.data.rating_task import RatingTask
from polyjudge.data.readers import iter_jsonl
from polyjudge.rundir import JudgmentRecord, RunDir
from polyjudge.validation.rating_model import recover_theta

__all__ = ["RatingCounts", "Distributions", "read_ratings", "human_distributions",
           "judge_distributions", "uniform_forced_choice"]


@dataclass
class RatingCounts:
    """Per-item forced-choice counts (``items x |O|``) and response-set counts
    (``items x |Q|``) for one rater population (the humans, or one judge)."""

    name: str
    items: list[str]
    fc: np.ndarray
    rs: np.ndarray
    failures: int = 0  # judgments that failed (parse/request) and were left out
    failure_reasons: dict[str, int] = field(default_factory=dict)
    lps: dict[str, str] = field(default_factory=dict)  # item -> its language pair, for items that name one

    @property
    def has_fc(self) -> bool:
        return bool(self.fc.sum() > 0)

    @property
    def has_rs(self) -> bool:
        return bool(self.rs.sum() > 0)

    def subset(self, items: list[str]) -> RatingCounts:
        pos = {k: i for i, k in enumerate(self.items)}
        idx = [pos[k] for k in items]
        return RatingCounts(self.name, list(items), self.fc[idx], self.rs[idx],
                            self.failures, dict(self.failure_reasons),
                            {k: self.lps[k] for k in items if k in self.lps})

    def pairs(self) -> list[str]:
        """The language pairs the items name, sorted (empty when none does)."""
        return sorted(set(self.lps.values()))

    def only(self, lp: str, pair_of: dict[str, str] | None = None) -> RatingCounts:
        """The items of language pair ``lp``: by ``pair_of`` (item -> pair) where given, else by the items' own."""
        of = self.lps if pair_of is None else pair_of
        return self.subset([k for k in self.items if of.get(k) == lp])


@dataclass(frozen=True)
class Distributions:
    """O (forced choice), θ (response sets, after rater-error correction) and Ω = Λθ."""

    O: np.ndarray  # noqa: E741 - the paper's name for the forced-choice distribution
    theta: np.ndarray
    omega: np.ndarray


def _normalise(c: np.ndarray) -> np.ndarray:
    s = c.sum(1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(s > 0, c / np.where(s > 0, s, 1), np.nan)


def uniform_forced_choice(task: RatingTask) -> np.ndarray:
    """F with every option of a set equally likely to be picked (no selection effects)."""
    lam = task.membership
    uniform: np.ndarray = lam / lam.sum(0, keepdims=True)
    return uniform


def human_distributions(counts: RatingCounts, task: RatingTask, F_rev: np.ndarray,
                        E_rev: np.ndarray | None = None) -> Distributions:
    """Human side: ``O`` from forced-choice votes and ``θ* = E'(F'O)``; where
    response-set ratings exist they are used for θ directly (``θ* = E'θ``)."""
    fc_dist = _normalise(counts.fc)
    theta = recover_theta(fc_dist, F_rev)  # NaN rows where an item has no forced choices
    direct = _normalise(counts.rs)
    have = ~np.isnan(direct).any(1)
    theta[have] = direct[have]
    if E_rev is not None:
        theta = recover_theta(theta, np.eye(task.n_sets), E_rev)
    miss = np.isnan(fc_dist).any(1) & have  # response sets only: O from a uniform pick
    fc_dist[miss] = theta[miss] @ uniform_forced_choice(task).T
    return Distributions(fc_dist, theta, theta @ task.membership.T)


def judge_distributions(counts: RatingCounts, task: RatingTask,
                        F_rev: np.ndarray | None = None) -> Distributions:
    """Judge side: ``O`` from forced-choice samples, ``θ`` from response-set samples
    (judges are assumed free of rater error). A judge with forced-choice samples
    only gets θ through ``F_rev``; one with response sets only gets O through a
    uniform pick within the set."""
    fc_dist = _normalise(counts.fc)
    theta = _normalise(counts.rs)
    if not counts.has_rs:
        if F_rev is None:
            raise InputError(f"judge '{counts.name}' has no response-set ratings; give a reverse "
                             f"forced-choice matrix to derive them")
        theta = recover_theta(fc_dist, F_rev)
    if not counts.has_fc:
        fc_dist = theta @ uniform_forced_choice(task).T
    return Distributions(fc_dist, theta, theta @ task.membership.T)


# -- readers -----------------------------------------------------------------------
class _Where(TypedDict, total=False):
    """Where a rating was read: the InputError keywords for a bad one."""

    path: str
    line: int
    field: str


def _answer_fc(task: RatingTask, ans: Any, where: _Where) -> int:
    if isinstance(ans, str):
        if ans in task.options:
            return task.options.index(ans)
        try:
            return task.option_of_letter(ans)
        except InputError as exc:
            raise InputError(exc.reason, **where) from None
    raise InputError(f"forced-choice answer must be a letter or label, got {textio.short(ans)}", **where)


def _answer_rs(task: RatingTask, ans: Any, where: _Where) -> int:
    try:
        if isinstance(ans, list):
            ks = []
            for a in ans:
                if not isinstance(a, str):
                    raise InputError(f"a response set lists option labels or letters, got {textio.short(a)}")
                ks.append(task.options.index(a) if a in task.options else task.option_of_letter(a))
            return task.set_of_letters("".join(task.letters[k] for k in ks))
        if isinstance(ans, str):
            if ans in task.options:
                return task.set_of_letters(task.letters[task.options.index(ans)])
            return task.set_of_letters(ans)
    except InputError as exc:
        raise InputError(exc.reason, **where) from None
    raise InputError(f"response-set answer must be letters or a list of labels, got {textio.short(ans)}", **where)


class _Acc:
    def __init__(self, task: RatingTask) -> None:
        self.task = task
        self.order: list[str] = []
        self.fc: dict[str, np.ndarray] = {}
        self.rs: dict[str, np.ndarray] = {}
        self.failures = 0
        self.reasons: dict[str, int] = {}
        self.lps: dict[str, str] = {}

    def set_lp(self, item: str, lp: str | None, where: _Where) -> None:
        """Record ``item``'s language pair; another pair for the same item is an InputError."""
        if lp is None:
            return
        known = self.lps.setdefault(item, lp)
        if known != lp:
            raise InputError(f"item {textio.short(item)} is named with two language pairs ({known}, {lp})", **where)

    def _row(self, item: str) -> None:
        if item not in self.fc:
            self.order.append(item)
            self.fc[item] = np.zeros(self.task.n_options)
            self.rs[item] = np.zeros(self.task.n_sets)

    def add_fc(self, item: str, k: int, n: float = 1.0) -> None:
        self._row(item)
        self.fc[item][k] += n

    def add_rs(self, item: str, v: int, n: float = 1.0) -> None:
        self._row(item)
        self.rs[item][v] += n

    def result(self, name: str) -> RatingCounts:
        fc = np.array([self.fc[k] for k in self.order]).reshape(len(self.order), self.task.n_options)
        rs = np.array([self.rs[k] for k in self.order]).reshape(len(self.order), self.task.n_sets)
        return RatingCounts(name, list(self.order), fc, rs, self.failures, dict(self.reasons),
                            {k: v for k, v in self.lps.items() if k in self.fc})


def _is_count(x: Any) -> bool:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return False
    try:
        return math.isfinite(float(x)) and x >= 0
    except OverflowError:  # an integer too large for a float
        return False


def _counts(vals: Any, size: int, where: _Where) -> np.ndarray:
    if not isinstance(vals, list) or len(vals) != size or not all(_is_count(x) for x in vals):
        raise InputError(f"expected a list of {size} non-negative counts", **where)
    return np.asarray(vals, dtype=float)


def pair_of(row: dict[str, Any], *, path: str, line: int) -> str | None:
    """A row's language pair: its ``src_lang`` and ``tgt_lang``, else its pair column (``lp``, ``langs``)."""
    src, tgt = row.get("src_lang"), row.get("tgt_lang")
    if src not in (None, "") and tgt not in (None, ""):
        return f"{str(src).strip()}-{str(tgt).strip()}"
    for column in PAIR_COLUMNS:
        if row.get(column) not in (None, ""):
            a, b = split_pair(row[column], path=path, line=line, field=column)
            return f"{a}-{b}"
    return None


def _read_jsonl(path: Path, task: RatingTask, acc: _Acc) -> None:
    for ln, obj in iter_jsonl(path):
        if "item" not in obj:
            raise InputError("each line needs an 'item' key", path=str(path), line=ln, field="item")
        item = str(obj["item"])
        acc.set_lp(item, pair_of(obj, path=str(path), line=ln), {"path": str(path), "line": ln, "field": "lp"})
        known = False
        for key, adder, parser in (("forced_choice", acc.add_fc, _answer_fc),
                                   ("response_sets", acc.add_rs, _answer_rs)):
            if key in obj:
                known = True
                vals = obj[key]
                if not isinstance(vals, list):
                    vals = [vals]
                for a in vals:
                    adder(item, parser(task, a, {"path": str(path), "line": ln, "field": key}))
        for key, size, adder in (("fc_counts", task.n_options, acc.add_fc),
                                 ("rs_counts", task.n_sets, acc.add_rs)):
            if key in obj:
                known = True
                c = _counts(obj[key], size, {"path": str(path), "line": ln, "field": key})
                for i, n in enumerate(c):
                    adder(item, i, n)
        if not known:
            raise InputError("no ratings (forced_choice, response_sets, fc_counts or rs_counts)",
                             path=str(path), line=ln)


def _tsv_rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line, cells) of a ratings TSV read through :mod:`textio` (quoted cells allowed)."""
    csv.field_size_limit(2**31 - 1)
    reader = csv.reader((text + "\n" for _, text in textio.iter_lines(path)), delimiter="\t")
    try:
        for row in reader:
            yield reader.line_num, row
    except csv.Error as exc:
        raise InputError(f"not a valid TSV row: {exc}", path=str(path), line=reader.line_num) from None


def _read_tsv(path: Path, task: RatingTask, acc: _Acc) -> None:
    rows = _tsv_rows(path)
    first = next(rows, None)
    if first is None or [h.strip() for h in first[1][:3]] != ["item", "protocol", "answer"]:
        raise InputError("TSV header must be: item, protocol, answer", path=str(path), line=1)
    header = [h.strip() for h in first[1]]
    for ln, row in rows:
        if not row or not any(c.strip() for c in row):
            continue
        if len(row) < 3:
            raise InputError("expected 3 columns", path=str(path), line=ln)
        item, proto, ans = row[0].strip(), row[1].strip().lower(), row[2].strip()
        if len(header) > 3:
            cells = {h: c.strip() for h, c in zip(header[3:], row[3:], strict=False)}
            acc.set_lp(item, pair_of(cells, path=str(path), line=ln), _Where(path=str(path), line=ln, field="lp"))
        where = _Where(path=str(path), line=ln, field="answer")
        if proto in ("fc", "forced-choice", "forced_choice"):
            acc.add_fc(item, _answer_fc(task, ans, where))
        elif proto in ("rs", "response-set", "response_set"):
            acc.add_rs(item, _answer_rs(task, ans, where))
        else:
            raise InputError(f"protocol must be fc or rs, got {textio.short(proto)}", path=str(path),
                             line=ln, field="protocol")


def run_item_key(judgment: JudgmentRecord) -> str:
    """Item key of one judgment of a run directory (see module docstring)."""
    ann = judgment.annotation
    if isinstance(ann, dict) and ann.get("item_id") is not None:
        return str(ann["item_id"])
    parts = [p for p in (judgment.system, judgment.doc_id, judgment.seg_id) if p not in (None, "")]
    return ":".join(parts) if parts else str(judgment.item_index)


def _numbered_judgments(run: RunDir) -> Iterator[tuple[int, JudgmentRecord]]:
    """The run's judgments with their line numbers, so an unusable answer names its line."""
    for line, raw in run.iter_judgment_dicts():
        yield line, JudgmentRecord.from_json(raw, path=run.judgments_path, line=line)


def _read_run_dir(path: Path, task: RatingTask, acc: _Acc) -> None:
    run = RunDir.open(path)
    pairs = {i: f"{it.src_lang}-{it.tgt_lang}" for i, it in enumerate(run.items) if it.src_lang and it.tgt_lang}
    for line, judgment in _numbered_judgments(run):
        if not judgment.ok:
            acc.failures += 1
            acc.reasons[judgment.status] = acc.reasons.get(judgment.status, 0) + 1
            continue
        ann = judgment.annotation
        item = run_item_key(judgment)
        lp = pairs.get(judgment.item_index)
        if lp is not None:
            acc.set_lp(item, lp, _Where(path=run.judgments_path, line=line, field="src_lang"))
        where = _Where(path=run.judgments_path, line=line, field="annotation")
        if not isinstance(ann, dict) or ("option" not in ann and "set" not in ann):
            raise InputError("annotation is not an elicitation answer ('option' or 'set')", **where)
        if "option" in ann:
            acc.add_fc(item, _answer_fc(task, ann.get("letter", ann["option"]), where))
        else:
            acc.add_rs(item, _answer_rs(task, ann.get("letters", ann["set"]), where))


def read_ratings(path: str | Path, task: RatingTask, name: str | None = None) -> RatingCounts:
    """Read one ratings source: a ``.jsonl``/``.json`` file, a ``.tsv`` file, or a run
    directory (or several run directories joined with ``+``, e.g. a judge's
    forced-choice run plus its response-set run). Items carry their language pair where the source names one."""
    parts = [Path(p) for p in str(path).split("+")]
    acc = _Acc(task)
    for p in parts:
        if p.is_dir():
            _read_run_dir(p, task, acc)
        elif not p.is_file():
            raise InputError("ratings file not found", path=str(p))
        elif p.suffix.lower() == ".tsv":
            _read_tsv(p, task, acc)
        else:
            _read_jsonl(p, task, acc)
    if not acc.order:
        raise InputError("no ratings found", path=str(path))
    return acc.result(name or (parts[0].name if parts[0].is_dir() else parts[0].stem))
