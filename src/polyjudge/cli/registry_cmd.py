"""``polyjudge protocols`` / ``backends`` / ``statistics`` / ``aggregators`` / ``presets`` / ``readers`` /
``score-formats`` / ``span-formats`` / ``writers``.

Each lists one registry (built-ins and plugins) with every entry's options,
their types and defaults, as text, TSV (one row per option) or JSON. The
commands are the listed kinds of ``polyjudge.registry.REGISTRY_KINDS`` (through
``api.registries.LISTINGS``); this module keeps no list of them.
"""

from __future__ import annotations

import json
import textwrap

import click

from polyjudge.api.registries import LISTINGS, EntryInfo, entries
from polyjudge.cli.options import OUTPUT_FORMATS


def format_entries(items: list[EntryInfo], fmt: str) -> str:
    """The listing in ``fmt`` (text, tsv or json)."""
    if fmt == "json":
        return json.dumps([{"name": e.name, "summary": e.summary, "source": e.source,
                            "options": [{"name": o.name, "type": o.type, "default": o.default, "help": o.help}
                                        for o in e.options]} for e in items], indent=2) + "\n"
    if fmt == "tsv":
        rows = [["name", "source", "option", "type", "default", "help"]]
        for e in items:
            rows += [[e.name, e.source, o.name, o.type, o.default, o.help] for o in e.options] or \
                [[e.name, e.source, "", "", "", e.summary]]
        return "".join("\t".join(c.replace("\t", " ").replace("\n", " ") for c in r) + "\n" for r in rows)
    return "".join(_entry_text(e) for e in items)


def _entry_text(e: EntryInfo) -> str:
    head = f"{e.name}" + (f"  [{e.source}]" if e.source != "built-in" else "")
    lines = [head] + textwrap.wrap(e.summary, 96, initial_indent="  ", subsequent_indent="  ")
    for o in e.options:
        lines.append(f"    {o.name} ({o.type}, default: {o.default})")
        lines += textwrap.wrap(o.help, 92, initial_indent="        ", subsequent_indent="        ")
    return "\n".join(lines) + "\n\n"


def _listing_command(kind: str) -> click.Command:
    noun = LISTINGS[kind].noun or kind

    @click.command(name=kind, help=f"List the registered {noun} with their options, types and defaults.")
    @click.option("--format", "fmt", type=click.Choice(OUTPUT_FORMATS), default="text", show_default=True,
                  help="Output format: text, tsv, json.")
    def command(fmt: str) -> None:
        click.echo(format_entries(entries(kind), fmt), nl=False)

    return command


COMMANDS: dict[str, click.Command] = {kind: _listing_command(kind) for kind in LISTINGS}


def __getattr__(name: str) -> click.Command:
    """``polyjudge.cli.registry_cmd:score_formats`` (how cli/main.py names a command): the listing
    command of ``score-formats``; one command per listing, no second list of them here."""
    command = COMMANDS.get(name.replace("_", "-"))
    if command is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return command
