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
import math
import sys
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from polyjudge.data.shapes import normalise_fields
from polyjudge.engine.batches import BatchOptions
from polyjudge.engine.core import Estimate, run_async
from polyjudge.engine.errors import BudgetExceeded, EndpointFailed, FailureRateExceeded, RunInterrupted
from polyjudge.engine.executor import Executor
from polyjudge.engine.pricing import ModelPrice, PriceTable
from polyjudge.engine.result import RunResult
from polyjudge.engine.runner import BUDGET, INTERRUPTED, RetryPolicy
from polyjudge.engine.signals import Interrupts, catching_interrupts
from polyjudge.engine.spec import RunSpec
from polyjudge.protocols.base import JudgeProtocol

if TYPE_CHECKING:
    from polyjudge.backends import Backend, BackendSettings, JudgeSpec
    from polyjudge.backends.batch import BatchClient
    from polyjudge.backends.form import RequestForm
    from polyjudge.backends.registry import Capabilities

DEFAULT_JUDGE = "llamacpp"

# Bounds of the numeric settings (the CLI's flag types use the same ones). Concurrency and
# per-request samples are capped because more only buys retries (-c 100000 against one server
# took 111 s and 156 retries where -c 16 took 1.3 s); seeds fit the signed 32-bit field every
# backend accepts, for the last run too (run r sends seed + r).
MAX_TEMPERATURE = 2.0
MAX_TIMEOUT_S = 86_400.0
MAX_SEED = 2**31 - 1
MAX_RUNS = 1_000
MAX_CONCURRENCY = 1_024
MAX_SAMPLES_PER_REQUEST = 128
MAX_N_CTX = 2**24
MAX_RAY_RESOURCES = 1_024.0


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

    Paying less: ``samples_per_request`` asks API judges for that many runs
    per request (``n`` choices); ``batch`` sends through the judges' Batch
    APIs (``batch_options``: where failed lines go, the provider's limits,
    polling); ``batch_export`` writes the batch input file instead of
    sending and ``batch_import`` loads a batch output file (both offline).
    Spending: ``max_cost`` (USD for the whole run) stops before the cap
    could be passed (:class:`BudgetExceeded`, after writing the run);
    ``rpm``/``tpm`` limit each judge's requests and tokens per minute.
    """

    def __post_init__(self) -> None:
        normalise_fields(self)  # Python shapes; TypeError names a field

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
    # A price-table file (see engine.pricing) or the table itself ({model: ModelPrice or [in, out]}).
    prices: str | Mapping[str, ModelPrice | tuple[float, ...]] | None = None
    progress: bool = False
    max_failure_rate: float | None = 0.1
    restart: bool = False
    retry: RetryPolicy = RetryPolicy()
    samples_per_request: int = 1
    batch: bool = False
    batch_options: BatchOptions = BatchOptions()
    batch_export: str | None = None
    batch_import: str | None = None
    max_cost: float | None = None
    rpm: float | None = None
    tpm: float | None = None
    # Who sends the requests: "local" (this process) or "ray" (a pool of Ray actors, engine.ray_executor).
    executor: str = "local"
    ray_address: str | None = None
    ray_actors: int | None = None
    ray_cpus_per_actor: float = 1.0
    ray_gpus_per_actor: float = 0.0
    ray_runtime_env: Mapping[str, Any] | None = None
    # Seconds to wait for a cluster named by an address; Ray's own log lines on the terminal (else ray.log).
    ray_connect_timeout_s: float = 30.0
    ray_logs: bool = False
    # Reasoning models' effort (low|medium|high), part of every request and of the run's identity.
    reasoning_effort: str | None = None
    # Requests in flight per server of a pooled judge (openai:MODEL@URL1,URL2); a judge's per_server= wins.
    per_server_concurrency: int | None = None
    # The machine's shared response cache (--cache, --no-cache): read before sending, filled with every
    # answer. cache_path None: POLYJUDGE_CACHE, else the user cache folder (polyjudge.cache.location).
    use_cache: bool = True
    cache_path: str | None = None
    # Languages of items that carry none (an item's own win); the prompt must name both.
    src_lang: str | None = None
    tgt_lang: str | None = None

    def replace(self, **changes: Any) -> JudgeConfig:
        """A copy with some fields changed (studies vary runs, temperature, protocol options)."""
        return dataclasses.replace(self, **changes)


def embedded_defaults(config: JudgeConfig) -> dict[str, Any]:
    """The protocol options measured best for the embedded judge (``backends.models``), used when the
    user judges with it and chose no options or template: today expected scores for ``da``."""
    from polyjudge.backends.models import DEFAULT_MODEL

    best = DEFAULT_MODEL.defaults
    if tuple(config.judges) != (DEFAULT_JUDGE,) or config.prompt_template is not None \
            or config.protocol != best.protocol:
        return {}
    return dict(best.protocol_options)


def build_protocol(config: JudgeConfig) -> JudgeProtocol:
    """The configured protocol, with its options validated against its typed options."""
    from polyjudge.protocols import ProtocolOptions, get_protocol
    from polyjudge.registry import UnknownNameError

    options = ProtocolOptions(template=config.prompt_template, use_context=config.use_context,
                              extra=dict(config.protocol_options) or embedded_defaults(config))
    try:
        return get_protocol(config.protocol, options)
    except UnknownNameError as exc:
        raise InputError(str(exc), field="protocol") from None


def _prices(config: JudgeConfig) -> PriceTable:
    from polyjudge.engine.pricing import load_prices, price_table

    if config.prices is None or isinstance(config.prices, str):
        return load_prices(config.prices)
    try:
        return price_table(config.prices)
    except (TypeError, ValueError) as exc:
        raise InputError(f"bad price table: {exc}", field="prices") from None


def _items(items: Sequence[Item] | str | Path, config: JudgeConfig) -> list[Item]:
    """Items read from a file (checked there) or given in code (checked here, by the same rules), the
    config's languages given to those without theirs; none may lack a language its prompt names."""
    from polyjudge.data.languages import check_languages

    src, tgt = config.src_lang, config.tgt_lang
    if isinstance(items, str | Path):
        from polyjudge.data.readers import read_items
        given = read_items(items, src_lang=src, tgt_lang=tgt)
    else:
        from polyjudge.data.fields import check_items
        from polyjudge.data.records import CORE_FIELDS

        given = list(items)
        check_items(given, CORE_FIELDS)
        if src or tgt:
            given = [it if (it.src_lang or not src) and (it.tgt_lang or not tgt) else dataclasses.replace(
                it, src_lang=it.src_lang or src, tgt_lang=it.tgt_lang or tgt) for it in given]
    check_languages(given, build_protocol(config).missing_languages)
    return given


