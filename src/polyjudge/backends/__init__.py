"""LLM backends behind one async ``generate`` interface.

Judge specs on the command line: ``openai:MODEL[@BASE_URL]``,
``llamacpp[:MODEL_OR_GGUF_PATH]``, ``replay:RECORDING.jsonl``; further
backends register with :func:`register_backend` or the ``polyjudge.backends``
entry-point group. Importing this package is cheap: the backend modules (and
httpx, llama.cpp) load when the registry is first used.
"""

from __future__ import annotations

from polyjudge.backends.base import Backend, BackendError, GenerateRequest, GenerateResult, Message, Usage
from polyjudge.backends.build import build_backends
from polyjudge.backends.registry import (
    BACKENDS,
    BackendSettings,
    JudgeSpec,
    RegisteredBackend,
    UnknownBackendError,
    backend_class,
    make_backend,
    register_backend,
)

__all__ = ["BACKENDS", "Backend", "BackendError", "BackendSettings", "GenerateRequest", "GenerateResult",
           "JudgeSpec", "Message", "RegisteredBackend", "UnknownBackendError", "Usage", "backend_class",
           "build_backends", "make_backend", "register_backend"]
