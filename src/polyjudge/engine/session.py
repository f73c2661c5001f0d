"""A judging session: one typed config, one call, a typed result.

Every command that judges (``judge``, ``score``, ``demo``, ``consistency``,
``probe``, and the studies) goes through :func:`judge`, so a flag means the
same thing everywhere and a new option is added in one place. Re-exported as
``polyjudge.api.judge``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from polyjudge.engine.core import Estimate, run_async
from polyjudge.engine.result import RunResult
from polyjudge.protocols.base import JudgeProtocol

DEFAULT_JUDGE = "llamacpp"


@dataclass(frozen=True, slots=True)
class JudgeConfig:
    """How to judge: protocol, judges and engine settings (the ``judge`` command's flags).

    ``judges`` are judge specs (``openai:MODEL[@URL]``, ``anthropic:MODEL``,
    ``llamacpp[:MODEL_OR_GGUF]``, ``replay:FILE``); several make a panel.
    ``None`` for ``runs``, ``temperature`` and ``aggregator`` means the
    protocol's published default.
    """

    protocol: str = "da"
    judges: tuple[str, ...] = (DEFAULT_JUDGE,)
    protocol_options: Mapping[str, Any] = field(default_factory=dict)
    prompt_template: str | None = None
    use_context: bool = True
    runs: int | None = None
    temperature: float | None = None
    aggregator: str | None = None
    min_runs: int = 1
    concurrency: int = 16
    seed: int = 0
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 120.0
    n_ctx: int = 8192
    record: str | None = None
    # A price-table file ({model: [usd_per_mtok_in, usd_per_mtok_out]}) or the table itself.
    prices: str | Mapping[str, tuple[float, float]] | None = None
    progress: bool = False

    def replace(self, **changes: Any) -> JudgeConfig:
        """A copy with some fields changed (studies vary runs, temperature, protocol options)."""
        return dataclasses.replace(self, **changes)


def build_protocol(config: JudgeConfig) -> JudgeProtocol:
    """The configured protocol, with its options validated against its typed options."""
    from polyjudge.protocols import ProtocolOptions, get_protocol
    from polyjudge.registry import UnknownNameError

    options = ProtocolOptions(template=config.prompt_template, use_context=config.use_context,
                              extra=dict(config.protocol_options))
    try:
        return get_protocol(config.protocol, options)
    except UnknownNameError as exc:
        raise InputError(str(exc), field="protocol") from None


def _prices(config: JudgeConfig) -> dict[str, tuple[float, float]]:
    from polyjudge.engine.pricing import DEFAULT_PRICES, load_prices

    if config.prices is None or isinstance(config.prices, str):
        return load_prices(config.prices)
    return {**DEFAULT_PRICES, **{m: (float(p[0]), float(p[1])) for m, p in config.prices.items()}}


def _items(items: Sequence[Item] | str | Path) -> list[Item]:
    if isinstance(items, str | Path):
        from polyjudge.data.readers import read_items
        return read_items(items)
    return list(items)


async def _run(items: list[Item], config: JudgeConfig, out: Path | None, dry_run: bool) -> RunResult | Estimate:
    from polyjudge.backends import BackendSettings, JudgeSpec, build_backends
    from polyjudge.rundir import STORE

    if not config.judges:
        raise InputError("no judge given", field="judge")
    protocol = build_protocol(config)
    prices = _prices(config)
    try:
        specs = [JudgeSpec.parse(s) for s in config.judges]
    except ValueError as exc:  # unknown backend or incomplete spec
        raise InputError(str(exc), field="judge") from None
    settings = BackendSettings(api_key_env=config.api_key_env, timeout=config.timeout, n_ctx=config.n_ctx)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    try:
        backends, info = build_backends(specs, settings, record=config.record)
    except ValueError as exc:  # e.g. "the openai backend needs --model"
        raise InputError(str(exc), field="judge") from None
    return await run_async(
        items, protocol, backends, runs=config.runs, temperature=config.temperature,
        aggregator=config.aggregator, concurrency=config.concurrency,
        store_path=(out / STORE) if out is not None else None, seed=config.seed, progress=config.progress,
        prices=prices, judge_info=info, dry_run=dry_run, min_runs=config.min_runs)


def judge(items: Sequence[Item] | str | Path, config: JudgeConfig | None = None, *,
          out: str | Path | None = None) -> RunResult:
    """Judge ``items`` (a list of :class:`Item` or an input file) and, with ``out``,
    write the run directory there (re-running the same call resumes from its store).

    Bad specs and options raise :class:`InputError`; failed requests and
    unparseable answers are recorded in the result, never raised or scored.
    """
    cfg = config or JudgeConfig()
    out_dir = Path(out) if out is not None else None
    result = asyncio.run(_run(_items(items), cfg, out_dir, dry_run=False))
    assert isinstance(result, RunResult)
    if out_dir is not None:
        result.write(out_dir)
    return result


def estimate(items: Sequence[Item] | str | Path, config: JudgeConfig | None = None, *,
             out: str | Path | None = None) -> Estimate:
    """What :func:`judge` would send (requests, tokens), counting what ``out``'s store already has."""
    out_dir = Path(out) if out is not None else None
    result = asyncio.run(_run(_items(items), config or JudgeConfig(), out_dir, dry_run=True))
    assert isinstance(result, Estimate)
    return result


__all__ = ["DEFAULT_JUDGE", "JudgeConfig", "build_protocol", "estimate", "judge"]