@dataclass(frozen=True, slots=True)
class _Prepared:
    """Everything checked before a run directory is touched (bad flags fail here, exit 2)."""

    config: JudgeConfig
    protocol: JudgeProtocol
    specs: list[JudgeSpec]
    settings: BackendSettings
    prices: PriceTable
    executor: Executor | None = None  # None: the local executor


def _prepare(config: JudgeConfig) -> _Prepared:
    from polyjudge.backends import BackendSettings, JudgeSpec

    if not config.judges:
        raise InputError("no judge given", field="judge")
    protocol = build_protocol(config)
    check_numbers(config, protocol)
    prices = _prices(config)
    try:
        specs = [JudgeSpec.parse(s) for s in config.judges]
    except ValueError as exc:  # unknown backend or incomplete spec
        raise InputError(str(exc), field="judge") from None
    _check_cache(config)
    settings = BackendSettings(api_key_env=config.api_key_env, timeout=config.timeout, n_ctx=config.n_ctx,
                               reasoning_effort=config.reasoning_effort,
                               max_per_server=config.per_server_concurrency)
    _check_spending(config, specs, prices)
    specs = _preflight(specs, settings, config, network=False)
    executor = None
    cluster_only = sorted({s.backend for s in specs if _capabilities(s).gpu_cluster_only})
    if cluster_only and config.executor == "local":
        raise InputError(f"a {', '.join(cluster_only)} judge runs only on a Ray cluster with GPU nodes; "
                         "judge with --executor ray", field="judge")
    if config.executor != "local":
        from polyjudge.engine.executor import make_executor
        from polyjudge.engine.ray_executor import RayOptions

        if config.record or config.batch or config.batch_export or config.batch_import:
            raise InputError("--executor ray sends live requests; it cannot be combined with --record or the "
                             "batch options", field="executor")
        executor = make_executor(config.executor, specs, settings, ray=RayOptions(
            address=config.ray_address, actors=config.ray_actors, cpus_per_actor=config.ray_cpus_per_actor,
            gpus_per_actor=config.ray_gpus_per_actor, runtime_env=config.ray_runtime_env,
            connect_timeout_s=config.ray_connect_timeout_s, show_ray_logs=config.ray_logs))
    return _Prepared(config, protocol, specs, settings, prices, executor)


