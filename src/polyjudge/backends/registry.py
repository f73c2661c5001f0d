"""Backends by name: the registry, judge specs and the knobs every judge shares.

A judge is written ``BACKEND[:TARGET]`` (``openai:gpt-4o@http://host/v1``,
``llamacpp``, ``replay:run.jsonl``). The backend name is looked up in
:data:`BACKENDS`; the backend class itself says how its target is split
(:meth:`RegisteredBackend.parse_target`) and how it is built from a spec
(:meth:`RegisteredBackend.from_spec`). The built-in backend modules are
imported only when the registry is first used, so importing this module
loads neither httpx nor llama.cpp.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from polyjudge.backends.base import Backend
from polyjudge.data.secrets import redact_url, register_secret_env
from polyjudge.registry import Registry, UnknownNameError


@dataclass(frozen=True, slots=True)
class BackendSettings:
    """Options that apply to every judge of a panel (one ``--timeout`` for all, ...)."""

    api_key_env: str = "OPENAI_API_KEY"  # environment variable holding the API key (http backends)
    timeout: float = 120.0  # seconds per request (http backends)
    n_ctx: int = 8192  # context size per request (llamacpp)


class RegisteredBackend(ABC):
    """A backend class that can be named in a judge spec.

    Subclasses set ``name`` and implement :meth:`from_spec`; the first line of
    the class docstring is the backend's one-line ``--help`` summary.
    """

    name: ClassVar[str]

    @classmethod
    def parse_target(cls, rest: str) -> tuple[str | None, str | None]:
        """Split the text after ``NAME:`` into ``(model, base_url)``; by default it is all model."""
        return rest or None, None

    @classmethod
    @abstractmethod
    def from_spec(cls, spec: JudgeSpec, settings: BackendSettings) -> Backend:
        """Build the backend; ``ValueError`` when the spec lacks something it needs."""

    @classmethod
    def manifest_fields(cls, backend: Backend) -> dict[str, Any]:
        """Fields added to the judge's manifest entry after ``backend``, ``model`` and ``base_url``."""
        return {}


BACKENDS: Registry[type[RegisteredBackend]] = Registry(
    "backend",
    modules=["polyjudge.backends.openai", "polyjudge.backends.llamacpp", "polyjudge.backends.replay"],
    entry_point_group="polyjudge.backends",
)
register_backend = BACKENDS.register


class UnknownBackendError(UnknownNameError, ValueError):
    """A judge spec names no registered backend.

    A ``ValueError`` too, so callers that reject bad specs with one ``except
    ValueError`` (the CLI) catch it with the other spec errors.
    """


def backend_class(name: str, *, judge: str | None = None) -> type[RegisteredBackend]:
    """The registered class for ``name``; ``judge`` (the spec's text) is quoted in the error."""
    try:
        return BACKENDS.get(name)
    except UnknownNameError:
        where = f" in judge '{judge}'" if judge is not None else ""
        raise UnknownBackendError(f"unknown backend '{name}'{where}; use one of "
                                  f"{', '.join(sorted(BACKENDS.names()))}") from None


@dataclass(frozen=True, slots=True, repr=False)
class JudgeSpec:
    """One judge: a backend name and what it needs (a model, an endpoint).

    ``base_url`` is kept as given (the backend needs its credentials); what
    the spec shows of itself (:meth:`describe`, ``repr``) has them masked.
    """

    backend: str
    model: str | None = None
    base_url: str | None = None

    @classmethod
    def parse(cls, text: str) -> JudgeSpec:
        """``BACKEND[:TARGET]`` -> spec; an unknown backend raises :class:`UnknownBackendError`."""
        name, _, rest = text.partition(":")
        model, base_url = backend_class(name, judge=text).parse_target(rest)
        return cls(name, model, base_url)

    def describe(self) -> dict[str, Any]:
        """The judge's manifest entry; credentials in ``base_url`` are masked."""
        return {"backend": self.backend, "model": self.model, "base_url": redact_url(self.base_url)}

    def __repr__(self) -> str:
        return f"JudgeSpec(backend={self.backend!r}, model={self.model!r}, base_url={redact_url(self.base_url)!r})"


def make_backend(spec: JudgeSpec, settings: BackendSettings | None = None, *, api_key_env: str | None = None,
                 timeout: float | None = None, n_ctx: int | None = None) -> Backend:
    """Build one judge's backend.

    The keyword knobs are the older call form; each one given replaces the
    corresponding field of ``settings``.
    """
    base = settings if settings is not None else BackendSettings()
    chosen = BackendSettings(
        api_key_env=api_key_env if api_key_env is not None else base.api_key_env,
        timeout=timeout if timeout is not None else base.timeout,
        n_ctx=n_ctx if n_ctx is not None else base.n_ctx,
    )
    register_secret_env(chosen.api_key_env)
    return backend_class(spec.backend).from_spec(spec, chosen)


__all__ = ["BACKENDS", "BackendSettings", "JudgeSpec", "RegisteredBackend", "UnknownBackendError",
           "backend_class", "make_backend", "register_backend"]
