"""Typed records of a run directory: one class per file, each with its own
JSON/TSV form, so the writer and the reader cannot drift apart.

Format history:

* 0 (polyjudge 0.1.0): no ``format_version`` in ``manifest.json``; no ``prices``.
* 1: ``format_version`` and the price table used at judge time (``prices``,
  per judged model, USD per million input/output tokens) in the manifest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from polyjudge.data.errors import InputError
from polyjudge.data.readers import plain

FORMAT_VERSION = 1

# Judgment statuses. Only "ok" judgments carry a score.
OK, PARSE_FAILED, REQUEST_FAILED, TRUNCATED, PENDING = (
    "ok", "parse_failed", "request_failed", "truncated", "pending")
STATUSES = (OK, PARSE_FAILED, REQUEST_FAILED, TRUNCATED, PENDING)
# What summaries, `polyjudge cost`, reports and the progress bar say of a paid judge without a price (a
# manifest's ``price_unknown`` lists them: their recorded $0 is not "free"). The engine writes that list and
# the readers of run directories show it, so the words live here, with the contract both import.
PRICE_UNKNOWN = "price unknown"


def format_cell(x: float | None) -> str:
    """A score in the run directory's TSV files: shortest repr of 6 decimals, empty for none."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return repr(round(float(x), 6))


def format_mtme(x: float | None) -> str:
    """A score in an mt-metrics-eval metric file (shortest repr, 6 decimals).

    mt-metrics-eval refuses ``None`` in a metric file, so a missing score is a ValueError here:
    callers check for gaps first (``rundir.mtme.require_complete``) and say what is missing.
    """
    if x is None or math.isnan(x):
        raise ValueError("mt-metrics-eval metric files hold no missing scores")
    return repr(round(float(x), 6))


def tsv_text(x: Any) -> str:
    """Text in a TSV cell: tabs and newlines become spaces so the row stays one row."""
    return "" if x is None else str(x).replace("\t", " ").replace("\n", " ")


def _opt_str(x: Any) -> str | None:
    return None if x is None else str(x)


# Largest count or index a run directory can plausibly hold (also the largest exact float integer).
MAX_COUNT = 2**53


def _count(v: Any, *, path: str, field: str, line: int | None = None) -> int:
    """A non-negative integer field; null or absent is 0 and an integral float is accepted."""
    if v is None:
        return 0
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_COUNT:
        raise InputError("must be a non-negative integer", path=path, line=line, field=field)
    return v


def _number(v: Any, *, path: str, field: str, line: int | None = None) -> float:
    """A number field (null or absent is 0.0); anything else, or one beyond a float, is a damaged file."""
    if v is None:
        return 0.0
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise InputError("must be a number", path=path, line=line, field=field)
    try:
        return float(v)
    except OverflowError:
        raise InputError("number too large", path=path, line=line, field=field) from None


def _object(d: dict[str, Any], key: str, *, path: str) -> dict[str, Any]:
    """A JSON-object field of the manifest ({} when absent or null)."""
    v = d.get(key)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise InputError("must be a JSON object", path=path, field=key)
    return v


def _opt_float(x: Any) -> float | None:
    if x is None or x == "":
        return None
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class JudgmentRecord:
    """One line of ``judgments.jsonl``: one judge's answer for one item and run.

    Also the engine's judgment (``engine.result.Judgment`` is this type): the engine builds it with its
    item's identifiers, so what a run holds and what its directory says are one record.
    """

    item_index: int
    system: str | None
    doc_id: str | None
    seg_id: str | None
    run_index: int
    judge: str
    status: str
    error: str | None
    raw_text: str | None
    annotation: Any
    score: float | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    finish_reason: str | None = None
    # A reasoning model's thinking beside its answer; written only when there is some.
    reasoning: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == OK

    def to_json(self) -> dict[str, Any]:
        """The line's JSON object, keys in file order; ``reasoning`` only when there is some."""
        out: dict[str, Any] = {
            "item_index": self.item_index, "system": self.system, "doc_id": self.doc_id, "seg_id": self.seg_id,
            "run_index": self.run_index, "judge": self.judge, "status": self.status, "error": self.error,
            "raw_text": self.raw_text, "annotation": self.annotation, "score": self.score,
            "usage": {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens},
            "latency_s": self.latency_s, "finish_reason": self.finish_reason}
        if self.reasoning is not None:
            out["reasoning"] = self.reasoning
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any], *, path: str, line: int) -> JudgmentRecord:
        """Validate one parsed line; a broken line is an InputError naming file, line and field."""
        for key in ("item_index", "status"):
            if key not in d:
                raise InputError("missing field", path=path, line=line, field=key)
        idx = d["item_index"]
        if isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx <= MAX_COUNT:
            raise InputError("must be a non-negative integer", path=path, line=line, field="item_index")
        run = d.get("run_index") or 0
        if isinstance(run, bool) or not isinstance(run, int) or not 0 <= run <= MAX_COUNT:
            raise InputError("must be a non-negative integer", path=path, line=line, field="run_index")
        status = str(d["status"])
        score = d.get("score")
        if score is not None:
            score = _number(score, path=path, line=line, field="score")
            if math.isinf(score):
                raise InputError("must be a finite number or null", path=path, line=line, field="score")
        raw_usage = d.get("usage")
        usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
        return cls(item_index=idx, system=_opt_str(d.get("system")), doc_id=_opt_str(d.get("doc_id")),
                   seg_id=_opt_str(d.get("seg_id")), run_index=run, judge=str(d.get("judge") or "judge"),
                   status=status, error=_opt_str(d.get("error")), raw_text=_opt_str(d.get("raw_text")),
                   annotation=d.get("annotation"),
                   score=score if status == OK else None,
                   prompt_tokens=_count(usage.get("prompt_tokens"), path=path, line=line,
                                        field="usage.prompt_tokens"),
                   completion_tokens=_count(usage.get("completion_tokens"), path=path, line=line,
                                            field="usage.completion_tokens"),
                   latency_s=_number(d.get("latency_s"), path=path, line=line, field="latency_s"),
                   finish_reason=_opt_str(d.get("finish_reason")), reasoning=_opt_str(d.get("reasoning")))