def _preflight(specs: list[JudgeSpec], settings: BackendSettings, config: JudgeConfig, *,
               network: bool) -> list[JudgeSpec]:
    """Every judge's preflight (key, model file; with ``network`` each host resolves too), before the plan is
    shown or anything is sent. Hosts are resolved last, once the run's other input is checked; batch files
    (export or import) send nothing and need no key, so they are not checked."""
    from polyjudge.backends.build import preflight_judges

    if config.batch_export or config.batch_import:
        return specs
    try:
        return preflight_judges(specs, settings, network=network)
    except ValueError as exc:
        raise InputError(str(exc), field="judge") from None


def _check_range(flag: str, value: float | None, low: float, high: float, *, low_open: bool = False) -> None:
    """``value`` (None: not set) is finite and in [low, high] (or (low, high]); else an InputError naming the flag."""
    if value is None:
        return
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) \
        and (value > low if low_open else value >= low) and value <= high
    if not ok:
        bound = f"above {low:g}" if low_open else f"between {low:g} and {high:g}"
        if low_open and high < sys.float_info.max:
            bound += f" and at most {high:g}"
        raise InputError(f"must be a finite number {bound}, got {value!r}", field=flag)


def check_numbers(config: JudgeConfig, protocol: JudgeProtocol) -> None:
    """Every numeric setting finite and in range, before anything is read, sent or written."""
    runs = protocol.default_runs if config.runs is None else config.runs
    whole: tuple[tuple[str, int | None, int, int], ...] = (("--runs", config.runs, 1, MAX_RUNS),
                                   ("--min-runs", config.min_runs, 1, MAX_RUNS),
                                   ("--concurrency", config.concurrency, 1, MAX_CONCURRENCY),
                                   ("--per-server-concurrency", config.per_server_concurrency, 1, MAX_CONCURRENCY),
                                   ("--samples-per-request", config.samples_per_request, 1, MAX_SAMPLES_PER_REQUEST),
                                   ("--seed", config.seed, 0, MAX_SEED), ("--n-ctx", config.n_ctx, 1, MAX_N_CTX),
                                   ("--ray-actors", config.ray_actors, 1, MAX_CONCURRENCY))
    for flag, count, low, high in whole:
        _check_range(flag, count, low, high)
        if count is not None and not isinstance(count, int):
            raise InputError(f"must be a whole number, got {count!r}", field=flag)
    _check_range("--temperature", config.temperature, 0.0, MAX_TEMPERATURE)
    _check_range("--timeout", config.timeout, 0.0, MAX_TIMEOUT_S, low_open=True)
    _check_range("--max-failure-rate", config.max_failure_rate, 0.0, 1.0)
    for flag, value in (("--max-cost", config.max_cost), ("--rpm", config.rpm), ("--tpm", config.tpm)):
        _check_range(flag, value, 0.0, sys.float_info.max, low_open=True)
    _check_range("--ray-cpus-per-actor", config.ray_cpus_per_actor, 0.0, MAX_RAY_RESOURCES)
    _check_range("--ray-gpus-per-actor", config.ray_gpus_per_actor, 0.0, MAX_RAY_RESOURCES)
    if config.min_runs > runs:
        raise InputError(f"{config.min_runs} is more than the {runs} run(s) per item: every segment would be "
                         "left unscored", field="--min-runs")
    if config.seed + runs - 1 > MAX_SEED:
        raise InputError(f"seed + runs - 1 = {config.seed + runs - 1} exceeds {MAX_SEED} (run r sends seed + r)",
                         field="--seed")


