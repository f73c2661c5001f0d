"""Building a panel of judges from specs: the one path every judging command takes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from polyjudge.backends.base import Backend
from polyjudge.backends.lazy import LazyBackend
from polyjudge.backends.pool import PoolBackend
from polyjudge.backends.registry import BackendSettings, JudgeSpec, backend_class, build_judge
from polyjudge.data.secrets import register_secret_env


def build_backends(specs: Sequence[JudgeSpec], settings: BackendSettings, *,
                   record: str | Path | None = None) -> tuple[list[Backend], list[dict[str, Any]]]:
    """One backend per spec, and the judge entries of the run manifest, in spec order.

    Each entry is ``spec.describe()`` (credentials in ``base_url`` masked)
    with ``model`` replaced by the backend's own model name, plus what the
    backend class adds (``model_file`` for llamacpp) and, for a judge served
    by several servers, ``servers`` (each URL masked). With ``record`` every
    backend appends its answers to that JSONL file; the file is opened only
    once every spec has been built.

    Raises ``ValueError`` for a spec that is unknown or incomplete and
    ``RuntimeError`` for a model that is not installed or not found.
    """
    # The key variable may be named anything (--api-key-env): its value is masked everywhere.
    register_secret_env(settings.api_key_env)
    built: list[Backend] = []
    info: list[dict[str, Any]] = []
    for spec in specs:
        cls = backend_class(spec.backend)
        known = cls.deferred(spec, settings) if len(spec.servers) <= 1 else None
        if known is not None:  # built when its first request is sent, if ever
            built.append(LazyBackend(spec, settings, str(known["model"])))
            info.append(spec.describe() | known)
            continue
        backend = build_judge(spec, settings)
        built.append(backend)
        entry = spec.describe() | {"model": backend.model} | cls.manifest_fields(backend)
        if isinstance(backend, PoolBackend):
            entry["servers"] = backend.servers
        info.append(entry)
    check_distinct_names(specs, [b.model for b in built])
    if not record:
        return built, info
    from polyjudge.backends.replay import RecordingBackend

    recording: list[Backend] = [RecordingBackend(b, record) for b in built]
    return recording, info


def preflight_judges(specs: Sequence[JudgeSpec], settings: BackendSettings, *,
                     network: bool = True) -> list[JudgeSpec]:
    """Each judge's :meth:`~polyjudge.backends.registry.RegisteredBackend.preflight`, once, before any request
    is sent or model loaded: the specs the run uses (endpoints named by the environment filled in).
    ``PreflightError`` (a ``ValueError``) for the first judge that cannot work."""
    return [backend_class(spec.backend).preflight(spec, settings, network=network) for spec in specs]


def endpoints_of(specs: Sequence[JudgeSpec]) -> list[JudgeSpec]:
    """Each judge with the endpoint its environment names, checking nothing (batch files send nothing)."""
    return [backend_class(spec.backend).endpoint(spec) for spec in specs]


def _spec_text(spec: JudgeSpec) -> str:
    entry = spec.describe()
    url = f"@{entry['base_url']}" if entry["base_url"] else ""
    return f"{spec.backend}:{spec.model or ''}{url}"


def check_distinct_names(specs: Sequence[JudgeSpec], names: Sequence[str]) -> None:
    """A panel's judges are told apart by their model names (keys, tables, signatures): two judges
    answering as one name are refused (``ValueError``, one line saying how to name them)."""
    first: dict[str, JudgeSpec] = {}
    for spec, name in zip(specs, names, strict=True):
        if name in first:
            raise ValueError(
                f"judges {_spec_text(first[name])} and {_spec_text(spec)} both answer as model '{name}'; a panel "
                "needs distinct model names: to spread one model over several servers name them in one judge "
                f"({spec.backend}:{name}@URL1,URL2), to compare servers serve the model under another name "
                "or judge with each in its own run")
        first[name] = spec


def adaptations_of(backend: Backend) -> dict[str, str]:
    """What ``backend`` changed in requests its server rejected (``{}`` for backends that never adapt),
    looking through a recording wrapper: for the run's manifest and signature."""
    found = getattr(backend, "adaptations", None)
    return dict(found) if isinstance(found, dict) else {}


def _senders(backend: Backend) -> list[Any]:
    """The backends that write ``backend``'s requests: through a recording wrapper, each server of a pool."""
    inner = getattr(backend, "inner", None)
    if inner is not None:
        return _senders(inner)
    members = getattr(backend, "members", None)
    if isinstance(members, list):
        return [s for m in members for s in _senders(m)]
    return [backend]


def form_settled_of(backend: Backend) -> bool:
    """True when no answer can change how ``backend`` writes its requests (backends that never adapt,
    a form given or already learned): its requests need not wait for another's answer. A pool serves
    one model on every server, so one server's lesson settles it (``adopt_form_of`` hands it to all)."""
    inner = getattr(backend, "inner", None)
    if inner is not None:
        return form_settled_of(inner)
    members = getattr(backend, "members", None)
    if isinstance(members, list):
        return any(form_settled_of(m) for m in members)
    return getattr(backend, "form_settled", True) is not False


def adopt_form_of(backend: Backend, adaptations: Mapping[str, str]) -> None:
    """Have ``backend`` write its requests as another copy of the judge learned to, and hold none."""
    for sender in _senders(backend):
        adopt = getattr(sender, "adopt_form", None)
        if callable(adopt):
            adopt(adaptations)


def server_counts_of(backend: Backend) -> dict[str, int] | None:
    """Requests sent to each server of a judge served by several (masked URL -> count), else None."""
    counts = getattr(backend, "server_counts", None)
    return counts() if callable(counts) else None


__all__ = ["adaptations_of", "adopt_form_of", "build_backends", "check_distinct_names", "endpoints_of",
           "form_settled_of", "preflight_judges", "server_counts_of"]