@dataclass(frozen=True, slots=True)
class SegmentRow:
    """One row of ``segments.tsv``: an input item's final score (panel mean over judges).

    ``judge_scores`` holds each judge's own aggregated score; the file has
    ``score:JUDGE`` columns only when the run has several judges.
    """

    system: str | None
    doc_id: str | None
    seg_id: str | None
    src_lang: str | None
    tgt_lang: str | None
    score: float | None
    runs_ok: int
    runs_failed: int
    judge_scores: dict[str, float | None] = field(default_factory=dict)

    HEADER = ("system", "doc_id", "seg_id", "src_lang", "tgt_lang", "score", "runs_ok", "runs_failed")


@dataclass(frozen=True, slots=True)
class SystemRow:
    """One row of ``systems.tsv``: mean final score over a system's scored segments; a run judged
    ``--until-settled`` adds the interval of the full test set's score and the system's rank group
    (systems of one group are not all settled apart: ties, never an order)."""

    system: str
    score: float | None
    n_segments: int
    n_unscored: int
    low: float | None = None
    high: float | None = None
    group: int | None = None


@dataclass(frozen=True, slots=True)
class MergedRow:
    """One line of ``merged.jsonl``: a judge's annotations of one item merged over runs."""

    item_index: int
    judge: str
    system: str | None
    seg_id: str | None
    annotation: Any


@dataclass(slots=True)
class RunConfig:
    """How the judgments were made (``manifest.json`` ``config``)."""

    runs: int = 1
    temperature: float = 0.0
    aggregator: str = "mean"
    concurrency: int = 16
    seed: int = 0
    min_runs: int = 1
    max_tokens: int = 512
    use_context: bool = True
    prompt_template: str | None = None
    protocol_options: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"runs": self.runs, "temperature": self.temperature, "aggregator": self.aggregator,
                "concurrency": self.concurrency, "seed": self.seed, "min_runs": self.min_runs,
                "max_tokens": self.max_tokens, "use_context": self.use_context,
                "prompt_template": self.prompt_template, "protocol_options": self.protocol_options}

    @classmethod
    def from_json(cls, d: dict[str, Any], *, path: str) -> RunConfig:
        """The manifest's ``config``: known keys must have their type (unknown keys are ignored)."""
        values: dict[str, Any] = {}
        for key, kinds in _CONFIG_TYPES.items():
            if key not in d:
                continue
            v = d[key]
            if v is None and key == "prompt_template":
                values[key] = None
            elif isinstance(v, bool) and bool not in kinds:
                raise InputError(f"must be {_CONFIG_NAMES[key]}", path=path, field=f"config.{key}")
            elif not isinstance(v, kinds):
                raise InputError(f"must be {_CONFIG_NAMES[key]}", path=path, field=f"config.{key}")
            else:
                values[key] = _number(v, path=path, field=f"config.{key}") if key == "temperature" else v
        return cls(**values)


_CONFIG_TYPES: dict[str, tuple[type, ...]] = {
    "runs": (int,), "temperature": (int, float), "aggregator": (str,), "concurrency": (int,), "seed": (int,),
    "min_runs": (int,), "max_tokens": (int,), "use_context": (bool,), "prompt_template": (str,),
    "protocol_options": (dict,)}
