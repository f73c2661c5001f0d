"""A new kind of registry is one declaration (issue 36 item 3): a line in ``polyjudge.registry.REGISTRY_KINDS``
gives it a listing command in ``polyjudge --help``, its listing in the API (``api.registries.entries``) and its
decorator in ``polyjudge.plugins``, with nothing else edited.

The kind is declared in a fresh interpreter (the command table and the listings are built when their modules
load), exactly as a line of the table would declare it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

KIND_MODULE = '''
from polyjudge.registry import Registry

COLOURS = Registry("colour", entry_point_group="polyjudge.colours")
register_colour = COLOURS.register


@register_colour("teal")
class Teal:
    """A blue-green."""
'''

SCRIPT = '''
import json, sys
import polyjudge.registry as registry

registry.REGISTRY_KINDS = (*registry.REGISTRY_KINDS, registry.RegistryKind(
    "colours", "colour_kind:COLOURS", "colour_kind:register_colour", noun="colours", short_help="List the colours."))

from polyjudge import plugins
from polyjudge.api.registries import entries
from polyjudge.cli.main import cli, main

import colour_kind

print(json.dumps({"plugin": plugins.register_colour is colour_kind.register_colour,
                  "exported": "register_colour" in plugins.__all__,
                  "api": [(e.name, e.summary) for e in entries("colours")]}))
sys.stdout.flush()
main(sys.argv[1:])
'''


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "colour_kind.py").write_text(textwrap.dedent(KIND_MODULE), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(tmp_path)])}
    return subprocess.run([sys.executable, "-c", SCRIPT, *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)


def test_a_kind_declared_once_is_listed_by_the_cli_the_api_and_exported_to_plugins(tmp_path):
    listed = _run(tmp_path, "colours", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    head, body = listed.stdout.split("\n", 1)
    facts = json.loads(head)
    assert facts == {"plugin": True, "exported": True, "api": [["teal", "A blue-green."]]}
    assert [e["name"] for e in json.loads(body)] == ["teal"]

    helped = _run(tmp_path, "--help")
    assert helped.returncode == 0, helped.stderr
    assert any(line.split() == ["colours", "List", "the", "colours."] for line in helped.stdout.splitlines())
    own = _run(tmp_path, "colours", "--help")
    assert "List the registered colours with their options" in own.stdout


def test_every_declared_kind_is_exported_and_every_listed_one_has_a_command():
    """The built-in kinds: each decorator is the plugins module's, each listed kind a command and a listing."""
    from polyjudge import plugins
    from polyjudge.api.registries import LISTINGS
    from polyjudge.cli.main import COMMANDS
    from polyjudge.registry import REGISTRY_KINDS, Registry, resolve

    for kind in REGISTRY_KINDS:
        assert isinstance(kind.load(), Registry), kind.name
        decorator = kind.register.split(":")[1]
        assert getattr(plugins, decorator) is resolve(kind.register) and decorator in plugins.__all__
        if kind.listed:
            assert COMMANDS[kind.name] == (kind.command, kind.short_help) and kind.name in LISTINGS
    assert list(LISTINGS) == [k.name for k in REGISTRY_KINDS if k.listed]