def _check_spending(config: JudgeConfig, specs: Sequence[JudgeSpec], prices: PriceTable) -> None:
    """The flags of paying less and spending control, checked before anything is touched."""
    from polyjudge.backends.batch import has_batch_client
    from polyjudge.engine.batches import BATCH_FALLBACKS

    if config.samples_per_request < 1:
        raise InputError(f"must be at least 1, got {config.samples_per_request}", field="samples-per-request")
    for name, value in (("max-cost", config.max_cost), ("rpm", config.rpm), ("tpm", config.tpm)):
        if value is not None and not value > 0:
            raise InputError(f"must be above 0, got {value}", field=name)
    offline = [f for f, v in (("--batch", config.batch), ("--batch-export", config.batch_export),
                              ("--batch-import", config.batch_import)) if v]
    if len(offline) > 1:
        raise InputError(f"give one of {', '.join(offline)}", field="batch")
    if config.batch_options.fallback not in BATCH_FALLBACKS:
        raise InputError(f"must be one of {', '.join(BATCH_FALLBACKS)}, got '{config.batch_options.fallback}'",
                         field="batch-fallback")
    if config.record and (offline or config.samples_per_request > 1):
        what = offline[0] if offline else "--samples-per-request"
        raise InputError(f"--record keeps one live answer per request; it cannot be combined with {what}",
                         field="record")
    if config.batch:
        cannot = [s.backend for s in specs if not has_batch_client(s.backend)]
        if cannot:
            raise InputError(f"the {', '.join(sorted(set(cannot)))} backend has no Batch API here; --batch works "
                             "with the openai backend", field="batch")
    if config.max_cost is not None:
        unpriced = [s.model or s.backend for s in specs
                    if not _capabilities(s).local and (s.model or "") not in prices]
        if unpriced:
            raise InputError(f"--max-cost needs a price for {', '.join(unpriced)} (add one with --prices)",
                             field="max-cost")


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
            "seed": config.seed, "use_context": protocol.options.use_context,
            **({"reasoning_effort": config.reasoning_effort} if config.reasoning_effort else {})}


def _recorded_identity(out: Path) -> dict[str, Any] | None:
    """The identity of the run already in ``out`` (from its manifest, else its store), if any."""
    from polyjudge.rundir import RunDir

    rd = RunDir(out)
    if rd.has_manifest:
        m = rd.manifest
        found: dict[str, Any] = {"protocol": m.protocol, "judges": m.judge_names,
                                 "template_hash": m.template_hash}
        if m.format_version >= 1:
            found |= {"protocol_options": _canonical(m.config.protocol_options),
                      "temperature": float(m.config.temperature), "seed": m.config.seed,
                      "use_context": m.config.use_context}
        kept = _stored_identity(out)  # the request forms are kept in the store only
        if kept and "request_forms" in kept:
            found["request_forms"] = kept["request_forms"]
        return {k: v for k, v in found.items() if v not in ("", [])}  # 0.1.0 manifests lack some
    return _stored_identity(out)


def _stored_identity(out: Path) -> dict[str, Any] | None:
    from polyjudge.engine.store import Store
    from polyjudge.rundir import STORE

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


def _request_forms(prep: _Prepared, judges: Sequence[str]) -> dict[str, RequestForm]:
    from polyjudge.backends.form import request_forms

    try:
        return request_forms(prep.specs, judges, prep.settings)
    except ValueError as exc:
        raise InputError(str(exc), field="judge") from None


def _form_changes(found: Mapping[str, Any], identity: Mapping[str, Any]) -> list[str]:
    """The judges whose request form changed since the run recorded in ``found`` (a run recorded
    before forms were kept has none to compare)."""
    from polyjudge.backends.form import describe_change

    before, now = found.get("request_forms"), identity.get("request_forms") or {}
    if not isinstance(before, dict):
        return []
    return [describe_change(j, before[j], now[j]) for j in now
            if isinstance(before.get(j), dict) and before[j].get("form", "") != now[j].get("form", "")]


