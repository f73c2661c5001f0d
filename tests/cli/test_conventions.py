"""The command-line conventions (docs/reference/conventions.md, formerly the README's), checked on every
command of the click tree.

A new command (or sub-command) that breaks one of them fails here:

* an option that names where output goes is ``-o/--out`` (hidden 0.1.0 spellings aside);
* ``--format`` is the printed output's format: text, tsv and json, text the default;
* every visible option and every command has help text.
"""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest

from polyjudge.cli.main import COMMANDS, cli

OUTPUT_FORMATS = {"text", "tsv", "json"}
# Dests of options that name an output file or folder: they must be spelled -o/--out.
OUTPUT_DESTS = {"out", "output", "out_dir", "output_dir", "out_file", "output_file"}


def _walk(command: click.Command, path: tuple[str, ...]) -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(command)
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, (path, name)
            yield from _walk(sub, (*path, name))
    else:
        yield " ".join(path), command


ALL = dict(_walk(cli, ()))


def _visible_options(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option) and not p.hidden]


def test_the_walk_sees_every_command_of_the_table():
    assert {name.split()[0] for name in ALL} == set(COMMANDS)


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_visible_option_and_the_command_have_help(name: str):
    command = ALL[name]
    assert (command.help or "").strip(), f"{name}: no help"
    missing = [p.opts for p in _visible_options(command) if not (p.help or "").strip()]
    assert not missing, f"{name}: options without help: {missing}"


@pytest.mark.parametrize("name", sorted(ALL))
def test_output_paths_are_spelled_dash_o_dash_dash_out(name: str):
    for p in _visible_options(ALL[name]):
        if p.name in OUTPUT_DESTS or "--out" in p.opts or "-o" in p.opts:
            assert {"-o", "--out"} <= set(p.opts), f"{name}: output option spelled {p.opts}"
            assert p.name == "out", f"{name}: {p.opts} fills {p.name!r}, not 'out'"


@pytest.mark.parametrize("name", sorted(ALL))
def test_format_is_text_tsv_json_with_text_the_default(name: str):
    for p in ALL[name].params:
        if isinstance(p, click.Option) and "--format" in p.opts:
            shown = set(getattr(p.type, "shown", getattr(p.type, "choices", ())))
            assert shown == OUTPUT_FORMATS, f"{name}: --format offers {sorted(shown)}"
            assert p.default == "text", f"{name}: --format defaults to {p.default!r}"
