"""Readers that turn score files into ScoreMatrix objects (higher = better).

Formats:

* mt-metrics-eval layout: ``DIR/human-scores/LP.NAME.LEVEL.score`` and
  ``DIR/metric-scores/LP/NAME-REF.LEVEL.score``; lines ``system<TAB>score`` in
  item order per system, ``None`` for missing.
* polyjudge run directories, read through :class:`~polyjudge.rundir.RunDir`:
  the final segment scores (empty = unscored), or one judge's, one stored run
  aggregator's or one run's scores.
* plain TSV / JSONL with ``system``, ``seg_id`` and ``score`` fields (the
  WMT ``*.avg_seg_scores.tsv`` files, whose score column is
  ``mqm_avg_score``, are accepted too).
* the WMT MQM annotation TSV, scored by ``polyjudge.aggregate.mqm``
  (error points are negated so that higher is better).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from polyjudge.data.errors import InputError
from polyjudge.data.readers import iter_jsonl
from polyjudge.metaeval.matrices import ScoreMatrix
from polyjudge.rundir import AGGREGATES, SEGMENTS, RunDir

LEVELS = ("seg", "sys", "doc", "domain")


def _float(text: str, *, path: Path, line: int, field_name: str) -> float | None:
    t = text.strip()
    if t == "" or t == "None" or t.lower() == "nan":
        return None
    try:
        v = float(t)
    except ValueError:
        raise InputError(f"not a number: {t!r}", path=str(path), line=line, field=field_name) from None
    if math.isinf(v):
        raise InputError(f"infinite score {t!r}", path=str(path), line=line, field=field_name)
    return v


# --------------------------------------------------------------------------- mt-metrics-eval

def read_mtme_score_file(path: str | Path) -> dict[str, list[float | None]]:
    """``system score`` lines -> system -> scores in item order."""
    p = Path(path)
    out: dict[str, list[float | None]] = {}
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read score file: {exc.strerror}", path=str(p)) from None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("\t") if "\t" in line else line.split()
        if len(parts) != 2:
            raise InputError("expected 'system<TAB>score'", path=str(p), line=n)
        out.setdefault(parts[0].strip(), []).append(
            _float(parts[1], path=p, line=n, field_name="score"))
    return out


def read_mtme_matrix(path: str | Path) -> ScoreMatrix:
    p = Path(path)
    return ScoreMatrix.from_lists(read_mtme_score_file(p), source=str(p))


@dataclass
class MtmeSet:
    """One language pair of an mt-metrics-eval style directory."""

    lp: str
    human: dict[str, dict[str, Path]] = field(default_factory=dict)  # name -> level -> file
    metrics: dict[str, dict[str, Path]] = field(default_factory=dict)  # "NAME-REF" -> level -> file


def scan_mtme(root: str | Path, lp: str) -> MtmeSet:
    """Find human and metric score files for ``lp`` under ``root``."""
    r = Path(root)
    if not r.is_dir():
        raise InputError("not a directory", path=str(r))
    found = MtmeSet(lp)
    pat = re.compile(rf"^{re.escape(lp)}\.(.+)\.({'|'.join(LEVELS)})\.score$")
    hdir = r / "human-scores"
    if hdir.is_dir():
        for f in sorted(hdir.iterdir()):
            mt = pat.match(f.name)
            if mt:
                found.human.setdefault(mt.group(1), {})[mt.group(2)] = f
    mdir = r / "metric-scores" / lp
    mpat = re.compile(rf"^(.+)\.({'|'.join(LEVELS)})\.score$")
    if mdir.is_dir():
        for f in sorted(mdir.iterdir()):
            mt = mpat.match(f.name)
            if mt:
                found.metrics.setdefault(mt.group(1), {})[mt.group(2)] = f
    if not found.human:
        raise InputError(f"no human scores for {lp} (expected human-scores/{lp}.NAME.seg.score)",
                         path=str(r))
    if not found.metrics:
        raise InputError(f"no metric scores for {lp} (expected metric-scores/{lp}/NAME-REF.seg.score)",
                         path=str(r))
    return found


def metric_refs(name: str) -> tuple[str, set[str]]:
    """'COMET-refA' -> ('COMET', {'refA'}); 'Kiwi-src' -> ('Kiwi', set()) (reference-free)."""
    if "-" not in name:
        return name, set()
    base, refs = name.rsplit("-", 1)
    return base, set() if refs == "src" else set(refs.split("."))


# --------------------------------------------------------------------------- tables

def _score_column(fields: list[str], path: Path) -> str:
    if "score" in fields:
        return "score"
    cands = [f for f in fields if f.endswith("score")]
    if len(cands) == 1:
        return cands[0]
    raise InputError(f"no 'score' column (columns: {', '.join(fields)})", path=str(path), line=1)


def _item_key(doc: str | None, seg: str) -> str:
    return seg if not doc else f"{doc}\u241f{seg}"


def read_table(path: str | Path, *, use_doc_id: bool = False) -> ScoreMatrix:
    """TSV (header row) or JSONL with system, seg_id, score (doc_id optional).

    Items are keyed by ``seg_id`` (by ``doc_id``+``seg_id`` with ``use_doc_id``).
    """
    p = Path(path)
    if p.is_dir():
        return read_run_dir(p)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=str(p)) from None
    rows: list[tuple[str, str, float | None]] = []
    if p.suffix in (".jsonl", ".json"):
        for n, rec in iter_jsonl(p):
            for f in ("system", "seg_id"):
                if f not in rec:
                    raise InputError("missing field", path=str(p), line=n, field=f)
            col = _score_column(list(rec), p)
            v = rec.get(col)
            if v is not None and not isinstance(v, (int, float)):
                v = _float(str(v), path=p, line=n, field_name=col)
            doc = str(rec.get("doc_id", "")) if use_doc_id else None
            rows.append((str(rec["system"]), _item_key(doc, str(rec["seg_id"])),
                         None if v is None else float(v)))
        return ScoreMatrix.from_rows(rows, source=str(p))
    lines = text.splitlines()
    if not lines:
        raise InputError("empty file", path=str(p))
    header = lines[0].split("\t") if "\t" in lines[0] else lines[0].split()
    header = [h.strip() for h in header]
    for f in ("system", "seg_id"):
        if f not in header:
            raise InputError(f"missing column (columns: {', '.join(header)})", path=str(p), line=1,
                             field=f)
    col = _score_column(header, p)
    ix = {h: k for k, h in enumerate(header)}
    for n, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) < len(header):
            parts = line.split()
        if len(parts) < len(header):
            raise InputError(f"expected {len(header)} fields, got {len(parts)}", path=str(p), line=n)
        doc = parts[ix["doc_id"]] if use_doc_id and "doc_id" in ix else None
        rows.append((parts[ix["system"]], _item_key(doc, parts[ix["seg_id"]]),
                     _float(parts[ix[col]], path=p, line=n, field_name=col)))
    return ScoreMatrix.from_rows(rows, source=str(p))


def read_run_dir(path: str | Path, *, judge: str | None = None, aggregator: str | None = None,
                 run: int | None = None) -> ScoreMatrix:
    """Segment scores of a polyjudge run directory, keyed like its ``segments.tsv``.

    By default the run's final score (the panel's, over every judge). ``judge``
    picks one judge's own final score; ``aggregator`` one of the run
    aggregators stored side by side in ``aggregates.tsv``, and ``run`` the
    scores of a single run index, so that aggregators and single runs can be
    compared with the final score. ``aggregator`` and ``run`` need a judge when
    the run has several.
    """
    rd = RunDir.open(path)
    rows = rd.segment_rows
    if not rows:
        raise InputError(f"no segment scores in the run directory ({SEGMENTS} missing or empty)",
                         path=str(rd.path))
    if aggregator is not None and run is not None:
        raise InputError("choose an aggregator or a run index, not both", path=str(rd.path))
    if aggregator is not None:
        values = rd.aggregate_scores(_one_judge(rd, judge), aggregator)
        source = str(rd.path / AGGREGATES)
    elif run is not None:
        values = _single_run(rd, _one_judge(rd, judge), run)
        source = rd.judgments_path
    else:
        values = rd.final_scores(judge)
        source = str(rd.path / SEGMENTS)
    if len(values) != len(rows):
        raise InputError(f"{len(values)} scores for {len(rows)} segments in {SEGMENTS}", path=source)
    return ScoreMatrix.from_rows(
        ((r.system or "", r.seg_id or "", None if math.isnan(v) else float(v)) for r, v in zip(rows, values)),
        source=source)


def _one_judge(rd: RunDir, judge: str | None) -> str:
    """The judge whose aggregated or single-run scores are read: the given one, or the only one."""
    judges = rd.judges
    if judge is not None:
        if judge not in judges:
            raise InputError(f"no judge '{judge}' in the run (judges: {', '.join(judges) or 'none'})",
                             path=str(rd.path), field="judge")
        return judge
    if len(judges) != 1:
        raise InputError(f"the run has {len(judges)} judges ({', '.join(judges) or 'none'}); choose one",
                         path=str(rd.path), field="judge")
    return judges[0]


def _single_run(rd: RunDir, judge: str, run: int) -> np.ndarray:
    """One run index's scores of one judge (NaN where that run failed or gave no score)."""
    n = rd.n_runs
    if isinstance(run, bool) or not isinstance(run, int) or not 0 <= run < n:
        raise InputError(f"run index must be one of 0..{n - 1} (the run has {n} runs), got {run!r}",
                         path=str(rd.path), field="run")
    column: np.ndarray = rd.run_scores(judge).scores[:, run]
    return column


