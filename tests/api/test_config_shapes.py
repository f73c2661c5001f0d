"""The API's configs take Python's natural shapes (a list where a tuple is declared, a sequence of
paths or pairs where a mapping is) or raise TypeError naming the field when they are built, and the
API's errors name its own settings (``lp``, ``exclude_systems``), which the command line shows as flags."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import polyjudge.api as api
from polyjudge.api import JudgeConfig, MetaEvalConfig
from polyjudge.api.inputs import InputSpec, read_input
from polyjudge.data.errors import InputError
from tests.helpers.cli import cli

CONFIGS = sorted({getattr(api, n) for n in dir(api) if n.endswith(("Config", "Spec"))
                  and dataclasses.is_dataclass(getattr(api, n))}, key=lambda c: c.__name__)


def test_metrics_given_as_a_sequence_of_paths_are_named_as_on_the_command_line():
    config = MetaEvalConfig(metrics=("runs/da", "scores/comet.seg.score"), lps=["en-de"])
    assert config.metrics == {"da": Path("runs/da"), "comet": Path("scores/comet.seg.score")}
    assert config.lps == ("en-de",)
    assert MetaEvalConfig(metrics=[("mine", "runs/da")]).metrics == {"mine": "runs/da"}


def test_a_metric_named_twice_is_refused_at_construction():
    with pytest.raises(TypeError, match=r"MetaEvalConfig\.metrics: the name 'da' is given twice"):
        MetaEvalConfig(metrics=("a/da", "b/da"))


def test_lists_become_tuples_and_a_string_for_a_sequence_is_refused_naming_the_field():
    assert JudgeConfig(judges=["openai:m", "openai:n"]).judges == ("openai:m", "openai:n")
    # one judge as its spec string is that judge (issue 45: it was a TypeError); other sequences refuse text
    assert JudgeConfig(judges="openai:m").judges == ("openai:m",)
    with pytest.raises(TypeError, match=r"JudgeConfig\.judges takes a sequence"):
        JudgeConfig(judges=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"MetaEvalConfig\.human takes a path"):
        MetaEvalConfig(human=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"InputSpec\.systems takes a sequence"):
        InputSpec("x.jsonl", systems="A")


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.__name__)
def test_every_api_config_checks_its_shapes_at_construction(config):
    """Each config of polyjudge.api normalises in __post_init__ (a new config without it fails here)."""
    assert "__post_init__" in vars(config), config.__name__


def test_errors_of_the_api_name_its_settings_and_the_cli_shows_flags(tmp_path, capsys):
    path = tmp_path / "in.jsonl"
    path.write_text('{"src": "a", "tgt": "b", "system": "A", "src_lang": "en", "tgt_lang": "de"}\n')
    with pytest.raises(InputError) as exc:
        read_input(InputSpec(str(path), exclude_systems=("B",)))
    assert exc.value.field == "exclude_systems" and "--" not in str(exc.value)
    with pytest.raises(InputError) as exc:
        read_input(InputSpec(str(path), lp="ende"))
    assert exc.value.field == "lp" and "--" not in str(exc.value)
    assert cli("judge", path, "--exclude-systems", "B", "--dry-run", "--judge", "openai:m@http://127.0.0.1:9/v1") == 2
    assert "field '--exclude-systems'" in capsys.readouterr().err
