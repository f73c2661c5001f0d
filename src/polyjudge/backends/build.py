"""Building a panel of judges from specs: the one path every judging command takes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from polyjudge.backends.base import Backend
from polyjudge.backends.registry import BackendSettings, JudgeSpec, backend_class
from polyjudge.data.secrets import register_secret_env


def build_backends(specs: Sequence[JudgeSpec], settings: BackendSettings, *,
                   record: str | Path | None = None) -> tuple[list[Backend], list[dict[str, Any]]]:
    """One backend per spec, and the judge entries of the run manifest, in spec order.

    Each entry is ``spec.describe()`` (credentials in ``base_url`` masked)
    with ``model`` replaced by the backend's own model name, plus what the
    backend class adds (``model_file`` for llamacpp). With ``record`` every
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
        backend = cls.from_spec(spec, settings)
        built.append(backend)
        info.append(spec.describe() | {"model": backend.model} | cls.manifest_fields(backend))
    if not record:
        return built, info
    from polyjudge.backends.replay import RecordingBackend

    recording: list[Backend] = [RecordingBackend(b, record) for b in built]
    return recording, info


__all__ = ["build_backends"]
