"""``polyjudge study``: bad study files exit 2 naming the file, the line and the key; the keys are the
judge, meta-eval and report commands' own options; the published JSON schema is the generated one;
the documented example (docs/reference/study-file.md) validates against it and runs; the study folder is
claimed like any output folder."""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path

import click
import jsonschema
import pytest

from polyjudge.cli.main import cli as root
from polyjudge.cli.main import main
from tests.helpers.openai_server import ScriptedServer

ROOT = Path(__file__).resolve().parents[2]
GOOD = '[[judging]]\nname = "a"\ninput = "items.jsonl"\nlp = "de-en"\n'


def run(capsys, *argv) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in argv])
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out, out.err


def _answer(body: dict) -> str:
    text = body["messages"][-1]["content"]
    return json.dumps({"errors": [], "score": 60 + 20 * ("Sentence A" in text) + zlib.crc32(text.encode()) % 9})


@pytest.fixture
def server(monkeypatch):
    """The scripted OpenAI-compatible server every ``openai:MODEL`` judge of these tests reaches."""
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with ScriptedServer(_answer) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        yield srv


@pytest.fixture
def folder(tmp_path, monkeypatch, server):
    monkeypatch.chdir(tmp_path)
    rows = [{"src": f"Satz {i}.", "tgt": f"Sentence {s} {i}.", "system": s, "seg_id": str(i)}
            for s in "AB" for i in range(3)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (tmp_path / "human.tsv").write_text("system\tseg_id\tscore\n" + "".join(
        f"{r['system']}\t{r['seg_id']}\t{i}\n" for i, r in enumerate(rows)), encoding="utf-8")
    return tmp_path


# (study text, line, key, words of the message)
BAD = [
    (GOOD + '\n[[judging]]\nname = "b"\ninput = "items.jsonl"\n# a comment\ntemprature = 0.5\n', 10, "temprature",
     "unknown key"),
    (GOOD + 'runs = "two"\n', 5, "runs", "expected an integer"),
    (GOOD + "runs = 0\n", 5, "runs", "0 is not in the range"),
    (GOOD + "temperature = true\n", 5, "temperature", "expected a number"),
    (GOOD + 'judge = "openai:m"\n', 5, "judge", "expected a list of strings"),
    (GOOD + "use_cache = 1\n", 5, "use_cache", "expected true or false"),
    (GOOD + 'protocol = "nope"\n', 5, "protocol", "unknown protocol 'nope'"),
    (GOOD + 'aggregator = "nope"\n', 5, "aggregator", "nope"),
    (GOOD + 'executor = "cloud"\n', 5, "executor", "'cloud' is not one of"),
    (GOOD + 'prompt_template = "no-such.j2"\nbackend = "openai"\njudge = ["openai:m"]\n', 7, "judge",
     "either --judge or --backend"),
    (GOOD + 'dry_run = true\n', 5, "dry_run", "unknown key"),  # a command-line matter, not a study's
    (GOOD + 'out = "x"\n', 5, "out", "unknown key"),
    ('[[judging]]\nname = "a"\n', 1, "input", "needs 'input'"),
    (GOOD + '\n[[judging]]\nlp = "de-en"\nname = "a"\ninput = "items.jsonl"\n', 8, "name", "given twice"),
    (GOOD.replace('"a"', '"../a"'), 2, "name", "judging names are letters"),
    (GOOD + '\n[[meta_eval]]\nhuman = "human.tsv"\nruns = ["a", "zz"]\n', 8, "runs", "'zz' names no [[judging]]"),
    (GOOD + '\n[[meta_eval]]\nhuman = "human.tsv"\nruns = ["a"]\npermutations = 5\n', 9, "permutations",
     "unknown key"),
    (GOOD + '\n[[meta_eval]]\nhuman = "human.tsv"\nruns = ["a"]\ntask = "wmt99"\n', 9, "task", "'wmt99' is not one"),
    (GOOD + '\n[[meta_eval]]\nhuman = "human.tsv"\nruns = "a"\n', 8, "runs", "expected a list of strings"),
    (GOOD + '\n[[meta_eval]]\nruns = ["a"]\nhuman = "nohuman.tsv"\n', 8, "human", "does not exist"),
    (GOOD + '\n[report]\nruns = ["b"]\n', 7, "runs", "'b' names no [[judging]]"),
    (GOOD + '\n[report]\nbootstrap = 5\n', 7, "bootstrap", "5 is not in the range"),
    (GOOD + '\n[report]\noutput = "r.html"\n', 7, "output", "unknown key"),
    (GOOD + '\n[[judgment]]\nname = "b"\n', 6, "judgment", "unknown table"),
    (GOOD + 'lp = \n', 5, None, "not valid TOML"),
]


@pytest.mark.parametrize(("text", "line", "key", "words"), BAD, ids=[f"{b[2]}-{i}" for i, b in enumerate(BAD)])
@pytest.mark.parametrize("sub", ["plan", "run"])
def test_a_bad_study_exits_2_naming_file_line_and_key(folder, capsys, text, line, key, words, sub):
    (folder / "s.toml").write_text(text, encoding="utf-8")
    code, out, err = run(capsys, "study", sub, "s.toml", "-o", "out")
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"polyjudge: error: s.toml:{line}" + (f", field '{key}'" if key else ":")), err
    assert words in err
    assert not (folder / "out").exists()  # refused before anything was written


