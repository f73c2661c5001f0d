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
    from polyjudge.backends.base import Backend, BackendError
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
    from polyjudge.data.chat import GenerateRequest, GenerateResult, Message, TokenLogprob, Usage

# The request and result types live in polyjudge.data.chat (protocols use them too); they are named
# here as well, as before, for code that takes everything about backends from this package.
_HOMES = {
    **dict.fromkeys(("GenerateRequest", "GenerateResult", "Message", "TokenLogprob", "Usage"), "polyjudge.data.chat"),
    **dict.fromkeys(("Backend", "BackendError"), f"{__name__}.base"),
    **dict.fromkeys(("adaptations_of", "build_backends", "server_counts_of"), f"{__name__}.build"),
    "PoolBackend": f"{__name__}.pool",
    **dict.fromkeys(("BACKENDS", "BackendSettings", "JudgeSpec", "RegisteredBackend", "UnknownBackendError",
                     "backend_class", "build_judge", "make_backend", "register_backend"), f"{__name__}.registry"),
}

__getattr__, __dir__ = lazy_members(__name__, _HOMES)


__all__ = ["BACKENDS", "Backend", "BackendError", "BackendSettings", "GenerateRequest", "GenerateResult",
           "JudgeSpec", "Message", "PoolBackend", "RegisteredBackend", "TokenLogprob", "UnknownBackendError",
           "Usage", "adaptations_of", "backend_class", "build_backends", "build_judge", "make_backend",
           "register_backend", "server_counts_of"]
