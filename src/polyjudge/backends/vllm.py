"""vLLM on a Ray cluster's GPU nodes: the ``vllm`` judge (``vllm:HF_MODEL``).

Unlike the other backends it answers no request from this process: the Ray
executor hands a judge's whole work to ``ray.data.llm``'s vLLM engine
processor, which runs where the cluster has GPUs. What belongs to the
backend lives here (its name and capabilities, the processor's settings, how
a request becomes a Ray Data row and an output row an answer); the Ray
executor keeps the orchestration (``engine.ray_executor``), and asks the
judge's :class:`Capabilities` (``gpu_cluster_only``), never its name.

``ray.data.llm`` is optional (``pip install 'ray[llm]'``) and imported only
when a vllm judge is about to run.
"""

from __future__ import annotations

import importlib
from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, ClassVar

from polyjudge.backends.base import Backend
from polyjudge.backends.registry import (
    BackendSettings,
    Capabilities,
    JudgeSpec,
    RegisteredBackend,
    register_backend,
)
from polyjudge.data.chat import GenerateRequest, GenerateResult, Usage
from polyjudge.data.errors import InputError

INSTALL_RAY_LLM = "pip install 'ray[llm]'"


@dataclass(frozen=True, slots=True)
class ClusterPlacement:
    """How wide a cluster judge runs: engine replicas, rows per batch, what ships to the nodes."""

    replicas: int = 1
    batch_size: int = 64
    runtime_env: Mapping[str, Any] | None = None


class ClusterBackend(RegisteredBackend):
    """A backend that runs only on a Ray cluster, as a Ray Data processor the Ray executor drives.

    Its class declares ``Capabilities(gpu_cluster_only=True)``; it is never
    built in this process (:meth:`deferred` names the judge, :meth:`from_spec`
    refuses), so a run without the Ray executor is refused before it starts.
    """

    @classmethod
    def from_spec(cls, spec: JudgeSpec, settings: BackendSettings) -> Backend:
        raise ValueError(f"a {cls.name} judge runs only on a Ray cluster with GPU nodes: judge with --executor ray")

    @classmethod
    def deferred(cls, spec: JudgeSpec, settings: BackendSettings) -> dict[str, Any] | None:
        if not spec.model:
            raise ValueError(f"the {cls.name} backend needs a model: {cls.name}:HF_MODEL")
        return {"model": spec.model}

    @classmethod
    @abstractmethod
    def require(cls) -> ModuleType:
        """The module that runs the judge, or :class:`InputError` saying how to install it."""

    @classmethod
    @abstractmethod
    def processor(cls, spec: JudgeSpec, settings: BackendSettings, placement: ClusterPlacement) -> Any:
        """The Ray Data processor that answers the judge's rows (called on the driver)."""

    @classmethod
    @abstractmethod
    def request_row(cls, key: str, request: GenerateRequest) -> dict[str, Any]:
        """One input row for the processor; ``key`` comes back with the answer."""

    @classmethod
    @abstractmethod
    def answer(cls, row: Mapping[str, Any], max_tokens: int, model: str) -> GenerateResult:
        """The processor's output row as a backend answer."""

    @classmethod
    def row_error(cls, row: Mapping[str, Any]) -> str | None:
        """Why the processor failed this row (None: it answered)."""
        error = row.get("__inference_error__")
        return str(error) if error else None


@register_backend()
class VllmBackend(ClusterBackend):
    """vLLM on a Ray cluster's GPU nodes, through ray.data.llm: vllm:HF_MODEL (--executor ray only)."""

    name: ClassVar[str] = "vllm"
    # Runs on the user's own GPUs: nothing to pay, no price needed for --max-cost.
    capabilities: ClassVar[Capabilities] = Capabilities(local=True, gpu_cluster_only=True)

    @classmethod
    def require(cls) -> ModuleType:
        try:
            return importlib.import_module("ray.data.llm")
        except ImportError as exc:
            raise InputError(f"a vllm judge runs ray.data.llm's vLLM engine, which cannot be imported here "
                             f"({exc}); install it on the driver and the GPU nodes: {INSTALL_RAY_LLM}",
                             field="judge") from None

    @classmethod
    def processor(cls, spec: JudgeSpec, settings: BackendSettings, placement: ClusterPlacement) -> Any:
        llm = cls.require()
        config = llm.vLLMEngineProcessorConfig(
            model_source=spec.model, concurrency=placement.replicas, batch_size=placement.batch_size,
            engine_kwargs={"enable_prefix_caching": True, "max_model_len": settings.n_ctx},
            should_continue_on_error=True,  # a failed row is recorded, never raised or scored
            runtime_env=dict(placement.runtime_env) if placement.runtime_env else None)
        return llm.build_processor(config)

    @classmethod
    def request_row(cls, key: str, request: GenerateRequest) -> dict[str, Any]:
        """Chat messages and sampling parameters; a protocol's JSON schema becomes vLLM's structured
        output (guided JSON), as the llama.cpp backend constrains its answers with a grammar."""
        params: dict[str, Any] = {"temperature": request.temperature, "max_tokens": request.max_tokens}
        if request.seed is not None:
            params["seed"] = request.seed
        if request.json_schema is not None:
            params["structured_outputs"] = {"json": request.json_schema}
        return {"key": key, "messages": [{"role": m.role, "content": m.content} for m in request.messages],
                "sampling_params": params}

    @classmethod
    def answer(cls, row: Mapping[str, Any], max_tokens: int, model: str) -> GenerateResult:
        """vLLM reports token counts, not a finish reason: a completion at ``max_tokens`` was cut."""
        completion = int(row.get("num_generated_tokens") or 0)
        return GenerateResult(text=str(row.get("generated_text") or ""),
                              finish_reason="length" if completion >= max_tokens else "stop",
                              usage=Usage(int(row.get("num_input_tokens") or 0), completion), model=model)


__all__ = ["INSTALL_RAY_LLM", "ClusterBackend", "ClusterPlacement", "VllmBackend"]
