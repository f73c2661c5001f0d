"""Backends describe themselves: the engine reads a backend class's capabilities, never its name."""

from __future__ import annotations

import json
from typing import ClassVar

import pytest

from polyjudge.api import JudgeConfig, estimate, judge
from polyjudge.backends import (
    BACKENDS,
    Backend,
    BackendSettings,
    GenerateRequest,
    GenerateResult,
    JudgeSpec,
    RegisteredBackend,
    register_backend,
)
from polyjudge.backends.anthropic import AnthropicBackend
from polyjudge.backends.llamacpp import LlamaCppBackend
from polyjudge.backends.openai import OpenAIBackend
from polyjudge.backends.registry import Capabilities
from polyjudge.backends.replay import ReplayBackend
from polyjudge.data.records import Item

ITEMS = [Item(src=f"source {i}", tgt=f"target {i}", src_lang="en", tgt_lang="de", doc_id="d", seg_id=str(i),
              system="S") for i in range(3)]


@pytest.fixture
def scratch_registry(monkeypatch):
    BACKENDS.names()
    monkeypatch.setattr(BACKENDS, "_entries", dict(BACKENDS._entries))


def test_builtin_backends_declare_what_they_can_do():
    assert OpenAIBackend.capabilities == Capabilities(batch_formats=("openai",), token_probabilities=True,
                                                      samples_per_request=True)
    assert AnthropicBackend.capabilities == Capabilities(seedless=True)  # the Messages API takes no seed
    assert LlamaCppBackend.capabilities.local and not LlamaCppBackend.capabilities.samples_per_request
    assert ReplayBackend.capabilities.local
    assert LlamaCppBackend.context_tokens(BackendSettings(n_ctx=1234)) == 1234
    assert OpenAIBackend.context_tokens(BackendSettings(n_ctx=1234)) is None


def _register_free_tiny_judge(requests: list[GenerateRequest]) -> None:
    @register_backend()
    class TinyLocal(RegisteredBackend):
        """A local judge with a tiny context: tiny."""

        name: ClassVar[str] = "tiny"
        capabilities: ClassVar[Capabilities] = Capabilities(local=True, context_tokens=40)

        def __init__(self) -> None:
            self.model = "tiny-model"

        @classmethod
        def from_spec(cls, spec: JudgeSpec, settings: BackendSettings) -> Backend:
            return cls()

        async def generate(self, request: GenerateRequest) -> GenerateResult:
            requests.append(request)
            return GenerateResult(json.dumps({"score": 50}), "stop")

        async def aclose(self) -> None:
            return None


def test_a_plugin_backend_that_says_local_is_free_and_its_context_is_checked(scratch_registry, caplog):
    sent: list[GenerateRequest] = []
    _register_free_tiny_judge(sent)
    config = JudgeConfig(judges=("tiny",), samples_per_request=4, runs=4, max_cost=0.01)
    found = estimate(ITEMS, config)
    # Free: a cost of 0 rather than "unpriced", and --max-cost needs no price for it.
    assert found.cost_usd == 0.0 and found.unpriced == ()
    # Not able to answer several choices: one request per run, whatever --samples-per-request says.
    assert found.calls == found.requests_to_send == 12
    # Its declared context (40 tokens) is smaller than any prompt plus the completion limit.
    assert len(found.oversized) == 3 and {o.context_tokens for o in found.oversized} == {40}
    result = judge(ITEMS, config)
    assert len(sent) == 12 and all(r.n == 1 for r in sent)
    assert result.manifest.cost_usd == 0.0


def test_a_judge_that_can_be_named_without_building_it_is_built_on_its_first_request(scratch_registry, tmp_path):
    builds: list[str] = []

    @register_backend()
    class Costly(RegisteredBackend):
        """A judge that is slow to build: costly:NAME."""

        name: ClassVar[str] = "costly"
        capabilities: ClassVar[Capabilities] = Capabilities(local=True)

        def __init__(self, model: str) -> None:
            builds.append(model)
            self.model = model

        @classmethod
        def from_spec(cls, spec: JudgeSpec, settings: BackendSettings) -> Backend:
            return cls(spec.model or "c")

        @classmethod
        def deferred(cls, spec: JudgeSpec, settings: BackendSettings) -> dict[str, object] | None:
            return {"model": spec.model or "c", "weights": "w.bin"}

        async def generate(self, request: GenerateRequest) -> GenerateResult:
            return GenerateResult(json.dumps({"score": 70}), "stop")

        async def aclose(self) -> None:
            return None

    config = JudgeConfig(judges=("costly:c1",))
    assert estimate(ITEMS, config).requests_to_send == 3 and builds == []  # a dry run builds nothing
    first = judge(ITEMS, config, out=tmp_path / "run")
    assert builds == ["c1"] and first.manifest.judges[0]["weights"] == "w.bin"
    again = judge(ITEMS, config, out=tmp_path / "run")  # nothing left to send: nothing built
    assert builds == ["c1"] and again.manifest.counts["from_store"] == 3
