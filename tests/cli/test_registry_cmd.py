"""``polyjudge protocols|backends|statistics|aggregators|presets``: every registry entry with its options."""

from __future__ import annotations

import dataclasses
import json

import pytest
from click.testing import CliRunner

from polyjudge.aggregate.runs import AGGREGATORS
from polyjudge.backends.registry import BACKENDS
from polyjudge.cli.main import cli
from polyjudge.data.readers import READERS
from polyjudge.metaeval.readers import SCORE_FORMAT_REGISTRY
from polyjudge.metaeval.spans.readers import SPAN_FORMAT_REGISTRY
from polyjudge.metaeval.statistics import STATISTICS
from polyjudge.metaeval.tasks import PRESETS
from polyjudge.protocols.registry import PROTOCOLS
from polyjudge.rundir.writers import WRITERS

REGISTRIES = {"protocols": PROTOCOLS, "backends": BACKENDS, "statistics": STATISTICS,
              "aggregators": AGGREGATORS, "presets": PRESETS, "readers": READERS,
              "score-formats": SCORE_FORMAT_REGISTRY, "span-formats": SPAN_FORMAT_REGISTRY, "writers": WRITERS}


def _run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.output


@pytest.mark.parametrize("kind", sorted(REGISTRIES))
def test_every_entry_is_listed_in_registry_order(kind):
    code, out = _run(kind, "--format", "json")
    assert code == 0, out
    listed = json.loads(out)
    assert [e["name"] for e in listed] == REGISTRIES[kind].names()
    assert all(e["summary"] for e in listed)


def test_protocol_options_match_the_options_dataclass():
    code, out = _run("protocols", "--format", "json")
    assert code == 0
    for entry in json.loads(out):
        fields = [f for f in dataclasses.fields(PROTOCOLS.get(entry["name"]).options_type) if f.init]
        assert [o["name"] for o in entry["options"]] == [f.name for f in fields], entry["name"]
        for o, f in zip(entry["options"], fields, strict=True):
            if f.default is not dataclasses.MISSING and isinstance(f.default, int | float | str) \
                    and not isinstance(f.default, bool):
                assert o["default"] == str(f.default), (entry["name"], o)


def test_tsv_has_one_row_per_option_and_text_names_defaults():
    code, out = _run("protocols", "--format", "tsv")
    rows = [line.split("\t") for line in out.splitlines()]
    assert code == 0 and rows[0] == ["name", "source", "option", "type", "default", "help"]
    assert all(len(r) == 6 for r in rows)
    assert ["da", "built-in", "score_mode", "sample|expected", "sample"] == rows[1][:5]
    code, text = _run("protocols")
    assert "    vote_threshold (float, default: 0.5)" in text
    code, text = _run("backends", "--format", "tsv")
    assert any(r.split("\t")[:3] == ["openai", "built-in", "key_env"] for r in text.splitlines())


def test_a_bad_format_is_refused_with_exit_2():
    code, out = _run("statistics", "--format", "xml")
    assert code == 2 and "xml" in out


@pytest.mark.parametrize("judges", [("openai:m@http://127.0.0.1:9/v1",), None], ids=["api judge", "embedded judge"])
def test_protocol_listing_states_the_option_values_runs_use(judges):
    """`polyjudge protocols` said da's score_mode default is `sample` while runs with the default (embedded)
    judge record `expected`: the listing now states both, from the table the engine applies."""
    from polyjudge.api import JudgeConfig
    from polyjudge.data.errors import InputError
    from polyjudge.engine.session import build_protocol

    code, out = _run("protocols", "--format", "json")
    assert code == 0
    for entry in json.loads(out):
        config = JudgeConfig(protocol=entry["name"]) if judges is None else \
            JudgeConfig(protocol=entry["name"], judges=judges)
        try:
            used = build_protocol(config)
        except InputError:  # a protocol that needs an option of the user's (a task file)
            continue
        for option in entry["options"]:
            value = getattr(used, option["name"], None)
            if not isinstance(value, (str, int, float)):  # scalars: composite options render their own way
                continue
            shown = ("true" if value else "false") if isinstance(value, bool) else str(value)
            note = "default with the embedded judge, the default --judge: "
            if judges is None and note in option["help"]:
                assert option["help"].split(note)[1].rstrip(")") == shown, (entry["name"], option)
            else:
                assert option["default"] == shown, (entry["name"], option, shown)
