"""The Python API end to end: judge -> meta_eval -> report against the scripted local
server, with every number checked against what the CLI prints for the same inputs."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from polyjudge.api import (
    AgreementConfig,
    InputError,
    JudgeConfig,
    MetaEvalConfig,
    ReportConfig,
    SimConfig,
    SpanF1Config,
    agreement,
    judge,
    meta_eval,
    report,
    simulate,
    span_f1,
)
from polyjudge.cli.main import main
from polyjudge.data.records import Item
from tests.helpers.extras import needs_extra
from tests.helpers.openai_server import ScriptedServer

SYSTEMS = {"A": 90, "B": 75, "C": 60, "D": 40}
N_SEG = 8


def quality(system: str, seg: int) -> float:
    """The hidden quality of a translation: the system's level plus a segment effect."""
    return SYSTEMS[system] + (seg * 7) % 11 - 5


def responder(body):
    """A judge that sees the quality with a small, fixed error."""
    m = re.search(r"translation: (\w) translation (\d+)", body["messages"][-1]["content"])
    system, seg = m.group(1), int(m.group(2))
    return json.dumps({"score": round(quality(system, seg) + (seg % 3) - 1)})


def make_items() -> list[Item]:
    return [Item(src=f"source {seg}", tgt=f"{system} translation {seg}", src_lang="en", tgt_lang="de",
                 doc_id="d1", seg_id=str(seg), system=system)
            for system in SYSTEMS for seg in range(N_SEG)]


def write_human(path):
    lines = ["system\tseg_id\tscore"] + [f"{s}\t{seg}\t{quality(s, seg)}" for s in SYSTEMS for seg in range(N_SEG)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_noisy_metric(path):
    rng = np.random.default_rng(3)
    lines = ["system\tseg_id\tscore"] + [f"{s}\t{seg}\t{quality(s, seg) + rng.normal(scale=25):.3f}"
                                         for s in SYSTEMS for seg in range(N_SEG)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def cli(capsys, *argv):
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in argv])
    out = capsys.readouterr()
    assert exc.value.code == 0, out.err
    return out.out


