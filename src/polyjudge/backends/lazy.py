"""A judge built on its first request.

Building some backends is costly (the embedded judge loads its model: tens
of seconds), and many runs never send anything: ``--dry-run`` only counts
tokens, and re-running a finished run finds every answer in its store. A
backend class that can name its judge without building it
(:meth:`~polyjudge.backends.registry.RegisteredBackend.deferred`) is handed
out as a :class:`LazyBackend`, which builds the real one when the first
request is sent.
"""

from __future__ import annotations

from typing import Any

from polyjudge.backends.base import Backend
from polyjudge.backends.registry import BackendSettings, JudgeSpec, build_judge
from polyjudge.data.chat import GenerateRequest, GenerateResult


class LazyBackend:
    """Stands for the judge ``spec`` names (called ``model``) until a request needs it built."""

    def __init__(self, spec: JudgeSpec, settings: BackendSettings, model: str) -> None:
        self.model = model
        self._spec, self._settings = spec, settings
        self._built: Backend | None = None

    @property
    def is_built(self) -> bool:
        return self._built is not None

    def built(self) -> Backend:
        """The real backend, built now if it was not yet; it must carry the name announced for it."""
        if self._built is None:
            backend = build_judge(self._spec, self._settings)
            if backend.model != self.model:
                raise RuntimeError(f"judge '{self.model}' was built as '{backend.model}'")
            self._built = backend
        return self._built

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        return await self.built().generate(request)

    async def aclose(self) -> None:
        if self._built is not None:
            await self._built.aclose()

    def __getattr__(self, name: str) -> Any:
        """What the real backend learned (adaptations, requests per server), once it exists."""
        if name.startswith("_") or self.__dict__.get("_built") is None:
            raise AttributeError(name)
        return getattr(self.__dict__["_built"], name)


__all__ = ["LazyBackend"]
