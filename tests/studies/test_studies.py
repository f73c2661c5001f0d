"""The studies from Python: the same tables as the CLI, byte for byte, plus to_pandas."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from polyjudge.api import JudgeConfig
from polyjudge.cli.consistency_cmd import consistency as consistency_cli
from polyjudge.cli.probes_cmd import probe as probe_cli
from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from polyjudge.studies import ConsistencyConfig, ProbeConfig, run_consistency, run_probe
from tests.cli.test_consistency_cmd import responder as consistency_responder
from tests.cli.test_consistency_cmd import write_mgsm
from tests.helpers.extras import needs_extra, skip_reason
from tests.helpers.openai_server import ScriptedServer

TABLES = ("consistency.tsv", "languages.tsv", "ensemble.tsv", "spearman.tsv", "panel.tsv")


def test_consistency_study_writes_what_the_cli_writes(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    write_mgsm(tmp_path)
    with ScriptedServer(consistency_responder) as srv:
        judges = tuple(f"openai:{m}@{srv.base_url}" for m in ("m1", "m2", "m3"))
        config = ConsistencyConfig(dataset="mgsm", data_dir=tmp_path, languages=("en", "de", "sw", "te"),
                                   scales=("binary",), judge=JudgeConfig(judges=judges))
        seen = []
        res = run_consistency(config, tmp_path / "api", on_condition=seen.append)
        args = ["--dataset", "mgsm", "--data-dir", str(tmp_path), "--languages", "en,de,sw,te", "-o",
                str(tmp_path / "cli"), "-q", "--format", "tsv"] + [x for j in judges for x in ("--judge", j)]
        cli = CliRunner().invoke(consistency_cli, args, catch_exceptions=False)
        assert cli.exit_code == 0, cli.output
    for name in TABLES:
        assert (tmp_path / "api" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    api_study = json.loads((tmp_path / "api" / "study.json").read_text())
    cli_study = json.loads((tmp_path / "cli" / "study.json").read_text())
    assert api_study.pop("timings_s").keys() == cli_study.pop("timings_s").keys()
    assert api_study == cli_study
    assert cli.stdout == res.to_tsv()
    assert [s.criterion for s in seen] == ["binary"] and seen[0].n_judges == 3 and seen[0].failed == 1
    assert res.judges == ["m1", "m2", "m3"] and (tmp_path / "api" / "runs" / "binary" / "segments.tsv").is_file()

    # the same study without an output folder: nothing is written, the numbers are the same
    with ScriptedServer(consistency_responder) as srv:
        judges = tuple(f"openai:{m}@{srv.base_url}" for m in ("m1", "m2", "m3"))
        again = run_consistency(config.replace(judge=JudgeConfig(judges=judges)))
    assert again.summary_tsv() == res.summary_tsv()


@needs_extra("pandas")
def test_consistency_to_pandas(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    write_mgsm(tmp_path)
    with ScriptedServer(consistency_responder) as srv:
        config = ConsistencyConfig(dataset="mgsm", data_dir=tmp_path, languages=("en", "te"), limit=3,
                                   judge=JudgeConfig(judges=(f"openai:m1@{srv.base_url}",)))
        res = run_consistency(config)
    df = res.to_pandas()
    assert list(df.columns)[:4] == ["judge", "task", "criterion", "subset"]
    assert len(df) == len(res.rows) and set(df["subset"]) == {"all", "gold", "wrong"}
    langs = res.to_pandas("languages")
    assert set(langs["language"]) == {"en", "te"}
    with pytest.raises(InputError, match="unknown table"):
        res.to_pandas("nope")


def test_consistency_bad_config_raises_input_error(tmp_path):
    with pytest.raises(InputError, match="at least two languages"):
        run_consistency(ConsistencyConfig(dataset="mgsm", data_dir=tmp_path, languages=("en",)))
    with pytest.raises(InputError, match="data folder not found"):
        run_consistency(ConsistencyConfig(dataset="mgsm", data_dir=tmp_path / "nope"))
    with pytest.raises(InputError, match="unknown dataset"):
        run_consistency(ConsistencyConfig(dataset="gsm8k"))


def probe_responder(body):
    words = re.findall(r"translation: (.*)", body["messages"][-1]["content"])[-1].split()
    return json.dumps({"score": 100 if words == sorted(words) else 40})


def test_probe_from_python_matches_the_cli(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    ordered = " ".join(f"w{k:02d}" for k in range(10))
    items = [Item(src=f"s{i}", tgt=ordered, src_lang="en", tgt_lang="de", seg_id=str(i)) for i in range(4)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"src": it.src, "tgt": it.tgt, "src_lang": "en",
                                                           "tgt_lang": "de", "seg_id": it.seg_id}) + "\n"
                                               for it in items), encoding="utf-8")
    with ScriptedServer(probe_responder) as srv:
        spec = f"openai:m@{srv.base_url}"
        config = ProbeConfig(kind="sensitivity", judge=JudgeConfig(judges=(spec,)), fraction=0.3)
        res = run_probe(items, config)  # no output folder: nothing written
        cli = CliRunner().invoke(probe_cli, [str(tmp_path / "in.jsonl"), "--kind", "sensitivity", "--fraction",
                                             "0.3", "--judge", spec, "-o", str(tmp_path / "p"), "-q",
                                             "--format", "tsv"])
        assert cli.exit_code == 0, cli.output
    assert res.to_tsv() == cli.stdout == (tmp_path / "p" / "probe.tsv").read_text()
    (row,) = res.rows
    assert (row.n_compared, row.dropped, row.drop_rate) == (4, 4, 1.0)
    doc = json.loads((tmp_path / "p" / "probe.json").read_text())
    assert doc["rows"] == json.loads(res.to_json())["rows"] and doc["input"] == str(tmp_path / "in.jsonl")
    assert res.input is None and not (tmp_path / "original").exists()
    pytest.importorskip("pandas", reason=skip_reason("pandas"))  # the rest of the test ran without it
    df = res.to_pandas()
    assert df.loc[0, "dropped"] == 4 and df.loc[0, "group"] == "all"


def test_probe_needs_one_judge():
    config = ProbeConfig(kind="repeat", judge=JudgeConfig(judges=("openai:a@http://x/v1", "openai:b@http://x/v1")))
    with pytest.raises(InputError, match="one judge"):
        run_probe([Item(src="a", tgt="b")], config)
