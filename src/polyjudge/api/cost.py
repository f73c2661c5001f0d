"""What runs spent, per judge and model: ``polyjudge cost RUN_DIR...``.

Read from each run directory's manifest (through :class:`~polyjudge.rundir.RunDir`,
never the store), which records every request's tokens and USD once, at the
prices the run was charged with; nothing is re-priced here, so a run keeps
the price it was judged at whatever the tables say today.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from polyjudge.data.errors import InputError
from polyjudge.rundir import RunDir
from polyjudge.rundir.records import PRICE_UNKNOWN, Manifest

# The model named on a row of an old manifest (format 0 or 1 without per-judge numbers) with several judges.
ALL_JUDGES = "(all judges)"


@dataclass(frozen=True, slots=True)
class JudgeSpend:
    """One judge's spending in one run (``run`` is ``"total"`` on the summed rows)."""

    run: str
    backend: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    price_source: str = ""
    price_known: bool = True  # False: a paid judge without a price, whose $0 means "unknown", not "free"

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "backend": self.backend, "model": self.model, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "cost_usd": round(self.cost_usd, 6) if self.price_known else None,
                "price_source": self.price_source if self.price_known else PRICE_UNKNOWN}


@dataclass(frozen=True, slots=True)
class CostReport:
    """Every judge of every run, and the sums per backend and model."""

    rows: tuple[JudgeSpend, ...]
    totals: tuple[JudgeSpend, ...]

    @property
    def cost_usd(self) -> float:
        return sum(r.cost_usd for r in self.rows)

    @property
    def unpriced(self) -> list[str]:
        """The models whose price is unknown: the total leaves them out."""
        return list(dict.fromkeys(r.model for r in self.rows if not r.price_known))

    def to_dict(self) -> dict[str, Any]:
        return {"runs": [r.to_dict() for r in self.rows], "by_model": [r.to_dict() for r in self.totals],
                "cost_usd": round(self.cost_usd, 6), "price_unknown": self.unpriced,
                "prompt_tokens": sum(r.prompt_tokens for r in self.rows),
                "completion_tokens": sum(r.completion_tokens for r in self.rows)}


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else 0.0


def _judge_rows(name: str, manifest: Manifest) -> list[JudgeSpend]:
    """A manifest's judges with their tokens and USD (its whole run's on one row when it kept no split)."""
    backends = {str(j.get("model")): str(j.get("backend") or "") for j in manifest.judges if isinstance(j, dict)}
    extra = manifest.unknown
    tokens, costs, sources = (_obj(extra.get(k)) for k in ("tokens_by_judge", "cost_by_judge", "price_sources"))
    unknown = set(unpriced(manifest))
    if tokens or costs:
        models = list(dict.fromkeys([*backends, *tokens, *costs]))
        return [JudgeSpend(name, backends.get(m, ""), m, _int(_obj(tokens.get(m)).get("prompt")),
                           _int(_obj(tokens.get(m)).get("completion")), _number(costs.get(m)),
                           str(sources.get(m) or ""), m not in unknown) for m in models]
    if not manifest.tokens and not manifest.cost_usd:
        return []
    model = next(iter(backends)) if len(backends) == 1 else ALL_JUDGES
    return [JudgeSpend(name, backends.get(model, ""), model, _int(manifest.tokens.get("prompt")),
                       _int(manifest.tokens.get("completion")), _number(manifest.cost_usd))]


def unpriced(manifest: Manifest) -> list[str]:
    """The paid judges of a run that had no price (their recorded $0 is unknown, not free)."""
    found = manifest.unknown.get("price_unknown")
    return [str(m) for m in found] if isinstance(found, list) else []


def _totals(rows: Sequence[JudgeSpend]) -> tuple[JudgeSpend, ...]:
    summed: dict[tuple[str, str], JudgeSpend] = {}
    for r in rows:
        before = summed.get((r.backend, r.model))
        if before is None:
            summed[(r.backend, r.model)] = JudgeSpend("total", r.backend, r.model, r.prompt_tokens,
                                                      r.completion_tokens, r.cost_usd, price_known=r.price_known)
        else:
            summed[(r.backend, r.model)] = JudgeSpend("total", r.backend, r.model,
                                                      before.prompt_tokens + r.prompt_tokens,
                                                      before.completion_tokens + r.completion_tokens,
                                                      before.cost_usd + r.cost_usd,
                                                      price_known=before.price_known and r.price_known)
    return tuple(sorted(summed.values(), key=lambda r: (-r.cost_usd, r.backend, r.model)))


def run_costs(run_dirs: Sequence[str | Path]) -> CostReport:
    """What each of ``run_dirs`` spent per judge, and the sums per model; InputError for a folder that is
    not a run directory (or whose manifest cannot be read), naming it."""
    if not run_dirs:
        raise InputError("give at least one run directory", field="RUN_DIR")
    rows: list[JudgeSpend] = []
    for path in run_dirs:
        run = RunDir.open(path)
        rows += _judge_rows(str(path), run.manifest)
    return CostReport(tuple(rows), _totals(rows))


__all__ = ["ALL_JUDGES", "PRICE_UNKNOWN", "CostReport", "JudgeSpend", "run_costs", "unpriced"]
