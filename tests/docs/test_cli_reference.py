"""The command reference is generated from the click tree (issue 37): every command and sub-command of
``polyjudge`` has its section in the built page, with its help and every one of its options."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

import click

from polyjudge.cli.main import COMMANDS, cli
from tests.docs.mkdocs_site import built_site
from tests.helpers.extras import needs_extra


def _tree(command: click.Command, path: tuple[str, ...] = (), parent: click.Context | None = None,
          ) -> Iterator[tuple[tuple[str, ...], click.Command, click.Context]]:
    """Every command with the context click gives it when it runs (the group's ``-h`` reaches every command)."""
    ctx = click.Context(command, info_name=path[-1] if path else "polyjudge", parent=parent,
                        **command.context_settings)
    yield path, command, ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, name
            yield from _tree(sub, (*path, name), ctx)


def _sections() -> dict[str, str]:
    """The built page's text per heading id (tags stripped, entities decoded)."""
    page = (built_site() / "reference" / "cli.html").read_text(encoding="utf-8")
    body = page.split('<article', 1)[1]
    parts = re.split(r'<h[2-4] id="([^"]+)"', body)
    return {parts[i]: html.unescape(re.sub(r"<[^>]+>", " ", parts[i + 1])) for i in range(1, len(parts) - 1, 2)}


@needs_extra("docs")
def test_every_command_and_option_is_in_the_reference():
    sections = _sections()
    tree = list(_tree(cli))
    assert {path[0] for path, _, _ in tree if path} == set(COMMANDS)  # every command of the lazy table is loaded
    assert len(tree) > len(COMMANDS)  # and the groups' sub-commands too (batch, cache, study)
    for path, command, ctx in tree:
        anchor = "-".join(path) if path else "polyjudge"
        assert anchor in sections, f"no section for {' '.join(('polyjudge', *path))}"
        text = " ".join(sections[anchor].split())
        if command.help:
            first = " ".join(click.unstyle(command.help).strip().splitlines()[0].split())
            assert first in text, (anchor, first)
        for param in command.get_params(ctx):  # its own options and the help option (-h, --help)
            names = [*param.opts, *param.secondary_opts] if isinstance(param, click.Option) else []
            for name in names:
                assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text), (anchor, name)
            if isinstance(param, click.Option) and param.help and not param.hidden:
                words = " ".join(click.unstyle(param.help).split())[:40]
                assert words in text, (anchor, param.name, words)
            if isinstance(param, click.Argument):
                assert param.make_metavar(ctx) in text, (anchor, param.name)