def read_wmt_mqm(path: str | Path) -> ScoreMatrix:
    """Human MQM from a WMT annotation TSV, negated (higher = better)."""
    try:
        from polyjudge.aggregate.mqm import human_mqm_scores
    except ImportError as exc:  # pragma: no cover - depends on the tree
        raise InputError(f"the WMT MQM scorer (polyjudge.aggregate.mqm) is unavailable: {exc}",
                         path=str(path)) from None
    scores = human_mqm_scores(path)
    return ScoreMatrix.from_rows(((s.system, str(s.seg_id), -float(s.points)) for s in scores.segments),
                                 source=str(path))


def sniff_format(path: str | Path) -> str:
    """'run', 'mtme', 'mqm', 'jsonl' or 'tsv' from the path and first line."""
    p = Path(path)
    if p.is_dir():
        return "run"
    if p.name.endswith(".score"):
        return "mtme"
    if p.suffix in (".jsonl", ".json"):
        return "jsonl"
    try:
        with p.open(encoding="utf-8") as f:
            first = f.readline()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=str(p)) from None
    cols = set(first.rstrip("\n").split("\t"))
    if {"system", "seg_id", "rater", "severity"} <= cols:
        return "mqm"
    return "tsv"


def read_scores(path: str | Path, fmt: str = "auto", *, judge: str | None = None,
                aggregator: str | None = None, run: int | None = None) -> ScoreMatrix:
    """Any supported source -> ScoreMatrix (higher = better is the caller's contract).

    ``judge``, ``aggregator`` and ``run`` choose which scores of a run
    directory are read (see :func:`read_run_dir`); other formats hold one
    score per segment and refuse them.
    """
    fmt = sniff_format(path) if fmt == "auto" else fmt
    if fmt == "run":
        return read_run_dir(path, judge=judge, aggregator=aggregator, run=run)
    if judge is not None or aggregator is not None or run is not None:
        raise InputError(f"judge, aggregator and run choose scores of a run directory, not of a {fmt} file",
                         path=str(path))
    if fmt == "mtme":
        return read_mtme_matrix(path)
    if fmt == "mqm":
        return read_wmt_mqm(path)
    if fmt in ("tsv", "jsonl"):
        return read_table(path)
    raise InputError(f"unknown score format {fmt!r} (auto, run, mtme, mqm, tsv, jsonl)", path=str(path))


__all__ = ["MtmeSet", "metric_refs", "read_mtme_matrix", "read_mtme_score_file", "read_run_dir",
           "read_scores", "read_table", "read_wmt_mqm", "scan_mtme", "sniff_format"]
