"""``polyjudge drift``: ask a judge again what it answered before, and say whether it changed.

A sample of a run's stored requests (or an anchor set's) is sent again, fresh: straight to the
judge's backend, never through the shared response cache (which would hand back the old answers)
and never into the run's store. The cost is estimated from the stored answers' token counts and
printed before anything is sent; ``max_cost`` reserves each request's worst case (its stored prompt
with 10% to spare and the whole ``max_tokens``) before sending it, so nothing is sent past the cap.
Fresh and stored answers are then compared pair by pair (``polyjudge.analysis.drift``).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polyjudge.analysis.drift import (
    DEFAULT_ALPHA,
    DriftVerdict,
    difference_test,
    projected_orderings,
    rate_test,
    verdict,
)
from polyjudge.api.drift_source import DriftSource, StoredPair, protocol_of, read_source, save_anchor
from polyjudge.data.chat import GenerateResult
from polyjudge.data.errors import InputError

DRIFT_EXIT = 5  # docs/reference/exit-codes.md: the check found drift
CAP_EXIT = 4  # as a judging run's: the spending cap left requests unsent (and no drift was found in the rest)
PROMPT_SPARE = 1.1  # a fresh prompt is reserved at its stored size plus 10% (plus 16 tokens)


@dataclass(frozen=True, slots=True)
class DriftConfig:
    """A drift check of ``target`` (a run directory or an anchor set's name)."""

    target: str
    sample: int = 50
    max_cost: float | None = None
    alpha: float = DEFAULT_ALPHA
    seed: int = 0
    prices: str | None = None
    concurrency: int = 4
    cache: str | None = None  # the shared cache folder (anchors are kept beside it)
    resamples: int = 10_000

    def __post_init__(self) -> None:
        if self.sample < 1:
            raise InputError("--sample must be at least 1", field="sample")
        if not 0 < self.alpha < 1:
            raise InputError("--alpha must be between 0 and 1", field="alpha")
        if self.max_cost is not None and self.max_cost < 0:
            raise InputError("--max-cost must not be negative", field="max_cost")


@dataclass(frozen=True, slots=True)
class DriftPlan:
    """What a check will send and what it should cost (``None``: a judge's price is unknown)."""

    config: DriftConfig
    source: DriftSource
    estimate_usd: float | None
    reserve_usd: float | None  # the worst case the cap is checked against
    unpriced: tuple[str, ...] = ()

    @property
    def requests(self) -> int:
        return len(self.source.pairs)

    def cost_words(self) -> str:
        """``about $X, at most $Y`` (or ``price unknown: JUDGE``)."""
        if self.estimate_usd is None:
            return f"price unknown: {', '.join(self.unpriced)}"
        return f"about ${self.estimate_usd:.4f}, at most ${self.reserve_usd or 0.0:.4f}"

    def summary(self) -> str:
        """The line printed before anything is sent: requests, judges, cost and cap."""
        cap = "" if self.config.max_cost is None else f"; cap ${self.config.max_cost:.4f}"
        return (f"drift check of {self.source.name} ({self.source.kind}): {self.requests} request(s) to "
                f"{', '.join(sorted({p.judge for p in self.source.pairs}))}, {self.cost_words()}{cap}")


@dataclass
class DriftResult:
    """A finished check: the verdict, what was sent and spent, and what it means for the run."""

    plan: DriftPlan
    verdict: DriftVerdict
    sent: int
    failed: int
    not_sent: int  # left unsent by the cap
    cost_usd: float | None
    served_changes: list[dict[str, Any]] = field(default_factory=list)
    system_shifts: dict[str, dict[str, float]] = field(default_factory=dict)
    flipped: list[tuple[str, str]] = field(default_factory=list)
    span_categories: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def drift(self) -> bool:
        return self.verdict.drift or any(c["model_changed"] for c in self.served_changes)

    def to_json(self) -> dict[str, Any]:
        return {"target": self.plan.source.name, "kind": self.plan.source.kind,
                **self.verdict.to_json(), "drift": self.drift, "requests": self.plan.requests, "sent": self.sent,
                "failed": self.failed, "not_sent": self.not_sent, "estimate_usd": self.plan.estimate_usd,
                "cost_usd": self.cost_usd, "served_changes": self.served_changes,
                "system_shifts": self.system_shifts, "flipped_orderings": [list(p) for p in self.flipped],
                "span_categories": self.span_categories}


# ------------------------------------------------------------------------------------------- planning

def _prices_of(source: DriftSource, prices: str | None) -> tuple[dict[str, Any], tuple[str, ...]]:
    """judge -> ModelPrice (0 for local judges), and the judges without a price."""
    from polyjudge.backends.registry import backend_class
    from polyjudge.backends.spec import parse_judge
    from polyjudge.engine.pricing import ModelPrice, load_prices

    table = load_prices(prices)
    found: dict[str, Any] = {}
    unpriced: list[str] = []
    for text in source.judges:
        spec = parse_judge(text)
        name = spec.model or spec.backend
        if name in table:
            found[name] = table[name]
        elif backend_class(spec.backend).capabilities.local:
            found[name] = ModelPrice(0.0, 0.0)
        else:
            unpriced.append(name)
    return found, tuple(unpriced)


def _price_for(prices: dict[str, Any], judge: str) -> Any:
    return prices.get(judge) or (next(iter(prices.values())) if len(prices) == 1 else None)


def reserve_of(pair: StoredPair, price: Any) -> float:
    """The most one fresh answer may cost: its stored prompt plus 10% and 16 tokens, the whole ``max_tokens``."""
    prompt = math.ceil(pair.prompt_tokens * PROMPT_SPARE) + 16
    return float(price.cost(prompt, pair.request.max_tokens))


def plan_drift(config: DriftConfig) -> DriftPlan:
    """Read what ``config.target`` holds, draw the sample and price it; nothing is sent."""
    source = read_source(config.target, config.sample, config.seed, config.cache)
    if source.kind == "anchor" and len(source.pairs) > config.sample:
        source = DriftSource(source.name, source.kind, source.protocol, source.judges, source.judge_settings,
                             source.pairs[:config.sample], source.system_scores, source.candidates)
    prices, unpriced = _prices_of(source, config.prices)
    if unpriced:
        if config.max_cost is not None:
            raise InputError(f"no price for {', '.join(unpriced)}: a cap cannot hold for an unknown price; give "
                             "--prices FILE", field="max_cost")
        return DriftPlan(config, source, None, None, unpriced)
    estimate = sum(float(_price_for(prices, p.judge).cost(p.prompt_tokens, p.completion_tokens))
                   for p in source.pairs)
    reserve = sum(reserve_of(p, _price_for(prices, p.judge)) for p in source.pairs)
    return DriftPlan(config, source, estimate, reserve)


def save_anchor_set(config: DriftConfig, name: str) -> tuple[DriftPlan, Path]:
    """Keep ``config.sample`` requests of the run and their stored answers as the anchor set ``name``."""
    if not Path(config.target).is_dir():
        raise InputError("--anchor takes a run directory", path=config.target)
    plan = plan_drift(config)
    return plan, save_anchor(plan.source, name, config.cache)


# ------------------------------------------------------------------------------------------- sending

@dataclass
class _Spend:
    cap: float | None
    spent: float = 0.0
    reserved: float = 0.0
    not_sent: int = 0

    def take(self, amount: float) -> bool:
        if self.cap is not None and self.spent + self.reserved + amount > self.cap + 1e-12:
            self.not_sent += 1
            return False
        self.reserved += amount
        return True


async def _send_all(plan: DriftPlan) -> tuple[list[GenerateResult | str | None], _Spend]:
    """Every pair's fresh answer (an error's text when it failed, None when the cap left it unsent)."""
    from polyjudge.backends.base import BackendError
    from polyjudge.backends.build import build_backends
    from polyjudge.backends.registry import DEFAULT_API_KEY_ENV, BackendSettings
    from polyjudge.backends.spec import parse_judge

    source = plan.source
    s = source.judge_settings
    settings = BackendSettings(api_key_env=s.get("api_key_env") or DEFAULT_API_KEY_ENV,
                               timeout=float(s.get("timeout") or 120.0), reasoning_effort=s.get("reasoning_effort"))
    try:
        backends, _ = build_backends([parse_judge(j) for j in source.judges], settings)
    except (ValueError, RuntimeError) as exc:
        raise InputError(str(exc), field="judge") from None
    by_name = {b.model: b for b in backends}
    prices, _ = _prices_of(source, plan.config.prices)
    spend = _Spend(plan.config.max_cost)
    gate = asyncio.Semaphore(plan.config.concurrency)

    async def one(pair: StoredPair) -> GenerateResult | str | None:
        backend = by_name.get(pair.judge) or (backends[0] if len(backends) == 1 else None)
        if backend is None:
            return f"no judge named {pair.judge} in the run's judges"
        price = _price_for(prices, pair.judge)
        reserve = reserve_of(pair, price) if price is not None else 0.0
        async with gate:
            if not spend.take(reserve):
                return None
            try:
                result = await backend.generate(pair.request)
            except BackendError as exc:
                return str(exc)
            finally:
                spend.reserved -= reserve
            if price is not None:
                spend.spent += float(price.cost(result.usage.prompt_tokens, result.usage.completion_tokens))
            return result

    try:
        return list(await asyncio.gather(*(one(p) for p in source.pairs))), spend
    finally:
        for b in backends:
            await b.aclose()


# ------------------------------------------------------------------------------------------- comparing

@dataclass
class _Reading:
    """One answer as the comparison sees it."""

    parsed: bool
    refused: bool
    score: float | None
    spans: list[str] | None  # span categories, None for protocols without spans
    logprobs: list[tuple[str, float]]


def _span_categories(annotation: Any) -> list[str] | None:
    """``severity/category`` of each error an annotation lists (MQM's ``errors``, the span protocols'
    ``spans``), None for an answer of a protocol that lists none."""
    errors = annotation.get("errors", annotation.get("spans")) if isinstance(annotation, dict) else None
    if isinstance(errors, dict):  # {severity: [error, ...]}
        return [f"{sev}/{e.get('type') or e.get('category') or '?'}" if isinstance(e, dict) else str(sev)
                for sev, errs in errors.items() if isinstance(errs, list) for e in errs]
    if isinstance(errors, list):
        return [str(e.get("severity") or "?") + "/" + str(e.get("category") or e.get("type") or "?")
                if isinstance(e, dict) else "?" for e in errors]
    return None


def _read(protocol: Any, item: Any, text: str, finish: str, logprobs: Sequence[Any]) -> _Reading:
    from polyjudge.engine.result import REFUSALS
    from polyjudge.protocols.answers import ParseFailure

    tokens = [(t.token, t.logprob) for t in logprobs]
    if finish in REFUSALS:
        return _Reading(False, True, None, None, tokens)
    try:
        annotation = protocol.parse_answer(text, item, logprobs)
        score = protocol.score(annotation, item)
    except ParseFailure:
        return _Reading(False, False, None, None, tokens)
    return _Reading(True, False, score, _span_categories(annotation), tokens)


def _logprob_shift(stored: list[tuple[str, float]], fresh: list[tuple[str, float]]) -> tuple[float, float] | None:
    """Mean log-probability of the tokens both answers share at the start (stored, fresh), or None."""
    common = 0
    for (a, _), (b, _) in zip(stored, fresh):
        if a != b:
            break
        common += 1
    if common == 0:
        return None
    return (sum(lp for _, lp in stored[:common]) / common, sum(lp for _, lp in fresh[:common]) / common)


def _served_changes(pairs: Sequence[StoredPair], fresh: Sequence[GenerateResult | str | None]) -> list[dict[str, Any]]:
    out = []
    for judge in sorted({p.judge for p in pairs}):
        before = {(p.served_model, p.fingerprint) for p in pairs if p.judge == judge and p.served_model}
        now = {(r.model, r.system_fingerprint) for p, r in zip(pairs, fresh)
               if p.judge == judge and isinstance(r, GenerateResult) and r.model}
        if before and now and before != now:
            out.append({"judge": judge, "stored": sorted([m, f] for m, f in before),
                        "fresh": sorted([m, f] for m, f in now),
                        "model_changed": {m for m, _ in before} != {m for m, _ in now}})
    return out


def compare(plan: DriftPlan, fresh: Sequence[GenerateResult | str | None], spend: _Spend) -> DriftResult:
    """The verdict of the stored answers against the fresh ones (failed or unsent pairs left out)."""
    from polyjudge.engine.store import logprobs_of

    protocol = protocol_of(plan.source.protocol, plan.source.judges)
    rows: list[tuple[StoredPair, _Reading, _Reading]] = []
    for pair, result in zip(plan.source.pairs, fresh):
        if isinstance(result, GenerateResult):
            rows.append((pair, _read(protocol, pair.item, pair.text, pair.finish_reason, logprobs_of(pair.logprobs)),
                         _read(protocol, pair.item, result.text, result.finish_reason, result.logprobs)))
    tests = _tests(rows, plan.config)
    shifts = _system_shifts(rows)
    flips = projected_orderings(plan.source.system_scores, {s: v["shift"] for s, v in shifts.items()})
    cats: dict[str, dict[str, int]] = {}
    for _, s, f in rows:
        for side, reading in (("stored", s), ("fresh", f)):
            for c in reading.spans or ():
                cats.setdefault(c, {"stored": 0, "fresh": 0})[side] += 1
    failed = sum(1 for r in fresh if isinstance(r, str))
    cost = None if plan.estimate_usd is None else round(spend.spent, 6)
    return DriftResult(plan, verdict(tests, plan.config.alpha), len(rows) + failed, failed, spend.not_sent, cost,
                       _served_changes(plan.source.pairs, fresh), shifts, flips, dict(sorted(cats.items())))


def _tests(rows: Sequence[tuple[StoredPair, _Reading, _Reading]], config: DriftConfig) -> list[Any]:
    scored = [(s.score, f.score) for _, s, f in rows if s.score is not None and f.score is not None]
    spanned = [(len(s.spans), len(f.spans)) for _, s, f in rows if s.spans is not None and f.spans is not None]
    probs = [x for _, s, f in rows if (x := _logprob_shift(s.logprobs, f.logprobs)) is not None]
    opts = {"resamples": config.resamples, "seed": config.seed}
    return [difference_test("scores", [a for a, _ in scored], [b for _, b in scored], **opts),
            rate_test("parsed", [s.parsed for _, s, _ in rows], [f.parsed for _, _, f in rows]),
            rate_test("refused", [s.refused for _, s, _ in rows], [f.refused for _, _, f in rows]),
            difference_test("span_count", [float(a) for a, _ in spanned], [float(b) for _, b in spanned], **opts)
            if spanned else None,
            difference_test("logprobs", [a for a, _ in probs], [b for _, b in probs], **opts) if probs else None]


def _system_shifts(rows: Sequence[tuple[StoredPair, _Reading, _Reading]]) -> dict[str, dict[str, float]]:
    by: dict[str, list[tuple[float, float]]] = {}
    for pair, s, f in rows:
        if s.score is not None and f.score is not None and pair.item.system is not None:
            by.setdefault(pair.item.system, []).append((s.score, f.score))
    return {system: {"n": len(v), "stored": sum(a for a, _ in v) / len(v), "fresh": sum(b for _, b in v) / len(v),
                     "shift": sum(b - a for a, b in v) / len(v)} for system, v in sorted(by.items())}


def run_drift(plan: DriftPlan) -> DriftResult:
    """Send the plan's requests fresh and compare."""
    fresh, spend = asyncio.run(_send_all(plan))
    return compare(plan, fresh, spend)


def check_drift(config: DriftConfig) -> DriftResult:
    """Plan and run a drift check of ``config.target`` (see :func:`plan_drift`, :func:`run_drift`)."""
    return run_drift(plan_drift(config))


__all__ = ["CAP_EXIT", "DRIFT_EXIT", "DriftConfig", "DriftPlan", "DriftResult", "check_drift", "compare", "plan_drift",
           "run_drift", "save_anchor_set"]