@pytest.mark.parametrize(("setting", "line", "key", "words"), [
    ('judge = ["nope:m"]', 5, "judge", "unknown backend 'nope'"),
    ('judge = ["openai:m"]\nprotocol_options = ["bogus=1"]', 1, "bogus", "unknown option 'bogus' for protocol 'da'"),
])
def test_a_setting_refused_when_the_judging_is_prepared_is_said_at_its_line(folder, capsys, setting, line, key,
                                                                             words):
    (folder / "s.toml").write_text(GOOD + setting + "\n", encoding="utf-8")
    for sub in ("plan", "run"):
        code, out, err = run(capsys, "study", sub, "s.toml", "-o", "out")
        assert code == 2, err
        assert err.startswith(f"polyjudge: error: s.toml:{line}, field '{key}': ") and words in err, err


def test_paths_are_relative_to_the_study_file(folder, capsys, monkeypatch):
    (folder / "sub").mkdir()
    (folder / "sub" / "s.toml").write_text(GOOD.replace('"items.jsonl"', '"../items.jsonl"')
                                           + 'judge = ["openai:m"]\n', encoding="utf-8")
    code, out, err = run(capsys, "study", "plan", "sub/s.toml", "-o", "out", "--format", "tsv")
    assert code == 0, err
    assert out.splitlines()[1].split("\t")[:3] == ["a", "6", "6"]
    (folder / "sub" / "s.toml").write_text(GOOD + 'judge = ["openai:m"]\n', encoding="utf-8")  # sub/items.jsonl
    code, out, err = run(capsys, "study", "plan", "sub/s.toml", "-o", "out")
    assert code == 2 and "sub/items.jsonl" in err


def test_the_keys_are_the_commands_long_options():
    """Every visible long option of judge / meta-eval / report is a key (but the study's own matters);
    nothing else is."""
    from polyjudge.cli.specs import STUDY_LEAVES_OUT
    from polyjudge.cli.study_cmd import COMMAND_OF, OWN_KEYS, study_schema

    schema = study_schema()
    for table, command in COMMAND_OF.items():
        cmd = root.get_command(click.Context(root), command)
        assert cmd is not None
        longs = set()
        for p in cmd.params:
            if isinstance(p, click.Option) and not p.hidden and p.name not in STUDY_LEAVES_OUT[command]:
                first = next((o for o in p.opts if o.startswith("--")), None)
                if first is not None:
                    longs.add(first[2:].replace("-", "_"))
        props = schema["properties"][table]
        props = props["items"] if props["type"] == "array" else props
        assert set(props["properties"]) == longs | set(OWN_KEYS[table]), table
    judging = schema["properties"]["judging"]["items"]["properties"]
    assert {"protocol", "judge", "runs", "use_cache", "max_cost", "lp", "columns", "protocol_options"} <= set(judging)
    assert judging["judge"]["type"] == "array" and judging["use_cache"]["type"] == "boolean"
    assert judging["runs"] == {**judging["runs"], "type": "integer", "minimum": 1}
    assert "out" not in judging and "dry_run" not in judging and "print_spec" not in judging


def test_the_published_schema_is_the_generated_one(capsys):
    code, out, err = run(capsys, "study", "schema")
    assert code == 0, err
    assert (ROOT / "docs" / "study.schema.json").read_text(encoding="utf-8") == out, \
        "regenerate it: polyjudge study schema -o docs/study.schema.json"
    jsonschema.Draft202012Validator.check_schema(json.loads(out))


