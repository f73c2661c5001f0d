"""A judging, specified: one frozen value grouped by concern, and what the engine resolves it to.

:class:`JudgingSpec` is what a judging is: its data (``polyjudge.data.spec``), judges
(``polyjudge.backends.spec``), protocol (``polyjudge.protocols.spec``), generation, budget
and execution (here, next to the engine that uses them), cache (``polyjudge.cache.spec``)
and outputs (``polyjudge.rundir.spec``). Each group checks itself once, when it is made,
with messages naming its field. The command line builds one from its flags
(``cli.options.judging_spec``), the Python API takes it, the manifest records it and a
resume compares its identity-bearing groups.

:class:`RunSpec` is what the engine runs: the spec's groups next to the objects resolved
from them (a protocol instance, built backends, a price table, an executor).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyjudge.backends.spec import PanelSpec
from polyjudge.cache.spec import CacheSpec
from polyjudge.data.errors import InputError
from polyjudge.data.limits import (  # the bounds of the numeric settings (the CLI's flag types show them)
    MAX_CONCURRENCY,
    MAX_N_CTX,
    MAX_RAY_RESOURCES,
    MAX_RUNS,
    MAX_SAMPLES_PER_REQUEST,
    MAX_SEED,
    MAX_TEMPERATURE,
    MAX_TIMEOUT_S,
)
from polyjudge.data.settings import default
from polyjudge.data.shapes import check_range, normalise_fields
from polyjudge.data.spec import InputSpec
from polyjudge.engine.batches import BATCH_FALLBACKS, BatchOptions
from polyjudge.engine.pricing import ModelPrice
from polyjudge.engine.runner import RetryPolicy
from polyjudge.protocols.base import JudgeProtocol
from polyjudge.protocols.spec import ProtocolSpec
from polyjudge.rundir.spec import OutputSpec

if TYPE_CHECKING:
    from polyjudge.backends.base import Backend
    from polyjudge.backends.batch import BatchClient
    from polyjudge.engine.executor import Executor

_UNBOUNDED = 1.7976931348623157e308


@dataclass(frozen=True, slots=True)
class GenerationSpec:
    """How each item is asked: ``runs`` per item, sampling ``temperature`` and the ``aggregator`` of
    runs (None: the protocol's published defaults), ``min_runs`` successful runs for a score, the
    ``seed`` (run r sends seed + r) and ``samples_per_request`` (runs answered by one request)."""

    runs: int | None = default("runs")
    temperature: float | None = default("temperature")
    aggregator: str | None = default("aggregator")
    min_runs: int = default("min_runs")
    seed: int = default("seed")
    samples_per_request: int = default("samples_per_request")

    def __post_init__(self) -> None:
        for name, value, low, high in (("runs", self.runs, 1, MAX_RUNS), ("min_runs", self.min_runs, 1, MAX_RUNS),
                                       ("seed", self.seed, 0, MAX_SEED),
                                       ("samples_per_request", self.samples_per_request, 1, MAX_SAMPLES_PER_REQUEST)):
            check_range(name, value, low, high, whole=True)
        check_range("temperature", self.temperature, 0.0, MAX_TEMPERATURE)

    def resolved(self, protocol: JudgeProtocol) -> GenerationSpec:
        """This group with the protocol's published defaults filled in where a setting is None (runs,
        temperature, aggregator): the one place "None means the protocol's default" is resolved (the
        engine's plan, the manifest, the signature and the run identity all read it)."""
        runs, temperature = self.runs, self.temperature
        return dataclasses.replace(
            self, runs=protocol.default_runs if runs is None else runs,
            temperature=float(protocol.default_temperature if temperature is None else temperature),
            aggregator=self.aggregator or protocol.default_aggregator)

    def check_with(self, protocol: JudgeProtocol) -> None:
        """The settings that depend on the protocol's default number of runs."""
        runs = self.resolved(protocol).runs or 1
        if self.min_runs > runs:
            raise InputError(f"{self.min_runs} is more than the {runs} run(s) per item: every segment would be "
                             "left unscored", field="min_runs", setting=True)
        if self.seed + runs - 1 > MAX_SEED:
            raise InputError(f"seed + runs - 1 = {self.seed + runs - 1} exceeds {MAX_SEED} (run r sends seed + r)",
                             field="seed", setting=True)


@dataclass(frozen=True, slots=True)
class BudgetSpec:
    """What a run may spend: ``max_cost`` (USD, all its sessions), ``rpm``/``tpm`` per judge, the
    ``prices`` (a price-table file, or the table: {model: ModelPrice or [in, out]}) and the share of
    judgments that may fail (no answer, refused, unparseable, truncated) before the run counts as failed
    (``max_failure_rate``)."""

    max_cost: float | None = default("max_cost")
    rpm: float | None = default("rpm")
    tpm: float | None = default("tpm")
    prices: str | Mapping[str, ModelPrice | tuple[float, ...]] | None = default("prices")
    max_failure_rate: float | None = default("max_failure_rate")

    def __post_init__(self) -> None:
        for name, value in (("max_cost", self.max_cost), ("rpm", self.rpm), ("tpm", self.tpm)):
            check_range(name, value, 0.0, _UNBOUNDED, low_open=True)
        check_range("max_failure_rate", self.max_failure_rate, 0.0, 1.0)


@dataclass(frozen=True, slots=True)
class ExecutionSpec:
    """Who sends and how: ``concurrency`` requests in flight, the ``retry`` policy, a progress bar;
    the ``executor`` ("local": this process, "ray": a pool of Ray actors, with the ``ray_*``
    settings); or the Batch API path: ``batch`` (send through it, ``batch_options``),
    ``batch_export`` (write its input file instead) or ``batch_import`` (load its output file)."""

    concurrency: int = default("concurrency")
    retry: RetryPolicy = RetryPolicy()
    progress: bool = default("progress")
    executor: str = default("executor")
    ray_address: str | None = default("ray_address")
    ray_actors: int | None = default("ray_actors")
    ray_cpus_per_actor: float = default("ray_cpus_per_actor")
    ray_gpus_per_actor: float = default("ray_gpus_per_actor")
    ray_runtime_env: Mapping[str, Any] | None = None
    ray_connect_timeout_s: float = default("ray_connect_timeout")  # seconds to wait for a cluster named by an address
    ray_logs: bool = default("ray_logs")  # Ray's own log lines on the terminal (else ray.log)
    batch: bool = default("batch")
    batch_options: BatchOptions = BatchOptions()
    batch_export: str | None = default("batch_export")
    batch_import: str | None = default("batch_import")

    def __post_init__(self) -> None:
        normalise_fields(self)
        check_range("concurrency", self.concurrency, 1, MAX_CONCURRENCY, whole=True)
        check_range("ray_actors", self.ray_actors, 1, MAX_CONCURRENCY, whole=True)
        check_range("ray_cpus_per_actor", self.ray_cpus_per_actor, 0.0, MAX_RAY_RESOURCES)
        check_range("ray_gpus_per_actor", self.ray_gpus_per_actor, 0.0, MAX_RAY_RESOURCES)
        offline = self.offline
        if len(offline) > 1:
            raise InputError(f"give one of {', '.join(offline)}", field="batch")
        if self.batch_options.fallback not in BATCH_FALLBACKS:
            raise InputError(f"must be one of {', '.join(BATCH_FALLBACKS)}, got '{self.batch_options.fallback}'",
                             field="batch_fallback", setting=True)

    @property
    def offline(self) -> list[str]:
        """The Batch API settings given, as flags (at most one may be)."""
        return [f for f, v in (("--batch", self.batch), ("--batch-export", self.batch_export),
                               ("--batch-import", self.batch_import)) if v]


@dataclass(frozen=True, slots=True)
class JudgingSpec:
    """One judging: every group of its specification (see the module's text)."""

    data: InputSpec = InputSpec()
    judges: PanelSpec = PanelSpec()
    protocol: ProtocolSpec = ProtocolSpec()
    generation: GenerationSpec = GenerationSpec()
    budget: BudgetSpec = BudgetSpec()
    execution: ExecutionSpec = ExecutionSpec()
    cache: CacheSpec = CacheSpec()
    output: OutputSpec = OutputSpec()
    # Declared settings (polyjudge.data.settings) that no group has a field for: name -> value.
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from polyjudge.data.settings import check_extra

        object.__setattr__(self, "extra", check_extra(self.extra))
        for f in dataclasses.fields(self):
            if f.name == "extra":
                continue
            kind = type(f.default)
            if not isinstance(getattr(self, f.name), kind):
                raise TypeError(f"JudgingSpec.{f.name} takes a {kind.__name__}, got "
                                f"{type(getattr(self, f.name)).__name__}")

    def replace(self, **groups: Any) -> JudgingSpec:
        """A copy with some groups replaced."""
        return dataclasses.replace(self, **groups)

    def identity_values(self, protocol: JudgeProtocol, judges: Sequence[str]) -> dict[str, Any]:
        """Every setting declared part of the run's identity (``Setting.identity``), name -> its value in
        this judging, in declaration order: resolved against ``protocol`` where the protocol decides it
        (:data:`IDENTITY_RESOLVED`), else its group's field, else its value in :attr:`extra` (its declared
        default when not given). A value that is None (the model's own reasoning effort) is left out. The
        resume check (``engine.session.run_identity``) and the signature (``engine.manifest``) read it."""
        from polyjudge.data.settings import GROUPS, SETTINGS

        out: dict[str, Any] = {}
        for setting in SETTINGS:
            if not setting.identity:
                continue
            resolve = IDENTITY_RESOLVED.get(setting.name)
            if resolve is not None:
                value = resolve(protocol, judges, self)
            elif setting.group in GROUPS and hasattr(getattr(self, setting.group), setting.field):
                value = getattr(getattr(self, setting.group), setting.field)
            else:
                value = self.extra.get(setting.name, setting.default)
            if value is not None:
                out[setting.name] = _plain(value)
        return out

    def record(self) -> dict[str, Any]:
        """The spec as JSON-ready data for the manifest: every group's fields, judges as they were
        written with credentials masked, the key's variable name only (never a key)."""
        from polyjudge.backends.spec import describe_judge

        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name == "extra":
                if self.extra:
                    out["extra"] = _plain(dict(self.extra))
                continue
            group = getattr(self, f.name)
            entry = {g.name: _plain(getattr(group, g.name)) for g in dataclasses.fields(group)}
            if f.name == "judges":
                entry["judges"] = [describe_judge(j) for j in group.judges]
            out[f.name] = entry
        out["execution"].pop("ray_runtime_env", None)  # may carry environment values; not the run's identity
        return out


# The identity settings whose value in a run is what the protocol makes of the spec (its name, its resolved
# options, template and context, the protocol's default temperature) or the judges as built: setting name ->
# (protocol, judge names, spec) -> value. Every other identity setting is its group's field or ``extra``'s value.
IDENTITY_RESOLVED: Mapping[str, Callable[[JudgeProtocol, Sequence[str], JudgingSpec], Any]] = {
    "protocol": lambda protocol, judges, spec: protocol.name,
    "judges": lambda protocol, judges, spec: list(judges),
    "protocol_options": lambda protocol, judges, spec: dict(protocol.options.extra),
    "temperature": lambda protocol, judges, spec: spec.generation.resolved(protocol).temperature,
    "prompt_template": lambda protocol, judges, spec: protocol.template_hash,
    "use_context": lambda protocol, judges, spec: protocol.options.use_context,
}


def _plain(value: Any) -> Any:
    """``value`` as JSON-ready data (dataclasses as mappings, paths as text)."""
    import json

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    return json.loads(json.dumps(value, sort_keys=True, default=str))


@dataclass(frozen=True, slots=True)
class RunSpec:
    """Everything one judging run (or its ``--dry-run`` estimate) depends on: the spec's groups of
    generation, budget and execution, and what was resolved from the rest.

    ``store_path`` None keeps answers in memory; ``outputs`` is the run
    directory the result will be written to (its outputs may then be reused).
    ``context_sizes`` (judge -> tokens) add to the known model contexts for the
    oversized-prompt warnings; ``free_judges`` cost nothing. ``samples_per_request``
    (per judge when a mapping; None: the generation group's) asks for that many choices per request.
    ``batch_clients`` (one per judge) send through Batch APIs. ``executor`` None is the local one.
    ``cache_path``: the folder of the machine's shared response cache (None: none), read before
    sending unless ``cache_read`` (the cache group's, read from ``spec``) is False (``--record``, which
    must send to record) and filled with every answer received. ``reasoning_effort`` is the judges
    group's, read from ``spec`` too: RunSpec copies no setting of a group.
    """

    protocol: JudgeProtocol
    backends: Sequence[Backend]
    generation: GenerationSpec = GenerationSpec()
    budget: BudgetSpec = BudgetSpec()
    execution: ExecutionSpec = ExecutionSpec()
    samples_per_request: int | Mapping[str, int] | None = None
    prices: Mapping[str, ModelPrice | Any] | None = None
    judge_info: Sequence[Mapping[str, Any]] | None = None
    # judge -> its request form's token ("" or absent: the default form; backends.form.request_form)
    request_forms: Mapping[str, str] | None = None
    context_sizes: Mapping[str, int] | None = None
    free_judges: Collection[str] = ()
    store_path: Path | str | None = None
    outputs: Path | None = None
    dry_run: bool = False
    batch_clients: Sequence[BatchClient] | None = None
    executor: Executor | None = None
    cache_path: Path | None = None
    spec: JudgingSpec | None = field(default=None)  # the judging it was resolved from (recorded in the manifest)

    @property
    def reasoning_effort(self) -> str | None:
        """The judges group's reasoning effort (part of every request), read from the spec, not copied."""
        return None if self.spec is None else self.spec.judges.reasoning_effort

    @property
    def cache_read(self) -> bool:
        """Whether the shared cache's answers may be taken (not when recording), read from the spec's cache group."""
        return True if self.spec is None else self.spec.cache.read

    @classmethod
    def of(cls, protocol: JudgeProtocol, backends: Sequence[Backend], **settings: Any) -> RunSpec:
        """A RunSpec from flat settings (for code and tests that hold a protocol and backends): a
        RunSpec field by its name, else the field of that name of the generation, budget or execution
        group; an unknown name is a ``TypeError``."""
        own = {f.name for f in dataclasses.fields(cls)}
        groups: dict[str, dict[str, Any]] = {"generation": {}, "budget": {}, "execution": {}}
        kinds = {"generation": GenerationSpec, "budget": BudgetSpec, "execution": ExecutionSpec}
        direct: dict[str, Any] = {}
        for name, value in settings.items():
            if name in own:
                direct[name] = value
                continue
            group = next((g for g, kind in kinds.items() if name in {f.name for f in dataclasses.fields(kind)}),
                         None)
            if group is None:
                raise TypeError(f"RunSpec has no setting {name!r}")
            groups[group][name] = value
        made = {g: kinds[g](**values) for g, values in groups.items() if values}
        return cls(protocol=protocol, backends=tuple(backends), **made, **direct)

    @property
    def judges(self) -> list[str]:
        """The judges' model names, in the order given."""
        return [b.model for b in self.backends]

    @property
    def runs(self) -> int | None:
        return self.generation.runs

    def resolved_runs(self) -> int:
        return self.generation.resolved(self.protocol).runs or 1

    def resolved_temperature(self) -> float:
        return self.generation.resolved(self.protocol).temperature or 0.0

    def resolved_aggregator(self) -> str:
        return self.generation.resolved(self.protocol).aggregator or ""

    def resolved_samples(self) -> int | Mapping[str, int]:
        return self.generation.samples_per_request if self.samples_per_request is None else self.samples_per_request

    @property
    def goes_by_batch(self) -> bool:
        """Every task is planned at once and sent, exported or imported through the Batch API path."""
        ex = self.execution
        return ex.batch_import is not None or ex.batch_export is not None or self.batch_clients is not None


__all__ = ["MAX_CONCURRENCY", "MAX_N_CTX", "MAX_RAY_RESOURCES", "MAX_RUNS", "MAX_SAMPLES_PER_REQUEST", "MAX_SEED",
           "MAX_TEMPERATURE", "MAX_TIMEOUT_S", "BudgetSpec", "ExecutionSpec", "GenerationSpec", "JudgingSpec",
           "RunSpec"]