def check_same_run(out: Path, identity: Mapping[str, Any]) -> None:
    """Refuse (InputError, exit 2) a run directory that holds a run of another protocol or config,
    or whose judges now write their requests in another form (their answers would be other answers)."""
    found = _recorded_identity(out)
    if not found:
        return
    diffs = [f"{_IDENTITY_LABELS.get(k, k)} {json.dumps(v)} there, {json.dumps(identity.get(k))} now"
             for k, v in found.items() if k in identity and k != "request_forms" and v != identity[k]]
    changed = _form_changes(found, identity)
    if changed:
        diffs += changed
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
        forms = _request_forms(prep, judges)
        identity = run_identity(prep.protocol, judges, config) | {
            "request_forms": {j: f.record() for j, f in forms.items()}}
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
    context_sizes, free, samples = _what_judges_take(backends, prep)
    clients = None
    if config.batch:
        try:
            clients = _batch_clients(prep)
        except BaseException:
            for b in backends:
                await b.aclose()
            raise
    return await run_async(items, RunSpec(
        protocol=prep.protocol, backends=tuple(backends), runs=config.runs, temperature=config.temperature,
        aggregator=config.aggregator, min_runs=config.min_runs, seed=config.seed,
        reasoning_effort=config.reasoning_effort, concurrency=config.concurrency, retry=config.retry,
        progress=config.progress, samples_per_request=samples, max_cost=config.max_cost, rpm=config.rpm,
        tpm=config.tpm, prices=prep.prices, judge_info=info, context_sizes=context_sizes, free_judges=free,
        request_forms={j: f.token for j, f in forms.items()},
        store_path=store_path, outputs=None if dry_run else out, dry_run=dry_run, batch_clients=clients,
        batch_options=config.batch_options, batch_export=None if dry_run else config.batch_export,
        batch_import=None if dry_run else config.batch_import, executor=None if dry_run else prep.executor,
        cache_path=_cache_folder(config), cache_read=not config.record), interrupts)


def _check_cache(config: JudgeConfig) -> None:
    """A cache folder that cannot be one (a file is there) is refused before the run directory is touched."""
    folder = _cache_folder(config)
    if folder is not None and folder.exists() and not folder.is_dir():
        raise InputError("is not a folder: give the response cache's folder, or --no-cache", path=str(folder),
                         field="cache")


def _check_cache_apart(config: JudgeConfig, out: Path | None) -> None:
    """A cache folder equal to or inside the run directory is refused before anything is sent."""
    from polyjudge.cache.location import inside

    folder = _cache_folder(config)
    if folder is not None and out is not None and inside(folder, out):
        raise InputError(f"is inside the run directory {out}: give the response cache a folder of its own, "
                         "or --no-cache", path=str(folder), field="cache")


def _cache_folder(config: JudgeConfig) -> Path | None:
    """The shared response cache's folder for this run (None with --no-cache)."""
    from polyjudge.cache import cache_dir

    return cache_dir(config.cache_path) if config.use_cache else None


def _capabilities(spec: JudgeSpec) -> Capabilities:
    from polyjudge.backends import backend_class

    return backend_class(spec.backend).capabilities


def _what_judges_take(backends: Sequence[Backend],
                      prep: _Prepared) -> tuple[dict[str, int], set[str], dict[str, int]]:
    """From each judge's backend class: its known context size, whether it is free, and the samples per
    request it is sent (one for backends that answer one choice per request)."""
    from polyjudge.backends import backend_class

    context_sizes: dict[str, int] = {}
    free: set[str] = set()
    samples: dict[str, int] = {}
    for backend, spec in zip(backends, prep.specs):
        cls = backend_class(spec.backend)
        tokens = cls.context_tokens(prep.settings)
        if tokens is not None:
            context_sizes[backend.model] = tokens
        if cls.capabilities.local:
            free.add(backend.model)
        samples[backend.model] = prep.config.samples_per_request if cls.capabilities.samples_per_request else 1
    return context_sizes, free, samples


def _batch_clients(prep: _Prepared) -> list[BatchClient]:
    from polyjudge.backends.batch import batch_client_for

    try:
        return [batch_client_for(spec, prep.settings, prep.config.batch_options.limits) for spec in prep.specs]
    except ValueError as exc:
        raise InputError(str(exc), field="batch") from None