_CONFIG_NAMES = {"runs": "an integer", "temperature": "a number", "aggregator": "a string",
                 "concurrency": "an integer", "seed": "an integer", "min_runs": "an integer",
                 "max_tokens": "an integer", "use_context": "true or false", "prompt_template": "a string or null",
                 "protocol_options": "a JSON object"}


@dataclass(slots=True)
class Manifest:
    """``manifest.json``: what was run, with which judges, versions, counts and cost.

    ``prices`` is the price table used at judge time (USD per million input and
    output tokens, for the judged models only), so a report shows the cost the
    run was charged with, not today's defaults.
    """

    signature: str = ""
    protocol: str = ""
    config: RunConfig = field(default_factory=RunConfig)
    template_hash: str = ""
    judges: list[dict[str, Any]] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)
    cost_usd: float = 0.0
    wall_time_s: float = 0.0
    created: str = ""
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    # A run judged --until-settled: its rounds, calls against a full run's, settled and open pairs
    # (api.settle writes it; empty for any other run).
    settled: dict[str, Any] = field(default_factory=dict)
    format_version: int = FORMAT_VERSION
    # Keys this version does not know (written by a newer polyjudge), kept for round trips.
    unknown: dict[str, Any] = field(default_factory=dict)

    @property
    def judge_names(self) -> list[str]:
        return [str(j.get("model") or j.get("name")) for j in self.judges if isinstance(j, dict)]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format_version": self.format_version, "signature": self.signature, "protocol": self.protocol,
            "config": self.config.to_json(), "template_hash": self.template_hash, "judges": self.judges,
            "versions": self.versions, "counts": self.counts, "failures": self.failures,
            "tokens": self.tokens, "cost_usd": self.cost_usd, "prices": {m: list(p) for m, p in self.prices.items()},
            "wall_time_s": self.wall_time_s, "created": self.created}
        if self.settled:
            out["settled"] = self.settled
        out.update(self.unknown)
        out["outputs"] = self.outputs
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any], *, path: str) -> Manifest:
        """Read any format version; missing keys take their defaults (0.1.0 has no prices)."""
        if not isinstance(d, dict):
            raise InputError("manifest must be a JSON object", path=path)
        known = set(Manifest.__dataclass_fields__) - {"unknown"}
        config = RunConfig.from_json(_object(d, "config", path=path), path=path)
        prices: dict[str, tuple[float, float]] = {}
        for model, pair in _object(d, "prices", path=path).items():
            if (not isinstance(pair, list | tuple) or len(pair) != 2
                    or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in pair)):
                raise InputError("expected [input_usd_per_mtok, output_usd_per_mtok]", path=path,
                                 field=f"prices.{plain(model)}")
            prices[str(model)] = (_number(pair[0], path=path, field=f"prices.{plain(model)}"),
                                  _number(pair[1], path=path, field=f"prices.{plain(model)}"))
        fv = d.get("format_version", 0)
        if isinstance(fv, bool) or not isinstance(fv, int) or not 0 <= fv <= MAX_COUNT:
            raise InputError("must be a non-negative integer", path=path, field="format_version")
        judges = d.get("judges") or []
        if not isinstance(judges, list):
            raise InputError("must be a list", path=path, field="judges")

        def counts(key: str) -> dict[str, int]:
            return {str(k): _count(v, path=path, field=f"{key}.{plain(k)}")
                    for k, v in _object(d, key, path=path).items()}

        def texts(key: str) -> dict[str, str]:
            return {str(k): str(v) for k, v in _object(d, key, path=path).items()}

        return cls(
            signature=str(d.get("signature") or ""), protocol=str(d.get("protocol") or ""), config=config,
            template_hash=str(d.get("template_hash") or ""),
            judges=[j if isinstance(j, dict) else {"model": str(j)} for j in judges],
            versions=texts("versions"), counts=counts("counts"), failures=counts("failures"),
            tokens=counts("tokens"), cost_usd=_number(d.get("cost_usd"), path=path, field="cost_usd"),
            wall_time_s=_number(d.get("wall_time_s"), path=path, field="wall_time_s"),
            created=str(d.get("created") or ""), prices=prices, outputs=texts("outputs"),
            settled=_object(d, "settled", path=path), format_version=fv,
            unknown={k: v for k, v in d.items() if k not in known})


__all__ = ["FORMAT_VERSION", "OK", "PARSE_FAILED", "PENDING", "PRICE_UNKNOWN", "REQUEST_FAILED", "STATUSES",
           "TRUNCATED", "JudgmentRecord", "Manifest", "MergedRow", "RunConfig", "SegmentRow", "SystemRow",
           "format_cell", "format_mtme", "tsv_text"]
