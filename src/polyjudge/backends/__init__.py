"""LLM backends behind one async ``generate`` interface.

Judge specs on the command line: ``openai:MODEL[?OPTIONS][@BASE_URL[,BASE_URL...]]``,
``anthropic:MODEL[?OPTIONS][@BASE_URL]``, ``llamacpp[:MODEL_OR_GGUF_PATH]``,
``replay:RECORDING.jsonl``; several base URLs make one judge served by a pool
of servers (:class:`PoolBackend`). Further backends register with
:func:`register_backend` or the ``polyjudge.backends`` entry-point group.
Importing this package is cheap: its names load on first use (the pool and asyncio
with them), and the backend modules (and aiohttp, llama.cpp) when the registry is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from polyjudge.registry import lazy_members

if TYPE_CHECKING:
    from polyjudge.backends.base import (
        Backend,
        BackendError,
        GenerateRequest,
        GenerateResult,
        Message,
        TokenLogprob,
        Usage,
    )
    from polyjudge.backends.build import adaptations_of, build_backends, server_counts_of
    from polyjudge.backends.pool import PoolBackend
    from polyjudge.backends.registry import (
        BACKENDS,
        BackendSettings,
        JudgeSpec,
        RegisteredBackend,
        UnknownBackendError,
        backend_class,
        build_judge,
        make_backend,
        register_backend,
    )

_HOMES = {
    **dict.fromkeys(("Backend", "BackendError", "GenerateRequest", "GenerateResult", "Message", "TokenLogprob",
                     "Usage"), "base"),
    **dict.fromkeys(("adaptations_of", "build_backends", "server_counts_of"), "build"),
    "PoolBackend": "pool",
    **dict.fromkeys(("BACKENDS", "BackendSettings", "JudgeSpec", "RegisteredBackend", "UnknownBackendError",
                     "backend_class", "build_judge", "make_backend", "register_backend"), "registry"),
}

__getattr__, __dir__ = lazy_members(__name__, {name: f"{__name__}.{home}" for name, home in _HOMES.items()})


__all__ = ["BACKENDS", "Backend", "BackendError", "BackendSettings", "GenerateRequest", "GenerateResult",
           "JudgeSpec", "Message", "PoolBackend", "RegisteredBackend", "TokenLogprob", "UnknownBackendError",
           "Usage", "adaptations_of", "backend_class", "build_backends", "build_judge", "make_backend",
           "register_backend", "server_counts_of"]