def test_judge_meta_eval_report_agree_with_the_cli(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    items_file = tmp_path / "items.jsonl"
    items_file.write_text("".join(json.dumps({"src": it.src, "tgt": it.tgt, "src_lang": "en", "tgt_lang": "de",
                                              "doc_id": it.doc_id, "seg_id": it.seg_id, "system": it.system}) + "\n"
                                  for it in make_items()), encoding="utf-8")
    with ScriptedServer(responder) as srv:
        spec = f"openai:m@{srv.base_url}"
        run = judge(make_items(), JudgeConfig(protocol="da", judges=(spec,), concurrency=4), out=tmp_path / "run")
        printed = json.loads(cli(capsys, "judge", items_file, "-o", tmp_path / "cli-run", "--judge", spec,
                                 "--format", "json", "-q"))
    assert run.status_counts() == {"ok": len(SYSTEMS) * N_SEG}
    api_systems = {r.system: r.score for r in run.system_rows()}
    assert {r["system"]: r["score"] for r in printed["systems"]} == pytest.approx(api_systems)
    assert list(api_systems) == list(SYSTEMS)  # best first

    write_human(tmp_path / "human.tsv")
    write_noisy_metric(tmp_path / "noisy.tsv")
    config = MetaEvalConfig(human=tmp_path / "human.tsv",
                            metrics={"judge": tmp_path / "run", "noisy": tmp_path / "noisy.tsv"}, k=50)
    res = meta_eval(config)
    printed = json.loads(cli(capsys, "meta-eval", "--human", tmp_path / "human.tsv",
                             "--metric", f"judge={tmp_path / 'run'}", "--metric", f"noisy={tmp_path / 'noisy.tsv'}",
                             "-k", "50", "--format", "json"))
    assert printed == json.loads(res.format("json"))
    assert res.ranking()[0] == "judge" and printed["ranking"][0]["metric"] == "judge"
    stats = res.per_lp["en-de"]["judge"]  # the run's items name the pair
    assert stats["sys_pairwise_accuracy"] == 1.0 and stats["seg_pearson"] > 0.9
    assert cli(capsys, "meta-eval", "--human", tmp_path / "human.tsv", "--metric", f"judge={tmp_path / 'run'}",
               "--metric", f"noisy={tmp_path / 'noisy.tsv'}", "-k", "50") == res.format("text")

    rep = report([tmp_path / "run"], ReportConfig(out=tmp_path / "api.html", metaeval=res, title="api"))
    (tmp_path / "metaeval.json").write_text(res.format("json"), encoding="utf-8")
    line = cli(capsys, "report", tmp_path / "run", "-o", tmp_path / "cli.html", "--metaeval",
               tmp_path / "metaeval.json", "--title", "api")
    assert f"{len(rep.sections)} sections" in line and len(rep.sections) >= 2
    html = (tmp_path / "api.html").read_text(encoding="utf-8")
    assert "<html" in html and "judge" in html


@needs_extra("pandas")
def test_meta_eval_to_pandas(tmp_path):
    import pandas as pd
    write_human(tmp_path / "human.tsv")
    write_noisy_metric(tmp_path / "noisy.tsv")
    res = meta_eval(MetaEvalConfig(human=tmp_path / "human.tsv", metrics={"noisy": tmp_path / "noisy.tsv",
                                                                          "human": tmp_path / "human.tsv"},
                                   task=None, lps=("en-de",)))
    df = res.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert list(df["metric"]) == ["noisy", "human"] and set(df["lp"]) == {"en-de"}
    row = df.set_index("metric").loc["human"]
    assert row["seg_pearson"] == pytest.approx(1.0) and row["sys_pearson"] == pytest.approx(1.0)
    assert row["seg_pearson"] == res.per_lp["en-de"]["human"]["seg_pearson"]


def test_to_pandas_without_pandas_says_how_to_install(tmp_path, monkeypatch):
    import builtins

    write_human(tmp_path / "human.tsv")
    res = meta_eval(MetaEvalConfig(human=tmp_path / "human.tsv", metrics={"h": tmp_path / "human.tsv"}, task=None))
    real_import = builtins.__import__

    def no_pandas(name, *args, **kw):
        if name == "pandas":
            raise ImportError("no pandas here")
        return real_import(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    with pytest.raises(ImportError, match=r"pip install 'polyjudge\[pandas\]'"):
        res.to_pandas()


def test_bad_input_raises_input_error(tmp_path):
    with pytest.raises(InputError, match="give --human"):
        meta_eval(MetaEvalConfig())
    with pytest.raises(InputError, match="unknown task preset"):
        meta_eval(MetaEvalConfig(human="x", metrics={"m": "y"}, task="wmt99"))
    with pytest.raises(InputError, match="unknown missing"):
        span_f1(SpanF1Config(gold="g", pred="p", missing="sometimes"))
    with pytest.raises(InputError, match="give at least one run directory"):
        report([], ReportConfig(out=tmp_path / "x.html"))
    with pytest.raises(InputError, match="seeds"):
        simulate(SimConfig(n_items=10, n_judges=3), seeds=0)


def test_span_f1_matches_the_cli(tmp_path, capsys):
    gold = tmp_path / "gold.jsonl"
    gold.write_text("\n".join(json.dumps(x) for x in [
        {"system": "A", "doc_id": "d", "seg_id": "1", "lp": "en-de", "hypothesis": "0123456789",
         "spans": [{"start": 0, "end": 4, "severity": "major"}]},
        {"system": "A", "doc_id": "d", "seg_id": "2", "lp": "en-de", "hypothesis": "abcdefghij",
         "spans": [{"start": 2, "end": 6, "severity": "minor"}]}]) + "\n")
    pred = tmp_path / "pred.jsonl"
    pred.write_text("\n".join(json.dumps(x) for x in [
        {"system": "A", "doc_id": "d", "seg_id": "1", "lp": "en-de",
         "spans": [{"start": 0, "end": 2, "severity": "major"}]},
        {"system": "A", "doc_id": "d", "seg_id": "2", "lp": "en-de",
         "spans": [{"start": 2, "end": 6, "severity": "major"}]}]) + "\n")
    res = span_f1(SpanF1Config(gold=gold, pred=pred))
    printed = json.loads(cli(capsys, "span-f1", "--gold", gold, "--pred", pred, "--format", "json"))
    assert printed == res.as_dict()
    # tp = 2 (exact) + 0.5 * 4 (right place, wrong severity); 8 gold and 6 predicted characters
    assert res.scores.per_lp["en-de"].recall == pytest.approx(4 / 8)
    assert res.scores.per_lp["en-de"].precision == pytest.approx(4 / 6)
    tsv = cli(capsys, "span-f1", "--gold", gold, "--pred", pred, "--format", "tsv")
    assert tsv == res.to_tsv() and tsv.splitlines()[1].split("\t")[:2] == ["en-de", "0.666667"]


def test_agreement_and_simulation_from_python(tmp_path, capsys):
    rows = []
    for i in range(12):
        for rater, value in (("h1", i % 3), ("h2", i % 3), ("h3", (i + 1) % 3)):
            rows.append({"item_id": f"q{i}", "language": "de", "task": "qa", "metric": "LA", "rater": rater,
                         "kind": "human", "rating": value})
        rows.append({"item_id": f"q{i}", "language": "de", "task": "qa", "metric": "LA", "rater": "gpt",
                     "kind": "judge", "rating": i % 3 if i < 9 else 0})
    p = tmp_path / "ratings.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    res = agreement(AgreementConfig(ratings=str(p)))
    assert res.n_ratings == 48 and res.rows[0].pa_judge == pytest.approx(10 / 12)
    assert json.loads(cli(capsys, "agreement", p, "--format", "json")) == res.to_dict()
    assert cli(capsys, "agreement", p) == res.to_text()

    sim = simulate(SimConfig(n_items=20, n_judges=5), seeds=2)
    assert len(sim.blocks) == 1 and len(sim.blocks[0].results) == 2
    assert sim.to_tsv().splitlines()[0].startswith("config\tn_options")
    text = cli(capsys, "simulate", "--items", "20", "--judges", "5", "--seeds", "2", "--gamma-human", "0",
               "--gamma-judge", "0")
    assert text.splitlines()[:-1] == sim.to_text().splitlines()[:-1]  # the last line is the time taken
