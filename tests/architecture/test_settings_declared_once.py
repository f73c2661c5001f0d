"""A judging setting is one declaration (issue 44 items 1, 2 and 6).

``polyjudge.data.settings.SETTINGS`` declares every judging setting once. A setting declared there, and
nowhere else, is a flag of every command that judges, a key of a study file's ``[[judging]]`` table and a
property of its JSON schema, a keyword of the Python form (``JudgeConfig``) and a field of the manifest's
record of the spec, with the one default everywhere; declared as part of the run's identity, it is named in
the signature and a run directory refuses to be resumed with another value. The setting is declared in a fresh
interpreter (the commands and ``JudgeConfig`` are built when their modules load), as a line of the table would
declare it.

The second test walks the click tree and the study schema: each judging flag and its study key name one
declared setting, with its declared default.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[2]
JUDGING_COMMANDS = ("judge", "score", "demo", "probe", "pairwise", "consistency")

SCRIPT = r'''
import json, sys
from pathlib import Path

import polyjudge.data.settings as settings

settings.SETTINGS = (*settings.SETTINGS, settings.Setting(
    "top_p", "generation", "float", 0.9, "Nucleus sampling: the share of probability mass sampled from.",
    low=0.0, high=1.0, low_open=True, show_default=True, identity=True))

import click
from polyjudge.api import JudgeConfig
from polyjudge.cli.main import cli, main
from polyjudge.cli.study_cmd import parse_study, study_schema, table_keys
from tests.helpers.openai_server import ScriptedServer

facts = {"flags": {}}
for name in sys.argv[1:]:
    command = cli.get_command(click.Context(cli), name)
    found = [p for p in command.params if "--top-p" in getattr(p, "opts", ())]
    facts["flags"][name] = found[0].default if found else "missing"
keys = table_keys("judging")
facts["study_key_default"] = keys["top_p"].default if "top_p" in keys else "missing"
facts["schema"] = study_schema()["properties"]["judging"]["items"]["properties"].get("top_p")
facts["python_default"] = JudgeConfig().top_p
facts["python_spec"] = dict(JudgeConfig(top_p=0.5).spec().extra)
Path("items.jsonl").write_text('{"src": "Hallo.", "tgt": "Hello.", "src_lang": "de", "tgt_lang": "en"}\n')
Path("s.toml").write_text('[[judging]]\nname = "a"\ninput = "items.jsonl"\ntop_p = 0.25\n')
facts["study_value"] = dict(parse_study("s.toml", Path("s.toml").read_text()).judgings[0].spec.extra)

with ScriptedServer(lambda body: "80") as srv:
    try:
        main(["judge", "items.jsonl", "--judge", f"openai:m@{srv.base_url}", "-o", "run", "-q", "--top-p", "0.75"])
    except SystemExit as exc:
        facts["judge_exit"] = exc.code
manifest = json.loads(Path("run/manifest.json").read_text())
facts["manifest"] = manifest["spec"].get("extra")
facts["signature"] = manifest["signature"]
from polyjudge.engine.store import Store

def stored_identity(run):
    store = Store(Path(run) / "store.sqlite", readonly=True)
    try:
        return json.loads(store.get_meta("run_identity"))
    finally:
        store.close()

facts["identity"] = stored_identity("run")
with ScriptedServer(lambda body: "80") as srv:  # not given: its declared default is the run's
    try:
        main(["judge", "items.jsonl", "--judge", f"openai:m@{srv.base_url}", "-o", "run2", "-q"])
    except SystemExit:
        pass
facts["default_identity"] = stored_identity("run2")
facts["default_signature"] = json.loads(Path("run2/manifest.json").read_text())["signature"]
with ScriptedServer(lambda body: "80") as srv:
    try:  # an identity setting: the run directory refuses another value
        main(["judge", "items.jsonl", "--judge", f"openai:m@{srv.base_url}", "-o", "run", "-q", "--top-p", "0.5"])
    except SystemExit as exc:
        facts["resume_other_exit"] = exc.code
print(json.dumps(facts))
'''


def test_a_setting_declared_once_is_a_flag_a_study_key_a_schema_property_a_keyword_and_recorded(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]), "OPENAI_API_KEY": "k"}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(SCRIPT), *JUDGING_COMMANDS], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    assert facts["flags"] == dict.fromkeys(JUDGING_COMMANDS, 0.9)
    assert facts["study_key_default"] == 0.9
    assert facts["schema"]["type"] == "number" and facts["schema"]["exclusiveMinimum"] == 0.0
    assert facts["schema"]["maximum"] == 1.0 and "default: 0.9" in facts["schema"]["description"]
    assert facts["python_default"] == 0.9 and facts["python_spec"] == {"top_p": 0.5}
    assert facts["study_value"] == {"top_p": 0.25}
    assert facts.get("judge_exit", 0) == 0
    assert facts["manifest"] == {"top_p": 0.75}
    assert "|top_p:0.75|" in facts["signature"]
    assert facts["resume_other_exit"] == 2
    # the same path as the settings declared before it: one entry of the run's identity among theirs
    assert set(facts["identity"]) - {"request_forms"} == {"protocol", "judges", "template_hash", "protocol_options",
                                                         "temperature", "seed", "use_context", "top_p"}
    assert facts["identity"]["top_p"] == 0.75 and facts["default_identity"]["top_p"] == 0.9
    assert "|top_p:0.9|" in facts["default_signature"]


def _command(name: str) -> click.Command:
    from polyjudge.cli.main import cli

    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    return command


def test_every_judging_flag_and_its_study_key_are_one_declared_setting_with_one_default():
    from polyjudge.api import JudgeConfig
    from polyjudge.cli.study_cmd import study_schema, table_keys
    from polyjudge.data.settings import command_line, python_keywords

    declared = {s.long_flag: s for s in command_line()}
    schema = study_schema()["properties"]["judging"]["items"]["properties"]
    keys = table_keys("judging")
    config = JudgeConfig()
    for name in JUDGING_COMMANDS:
        flags = {opt: p for p in _command(name).params if isinstance(p, click.Option) for opt in p.opts}
        for long, setting in declared.items():
            assert long in flags, f"{name} lacks {long}"
            param = flags[long]
            assert param.name == setting.dest, (name, long)
            if setting.many:
                assert param.multiple, (name, long)
            else:
                assert param.default == setting.command_default, (name, long, param.default, setting.default)
    for setting in declared.values():
        key = setting.study_key
        assert key in keys and key in schema, key
        assert keys[key].name == setting.dest
        if setting.show_default and setting.default is not None and setting.kind != "flag":
            assert f"default: {setting.default}" in schema[key]["description"], key
    for setting in python_keywords():
        if setting.on_command_line and setting.kind != "judge":
            assert getattr(config, setting.name) == setting.default, setting.name
