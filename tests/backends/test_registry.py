"""The backend registry: names, judge specs, the old make_backend call and plugins."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import ClassVar

import pytest

from polyjudge.backends import (
    BACKENDS,
    Backend,
    BackendSettings,
    GenerateRequest,
    GenerateResult,
    JudgeSpec,
    Message,
    RegisteredBackend,
    UnknownBackendError,
    make_backend,
    register_backend,
)
from polyjudge.backends.llamacpp import LlamaCppBackend
from polyjudge.backends.openai import OpenAIBackend
from polyjudge.backends.replay import ReplayBackend
from polyjudge.registry import UnknownNameError


@pytest.fixture
def scratch_registry(monkeypatch):
    """Backends registered inside a test disappear after it."""
    BACKENDS.names()  # load the built-ins first, so the copy holds them
    monkeypatch.setattr(BACKENDS, "_entries", dict(BACKENDS._entries))


def test_builtin_backends_are_registered_by_name():
    modules = set(BACKENDS.builtin_modules())
    builtins = [name for name, cls in BACKENDS.items() if cls.__module__ in modules]
    assert {"openai", "anthropic", "llamacpp", "replay"} <= set(builtins)  # discovered, not listed
    assert all(m.startswith("polyjudge.backends.") for m in modules)
    assert all(BACKENDS.get(name).name == name for name in builtins)
    assert BACKENDS.get("openai") is OpenAIBackend
    assert BACKENDS.get("llamacpp") is LlamaCppBackend
    assert BACKENDS.get("replay") is ReplayBackend
    assert all(summary for summary in BACKENDS.describe().values())


def test_unknown_backend_lists_the_valid_names():
    with pytest.raises(ValueError) as exc:
        JudgeSpec.parse("gemini:pro")
    names = ", ".join(sorted(BACKENDS.names()))
    assert str(exc.value) == f"unknown backend 'gemini' in judge 'gemini:pro'; use one of {names}"
    # one error type for both ways of catching it
    assert isinstance(exc.value, UnknownBackendError) and isinstance(exc.value, UnknownNameError)
    with pytest.raises(KeyError, match=f"use one of {names}"):
        make_backend(JudgeSpec("gemini", "pro"))


def test_parse_splits_the_endpoint_only_for_openai():
    assert JudgeSpec.parse("openai:gpt-4o@http://h:8000/v1") == JudgeSpec("openai", "gpt-4o", "http://h:8000/v1")
    assert JudgeSpec.parse("openai:gpt-4o") == JudgeSpec("openai", "gpt-4o", None)
    # the first '@' ends the model: a URL may carry credentials of its own
    assert JudgeSpec.parse("openai:a@http://u:p@h/v1") == JudgeSpec("openai", "a", "http://u:p@h/v1")
    assert JudgeSpec.parse("replay:runs/a@b.jsonl") == JudgeSpec("replay", "runs/a@b.jsonl", None)
    assert JudgeSpec.parse("llamacpp") == JudgeSpec("llamacpp", None, None)
    assert JudgeSpec.parse("llamacpp:") == JudgeSpec("llamacpp", None, None)
    assert JudgeSpec.parse("openai:m@http://h/v1").describe() == {"backend": "openai", "model": "m",
                                                                  "base_url": "http://h/v1"}


@pytest.mark.parametrize("spec,message", [
    (JudgeSpec("openai"), "the openai backend needs --model"),
    (JudgeSpec.parse("openai:@http://h/v1"), "the openai backend needs --model"),
    (JudgeSpec("replay"), "the replay backend needs a recording: replay:FILE.jsonl"),
])
def test_incomplete_specs_say_what_is_missing(spec, message):
    with pytest.raises(ValueError, match=message):
        make_backend(spec, BackendSettings())


def test_settings_and_the_old_keyword_form_build_the_same_backend():
    spec = JudgeSpec.parse("openai:m@http://127.0.0.1:9/v1")
    new = make_backend(spec, BackendSettings(api_key_env="PJ_KEY", timeout=5.0))
    old = make_backend(spec, api_key_env="PJ_KEY", timeout=5.0, n_ctx=1024)
    for b in (new, old):
        assert isinstance(b, OpenAIBackend)
        assert (b.model, b.base_url, b.api_key_env, b._timeout.read) == ("m", "http://127.0.0.1:9/v1", "PJ_KEY", 5.0)
    default = make_backend(JudgeSpec("openai", "m"))
    assert isinstance(default, OpenAIBackend)
    assert (default.base_url, default.api_key_env) == ("https://api.openai.com/v1", "OPENAI_API_KEY")


def test_a_backend_registered_in_a_test_works_like_a_builtin(scratch_registry):
    @register_backend()
    class EchoBackend(RegisteredBackend):
        """Repeats the last message: echo:PREFIX."""

        name: ClassVar[str] = "echo"

        def __init__(self, prefix: str, timeout: float) -> None:
            self.model, self.prefix, self.timeout = f"echo-{prefix}", prefix, timeout

        @classmethod
        def from_spec(cls, spec: JudgeSpec, settings: BackendSettings) -> Backend:
            return cls(spec.model or "", settings.timeout)

        async def generate(self, request: GenerateRequest) -> GenerateResult:
            return GenerateResult(f"{self.prefix}{request.messages[-1].content}", "stop", model=self.model)

        async def aclose(self) -> None:
            return None

    spec = JudgeSpec.parse("echo:>> ")
    assert spec == JudgeSpec("echo", ">> ", None)
    backend = make_backend(spec, BackendSettings(timeout=3.0))
    assert isinstance(backend, EchoBackend) and isinstance(backend, Backend) and backend.timeout == 3.0
    answer = asyncio.run(backend.generate(GenerateRequest(messages=(Message("user", "hi"),))))
    assert answer.text == ">> hi"
    assert "echo" in BACKENDS.names()
    assert BACKENDS.describe()["echo"] == "Repeats the last message: echo:PREFIX."


def test_a_missing_gguf_file_is_a_runtime_error():
    pytest.importorskip("xllamacpp")
    with pytest.raises(RuntimeError, match="model file not found"):
        make_backend(JudgeSpec.parse("llamacpp:/nonexistent/model.gguf"))


def test_listing_the_backends_loads_neither_aiohttp_nor_llama_cpp():
    code = ("import sys\n"
            "from polyjudge.backends import BACKENDS, JudgeSpec\n"
            "assert 'polyjudge.backends.openai' not in sys.modules  # loaded on first use only\n"
            "BACKENDS.help_text(); JudgeSpec.parse('openai:m@http://u/v1'); JudgeSpec.parse('llamacpp')\n"
            "print(sorted(m for m in ('aiohttp', 'httpx', 'xllamacpp') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_judge_backend_resolves_without_importing_every_backend_module():
    # Looking a backend up imports the modules that can register its name, not every module of the package.
    code = ("import sys\nfrom polyjudge.backends.registry import BACKENDS, JudgeSpec\n"
            "assert JudgeSpec.parse('openai:m@http://127.0.0.1:9/v1').backend == 'openai'\n"
            "assert not BACKENDS._loaded\nprint('\\n'.join(sys.modules))")
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True).stdout.split())
    assert "polyjudge.backends.openai" in loaded
    assert not {"polyjudge.backends.llamacpp", "polyjudge.backends.vllm", "polyjudge.backends.anthropic_batch"} & loaded
