"""Study files belong to the API (issue 44 item 3): ``polyjudge.api`` loads, checks, plans and runs a study file
without importing click; the command line prints what the API returns (the same plan); every key of a study
table is one declaration, the flag of its command with the same default."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import click
import pytest

from polyjudge.data.errors import InputError
from tests.helpers.openai_server import ScriptedServer

ROOT = Path(__file__).resolve().parents[2]
STUDY = """[[judging]]
name = "a"
input = "items.jsonl"
lp = "de-en"
judge = ["openai:m"]
runs = 2
quiet = true

[[meta_eval]]
name = "vs-human"
runs = ["a"]
human = "human.tsv"
task = "none"
k = 0

[report]
title = "A study from Python"
"""


def _answer(body: dict) -> str:
    text = body["messages"][-1]["content"]
    return json.dumps({"errors": [], "score": 60 + 20 * ("Sentence A" in text) + zlib.crc32(text.encode()) % 9})


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A study file, its items and human scores, and the scripted server its ``openai:m`` judge reaches."""
    rows = [{"src": f"Satz {i}.", "tgt": f"Sentence {s} {i}.", "system": s, "seg_id": str(i)}
            for s in "AB" for i in range(3)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (tmp_path / "human.tsv").write_text("system\tseg_id\tscore\n" + "".join(
        f"{r['system']}\t{r['seg_id']}\t{i}\n" for i, r in enumerate(rows)), encoding="utf-8")
    (tmp_path / "study.toml").write_text(STUDY, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with ScriptedServer(_answer) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        yield tmp_path, srv


SCRIPT = """
import json, sys
from polyjudge.api import Study, load_study, plan_study, run_study

study = load_study("study.toml", progress=False)
assert isinstance(study, Study) and [j.name for j in study.judgings] == ["a"]
plan = plan_study(study, "out")
result = run_study(study, "out")
again = run_study("study.toml", "out")  # a path does as well; the second run resumes and sends nothing
print(json.dumps({"plan": plan.rows(), "runs": sorted(result.runs), "meta_evals": sorted(result.meta_evals),
                  "report": str(result.report), "sent_again": again.runs["a"].manifest.counts["sent_this_session"],
                  "click": "click" in sys.modules}))
"""


def test_python_loads_plans_and_runs_a_study_file_without_click(folder):
    tmp, srv = folder
    import polyjudge

    src = str(Path(polyjudge.__file__).resolve().parents[1])  # the polyjudge under test, in the child too
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["click"] is False  # the study was loaded, planned and run without the command line's library
    assert found["plan"][0]["requests_to_send"] == 12 and found["plan"][-1]["judging"] == "total"
    assert found["runs"] == ["a"] and found["meta_evals"] == ["vs-human"] and found["sent_again"] == 0
    assert len(srv.requests) == 12 and Path(found["report"]).name == "report.html"
    assert (tmp / "out" / "meta_eval" / "vs-human.json").is_file() and (tmp / "out" / "report.html").is_file()


def test_the_command_line_prints_the_plan_the_api_returns(folder, capsys):
    from polyjudge.api import load_study, plan_study
    from polyjudge.cli.main import main

    with pytest.raises(SystemExit) as exc:
        main(["study", "plan", "study.toml", "-o", "out", "--format", "json"])
    printed = capsys.readouterr()
    assert exc.value.code in (0, None), printed.err
    rows = plan_study(load_study("study.toml", progress=False), "out").rows()
    assert json.loads(printed.out) == {"judgings": rows[:-1], "total": rows[-1]}
    assert plan_study("study.toml", "out").rows() == rows


def test_the_api_reads_every_table_into_typed_settings(folder):
    from polyjudge.api import JudgingSpec, MetaEvalConfig, ReportConfig, load_study

    study = load_study("study.toml", progress=False)
    (judging,) = study.judgings
    assert isinstance(judging.spec, JudgingSpec) and judging.spec.generation.runs == 2
    assert judging.spec.data.lp == "de-en" and judging.spec.data.path == "items.jsonl"
    (evaluation,) = study.meta_evals
    assert isinstance(evaluation.config, MetaEvalConfig) and evaluation.config.task is None
    assert evaluation.config.k == 0 and evaluation.human == "human.tsv"
    assert study.report is not None and isinstance(study.report.config, ReportConfig)
    assert study.report.config.title == "A study from Python" and study.report.meta_eval == "vs-human"


@pytest.mark.parametrize(("extra", "line", "key", "words"), [
    ("min_runs = 0\n", 8, "min_runs", "0 is not in the range 1<=x<=1000."),
    ("temperature = nan\n", 8, "temperature", "nan is not a finite number."),
    ('executor = "cloud"\n', 8, "executor", "'cloud' is not one of 'local', 'ray'."),
    ('prompt_template = "."\n', 8, "prompt_template", "File '.' is a directory."),
])
def test_a_bad_value_is_said_as_the_flag_says_it_at_its_line(folder, extra, line, key, words):
    from polyjudge.api import parse_study

    text = STUDY.replace("quiet = true\n", "quiet = true\n" + extra)
    with pytest.raises(InputError) as exc:
        parse_study("study.toml", text, progress=False)
    assert (exc.value.line, exc.value.field, exc.value.reason) == (line, key, words)


def test_a_setting_refused_while_planning_is_said_at_its_table_from_python(folder):
    from polyjudge.api import plan_study

    tmp, _ = folder
    (tmp / "bad.toml").write_text(STUDY.replace("runs = 2\n", 'protocol_options = ["bogus=1"]\n'), encoding="utf-8")
    with pytest.raises(InputError) as exc:
        plan_study("bad.toml", "out")
    assert exc.value.path == "bad.toml" and exc.value.line == 1 and "unknown option 'bogus'" in exc.value.reason


@pytest.mark.parametrize("table", ["judging", "meta_eval", "report"])
def test_every_study_key_is_one_declaration_the_flag_of_its_command(table):
    """The keys the API reads (declarations, no click) are the keys of the command's flags, each flag's
    default the declared one, a choice's values and a number's bounds the declared ones."""
    from polyjudge.api.study_file import table_keys as declared
    from polyjudge.cli.main import cli
    from polyjudge.cli.study_cmd import COMMAND_OF
    from polyjudge.cli.study_cmd import table_keys as flags

    keys, options = declared(table), flags(table)
    assert list(keys) == list(options)
    command = cli.get_command(click.Context(cli), COMMAND_OF[table])
    assert command is not None
    filled = command.make_context(COMMAND_OF[table], ["-"] if table == "judging" else []).params
    for name, key in keys.items():
        option = options[name]
        assert option.name == (key.dest if hasattr(key, "group") else key.name), name
        assert filled[str(option.name)] == key.command_default, name
        if isinstance(option.type, click.Choice) and key.kind == "choice":
            shown = getattr(option.type, "shown", option.type.choices)
            if not hasattr(key, "group"):
                assert tuple(shown) == key.choice_list(), name
        if isinstance(option.type, (click.IntRange, click.FloatRange)) and not hasattr(key, "group"):
            assert (option.type.min, option.type.max) == (key.low, key.high), name
        if not hasattr(key, "group"):
            assert option.help == key.help and option.multiple == key.many, name
