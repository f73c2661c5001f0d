"""Judge-spec options (``MODEL?name=value,flag``) and settings shared by a panel."""

import pytest

from polyjudge.backends import BackendSettings, JudgeSpec, make_backend
from polyjudge.backends.openai import OpenAIBackend
from polyjudge.backends.registry import DEFAULT_API_KEY_ENV


def test_options_sit_between_the_model_and_the_endpoint():
    spec = JudgeSpec.parse("openai:o4-mini?reasoning,structured=none,key_env=MY_KEY@http://h:1/v1")
    assert (spec.model, spec.base_url) == ("o4-mini", "http://h:1/v1")
    assert spec.options == (("key_env", "MY_KEY"), ("reasoning", "true"), ("structured", "none"))
    assert spec.flag("reasoning") is True and spec.option("structured") == "none" and spec.option("nope") is None
    assert spec.describe() == {"backend": "openai", "model": "o4-mini", "base_url": "http://h:1/v1",
                               "options": {"key_env": "MY_KEY", "reasoning": "true", "structured": "none"}}
    backend = make_backend(spec)
    assert isinstance(backend, OpenAIBackend)
    assert (backend.api_key_env, backend.structured, backend.reasoning) == ("MY_KEY", "none", True)
    assert JudgeSpec.parse("openai:o3?reasoning=false").flag("reasoning") is False


def test_unknown_options_and_bad_values_are_refused_with_the_valid_ones():
    with pytest.raises(ValueError) as exc:
        JudgeSpec.parse("openai:m?temprature=0")
    assert str(exc.value) == ("unknown option 'temprature' in judge 'openai:m?temprature=0'; the openai backend "
                              "takes key_env, per_server, reasoning, structured")
    with pytest.raises(ValueError, match="takes true or false"):
        make_backend(JudgeSpec.parse("openai:m?reasoning=maybe"))
    with pytest.raises(ValueError, match="structured must be one of auto, json_schema, none"):
        make_backend(JudgeSpec.parse("openai:m?structured=xml"))


def test_backends_without_options_keep_question_marks_in_their_target(tmp_path):
    assert JudgeSpec.parse("replay:runs/what?.jsonl") == JudgeSpec("replay", "runs/what?.jsonl", None)
    assert JudgeSpec.parse("llamacpp:/models/a?b.gguf").model == "/models/a?b.gguf"


def test_specs_without_options_compare_and_describe_as_before():
    assert JudgeSpec.parse("openai:m@http://u/v1") == JudgeSpec("openai", "m", "http://u/v1")
    assert list(JudgeSpec.parse("openai:m@http://u/v1").describe()) == ["backend", "model", "base_url"]
    assert repr(JudgeSpec.parse("openai:m@http://u:pw12345@h/v1")) == (
        "JudgeSpec(backend='openai', model='m', base_url='http://[REDACTED]@h/v1')")


def test_each_backend_reads_its_own_key_variable_unless_one_was_chosen():
    assert BackendSettings().key_env_for("ANTHROPIC_API_KEY") == "ANTHROPIC_API_KEY"
    assert BackendSettings(api_key_env="X_KEY").key_env_for("ANTHROPIC_API_KEY") == "X_KEY"
    assert BackendSettings().key_env_for(DEFAULT_API_KEY_ENV) == "OPENAI_API_KEY"


def test_settings_carry_the_per_server_cap_to_pools():
    pool = make_backend(JudgeSpec.parse("openai:m@http://a:1/v1,http://b:2/v1"), BackendSettings(max_per_server=5))
    assert pool.max_per_server == 5
    pool = make_backend(JudgeSpec.parse("openai:m?per_server=2@http://a:1/v1,http://b:2/v1"),
                        BackendSettings(max_per_server=5))
    assert pool.max_per_server == 2
