"""LLM backends behind one async ``generate`` interface.

Judge specs on the command line: ``openai:MODEL[@BASE_URL]``,
``llamacpp[:MODEL_OR_GGUF_PATH]``, ``replay:RECORDING.jsonl``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from polyjudge.backends.base import Backend, BackendError, GenerateRequest, GenerateResult, Message, Usage

BACKENDS = ("llamacpp", "openai", "replay")


@dataclass(frozen=True, slots=True)
class JudgeSpec:
    backend: str
    model: str | None = None
    base_url: str | None = None

    @classmethod
    def parse(cls, text: str) -> JudgeSpec:
        backend, _, rest = text.partition(":")
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend '{backend}' in judge '{text}'; use one of {', '.join(BACKENDS)}")
        model, base_url = rest or None, None
        if backend == "openai" and model and "@" in model:
            model, base_url = model.split("@", 1)
        return cls(backend, model, base_url)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "model": self.model, "base_url": self.base_url}


def make_backend(spec: JudgeSpec, *, api_key_env: str = "OPENAI_API_KEY", timeout: float = 120.0,
                 n_ctx: int = 8192) -> Backend:
    if spec.backend == "openai":
        from polyjudge.backends.openai import OpenAIBackend
        if not spec.model:
            raise ValueError("the openai backend needs --model")
        return OpenAIBackend(spec.model, spec.base_url or "https://api.openai.com/v1",
                             api_key_env=api_key_env, timeout=timeout)
    if spec.backend == "replay":
        from polyjudge.backends.replay import ReplayBackend
        if not spec.model:
            raise ValueError("the replay backend needs a recording: replay:FILE.jsonl")
        return ReplayBackend(spec.model)
    from polyjudge.backends.llamacpp import LlamaCppBackend
    return LlamaCppBackend(spec.model, n_ctx=n_ctx)


__all__ = ["Backend", "BackendError", "GenerateRequest", "GenerateResult", "JudgeSpec", "Message",
           "Usage", "make_backend"]
