"""The vllm backend: registered and listed with its capabilities, never built in this process."""

from __future__ import annotations

import pytest

from polyjudge.api import InputError, JudgeConfig, judge
from polyjudge.api.registries import entries
from polyjudge.backends import BackendSettings, JudgeSpec, backend_class
from polyjudge.backends.registry import Capabilities
from polyjudge.backends.vllm import ClusterBackend, VllmBackend
from polyjudge.data.chat import GenerateRequest, Message
from polyjudge.data.records import Item

ITEMS = [Item(src="Hallo", tgt="Hello", src_lang="de", tgt_lang="en", doc_id="d", seg_id="1", system="S")]


def test_vllm_is_a_registered_backend_that_says_it_needs_a_gpu_cluster():
    cls = backend_class("vllm")
    assert cls is VllmBackend and issubclass(cls, ClusterBackend)
    assert cls.capabilities == Capabilities(local=True, gpu_cluster_only=True)
    listed = {e.name: e for e in entries("backends")}["vllm"]
    shown = {o.name: o.default for o in listed.options}
    assert shown == {"capability:local": "true", "capability:gpu_cluster_only": "true"}
    assert "--executor ray" in listed.summary


def test_a_vllm_judge_is_named_without_building_and_never_built_here():
    spec = JudgeSpec.parse("vllm:Qwen/Qwen2.5-7B-Instruct")
    assert (spec.backend, spec.model) == ("vllm", "Qwen/Qwen2.5-7B-Instruct")
    assert VllmBackend.deferred(spec, BackendSettings()) == {"model": "Qwen/Qwen2.5-7B-Instruct"}
    with pytest.raises(ValueError, match="needs a model"):
        VllmBackend.deferred(JudgeSpec("vllm"), BackendSettings())
    with pytest.raises(ValueError, match="--executor ray"):
        VllmBackend.from_spec(spec, BackendSettings())


def test_a_vllm_judge_with_the_local_executor_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(InputError, match="runs only on a Ray cluster with GPU nodes; judge with --executor ray"):
        judge(ITEMS, JudgeConfig(judges=("vllm:Qwen/Qwen2.5-7B-Instruct",)), out=tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_rows_carry_the_request_and_an_output_row_becomes_an_answer():
    request = GenerateRequest((Message("system", "be brief"), Message("user", "rate")), temperature=0.5,
                              max_tokens=8, seed=3, json_schema={"type": "object"})
    row = VllmBackend.request_row("k1", request)
    assert row == {"key": "k1", "messages": [{"role": "system", "content": "be brief"},
                                             {"role": "user", "content": "rate"}],
                   "sampling_params": {"temperature": 0.5, "max_tokens": 8, "seed": 3,
                                       "structured_outputs": {"json": {"type": "object"}}}}
    assert "seed" not in VllmBackend.request_row("k", GenerateRequest((Message("user", "x"),)))["sampling_params"]
    cut = VllmBackend.answer({"generated_text": "{", "num_generated_tokens": 8, "num_input_tokens": 9}, 8, "m")
    assert (cut.text, cut.finish_reason, cut.usage.prompt_tokens, cut.model) == ("{", "length", 9, "m")
    assert VllmBackend.row_error({"__inference_error__": "CUDA out of memory"}) == "CUDA out of memory"
    assert VllmBackend.row_error({"__inference_error__": None, "generated_text": "x"}) is None