def _raise_if_stopped(result: RunResult, config: JudgeConfig, out: Path | None, signum: int | None) -> None:
    """A run that was interrupted, gave up on its endpoint, reached its spending cap or failed too
    often raises (outputs are written)."""
    if signum is not None or result.stop_kind == INTERRUPTED:
        raise RunInterrupted(result, out, signum)
    if result.stop_kind == BUDGET and config.max_cost is not None:
        raise BudgetExceeded(result, out, result.manifest.cost_usd, config.max_cost)
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
    and the spending cap (:class:`BudgetExceeded`) raise once the run directory
    has been written from the store.
    """
    from polyjudge.engine.core import remember_outputs
    from polyjudge.rundir import STORE, RunDirLock

    cfg = config or JudgeConfig()
    todo = _items(items, cfg)
    prep = _prepare(cfg)
    _preflight(prep.specs, prep.settings, cfg, network=True)
    out_dir = Path(out) if out is not None else None
    _check_cache_apart(cfg, out_dir)
    with ExitStack() as stack:
        if out_dir is not None:
            stack.enter_context(RunDirLock(out_dir))
        # The requests' deadline, quoted by Ctrl-C's message (an embedded model's generation has none).
        local = any(_capabilities(s).local for s in prep.specs)
        interrupts = stack.enter_context(catching_interrupts(None if local else cfg.timeout, cfg.concurrency))
        result = asyncio.run(_run(todo, prep, out_dir, dry_run=False, interrupts=interrupts))
        assert isinstance(result, RunResult)
        if out_dir is not None:
            with interrupts.writing():  # a signal arriving now waits until every file is written
                result.write(out_dir)
                remember_outputs(out_dir / STORE, out_dir, result)
        signum = interrupts.signum
    _raise_if_stopped(result, cfg, out_dir, signum)
    return result


def estimate(items: Sequence[Item] | str | Path, config: JudgeConfig | None = None, *,
             out: str | Path | None = None) -> Estimate:
    """What :func:`judge` would send (requests, tokens, an upper bound of the cost), counting
    what ``out``'s store already has. Nothing is written: no directory, store or lock is created."""
    cfg = config or JudgeConfig()
    todo = _items(items, cfg)
    prep = _prepare(cfg)
    out_dir = Path(out) if out is not None else None
    _check_cache_apart(cfg, out_dir)
    result = asyncio.run(_run(todo, prep, out_dir, dry_run=True))
    assert isinstance(result, Estimate)
    _preflight(prep.specs, prep.settings, cfg, network=True)  # after the run's other input was checked
    return _with_endpoints_and_duration(result, prep)


def _with_endpoints_and_duration(found: Estimate, prep: _Prepared) -> Estimate:
    """The estimate with each judge's endpoint (credentials masked) and how long sending would take."""
    from polyjudge.backends.registry import backend_class, redact_servers
    from polyjudge.engine.estimate import estimate_duration

    endpoints, measured = [], []
    for spec in prep.specs:
        cls = backend_class(spec.backend)
        name = f"{spec.backend}:{spec.model or ''}".rstrip(":")
        url = spec.base_url or cls.default_endpoint
        endpoints.append(f"{name} {redact_servers(url)}" if url else f"{name} (embedded, in this process)")
        if cls.capabilities.local or (url is not None and url != cls.default_endpoint):
            measured.append(name)  # its pace is this machine's or a self-hosted server's
    config = prep.config
    duration = estimate_duration(found.calls, found.prompt_tokens + found.max_completion_tokens,
                                 concurrency=config.concurrency, rpm=config.rpm, tpm=config.tpm,
                                 measured_judges=measured)
    return dataclasses.replace(found, endpoints=tuple(endpoints), duration=duration)


__all__ = ["DEFAULT_JUDGE", "BatchOptions", "BudgetExceeded", "EndpointFailed", "FailureRateExceeded", "JudgeConfig",
           "RunInterrupted", "build_protocol", "check_same_run", "estimate", "judge", "run_identity"]
