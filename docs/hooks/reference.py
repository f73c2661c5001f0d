"""MkDocs hook: the command reference from the click tree and the API reference from ``polyjudge.api``.

A page holding ``<!-- polyjudge:cli -->`` gets every command, sub-command, argument and option of
``polyjudge`` (the lazy group's ``COMMANDS`` table, each command loaded), with its help text as
``--help`` prints it; a page holding ``<!-- polyjudge:api -->`` gets one mkdocstrings entry per public
name of ``polyjudge.api`` (its ``_HOMES`` table), grouped by the module that defines it. Both are made at
build time, so the site never lists a command, option or function that is not there, nor misses one.
"""

from __future__ import annotations

import html
import inspect
from collections.abc import Iterator
from typing import Any

import click

CLI_MARKER = "<!-- polyjudge:cli -->"
API_MARKER = "<!-- polyjudge:api -->"

# Characters Markdown would read as markup inside help text: written as entities so the text shows as is.
_ENTITIES = {"*": "&#42;", "_": "&#95;", "[": "&#91;", "]": "&#93;", "`": "&#96;", "|": "&#124;", "\\": "&#92;"}


def _text(value: str) -> str:
    escaped = html.escape(value, quote=False)
    return "".join(_ENTITIES.get(ch, ch) for ch in escaped)


def anchor(path: tuple[str, ...]) -> str:
    """The heading id of a command (``judge``, ``cache-stats``): the test looks options up by it."""
    return "-".join(path) if path else "polyjudge"


def walk(command: click.Command, path: tuple[str, ...] = (),
         parent: click.Context | None = None) -> Iterator[tuple[tuple[str, ...], click.Command, click.Context]]:
    """Every command of the tree, depth first, with its path of names (the root's is empty) and a context
    made as click makes it when the command runs (so ``-h`` and the other inherited settings show)."""
    name = path[-1] if path else "polyjudge"
    ctx = click.Context(command, info_name=name, parent=parent, **command.context_settings)
    yield path, command, ctx
    if isinstance(command, click.Group):
        for sub_name in command.list_commands(ctx):
            sub = command.get_command(ctx, sub_name)
            if sub is not None:
                yield from walk(sub, (*path, sub_name), ctx)


def _option_row(param: click.Parameter, ctx: click.Context) -> str:
    if isinstance(param, click.Option) and param.hidden:
        names = ", ".join(f"<code>{_text(o)}</code>" for o in (*param.opts, *param.secondary_opts))
        return f"| {names} | deprecated spelling, still accepted with a warning |"
    record = param.get_help_record(ctx)
    if record is None:  # pragma: no cover - click gives every visible option one
        return ""
    decl, help_text = record
    return f"| <code>{_text(decl)}</code> | {_text(help_text)} |"


def command_markdown(path: tuple[str, ...], command: click.Command, ctx: click.Context) -> str:
    """One command's section: heading, usage, help and a table of its options."""
    level = "#" * min(2 + max(len(path) - 1, 0), 4)
    lines = [f"{level} {' '.join(('polyjudge', *path))} {{ #{anchor(path)} }}", "",
             "```text", " ".join([ctx.command_path, *command.collect_usage_pieces(ctx)]), "```", ""]
    if command.help:
        text = inspect.cleandoc(click.unstyle(command.help))
        lines += ["```text", "\n".join(ln for ln in text.splitlines() if ln.strip() != "\b"), "```", ""]
    if isinstance(command, click.Group):
        ctx_names = command.list_commands(ctx)
        links = ", ".join(f"[`{name}`](#{anchor((*path, name))})" for name in ctx_names)
        lines += [f"Sub-commands: {links}.", ""]
    arguments = [p for p in command.params if isinstance(p, click.Argument)]
    if arguments:
        lines += ["Arguments: " + ", ".join(f"`{a.make_metavar(ctx)}`" for a in arguments) + ".", ""]
    rows = [_option_row(p, ctx) for p in command.get_params(ctx) if isinstance(p, click.Option)]
    rows = [r for r in rows if r]
    if rows:
        lines += ["| option | meaning |", "|---|---|", *rows, ""]
    return "\n".join(lines)


def cli_markdown() -> str:
    """The whole command reference, in the order of ``polyjudge --help``."""
    from polyjudge.cli.main import cli

    return "\n".join(command_markdown(path, command, ctx) for path, command, ctx in walk(cli))


def api_markdown() -> str:
    """One ``:::`` entry per public name of ``polyjudge.api``, grouped by the module that defines it."""
    import polyjudge.api as api

    homes: dict[str, list[str]] = {}
    for name, home in api._HOMES.items():
        homes.setdefault(home, []).append(name)
    lines: list[str] = []
    for home in sorted(homes):
        lines += [f"## `{home}`", ""]
        for name in homes[home]:
            lines += [f"::: {home}.{name}", "    options:", "      heading_level: 3",
                      "      show_root_full_path: false", ""]
    return "\n".join(lines)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_markdown())
    if API_MARKER in markdown:
        markdown = markdown.replace(API_MARKER, api_markdown())
    return markdown
