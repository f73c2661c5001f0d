"""``polyjudge.cli.specs``: a command's flags declared once, as the fields of one frozen dataclass."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

import click
import pytest
from click.testing import CliRunner

from polyjudge.cli.main import cli
from polyjudge.cli.options import SEED, format_option, legacy, out_option
from polyjudge.cli.specs import argument, build_spec, group, option, shared, takes


def _pair(kw: dict) -> tuple[int, int]:
    """A group: two flags become one value (and leave the keywords)."""
    return kw.pop("low"), kw.pop("high")


def _pair_options(fn):
    fn = click.option("--high", type=int, default=9)(fn)
    return click.option("--low", type=int, default=1)(fn)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToyFlags:
    name: str = argument("name")
    count: int = option("--count", "-n", type=click.IntRange(1, 5), default=2, show_default=True, help="How many.")
    seed: int = option("--seed", type=SEED, default=0)
    tags: tuple[str, ...] = option("--tag", "tags", multiple=True, help="Repeatable.")
    loud: bool = option("--loud", is_flag=True)
    label: str | None = option("--label", spellings=[legacy("-L", dest="label", use="--label")])
    fmt: str = shared(format_option())
    out: str | None = shared(out_option("Where."))
    bounds: tuple[int, int] = group(_pair_options, _pair)


def toy_command() -> tuple[click.Command, list[ToyFlags]]:
    seen: list[ToyFlags] = []

    @click.command("toy")
    @takes(ToyFlags)
    def toy(flags: ToyFlags) -> None:
        """A toy command."""
        seen.append(flags)
        click.echo(f"{flags.name} x{flags.count}")

    return toy, seen


def test_the_command_gets_one_frozen_instance_with_the_parsed_values():
    command, seen = toy_command()
    res = CliRunner().invoke(command, ["ada", "-n", "3", "--tag", "a", "--tag", "b", "--loud", "--format", "json",
                                       "--low", "4"])
    assert res.exit_code == 0, res.output
    assert res.output == "ada x3\n"
    [flags] = seen
    assert flags == ToyFlags(name="ada", count=3, tags=("a", "b"), loud=True, fmt="json", out=None, bounds=(4, 9))
    with pytest.raises(dataclasses.FrozenInstanceError):
        flags.count = 4  # type: ignore[misc]


def test_a_flag_not_given_has_its_field_default():
    """The dataclass default is click's default (multiple: (), flag: False, else None or the given one)."""
    command, seen = toy_command()
    assert CliRunner().invoke(command, ["ada"]).exit_code == 0
    assert seen == [ToyFlags(name="ada", fmt="text", out=None, bounds=(1, 9))]
    assert (seen[0].tags, seen[0].loud, seen[0].label, seen[0].seed) == ((), False, None, 0)


@pytest.mark.parametrize(("args", "flag"), [(["-n", "9"], "'--count' / '-n'"), (["--seed", "-1"], "'--seed'"),
                                            (["--low", "x"], "'--low'"), (["--format", "xml"], "'--format'")])
def test_a_bad_value_exits_2_naming_the_flag(args, flag):
    command, seen = toy_command()
    res = CliRunner().invoke(command, ["ada", *args])
    assert res.exit_code == 2
    assert f"Invalid value for {flag}" in res.output
    assert "Traceback" not in res.output and not seen


def test_help_lists_the_fields_in_order_with_their_help():
    command, _ = toy_command()
    text = CliRunner().invoke(command, ["--help"]).output
    shown = [word.rstrip(",") for line in text.splitlines() if line.lstrip().startswith("-")
             for word in line.split()[:2] if word.startswith("--")]
    assert shown == ["--count", "--seed", "--tag", "--loud", "--label", "--format", "--out", "--low", "--high",
                     "--help"]
    assert "How many.  [default: 2; 1<=x<=5]" in text and "-L" not in text  # the old spelling stays hidden


def test_a_hidden_old_spelling_fills_its_field_with_a_warning():
    command, seen = toy_command()
    res = CliRunner().invoke(command, ["ada", "-L", "x"])
    assert res.exit_code == 0, res.output
    assert seen[0].label == "x" and "deprecated" in res.output


def test_every_field_needs_a_flag_and_the_class_must_be_frozen():
    @dataclass(frozen=True, kw_only=True)
    class Missing:
        count: int = option("--count", default=1)
        other: int = 3

    with pytest.raises(TypeError, match=r"Missing\.other declares no flag"):
        takes(Missing)

    @dataclass(kw_only=True)
    class Thawed:
        count: int = option("--count", default=1)

    with pytest.raises(TypeError, match="not a frozen dataclass"):
        takes(Thawed)


def test_a_flag_without_a_field_is_refused():
    @dataclass(frozen=True, kw_only=True)
    class One:
        count: int = option("--count", default=1)

    with pytest.raises(TypeError, match="no field for the flag value.s. stray"):
        build_spec(One, {"count": 1, "stray": 2})

    @click.command()
    @click.option("--stray", default=0)
    @takes(One)
    def cmd(flags: One) -> None:
        """Declares a flag its spec does not know."""

    res = CliRunner().invoke(cmd, [])
    assert isinstance(res.exception, TypeError)


# --------------------------------------------------------------------------- the real commands


def invoke(*args):
    return CliRunner().invoke(cli, list(args))


def test_simulate_bad_number_exits_2_naming_the_flag():
    res = invoke("simulate", "--items", "many")
    assert res.exit_code == 2 and "Invalid value for '--items'" in res.output and "Traceback" not in res.output


def test_span_f1_threshold_out_of_range_exits_2_naming_the_flag(tmp_path):
    gold = tmp_path / "gold.tsv"
    gold.write_text("x\n", encoding="utf-8")
    res = invoke("span-f1", "--gold", str(gold), "--pred", str(gold), "--vote-threshold", "0")
    assert res.exit_code == 2 and "Invalid value for '--vote-threshold'" in res.output


def test_pairwise_judge_group_bad_value_exits_2_naming_the_flag(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"src": "a", "tgt": "b", "system": "s"}) + "\n", encoding="utf-8")
    res = invoke("pairwise", str(src), "-o", str(tmp_path / "out"), "--concurrency", "0")
    assert res.exit_code == 2 and "Invalid value for '--concurrency' / '-c'" in res.output
    assert not (tmp_path / "out").exists()


def test_simulate_runs_from_its_flags(tmp_path):
    """A small simulation through the spec gives the same table as the API with the same settings
    (the CLI's selection effects default to 1, the API's to 0)."""
    from polyjudge.api import SimConfig, simulate

    res = invoke("simulate", "--items", "20", "--judges", "4", "--seeds", "2", "--tau", "0.4,0.6", "--format", "tsv")
    assert res.exit_code == 0, res.output
    api = simulate([SimConfig(n_items=20, n_judges=4, gamma_human=1.0, gamma_judge=1.0, taus=(0.4, 0.6))], seeds=2)
    assert res.stdout == api.to_tsv()
