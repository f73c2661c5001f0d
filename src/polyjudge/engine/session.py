"""A judging session: one typed config, one call, a typed result.

Every command that judges (``judge``, ``score``, ``demo``, ``consistency``,
``probe``, and the studies) goes through :func:`judge`, so a flag means the
same thing everywhere and a new option is added in one place. Re-exported as
``polyjudge.api.judge``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyjudge.data.errors import InputError
from polyjudge.data.limits import DEFAULT_JUDGE
from polyjudge.data.records import Item
from polyjudge.data.shapes import normalise_fields
from polyjudge.engine.batches import BatchOptions
from polyjudge.engine.errors import BudgetExceeded, EndpointFailed, FailureRateExceeded, RunInterrupted
from polyjudge.engine.loops import run_coroutine
from polyjudge.engine.pricing import PriceTable
from polyjudge.engine.runner import BUDGET, INTERRUPTED
from polyjudge.engine.signals import Interrupts, catching_interrupts
from polyjudge.engine.spec import BudgetSpec, RunSpec
from polyjudge.protocols.base import JudgeProtocol

if TYPE_CHECKING:
    from polyjudge.backends import Backend, BackendSettings, JudgeSpec
    from polyjudge.backends.batch import BatchClient
    from polyjudge.backends.form import RequestForm
    from polyjudge.backends.registry import Capabilities
    from polyjudge.engine.core import Estimate
    from polyjudge.engine.executor import Executor
    from polyjudge.engine.result import RunResult

from polyjudge.engine.spec import (  # the bounds (their home: data.limits), kept among this module's names
    MAX_CONCURRENCY,
    MAX_N_CTX,
    MAX_RAY_RESOURCES,
    MAX_RUNS,
    MAX_SAMPLES_PER_REQUEST,
    MAX_SEED,
    MAX_TEMPERATURE,
    MAX_TIMEOUT_S,
    JudgingSpec,
)


class _FlatConfig:
    """How to judge, as one flat value: the documented shorthand of a :class:`JudgingSpec`. Its fields
    are the settings of ``polyjudge.data.settings`` that belong to a group (one keyword per setting,
    the setting's name; defaults the groups'), so it has no list of its own; :meth:`spec` builds the
    :class:`JudgingSpec`.

    ``judges`` are judge specs (``openai:MODEL[@URL]``, ``anthropic:MODEL``,
    ``llamacpp[:MODEL_OR_GGUF]``, ``replay:FILE``); several make a panel.
    ``None`` for ``runs``, ``temperature`` and ``aggregator`` means the
    protocol's published default. Every other field is described with its
    setting (``polyjudge judge --help`` shows the same text).
    """

    __slots__ = ()

    def __post_init__(self) -> None:
        if isinstance(getattr(self, "judges", None), str):  # one judge given as its spec string
            object.__setattr__(self, "judges", (self.judges,))  # type: ignore[attr-defined]
        normalise_fields(self)  # Python shapes; TypeError names a field

    def replace(self, **changes: Any) -> JudgeConfig:
        """A copy with some fields changed (studies vary runs, temperature, protocol options)."""
        return dataclasses.replace(self, **changes)  # type: ignore[type-var,return-value]

    def judge_names(self) -> list[str]:
        """Each judge as text for reports: as given, or (a parsed JudgeSpec) written back with credentials masked."""
        from polyjudge.backends.spec import describe_judge

        judges: tuple[str | JudgeSpec, ...] = self.judges  # type: ignore[attr-defined]
        return [j if isinstance(j, str) else describe_judge(j) for j in judges]

    @classmethod
    def of(cls, spec: JudgingSpec) -> JudgeConfig:
        """The shorthand of ``spec`` (its outputs' run directory and input path are not part of it)."""
        extra = dict(spec.extra)
        return JudgeConfig(**{name: extra[name] if group == "extra" else getattr(getattr(spec, group), member)
                              for name, (group, member) in config_fields().items()
                              if group != "extra" or name in extra})

    def spec(self, out: str | Path | None = None) -> JudgingSpec:
        """The :class:`JudgingSpec` this shorthand stands for (``out``: its outputs group's run directory)."""
        groups: dict[str, dict[str, Any]] = {name: {} for name in (*_GROUP_TYPES, "extra")}
        for name, (group, member) in config_fields().items():
            groups[group][member] = getattr(self, name)
        groups["output"]["out"] = out
        extra = {k: v for k, v in groups.pop("extra").items() if v != _setting(k).default}
        return JudgingSpec(**{name: _GROUP_TYPES[name](**values) for name, values in groups.items()}, extra=extra)


def _setting(name: str) -> Any:
    from polyjudge.data.settings import get

    return get(name)


def config_fields() -> dict[str, tuple[str, str]]:
    """Where each field of the flat :class:`JudgeConfig` lives in a :class:`JudgingSpec`: setting ->
    (group, the group's field); a setting its group has no field for lives in the spec's ``extra``."""
    from polyjudge.data.settings import python_keywords

    out: dict[str, tuple[str, str]] = {}
    for s in python_keywords():
        members = _GROUP_FIELDS.get(s.group, {})
        out[s.name] = (s.group, s.field) if s.field in members else ("extra", s.name)
    return out


_GROUP_TYPES: Mapping[str, Any] = {f.name: type(getattr(JudgingSpec(), f.name))
                                   for f in dataclasses.fields(JudgingSpec) if f.name != "extra"}
_GROUP_FIELDS: Mapping[str, Mapping[str, dataclasses.Field[Any]]] = {
    name: {f.name: f for f in dataclasses.fields(kind)} for name, kind in _GROUP_TYPES.items()}


def _flat_config() -> type[Any]:
    """The :class:`JudgeConfig` class, made from the declared settings (field types and defaults: the groups')."""
    from polyjudge.data.settings import get

    fields: list[tuple[str, Any, Any]] = []
    for name, (group, member) in config_fields().items():
        if group == "extra":
            fields.append((name, "Any", dataclasses.field(default=get(name).default)))
            continue
        f = _GROUP_FIELDS[group][member]
        if f.default_factory is not dataclasses.MISSING:
            fields.append((name, f.type, dataclasses.field(default_factory=f.default_factory)))
        else:
            fields.append((name, f.type, dataclasses.field(default=f.default)))
    made = dataclasses.make_dataclass("JudgeConfig", fields, bases=(_FlatConfig,), frozen=True, slots=True,
                                      namespace={"__module__": __name__, "__doc__": _FlatConfig.__doc__,
                                                 "__post_init__": _FlatConfig.__post_init__})
    return made


if TYPE_CHECKING:
    class JudgeConfig(_FlatConfig):
        """The flat shorthand of a :class:`JudgingSpec` (its fields: the declared settings)."""

        def __init__(self, **settings: Any) -> None: ...

        def __getattr__(self, name: str) -> Any: ...
else:
    JudgeConfig = _flat_config()

# Where each field of the flat JudgeConfig lives in a JudgingSpec (kept for code that read it).
CONFIG_FIELDS: Mapping[str, tuple[str, str]] = config_fields()


def as_spec(config: JudgeConfig | JudgingSpec | None, out: str | Path | None = None) -> JudgingSpec:
    """The JudgingSpec of ``config`` (None: the defaults); ``out``, when given, is its run directory."""
    if isinstance(config, JudgingSpec):
        if out is None:
            return config
        return config.replace(output=dataclasses.replace(config.output, out=Path(out)))
    return (config or JudgeConfig()).spec(out)


def embedded_defaults(spec: JudgingSpec) -> dict[str, Any]:
    """The protocol options measured best for the embedded judge (``backends.models``), used when the
    user judges with it and chose no options or template: today expected scores for ``da``."""
    from polyjudge.backends.models import DEFAULT_MODEL

    best = DEFAULT_MODEL.defaults
    if not spec.judges.is_default or spec.protocol.prompt_template is not None \
            or spec.protocol.name != best.protocol:
        return {}
    return dict(best.protocol_options)


def build_protocol(config: JudgeConfig | JudgingSpec) -> JudgeProtocol:
    """The configured protocol, with its options validated against its typed options (the one
    place a protocol's name is checked)."""
    from polyjudge.protocols import ProtocolOptions, get_protocol
    from polyjudge.registry import UnknownNameError

    spec = as_spec(config)
    given = spec.protocol
    options = ProtocolOptions(template=given.prompt_template, use_context=given.use_context,
                              extra=dict(given.options) or embedded_defaults(spec))
    try:
        return get_protocol(given.name, options)
    except UnknownNameError as exc:
        raise InputError(str(exc), field="protocol") from None


def _prices(spec: JudgingSpec) -> PriceTable:
    from polyjudge.engine.pricing import load_prices, price_table

    prices = spec.budget.prices
    if prices is None or isinstance(prices, str):
        return load_prices(prices)
    try:
        return price_table(prices)
    except (TypeError, ValueError) as exc:
        raise InputError(f"bad price table: {exc}", field="prices", setting=True) from None


def _items(items: Sequence[Item | Mapping[str, Any]] | str | Path,
           spec: JudgingSpec) -> tuple[list[Item], JudgeProtocol]:
    """Items read from a file (checked there) or given in code (checked here, by the same rules), the
    data group's languages given to those without theirs; none may lack a language its prompt names.
    The protocol built to check that is returned with them (building it compiles its template)."""
    from polyjudge.data.languages import check_languages

    src, tgt = spec.data.src_lang, spec.data.tgt_lang
    if isinstance(items, str | Path):
        from polyjudge.data.readers import read_items
        given = read_items(items, src_lang=src, tgt_lang=tgt)
    else:
        from polyjudge.data.fields import check_items
        from polyjudge.data.records import CORE_FIELDS
        from polyjudge.data.rows import items_from_rows

        given = items_from_rows(items)  # dicts with COMET's keys (src, mt, ref, lp) become items too
        check_items(given, CORE_FIELDS)
        if src or tgt:
            given = [it if (it.src_lang or not src) and (it.tgt_lang or not tgt) else dataclasses.replace(
                it, src_lang=it.src_lang or src, tgt_lang=it.tgt_lang or tgt) for it in given]
    protocol = build_protocol(spec)
    check_languages(given, protocol.missing_languages, spec.data.language_names)
    return _units(given, protocol, spec), protocol


def _units(items: list[Item], protocol: JudgeProtocol, spec: JudgingSpec) -> list[Item]:
    """The items in the units their protocol judges (``--unit``, contrastive protocols; protocols.units)."""
    from polyjudge.protocols.registry import document_protocols
    from polyjudge.protocols.units import DEFAULT_MAX_TOKENS, SEGMENT, prepare_units

    unit = spec.extra.get("unit") or SEGMENT
    # Listing the document protocols imports every protocol module: only --unit document's refusal names them.
    known = document_protocols() if unit != SEGMENT else ()
    return prepare_units(items, protocol, unit=unit,
                         max_tokens=spec.extra.get("unit_max_tokens") or DEFAULT_MAX_TOKENS,
                         seed=spec.generation.seed, document_protocols=known)


@dataclass(frozen=True, slots=True)
class _Prepared:
    """Everything checked before a run directory is touched (bad flags fail here, exit 2)."""

    spec: JudgingSpec
    protocol: JudgeProtocol
    specs: list[JudgeSpec]
    settings: BackendSettings
    prices: PriceTable
    executor: Executor | None = None  # None: the local executor


def one_request_per_item(spec: JudgingSpec, protocol: JudgeProtocol) -> JudgingSpec:
    """Runs that would all send the same request collapsed to one run, said in one warning line.

    Run r sends seed + r, so runs differ by their seed, which a sampling judge honours. At temperature
    0 with judges that send no seed (``Capabilities.seedless``: Anthropic's Messages API) every run is
    the same request, byte for byte: runs > 1 would pay runs times for one answer. Every run aggregator
    gives n equal answers the answer itself (mean, median, GEMBA-MQM's RRWA, span voting), so one run is
    the same score for 1/n of the price; the protocols that publish several runs (GEMBA-MQM's 10) sample
    at their own temperature above 0. Judges that send a seed keep their runs: their requests differ, and
    a server may still answer them differently at temperature 0, which is what such runs measure."""
    from polyjudge.engine.estimate import log

    gen = spec.generation.resolved(protocol)
    runs = gen.runs or 1
    if gen.temperature != 0.0 or runs < 2:
        return spec
    if not all(_capabilities(j).seedless for j in spec.judges.judges):
        return spec
    log.warning(f"runs = {runs} at temperature 0 would send one request {runs} times per item (the judge takes "
                "no seed and a greedy answer does not change): judging 1 run; give a temperature above 0 for "
                "runs that differ")
    return spec.replace(generation=dataclasses.replace(spec.generation, runs=1, min_runs=1))


def _prepare(spec: JudgingSpec, protocol: JudgeProtocol) -> _Prepared:
    spec = one_request_per_item(spec, protocol)
    spec.generation.check_with(protocol)
    prices = _prices(spec)
    _check_cache(spec)
    settings = spec.judges.settings()
    _check_spending(spec, spec.judges.judges, prices)
    specs = _preflight(list(spec.judges.judges), settings, spec, network=False)
    executor = None
    ex = spec.execution
    cluster_only = sorted({s.backend for s in specs if _capabilities(s).gpu_cluster_only})
    if cluster_only and ex.executor == "local":
        raise InputError(f"a {', '.join(cluster_only)} judge runs only on a Ray cluster with GPU nodes; "
                         "judge with --executor ray", field="judge")
    if ex.executor != "local":
        from polyjudge.engine.executor import make_executor
        from polyjudge.engine.ray_executor import RayOptions

        if spec.cache.record or ex.offline:
            raise InputError("--executor ray sends live requests; it cannot be combined with --record or the "
                             "batch options", field="executor")
        executor = make_executor(ex.executor, specs, settings, ray=RayOptions(
            ray_address=ex.ray_address, ray_actors=ex.ray_actors, ray_cpus_per_actor=ex.ray_cpus_per_actor,
            ray_gpus_per_actor=ex.ray_gpus_per_actor, ray_runtime_env=ex.ray_runtime_env,
            ray_connect_timeout=ex.ray_connect_timeout_s, ray_logs=ex.ray_logs))
    return _Prepared(spec, protocol, specs, settings, prices, executor)


def _preflight(specs: list[JudgeSpec], settings: BackendSettings, spec: JudgingSpec, *,
               network: bool) -> list[JudgeSpec]:
    """Every judge's preflight (key, model file; with ``network`` each host resolves too), before the plan is
    shown or anything is sent. Hosts are resolved last, once the run's other input is checked; batch files
    (export or import) send nothing and need no key, so they are not checked, but their endpoint is filled in
    as a live run's is (their answers are cached under it)."""
    from polyjudge.backends.build import endpoints_of, preflight_judges

    if spec.execution.batch_export or spec.execution.batch_import:
        return endpoints_of(specs)  # no key or host to check, but the same endpoint as a live run's
    try:
        return preflight_judges(specs, settings, network=network)
    except ValueError as exc:  # a PreflightError may name the setting that fixes it (api_key_env)
        setting = getattr(exc, "setting", None)
        raise InputError(str(exc), field=setting or "judge", setting=setting is not None) from None


def _unreachable(specs: Sequence[JudgeSpec], spec: JudgingSpec) -> dict[JudgeSpec, tuple[str, ...]]:
    """The judges some of whose self-hosted servers take no TCP connection now, with a line per such server
    (after the preflight; batch files send nothing and are not checked). With ``--executor ray`` the
    cluster's actors send, and a server they reach may be out of this machine's reach: not checked here."""
    from polyjudge.backends.registry import backend_class

    if spec.execution.batch_export or spec.execution.batch_import or spec.execution.executor != "local":
        return {}
    found = {s: backend_class(s.backend).unreachable(s) for s in specs}
    return {s: lines for s, lines in found.items() if lines}


def _refuse_unreachable(specs: Sequence[JudgeSpec], spec: JudgingSpec) -> None:
    """A run refuses a judge none of whose servers takes a connection (exit 2); a pool with some up sends to
    those, moving the work of the others as it does mid-run."""
    for judge_spec, lines in _unreachable(specs, spec).items():
        if len(lines) == len(judge_spec.servers):
            raise InputError(lines[0], field="judge")


def _check_spending(spec: JudgingSpec, specs: Sequence[JudgeSpec], prices: PriceTable) -> None:
    """The settings of paying less and spending control that involve the judges, checked before
    anything is touched (each group checked its own settings when it was made)."""
    from polyjudge.backends.batch import has_batch_client

    ex, offline = spec.execution, spec.execution.offline
    if spec.cache.record and (offline or spec.generation.samples_per_request > 1):
        what = offline[0] if offline else "--samples-per-request"
        raise InputError(f"--record keeps one live answer per request; it cannot be combined with {what}",
                         field="record")
    if ex.batch:
        cannot = [s.backend for s in specs if not has_batch_client(s.backend)]
        if cannot:
            raise InputError(f"the {', '.join(sorted(set(cannot)))} backend has no Batch API here; --batch works "
                             "with the openai backend", field="batch")
    if spec.budget.max_cost is not None:
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


# An identity setting kept under another key than its name (runs recorded before the settings were declared
# keep it so): the prompt template is compared by the hash of the template the protocol renders.
_IDENTITY_KEYS = {"prompt_template": "template_hash"}


def run_identity(protocol: JudgeProtocol, judges: Sequence[str], config: JudgeConfig | JudgingSpec) -> dict[str, Any]:
    """What makes two runs the same run: a directory may only be resumed (or extended with
    more runs, or re-aggregated) by a run with the same identity. It is every setting declared part
    of the identity (``Setting.identity``), as the run uses it (``JudgingSpec.identity_values``: the
    protocol resolved, its options, template and context, the judges, the temperature and seed...)."""
    return {_IDENTITY_KEYS.get(name, name): value
            for name, value in as_spec(config).identity_values(protocol, judges).items()}


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
        kept = _stored_identity(out)  # the request forms and the settings of JudgingSpec.extra: the store only
        if kept and "request_forms" in kept:
            found["request_forms"] = kept["request_forms"]
        found |= _extra_identity(kept or {})
        return {k: v for k, v in found.items() if v not in ("", [])}  # 0.1.0 manifests lack some
    return _stored_identity(out)


def _extra_identity(kept: Mapping[str, Any]) -> dict[str, Any]:
    """The declared identity settings of ``JudgingSpec.extra`` in a stored identity."""
    from polyjudge.data.settings import by_name

    declared = by_name()
    return {k: v for k, v in kept.items() if k in declared and declared[k].identity and k not in _IDENTITY_LABELS
            and k != "judges"}


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

    spec = prep.spec
    try:
        backends, info = build_backends(prep.specs, prep.settings, record=None if dry_run else spec.cache.record)
    except ValueError as exc:  # e.g. "the openai backend needs --model"
        raise InputError(str(exc), field="judge") from None
    judges = [b.model for b in backends]
    store_path = out / STORE if out is not None else None
    try:
        forms = _request_forms(prep, judges)
        identity = run_identity(prep.protocol, judges, spec) | {
            "request_forms": {j: f.record() for j, f in forms.items()}}
        if out is not None:
            if spec.output.restart:
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
    if spec.execution.batch:
        try:
            clients = _batch_clients(prep)
        except BaseException:
            for b in backends:
                await b.aclose()
            raise
    execution = dataclasses.replace(spec.execution, batch_export=None, batch_import=None) if dry_run \
        else spec.execution
    from polyjudge.engine.core import run_async

    return await run_async(items, RunSpec(
        protocol=prep.protocol, backends=tuple(backends), generation=spec.generation, budget=spec.budget,
        execution=execution, samples_per_request=samples,
        prices=prep.prices, judge_info=info, context_sizes=context_sizes, free_judges=free,
        request_forms={j: f.token for j, f in forms.items()},
        store_path=store_path, outputs=None if dry_run else out, dry_run=dry_run, batch_clients=clients,
        executor=None if dry_run else prep.executor, cache_path=_cache_folder(spec),
        spec=spec), interrupts)


def _check_cache(spec: JudgingSpec) -> None:
    """A cache folder that cannot be one (a file is there) is refused before the run directory is touched."""
    folder = _cache_folder(spec)
    if folder is not None and folder.exists() and not folder.is_dir():
        raise InputError("is not a folder: give the response cache's folder, or --no-cache", path=str(folder),
                         field="cache")


def _check_cache_apart(spec: JudgingSpec, out: Path | None) -> None:
    """A cache folder equal to or inside the run directory is refused before anything is sent."""
    from polyjudge.cache.location import inside

    folder = _cache_folder(spec)
    if folder is not None and out is not None and inside(folder, out):
        raise InputError(f"is inside the run directory {out}: give the response cache a folder of its own, "
                         "or --no-cache", path=str(folder), field="cache")


def _cache_folder(spec: JudgingSpec) -> Path | None:
    """The shared response cache's folder for this run (None with --no-cache)."""
    from polyjudge.cache import cache_dir

    return cache_dir(spec.cache.path) if spec.cache.use else None


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
        samples[backend.model] = prep.spec.generation.samples_per_request if cls.capabilities.samples_per_request else 1
    return context_sizes, free, samples


def _batch_clients(prep: _Prepared) -> list[BatchClient]:
    from polyjudge.backends.batch import batch_client_for

    try:
        return [batch_client_for(spec, prep.settings, prep.spec.execution.batch_options.limits)
                for spec in prep.specs]
    except ValueError as exc:
        raise InputError(str(exc), field="batch") from None


def _raise_if_stopped(result: RunResult, budget: BudgetSpec, out: Path | None, signum: int | None) -> None:
    """A run that was interrupted, gave up on its endpoint, reached its spending cap or failed too
    often raises (outputs are written)."""
    if signum is not None or result.stop_kind == INTERRUPTED:
        raise RunInterrupted(result, out, signum)
    if result.stop_kind == BUDGET and budget.max_cost is not None:
        raise BudgetExceeded(result, out, result.manifest.cost_usd, budget.max_cost)
    total = len(result.judgments)
    if result.stop_kind is not None:
        kept = (f", kept in {out}; re-run the same command to resume once the endpoint works"
                if out is not None else "")
        raise EndpointFailed(f"{result.stop_reason}; stopped after {result.answered_count()} of {total} "
                             f"judgments{kept}", result, out)
    # Every kind of failure counts: a run whose answers all failed to parse computed nothing.
    kinds = result.failure_kinds()
    rate = budget.max_failure_rate
    if rate is not None and total and sum(kinds.values()) / total > rate:
        raise FailureRateExceeded(result, out, kinds, total, rate)


def judge(items: Sequence[Item | Mapping[str, Any]] | str | Path, config: JudgeConfig | JudgingSpec | None = None, *,
          out: str | Path | None = None) -> RunResult:
    """Judge ``items`` (a list of :class:`Item`, of dicts with COMET's keys ``src``/``mt``/``ref``, or an
    input file) as ``config`` says (a
    :class:`JudgingSpec`, or its flat shorthand :class:`JudgeConfig`) and, with ``out`` (or the
    spec's run directory), write the run directory there (re-running the same call resumes).

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
    from polyjudge.engine.result import RunResult
    from polyjudge.rundir import STORE, RunDirLock
    from polyjudge.rundir.ownership import check_out_path

    spec = as_spec(config, out)
    if spec.extra.get("until_settled"):  # judged in rounds by polyjudge.api.judge (api/settle.py)
        raise InputError("--until-settled is not taken here: polyjudge judge, score and study files (the Python "
                         "polyjudge.api.judge) judge in rounds", field="until_settled", setting=True)
    todo, protocol = _items(items, spec)
    prep = _prepare(spec, protocol)
    _preflight(prep.specs, prep.settings, spec, network=True)
    out_dir = spec.output.path
    _check_cache_apart(spec, out_dir)
    if out_dir is not None:
        check_out_path(out_dir)  # the folder's own problems are said first
    _refuse_unreachable(prep.specs, spec)
    with ExitStack() as stack:
        if out_dir is not None:
            stack.enter_context(RunDirLock(out_dir))
        # The requests' deadline, quoted by Ctrl-C's message (an embedded model's generation has none).
        local = any(_capabilities(s).local for s in prep.specs)
        interrupts = stack.enter_context(catching_interrupts(None if local else spec.judges.timeout,
                                                              spec.execution.concurrency))
        result = run_coroutine(_run(todo, prep, out_dir, dry_run=False, interrupts=interrupts))
        assert isinstance(result, RunResult)
        if out_dir is not None:
            with interrupts.writing():  # a signal arriving now waits until every file is written
                result.write(out_dir)
                remember_outputs(out_dir / STORE, out_dir, result)
        signum = interrupts.signum
    _raise_if_stopped(result, spec.budget, out_dir, signum)
    return result


def estimate(items: Sequence[Item | Mapping[str, Any]] | str | Path, config: JudgeConfig | JudgingSpec | None = None, *,
             out: str | Path | None = None) -> Estimate:
    """What :func:`judge` would send (requests, tokens, an upper bound of the cost), counting
    what ``out``'s store already has. Nothing is written: no directory, store or lock is created."""
    from polyjudge.engine.core import Estimate

    spec = as_spec(config, out)
    todo, protocol = _items(items, spec)
    prep = _prepare(spec, protocol)
    out_dir = spec.output.path
    _check_cache_apart(spec, out_dir)
    result = run_coroutine(_run(todo, prep, out_dir, dry_run=True))  # also where a loop runs (Jupyter)
    assert isinstance(result, Estimate)
    _preflight(prep.specs, prep.settings, spec, network=True)  # after the run's other input was checked
    # A server not up yet does not stop the plan (one plans before starting it): the plan says so in a
    # warning line; the run itself refuses it (exit 2). A host that does not resolve stops both.
    return _with_endpoints_and_duration(result, prep, _unreachable(prep.specs, spec))


def _with_endpoints_and_duration(found: Estimate, prep: _Prepared,
                                 unreachable: Mapping[JudgeSpec, tuple[str, ...]] | None = None) -> Estimate:
    """The estimate with each judge's endpoint (credentials masked), the servers unreachable now, and how
    long sending would take."""
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
    given = prep.spec
    duration = estimate_duration(found.calls, found.prompt_tokens + found.max_completion_tokens,
                                 concurrency=given.execution.concurrency, rpm=given.budget.rpm, tpm=given.budget.tpm,
                                 measured_judges=measured)
    return dataclasses.replace(found, endpoints=tuple(endpoints), duration=duration,
                               unreachable=tuple(line for lines in (unreachable or {}).values() for line in lines))


__all__ = ["CONFIG_FIELDS", "DEFAULT_JUDGE", "MAX_CONCURRENCY", "MAX_N_CTX", "MAX_RAY_RESOURCES", "MAX_RUNS",
           "MAX_SAMPLES_PER_REQUEST", "MAX_SEED", "MAX_TEMPERATURE", "MAX_TIMEOUT_S", "BatchOptions", "BudgetExceeded",
           "EndpointFailed", "FailureRateExceeded", "JudgeConfig", "JudgingSpec", "RunInterrupted", "as_spec",
           "build_protocol", "check_same_run", "estimate", "judge", "run_identity"]
