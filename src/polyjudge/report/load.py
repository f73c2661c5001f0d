"""Reading a polyjudge run directory into arrays the report can plot.

The reader is deliberately lenient about *optional* manifest keys (the run
format is young and several writers produce it) but strict about the files it
needs: a broken ``judgments.jsonl`` line raises :class:`InputError` with the
file and line, it is never skipped silently.

Where the texts come from (the spans table needs the translation):
``judgments.jsonl`` lines may carry ``src``/``tgt``; otherwise ``segments.tsv``
columns ``src``/``tgt``; otherwise an ``items.jsonl`` file in the run directory
(one JSON object per input item, in input order).
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from polyjudge.data.errors import InputError
from polyjudge.data.readers import iter_jsonl

STATUSES = ("ok", "parse_failed", "request_failed", "truncated")
# Optional study outputs of other commands, read when present in a run directory.
EXTRA_JSON = ("metaeval.json", "consistency.json", "validation.json")


@dataclass(slots=True)
class Span:
    """One error span in code points of the translation; start == end is an omission."""

    start: int
    end: int
    severity: str
    category: str
    description: str = ""


@dataclass(slots=True)
class Judgments:
    """All judgments of a run as parallel columns (one entry per line of the file)."""

    item_index: np.ndarray  # int
    run_index: np.ndarray  # int
    judge: list[str]
    status: list[str]
    error: list[str | None]
    score: np.ndarray  # float, NaN when unscored
    prompt_tokens: np.ndarray  # int
    completion_tokens: np.ndarray  # int
    latency_s: np.ndarray  # float, NaN when missing
    raw_text: list[str]
    spans: list[list[Span] | None]  # None when the annotation has no positioned spans

    def __len__(self) -> int:
        return len(self.status)


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

    path: Path
    name: str
    manifest: dict[str, Any]
    segments: list[Segment]
    judgments: Judgments
    extras: dict[str, Any] = field(default_factory=dict)  # file name -> parsed JSON

    # -- manifest fields with the spellings different writers use ------------
    @property
    def signature(self) -> str | None:
        return _first(self.manifest, "signature")

    @property
    def protocol(self) -> str | None:
        p = _first(self.manifest, "protocol") or _first(self.manifest.get("config") or {}, "protocol")
        if isinstance(p, dict):
            p = p.get("name")
        return None if p is None else str(p)

    @property
    def judges(self) -> list[str]:
        js = _first(self.manifest, "judges") or _first(self.manifest.get("config") or {}, "judges")
        names: list[str] = []
        for j in js or []:
            names.append(str(j.get("model") or j.get("name")) if isinstance(j, dict) else str(j))
        for j in self.judgments.judge:  # judges seen in the data, in first-seen order
            if j not in names:
                names.append(j)
        return names

    @property
    def config(self) -> dict[str, Any]:
        c = self.manifest.get("config")
        return c if isinstance(c, dict) else {}

    @property
    def aggregator(self) -> str:
        return str(_first(self.config, "aggregator") or _first(self.manifest, "aggregator") or "mean")

    @property
    def wall_time_s(self) -> float | None:
        for src in (self.manifest, self.manifest.get("timing") or {}):
            v = _first(src, "wall_time_s", "wall_s", "elapsed_s", "duration_s")
            if isinstance(v, int | float):
                return float(v)
        return None

    @property
    def cost_usd(self) -> float | None:
        for src in (self.manifest, self.manifest.get("usage") or {}, self.manifest.get("tokens") or {}):
            v = _first(src, "cost_usd", "cost")
            if isinstance(v, int | float):
                return float(v)
        return None

    @property
    def n_runs(self) -> int:
        return int(self.judgments.run_index.max()) + 1 if len(self.judgments) else 0

    def score_matrix(self, judge: str) -> np.ndarray:
        """``items x runs`` scores of one judge; NaN where the run failed or is absent."""
        n_items = len(self.segments)
        m = np.full((n_items, max(self.n_runs, 1)), np.nan)
        j = self.judgments
        mask = np.fromiter((x == judge for x in j.judge), bool, len(j))
        ok = mask & np.isfinite(j.score) & (j.item_index < n_items)
        m[j.item_index[ok], j.run_index[ok]] = j.score[ok]
        return m


def _first(d: dict[str, Any], *keys: str) -> Any:
    for k in keys:
        if isinstance(d, dict) and d.get(k) is not None:
            return d[k]
    return None


def _num(v: Any) -> float:
    if v is None or v == "":
        return math.nan
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def extract_spans(annotation: Any) -> list[Span] | None:
    """Positioned error spans of one annotation, or None when it has none.

    Accepts a list of span objects or an object holding one under ``spans``
    or ``errors``. Objects without integer ``start``/``end`` are not spans.
    """
    if isinstance(annotation, dict):
        annotation = annotation.get("spans", annotation.get("errors"))
    if not isinstance(annotation, list):
        return None
    out: list[Span] = []
    positioned = True
    for e in annotation:
        if not isinstance(e, dict):
            return None
        s, t = e.get("start"), e.get("end")
        if not (isinstance(s, int) and isinstance(t, int)) or isinstance(s, bool):
            positioned = False
            break
        out.append(Span(s, t, str(e.get("severity") or "unknown").lower(),
                        str(e.get("category") or "other"), str(e.get("description") or "")))
    return out if positioned else None


def _read_tsv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def load_run(path: str | Path) -> RunData:
    """Read one run directory (see DEVELOPERS.md for the format)."""
    root = Path(path)
    if not root.is_dir():
        raise InputError("not a run directory", path=str(root))
    mpath = root / "manifest.json"
    manifest: dict[str, Any] = {}
    if mpath.exists():
        try:
            manifest = json.loads(mpath.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON: {exc.msg}", path=str(mpath), line=exc.lineno) from None
        if not isinstance(manifest, dict):
            raise InputError("manifest must be a JSON object", path=str(mpath))
    jpath = root / "judgments.jsonl"
    if not jpath.exists():
        raise InputError("missing judgments.jsonl", path=str(root))

    cols: dict[str, list[Any]] = {k: [] for k in (
        "item_index", "run_index", "judge", "status", "error", "score", "pt", "ct", "lat", "raw", "spans")}
    texts: dict[int, dict[str, Any]] = {}
    for lineno, rec in iter_jsonl(jpath):
        for key in ("item_index", "status"):
            if key not in rec:
                raise InputError("missing field", path=str(jpath), line=lineno, field=key)
        idx = rec["item_index"]
        if not isinstance(idx, int) or idx < 0:
            raise InputError("must be a non-negative integer", path=str(jpath), line=lineno,
                             field="item_index")
        status = str(rec["status"])
        usage = rec.get("usage") or {}
        score = _num(rec.get("score")) if status == "ok" else math.nan
        cols["item_index"].append(idx)
        cols["run_index"].append(int(rec.get("run_index") or 0))
        cols["judge"].append(str(rec.get("judge") or "judge"))
        cols["status"].append(status)
        cols["error"].append(rec.get("error"))
        cols["score"].append(score)
        cols["pt"].append(int(usage.get("prompt_tokens") or 0))
        cols["ct"].append(int(usage.get("completion_tokens") or 0))
        cols["lat"].append(_num(rec.get("latency_s")))
        cols["raw"].append(str(rec.get("raw_text") or "") if status != "ok" else "")
        cols["spans"].append(extract_spans(rec.get("annotation")) if status == "ok" else None)
        if idx not in texts:
            texts[idx] = {k: rec.get(k) for k in ("system", "doc_id", "seg_id", "src", "tgt")}
    judg = Judgments(
        item_index=np.asarray(cols["item_index"], dtype=np.int64),
        run_index=np.asarray(cols["run_index"], dtype=np.int64),
        judge=cols["judge"], status=cols["status"], error=cols["error"],
        score=np.asarray(cols["score"], dtype=float),
        prompt_tokens=np.asarray(cols["pt"], dtype=np.int64),
        completion_tokens=np.asarray(cols["ct"], dtype=np.int64),
        latency_s=np.asarray(cols["lat"], dtype=float),
        raw_text=cols["raw"], spans=cols["spans"])

    segments = _segments(root, texts)
    extras: dict[str, Any] = {}
    for name in EXTRA_JSON:
        p = root / name
        if p.exists():
            try:
                extras[name] = json.loads(p.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise InputError(f"invalid JSON: {exc.msg}", path=str(p), line=exc.lineno) from None
    return RunData(path=root, name=root.resolve().name, manifest=manifest, segments=segments,
                   judgments=judg, extras=extras)


def _segments(root: Path, from_judgments: dict[int, dict[str, Any]]) -> list[Segment]:
    spath = root / "segments.tsv"
    rows = _read_tsv(spath) if spath.exists() else []
    items: list[dict[str, Any]] = []
    ipath = root / "items.jsonl"
    if ipath.exists():
        with ipath.open(encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if line.strip():
                    try:
                        items.append(json.loads(line))
                    except json.JSONDecodeError as exc:
                        raise InputError(f"invalid JSON: {exc.msg}", path=str(ipath), line=lineno) from None
    n = max(len(rows), len(items), (max(from_judgments) + 1) if from_judgments else 0)
    out: list[Segment] = []
    for i in range(n):
        row = rows[i] if i < len(rows) else {}
        item = items[i] if i < len(items) and isinstance(items[i], dict) else {}
        rec = from_judgments.get(i, {})

        def pick(key: str) -> Any:
            for src in (rec, row, item):
                v = src.get(key)
                if v is not None and v != "":
                    return v
            return None

        if rows and i < len(rows) and "score" not in row:
            raise InputError("missing column", path=str(spath), field="score")
        out.append(Segment(
            system=str(pick("system") or "system"), doc_id=str(pick("doc_id") or ""),
            seg_id=str(pick("seg_id") if pick("seg_id") is not None else i),
            src=pick("src"), tgt=pick("tgt"), score=_num(row.get("score"))))
    return out
