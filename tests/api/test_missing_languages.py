"""Languages are never silent (issue 33): an item whose prompt would lose a language is bad input, in a
real run and a dry run, from the command line and from Python, before anything is sent; each way of
giving the languages (columns, --columns, --lp, --src-lang/--tgt-lang, a test set's pair, JudgeConfig)
is enough; a protocol that names one language only asks for that one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from polyjudge.api import JudgeConfig, estimate, judge
from polyjudge.api.inputs import InputSpec, read_input
from polyjudge.data.errors import InputError
from polyjudge.data.languages import MissingLanguages
from polyjudge.data.records import Item
from tests.helpers.cli import cli
from tests.helpers.openai_server import ScriptedServer


def _csv(tmp_path: Path, header: str = "src,tgt,system,seg_id", extra: str = "") -> Path:
    path = tmp_path / "in.csv"
    rows = [f"The dog runs fast.,Der Hund rennt schnell.,s1,{i}{extra}" for i in range(1, 8)]
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


def _server() -> ScriptedServer:
    return ScriptedServer(lambda body: json.dumps({"score": 80}))


@pytest.mark.parametrize("dry", [True, False])
def test_a_csv_without_languages_exits_2_naming_file_rows_and_ways(tmp_path, capsys, monkeypatch, dry):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    path = _csv(tmp_path)
    with _server() as srv:
        code = cli("judge", path, "--judge", f"openai:m@{srv.base_url}", "-q",
                   *(["--dry-run"] if dry else ["-o", tmp_path / "run"]))
        assert srv.requests == []
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert str(path) in err and "7 of 7 items" in err and "rows 2, 3, 4, 5, 6, …" in err
    assert "--lp" in err and "--src-lang" in err and "--columns" in err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("how", [["--lp", "en-de"], ["--src-lang", "en", "--tgt-lang", "de"]])
def test_the_flags_give_the_prompt_its_languages(tmp_path, capsys, monkeypatch, how):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with _server() as srv:
        assert cli("judge", _csv(tmp_path), "--judge", f"openai:m@{srv.base_url}", "-q", "-o", tmp_path / "run",
                   *how) == 0
        prompt = srv.requests[0]["messages"][-1]["content"]
    assert "English" in prompt and "German" in prompt and "source-language" not in prompt


def test_a_language_pair_column_or_a_mapped_one_is_enough(tmp_path, capsys):
    path = _csv(tmp_path, "src,tgt,system,seg_id,pair", ",en-de")
    dry = ("--dry-run", "--judge", "openai:m@http://127.0.0.1:9/v1", "-q")
    assert cli("judge", path, "--columns", "lp=pair", *dry) == 0
    assert cli("judge", path, *dry) == 2  # 'pair' is no language column of its own


def test_some_rows_without_a_target_language_are_counted_and_named(tmp_path, capsys):
    path = tmp_path / "in.jsonl"
    lines = [{"src": "a", "tgt": "b", "src_lang": "en", "tgt_lang": "de" if i % 3 else None} for i in range(9)]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    with pytest.raises(MissingLanguages) as exc:
        estimate(read_input(InputSpec(str(path))), JudgeConfig(judges=("openai:m@http://127.0.0.1:9/v1",)))
    text = str(exc.value)
    assert text.startswith(f"{path}, field 'tgt_lang': 3 of 9 items have no target language (rows 1, 4, 7)")
    assert "--" not in text and "lp" in text  # the API names its own fields, not the command line's flags


def test_python_items_without_languages_are_refused_and_the_config_can_give_them(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    items = [Item(src="The dog runs.", tgt="Der Hund rennt.", seg_id=str(i)) for i in range(3)]
    with _server() as srv:
        config = JudgeConfig(judges=(f"openai:m@{srv.base_url}",))
        for call in (judge, estimate):
            with pytest.raises(InputError, match=r"3 of 3 items have no source and target language \(items 1, 2, 3\)"):
                call(items, config)
        assert srv.requests == []
        result = judge(items, config.replace(src_lang="en", tgt_lang="de"))
        assert len(result.judgments) == 3
        assert "English" in srv.requests[0]["messages"][-1]["content"]


def test_a_file_judged_from_python_takes_the_configs_languages(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    path = _csv(tmp_path)
    with pytest.raises(MissingLanguages):
        estimate(path, JudgeConfig(judges=("openai:m@http://127.0.0.1:9/v1",)))
    est = estimate(path, JudgeConfig(judges=("openai:m@http://127.0.0.1:9/v1",), src_lang="en", tgt_lang="de"))
    assert est.requests_total == 7


def test_a_protocol_naming_one_language_asks_only_for_it(tmp_path):
    """pointwise outside translation names the judged text's language: its option, or any language the
    item has; with none of them the item is refused."""
    items = [Item(src="What is 2+2?", tgt="4", seg_id="1")]
    base = JudgeConfig(protocol="pointwise", judges=("openai:m@http://127.0.0.1:9/v1",),
                       protocol_options={"task": "math"})
    with pytest.raises(MissingLanguages, match="no target language"):
        estimate(items, base)
    assert estimate(items, base.replace(protocol_options={"task": "math", "language": "English"})).requests_total == 1
    assert estimate([Item(src="What is 2+2?", tgt="4", src_lang="en")], base).requests_total == 1
