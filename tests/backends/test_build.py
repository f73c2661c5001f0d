"""build_backends: one panel builder for every judging command."""

from __future__ import annotations

import asyncio
import json

import pytest

from polyjudge.backends import BackendSettings, GenerateRequest, JudgeSpec, Message, build_backends
from polyjudge.backends.llamacpp import LlamaCppBackend
from polyjudge.backends.openai import OpenAIBackend
from polyjudge.backends.replay import RecordingBackend, ReplayBackend
from tests.helpers.openai_server import ScriptedServer

REQ = GenerateRequest(messages=(Message("user", "rate this"),), temperature=0.0, max_tokens=20, seed=1)


def write_recording(path, model="rec-model"):
    line = {"model": model, "request": REQ.canonical(),
            "response": {"text": '{"score": 42}', "finish_reason": "stop",
                         "usage": {"prompt_tokens": 2, "completion_tokens": 3}, "latency_s": 0.1}}
    path.write_text(json.dumps(line) + "\n")
    return path


def answer_all(backends):
    async def go():
        try:
            return [await b.generate(REQ) for b in backends]
        finally:
            for b in backends:
                await b.aclose()
    return asyncio.run(go())


def test_panel_of_openai_judges_and_a_replay_judge(tmp_path, monkeypatch):
    monkeypatch.setenv("PJ_PANEL_KEY", "sk-panel")
    rec = write_recording(tmp_path / "rec.jsonl")
    settings = BackendSettings(api_key_env="PJ_PANEL_KEY", timeout=7.0)
    with ScriptedServer(lambda body: json.dumps({"score": len(body["model"])})) as srv:
        specs = [JudgeSpec.parse(f"openai:judge-a@{srv.base_url}"), JudgeSpec.parse(f"openai:jb@{srv.base_url}"),
                 JudgeSpec.parse(f"replay:{rec}")]
        backends, info = build_backends(specs, settings)
        answers = answer_all(backends)
    assert [type(b) for b in backends] == [OpenAIBackend, OpenAIBackend, ReplayBackend]
    assert [a.text for a in answers] == ['{"score": 7}', '{"score": 2}', '{"score": 42}']
    assert [r["model"] for r in srv.requests] == ["judge-a", "jb"]
    assert all(h["Authorization"] == "Bearer sk-panel" for h in srv.headers_seen)
    assert all(b._timeout.read == 7.0 for b in backends[:2])
    # the manifest's judge entries, as the judge command has always written them
    assert info == [
        {"backend": "openai", "model": "judge-a", "base_url": srv.base_url},
        {"backend": "openai", "model": "jb", "base_url": srv.base_url},
        {"backend": "replay", "model": "rec-model", "base_url": None},  # the recorded model's name
    ]
    assert all(list(d) == ["backend", "model", "base_url"] for d in info)


def test_record_wraps_every_judge(tmp_path):
    out = tmp_path / "answers.jsonl"
    with ScriptedServer(lambda body: "fine") as srv:
        backends, info = build_backends([JudgeSpec("openai", "m1", srv.base_url),
                                         JudgeSpec("openai", "m2", srv.base_url)], BackendSettings(), record=out)
        answer_all(backends)
    assert all(isinstance(b, RecordingBackend) for b in backends)
    assert [b.model for b in backends] == ["m1", "m2"]
    assert [json.loads(line)["model"] for line in out.read_text().splitlines()] == ["m1", "m2"]
    assert [d["model"] for d in info] == ["m1", "m2"]


def test_a_bad_spec_fails_before_the_recording_is_opened(tmp_path):
    out = tmp_path / "answers.jsonl"
    with pytest.raises(ValueError, match="the replay backend needs a recording"):
        build_backends([JudgeSpec("openai", "m", "http://127.0.0.1:9/v1"), JudgeSpec("replay")],
                       BackendSettings(), record=out)
    assert not out.exists()
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        build_backends([JudgeSpec("nope")], BackendSettings())
    assert build_backends([], BackendSettings()) == ([], [])


def test_llamacpp_entry_names_the_model_file(tmp_path):
    # The manifest hook, without loading a model: any backend with a model_path.
    # It also names what the answers depend on (issue 43: the shared response cache keeps them under it).
    import hashlib

    (tmp_path / "tiny.gguf").write_bytes(b"GGUF weights")

    class Loaded:
        model, model_path, n_ctx = "tiny", tmp_path / "tiny.gguf", 2048
    fields = LlamaCppBackend.manifest_fields(Loaded())
    assert fields.pop("model_file") == str(tmp_path / "tiny.gguf")
    identity = fields.pop("answers_identity")
    assert identity.startswith(f"llamacpp sha256:{hashlib.sha256(b'GGUF weights').hexdigest()} n_ctx=2048 slots=1 ")
    assert fields == {}
    assert OpenAIBackend.manifest_fields(OpenAIBackend("m")) == {}
