"""A judging session: one typed config, one call, a typed result.

Every command that judges (``judge``, ``score``, ``demo``, ``consistency``,
``probe``, and the studies) goes through :func:`judge`, so a flag means the
same thing everywhere and a new option is added in one place. Re-exported as
``polyjudge.api.judge``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from polyjudge.engine.core import Estimate, run_async
from polyjudge.engine.errors import EndpointFailed, FailureRateExceeded, RunInterrupted
from polyjudge.engine.result import RunResult
from polyjudge.engine.runner import INTERRUPTED, RetryPolicy
from polyjudge.engine.signals import Interrupts, catching_interrupts
from polyjudge.protocols.base import JudgeProtocol

if TYPE_CHECKING:
    from polyjudge.backends import BackendSettings, JudgeSpec

DEFAULT_JUDGE = "llamacpp"
# Backends that run here and cost nothing (the cost estimate counts them as free).
LOCAL_BACKENDS = frozenset({"llamacpp", "replay"})


@dataclass(frozen=True, slots=True)
class JudgeConfig:
    """How to judge: protocol, judges and engine settings (the ``judge`` command's flags).

    ``judges`` are judge specs (``openai:MODEL[@URL]``, ``anthropic:MODEL``,
    ``llamacpp[:MODEL_OR_GGUF]``, ``replay:FILE``); several make a panel.
    ``None`` for ``runs``, ``temperature`` and ``aggregator`` means the
    protocol's published default.

    ``max_failure_rate``: :func:`judge` raises :class:`FailureRateExceeded`
    (after writing the run) when the requests of a larger share of judgments
    failed (no answer after retries; unparseable answers do not count); ``None``
    never does. ``restart`` deletes a run already in the output directory (its
    outputs and store) instead of resuming it; without it a directory holding
    a run of another protocol or configuration is refused.
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
    max_failure_rate: float | None = 0.1
    restart: bool = False
    retry: RetryPolicy = RetryPolicy()

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


@dataclass(frozen=True, slots=True)
class _Prepared:
    """Everything checked before a run directory is touched (bad flags fail here, exit 2)."""

    config: JudgeConfig
    protocol: JudgeProtocol
    specs: list[JudgeSpec]
    settings: BackendSettings
    prices: dict[str, tuple[float, float]]


def _prepare(config: JudgeConfig) -> _Prepared:
    from polyjudge.backends import BackendSettings, JudgeSpec

    if not config.judges:
        raise InputError("no judge given", field="judge")
    if config.max_failure_rate is not None and not 0.0 <= config.max_failure_rate <= 1.0:
        raise InputError(f"must be between 0 and 1, got {config.max_failure_rate}", field="max-failure-rate")
    protocol = build_protocol(config)
    prices = _prices(config)
    try:
        specs = [JudgeSpec.parse(s) for s in config.judges]
    except ValueError as exc:  # unknown backend or incomplete spec
        raise InputError(str(exc), field="judge") from None
    settings = BackendSettings(api_key_env=config.api_key_env, timeout=config.timeout, n_ctx=config.n_ctx)
    return _Prepared(config, protocol, specs, settings, prices)


# --------------------------------------------------------------------------- which run a directory holds

_IDENTITY_LABELS = {"protocol": "protocol", "judges": "judges", "template_hash": "prompt template hash",
                    "protocol_options": "protocol options", "temperature": "temperature", "seed": "seed",
                    "use_context": "document context"}
_IDENTITY_META = "run_identity"


def _canonical(value: Any) -> Any:
    """JSON-normalised (tuples become lists, keys sorted), so a value read back compares equal."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def run_identity(protocol: JudgeProtocol, judges: Sequence[str], config: JudgeConfig) -> dict[str, Any]:
    """What makes two runs the same run: a directory may only be resumed (or extended with
    more runs, or re-aggregated) by a run with the same identity."""
    temperature = protocol.default_temperature if config.temperature is None else config.temperature
    return {"protocol": protocol.name, "judges": list(judges), "template_hash": protocol.template_hash,
            "protocol_options": _canonical(protocol.options.extra), "temperature": float(temperature),
            "seed": config.seed, "use_context": protocol.options.use_context}


def _recorded_identity(out: Path) -> dict[str, Any] | None:
    """The identity of the run already in ``out`` (from its manifest, else its store), if any."""
    from polyjudge.engine.store import Store
    from polyjudge.rundir import STORE, RunDir

    rd = RunDir(out)
    if rd.has_manifest:
        m = rd.manifest
        found: dict[str, Any] = {"protocol": m.protocol, "judges": m.judge_names,
                                 "template_hash": m.template_hash}
        if m.format_version >= 1:
            found |= {"protocol_options": _canonical(m.config.protocol_options),
                      "temperature": float(m.config.temperature), "seed": m.config.seed,
                      "use_context": m.config.use_context}
        return {k: v for k, v in found.items() if v not in ("", [])}  # 0.1.0 manifests lack some
    if (out / STORE).is_file():
        store = Store(out / STORE, readonly=True)
        try:
            text = store.get_meta(_IDENTITY_META)
        finally:
            store.close()
        if text is not None:
            loaded = json.loads(text)
            return loaded if isinstance(loaded, dict) else None
    return None


def check_same_run(out: Path, identity: Mapping[str, Any]) -> None:
    """Refuse (InputError, exit 2) a run directory that holds a run of another protocol or config."""
    found = _recorded_identity(out)
    if not found:
        return
    diffs = [f"{_IDENTITY_LABELS.get(k, k)} {json.dumps(v)} there, {json.dumps(identity.get(k))} now"
             for k, v in found.items() if k in identity and v != identity[k]]
    if diffs:
        raise InputError(f"holds a run with another configuration ({'; '.join(diffs)}); give --restart to "
                         "delete it and start over, or use another run directory", path=str(out))


def _remember_identity(out: Path, identity: Mapping[str, Any]) -> None:
    from polyjudge.engine.store import Store
    from polyjudge.rundir import STORE

    store = Store(out / STORE)
    try:
        store.set_meta(_IDENTITY_META, json.dumps(identity, sort_keys=True))
    finally:
        store.close()


# --------------------------------------------------------------------------- running

async def _run(items: list[Item], prep: _Prepared, out: Path | None, *, dry_run: bool,
               interrupts: Interrupts | None = None) -> RunResult | Estimate:
    from polyjudge.backends import build_backends
    from polyjudge.rundir import STORE, clear_run

    config = prep.config
    try:
        backends, info = build_backends(prep.specs, prep.settings, record=None if dry_run else config.record)
    except ValueError as exc:  # e.g. "the openai backend needs --model"
        raise InputError(str(exc), field="judge") from None
    judges = [b.model for b in backends]
    store_path = out / STORE if out is not None else None
    try:
        identity = run_identity(prep.protocol, judges, config)
        if out is not None:
            if config.restart:
                if dry_run:
                    store_path = None  # counted as if started over; nothing is removed
                else:
                    clear_run(out)
            else:
                check_same_run(out, identity)
            if not dry_run:
                _remember_identity(out, identity)
    except BaseException:
        for b in backends:
            await b.aclose()
        raise
    context_sizes = {b.model: config.n_ctx for b, spec in zip(backends, prep.specs) if spec.backend == "llamacpp"}
    free = {b.model for b, spec in zip(backends, prep.specs) if spec.backend in LOCAL_BACKENDS}
    return await run_async(
        items, prep.protocol, backends, runs=config.runs, temperature=config.temperature,
        aggregator=config.aggregator, concurrency=config.concurrency, store_path=store_path, seed=config.seed,
        progress=config.progress, retry=config.retry, prices=prep.prices, judge_info=info, dry_run=dry_run,
        min_runs=config.min_runs, interrupts=interrupts, context_sizes=context_sizes, free_judges=free)


def _raise_if_stopped(result: RunResult, config: JudgeConfig, out: Path | None, signum: int | None) -> None:
    """A run that was interrupted, gave up on its endpoint or failed too often raises (outputs are written)."""
    if signum is not None or result.stop_kind == INTERRUPTED:
        raise RunInterrupted(result, out, signum)
    total = len(result.judgments)
    if result.stop_kind is not None:
        kept = (f", kept in {out}; re-run the same command to resume once the endpoint works"
                if out is not None else "")
        raise EndpointFailed(f"{result.stop_reason}; stopped after {result.answered_count()} of {total} "
                             f"judgments{kept}", result, out)
    failed = result.request_failed_count()
    if config.max_failure_rate is not None and total and failed / total > config.max_failure_rate:
        raise FailureRateExceeded(result, out, failed, total, config.max_failure_rate)


def judge(items: Sequence[Item] | str | Path, config: JudgeConfig | None = None, *,
          out: str | Path | None = None) -> RunResult:
    """Judge ``items`` (a list of :class:`Item` or an input file) and, with ``out``,
    write the run directory there (re-running the same call resumes from its store).

    Bad specs and options raise :class:`InputError`, and so does a run directory
    that another process is using (:class:`~polyjudge.rundir.RunDirInUse`) or
    that holds a run of another configuration (unless ``config.restart``).
    Failed requests and unparseable answers are recorded in the result, never
    raised or scored. Ctrl-C or SIGTERM (:class:`RunInterrupted`), an endpoint
    that rejects or keeps failing the requests (:class:`EndpointFailed`) and
    more failures than ``config.max_failure_rate`` (:class:`FailureRateExceeded`)
    raise once the run directory has been written from the store.
    """
    from polyjudge.rundir import RunDirLock

    cfg = config or JudgeConfig()
    todo = _items(items)
    prep = _prepare(cfg)
    out_dir = Path(out) if out is not None else None
    with ExitStack() as stack:
        if out_dir is not None:
            stack.enter_context(RunDirLock(out_dir))
        interrupts = stack.enter_context(catching_interrupts())
        result = asyncio.run(_run(todo, prep, out_dir, dry_run=False, interrupts=interrupts))
        assert isinstance(result, RunResult)
        if out_dir is not None:
            result.write(out_dir)  # a signal arriving now waits until every file is written
        signum = interrupts.signum
    _raise_if_stopped(result, cfg, out_dir, signum)
    return result


def estimate(items: Sequence[Item] | str | Path, config: JudgeConfig | None = None, *,
             out: str | Path | None = None) -> Estimate:
    """What :func:`judge` would send (requests, tokens, an upper bound of the cost), counting
    what ``out``'s store already has. Nothing is written: no directory, store or lock is created."""
    cfg = config or JudgeConfig()
    todo = _items(items)
    prep = _prepare(cfg)
    out_dir = Path(out) if out is not None else None
    result = asyncio.run(_run(todo, prep, out_dir, dry_run=True))
    assert isinstance(result, Estimate)
    return result


__all__ = ["DEFAULT_JUDGE", "EndpointFailed", "FailureRateExceeded", "JudgeConfig", "RunInterrupted",
           "build_protocol", "check_same_run", "estimate", "judge", "run_identity"]