def _readme_example() -> str:
    """The study file of the reference page (docs/reference/study-file.md; it was the README's until issue 37)."""
    text = (ROOT / "docs" / "reference" / "study-file.md").read_text(encoding="utf-8")
    section = text.split("# Study files\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```toml\n(.*?)```", section, re.S)
    assert found is not None
    return found.group(1)


def test_the_readme_example_is_valid_and_runs(folder, server, capsys):
    import tomllib

    example = _readme_example()
    schema = json.loads((ROOT / "docs" / "study.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(tomllib.loads(example), schema)
    bad = tomllib.loads(example)
    bad["judging"][0]["temprature"] = 0.5
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)

    (folder / "data").mkdir()
    (folder / "items.jsonl").rename(folder / "data" / "items.jsonl")
    (folder / "human.tsv").rename(folder / "data" / "human.tsv")
    (folder / "study.toml").write_text(example, encoding="utf-8")

    code, out, err = run(capsys, "study", "plan", "study.toml", "-o", "out", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["total"]["requests_to_send"] == 6 + 6 * 3
    code, out, err = run(capsys, "study", "run", "study.toml", "-o", "out")
    assert code == 0, err
    assert len(server.requests) == 24
    code, out, err = run(capsys, "study", "run", "study.toml", "-o", "out")
    assert code == 0 and len(server.requests) == 24
    assert {p.name for p in (folder / "out").iterdir()} >= {"judging", "meta_eval", "report.html"}
    assert sorted(p.name for p in (folder / "out" / "meta_eval").iterdir()) == ["vs-human.json", "vs-human.txt"]


def test_the_study_folder_is_claimed_like_any_output_folder(folder, capsys):
    (folder / "s.toml").write_text(GOOD + 'judge = ["openai:m"]\n\n[[meta_eval]]\nname = "m"\nhuman = '
                                          '"human.tsv"\nruns = ["a"]\ntask = "none"\n', encoding="utf-8")
    mine = folder / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my notes", encoding="utf-8")
    code, out, err = run(capsys, "study", "run", "s.toml", "-o", mine)
    assert code == 2 and "notes.txt" in err
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]

    # A file of the user's where the study writes a meta-eval table is never replaced.
    taken = folder / "taken"
    (taken / "meta_eval").mkdir(parents=True)
    (taken / ".polyjudge-owned.json").write_text(json.dumps({"kind": "study", "files": []}), encoding="utf-8")
    (taken / "meta_eval" / "m.json").write_text("mine", encoding="utf-8")
    code, out, err = run(capsys, "study", "run", "s.toml", "-o", taken)
    assert code == 2 and "m.json" in err and "not polyjudge's" in err
    assert (taken / "meta_eval" / "m.json").read_text(encoding="utf-8") == "mine"

    # An input inside the study folder: refused, the input untouched.
    inside = folder / "inside"
    inside.mkdir()
    (inside / "s.toml").write_text(GOOD + 'judge = ["openai:m"]\n', encoding="utf-8")
    (folder / "items.jsonl").rename(inside / "items.jsonl")
    code, out, err = run(capsys, "study", "run", inside / "s.toml", "-o", inside)
    assert code == 2 and "inside the study folder" in err
    assert sorted(p.name for p in inside.iterdir()) == ["items.jsonl", "s.toml"]


def test_print_spec_leaves_defaults_out_and_keeps_the_legacy_option_spelling(folder, capsys):
    """Settings outside the run's identity are written when they differ from their defaults; the identity
    (protocol, judges, temperature, seed, context) always, defaults included (issue 44 item 6: today's
    defaults may change, the pasted table must not), and never a one-off action such as --restart."""
    code, out, err = run(capsys, "judge", "items.jsonl", "--lp", "de-en", "--option", "score_mode=expected",
                         "--judge", "openai:m", "--concurrency", "16", "--restart", "--print-spec")
    assert code == 0, err
    assert out == ('[[judging]]\nname = "items"\ninput = "items.jsonl"\nlp = "de-en"\nprotocol = "da"\n'
                   'judge = ["openai:m"]\nprotocol_options = ["score_mode=expected"]\ntemperature = 0.0\nseed = 0\n'
                   'use_context = true\n')


def test_print_spec_names_the_default_judge_and_the_protocols_own_temperature(folder, capsys):
    code, out, err = run(capsys, "judge", "items.jsonl", "-p", "mqm", "--print-spec")
    assert code == 0, err
    assert 'protocol = "mqm"' in out and 'judge = ["llamacpp"]' in out and "temperature = 0.4" in out
    assert "restart" not in out and "dry_run" not in out


def test_print_spec_never_prints_a_secret(folder, capsys, monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-live-0123456789abcdefghij")
    code, out, err = run(capsys, "judge", "items.jsonl", "--lp", "de-en", "--judge",
                         "openai:m@http://bob:hunter2@127.0.0.1:9/v1", "--api-key-env", "MY_KEY", "--print-spec")
    assert code == 0, err
    assert "hunter2" not in out + err and "sk-live" not in out + err
    assert 'judge = ["openai:m@http://[REDACTED]@127.0.0.1:9/v1"]' in out and 'api_key_env = "MY_KEY"' in out
    assert "masked" in err


# --------------------------------------------------------------------------- hostile study files (issue 43)

def test_a_device_a_fifo_or_a_huge_study_file_is_refused_in_one_line(tmp_path, capsys):
    """/dev/zero filled memory and a FIFO hung: both are refused before any byte is read (exit 2)."""
    import os

    fifo = tmp_path / "study.toml"
    os.mkfifo(fifo)
    huge = tmp_path / "huge.toml"
    huge.write_bytes(b"# " + b"x" * (5 * 1024 * 1024) + b"\n")
    for path, words in (("/dev/zero", "not a regular file"), (fifo, "not a regular file"), (huge, "larger than")):
        code, out, err = run(capsys, "study", "plan", path, "-o", tmp_path / "o")
        assert code == 2, err
        assert words in err and len(err.strip().splitlines()) == 1, err


def test_a_study_file_with_a_bom_and_crlf_line_ends_is_read(folder):
    from polyjudge.cli.study_cmd import load_study

    (folder / "bom.toml").write_bytes(b"\xef\xbb\xbf" + GOOD.replace("\n", "\r\n").encode())
    study = load_study("bom.toml", progress=False)
    assert [j.name for j in study.judgings] == ["a"]


def test_a_study_without_a_judging_is_exit_2_in_one_line(folder, capsys):
    (folder / "empty.toml").write_text("# nothing yet\n", encoding="utf-8")
    code, out, err = run(capsys, "study", "plan", "empty.toml", "-o", "o")
    assert code == 2 and "no [[judging]]" in err and len(err.strip().splitlines()) == 1, err


def test_the_keys_of_0_2_are_read_with_a_deprecation_line(folder):
    """Study keys renamed to their settings' names (issue 44 item 2) are still read for one release."""
    from polyjudge.cli.study_cmd import parse_study

    text = GOOD + 'judge = ["openai:m"]\naggregate = "median"\nno_context = true\nno_cache = true\n' \
        'protocol_option = ["score_mode=expected"]\n'
    new = GOOD + 'judge = ["openai:m"]\naggregator = "median"\nuse_context = false\nuse_cache = false\n' \
        'protocol_options = ["score_mode=expected"]\n'
    old_spec = parse_study("s.toml", text, progress=False).judgings[0].spec
    assert old_spec == parse_study("s.toml", new, progress=False).judgings[0].spec
    assert old_spec.generation.aggregator == "median" and not old_spec.protocol.use_context
    assert not old_spec.cache.use and old_spec.protocol.options == {"score_mode": "expected"}


def test_a_key_and_its_old_name_together_are_refused(folder, capsys):
    (folder / "s.toml").write_text(GOOD + 'aggregate = "mean"\naggregator = "median"\n', encoding="utf-8")
    code, out, err = run(capsys, "study", "plan", "s.toml", "-o", "out")
    assert code == 2 and "'aggregator' only" in err, err


def test_the_old_flag_spellings_still_work_with_one_line_each(folder, capsys):
    code, out, err = run(capsys, "judge", "items.jsonl", "--lp", "de-en", "--aggregate", "median", "--no-context",
                         "--no-cache", "--print-spec")
    assert code == 0, err
    assert 'aggregator = "median"' in out and "use_context = false" in out and "use_cache = false" in out
    assert err.count("deprecated") == 1 and "--aggregator" in err
