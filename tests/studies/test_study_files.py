"""``polyjudge study run|plan``: a whole study (two judges, two protocols, a meta-evaluation against
human scores, a report) against the scripted OpenAI-compatible server; its resume sends nothing; its
plan is the judge command's dry run per judging; and a judging gives the same judgments byte for
byte run as ``polyjudge judge`` and as a study (by hand, and through ``judge --print-spec``)."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest

from polyjudge.cli.main import main
from tests.helpers.openai_server import ScriptedServer

OFFSET = {"A": 20, "B": 0, "C": -20}


def _items(folder: Path) -> Path:
    """Three systems x six segments, German to English, without languages (the study gives lp)."""
    rows = [{"src": f"Das ist Satz {i}.", "tgt": f"This is {s} sentence {i}.", "system": s, "doc_id": "d1",
             "seg_id": str(i)} for s in OFFSET for i in range(6)]
    path = folder / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _human(folder: Path) -> Path:
    path = folder / "human.tsv"
    path.write_text("system\tseg_id\tscore\n" + "".join(f"{s}\t{i}\t{60 + OFFSET[s] + i}\n" for s in OFFSET
                                                         for i in range(6)), encoding="utf-8")
    return path


def responder(body: dict) -> str:
    """A judge that ranks A > B > C (with a little noise); its answer suits da and gemba-esa alike."""
    text = body["messages"][-1]["content"]
    system = next(s for s in OFFSET if f"This is {s} sentence" in text)
    return json.dumps({"errors": [], "score": 50 + OFFSET[system] + zlib.crc32(text.encode()) % 5})


def cli(capsys, *argv) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in argv])
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out, out.err


STUDY = """
[[judging]]
name = "da-m1"
input = "data/items.jsonl"
lp = "de-en"
protocol = "da"
judge = ["openai:m1"]
prices = "prices.json"
quiet = true

[[judging]]
name = "esa-m2"
input = "data/items.jsonl"
lp = "de-en"
protocol = "gemba-esa"
judge = ["openai:m2"]
runs = 2
prices = "prices.json"
quiet = true

[[meta_eval]]
name = "vs-human"
runs = ["da-m1", "esa-m2"]
human = "data/human.tsv"
task = "none"
k = 0

[report]
title = "Two judges"
"""


@pytest.fixture
def study(tmp_path, monkeypatch):
    """The study file in its own folder (paths relative to it), run from another working directory."""
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    home = tmp_path / "paper"
    (home / "data").mkdir(parents=True)
    _items(home / "data")
    _human(home / "data")
    (home / "prices.json").write_text(json.dumps({"m1": [1.0, 2.0], "m2": [3.0, 4.0]}), encoding="utf-8")
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with ScriptedServer(responder) as srv:
        path = home / "study.toml"
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)  # judges named as a paper names them (no URL)
        path.write_text(STUDY, encoding="utf-8")
        yield path, srv, tmp_path / "out"


def test_a_study_runs_every_judging_then_meta_eval_and_report_and_resumes_sending_nothing(study, capsys):
    path, srv, out = study
    code, stdout, err = cli(capsys, "study", "run", path, "-o", out)
    assert code == 0, err
    # 18 items x 1 run (da) + 18 items x 2 runs (gemba-esa), each sent once
    assert len(srv.requests) == 18 + 36
    assert {r["model"] for r in srv.requests} == {"m1", "m2"}
    for name, protocol in (("da-m1", "da"), ("esa-m2", "gemba-esa")):
        manifest = json.loads((out / "judging" / name / "manifest.json").read_text(encoding="utf-8"))
        assert manifest["protocol"] == protocol
        assert manifest["counts"]["status_ok"] == manifest["counts"]["judgments"]
    table = json.loads((out / "meta_eval" / "vs-human.json").read_text(encoding="utf-8"))
    assert "da-m1" in json.dumps(table) and "esa-m2" in json.dumps(table)
    assert "da-m1" in (out / "meta_eval" / "vs-human.txt").read_text(encoding="utf-8")
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Two judges" in html
    assert stdout.splitlines()[0].split("\t") == ["judging", "judgments", "ok", "sent_now", "cost_usd"]
    assert [line.split("\t")[:4] for line in stdout.splitlines()[1:]] == [["da-m1", "18", "18", "18"],
                                                                          ["esa-m2", "36", "36", "36"]]
    before = {p: p.read_bytes() for p in out.rglob("judgments.jsonl")}

    code, stdout, err = cli(capsys, "study", "run", path, "-o", out)  # the resume
    assert code == 0, err
    assert len(srv.requests) == 54  # nothing sent again
    assert [line.split("\t")[3] for line in stdout.splitlines()[1:]] == ["0", "0"]
    assert {p: p.read_bytes() for p in out.rglob("judgments.jsonl")} == before


def test_the_plan_is_the_judge_commands_dry_run_per_judging_and_writes_nothing(study, capsys):
    path, srv, out = study
    code, stdout, err = cli(capsys, "study", "plan", path, "-o", out, "--format", "json")
    assert code == 0, err
    plan = json.loads(stdout)
    assert not out.exists() and len(srv.requests) == 0
    data = path.parent / "data" / "items.jsonl"
    prices = path.parent / "prices.json"
    for row, extra in zip(plan["judgings"], (["-p", "da", "--judge", "openai:m1"],
                                             ["-p", "gemba-esa", "--judge", "openai:m2", "--runs", "2"])):
        code, dry, err = cli(capsys, "judge", data, "--lp", "de-en", "--prices", prices, "--dry-run", "--format",
                             "json", *extra)
        assert code == 0, err
        est = json.loads(dry)
        assert (row["requests_to_send"], row["prompt_tokens"], row["max_completion_tokens"]) == (
            est["requests_to_send"], est["prompt_tokens"], est["max_completion_tokens"])
        assert row["cost_usd"] == pytest.approx(est["cost_usd"])
        assert row["duration_s"] == pytest.approx(est["duration"]["seconds"], abs=0.1)
    assert [r["requests_to_send"] for r in plan["judgings"]] == [18, 36]
    total = plan["total"]
    assert total["requests_to_send"] == 54
    assert total["cost_usd"] == pytest.approx(sum(r["cost_usd"] for r in plan["judgings"]))
    assert total["tokens"] == sum(r["prompt_tokens"] + r["max_completion_tokens"] for r in plan["judgings"])
    assert total["cost_usd"] > 0
    assert total["duration_s"] is None

    code, text, err = cli(capsys, "study", "plan", path, "-o", out)  # text: one row per judging and a total
    assert code == 0, err
    assert [line.split()[0] for line in text.splitlines()] == ["judging", "da-m1", "esa-m2", "total"]
    code, tsv, err = cli(capsys, "study", "plan", path, "-o", out, "--format", "tsv")
    assert tsv.splitlines()[3].split("\t")[:2] == ["total", "54"]

    assert cli(capsys, "study", "run", path, "-o", out)[0] == 0
    code, stdout, err = cli(capsys, "study", "plan", path, "-o", out, "--format", "json")
    assert json.loads(stdout)["total"]["requests_to_send"] == 0  # what the run directories hold is not counted


def test_a_study_judging_gives_the_judge_commands_judgments_byte_for_byte(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.chdir(tmp_path)
    _items(tmp_path)
    with ScriptedServer(responder) as srv:
        flags = ["-p", "gemba-esa", "--judge", f"openai:m2@{srv.base_url}", "--runs", "2", "--lp", "de-en",
                 "--temperature", "0.5", "--seed", "7", "-q"]
        assert cli(capsys, "judge", "items.jsonl", "-o", "by-command", *flags)[0] == 0
        (tmp_path / "s.toml").write_text(f"""[[judging]]
name = "one"
input = "items.jsonl"
protocol = "gemba-esa"
judge = ["openai:m2@{srv.base_url}"]
runs = 2
lp = "de-en"
temperature = 0.5
seed = 7
quiet = true
""", encoding="utf-8")
        code, _, err = cli(capsys, "study", "run", "s.toml", "-o", "study")
        assert code == 0, err
        # The same requests: the study's were all answered by the shared response cache the command filled
        # (answers with their recorded latency, so the files can be equal byte for byte).
        assert len(srv.requests) == 36
    for name in ("judgments.jsonl", "segments.tsv", "systems.tsv"):
        assert (tmp_path / "study" / "judging" / "one" / name).read_bytes() == \
            (tmp_path / "by-command" / name).read_bytes(), name


def test_print_spec_round_trips_through_a_study(tmp_path, capsys, monkeypatch):
    """``judge ... --print-spec`` prints a [[judging]] table; run as a study it judges as the command does."""
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.chdir(tmp_path)
    _items(tmp_path)
    with ScriptedServer(responder) as srv:
        flags = ["items.jsonl", "-o", "runs/esa", "-p", "gemba-esa", "--judge", f"openai:m2@{srv.base_url}",
                 "--runs", "2", "--lp", "de-en", "--protocol-option", "on_unlocated=fail", "--min-runs", "2",
                 "--seed", "3",
                 "--systems", "A,B", "-q"]
        code, table, err = cli(capsys, "judge", *flags, "--print-spec")
        assert code == 0, err
        assert not (tmp_path / "runs").exists() and not srv.requests  # printed, nothing judged
        assert table.splitlines()[:3] == ["[[judging]]", 'name = "esa"', 'input = "items.jsonl"']
        assert 'protocol_options = ["on_unlocated=fail"]' in table and "min_runs = 2" in table
        assert "concurrency" not in table  # defaults are left out
        assert cli(capsys, "judge", *flags)[0] == 0
        (tmp_path / "s.toml").write_text(table, encoding="utf-8")
        code, _, err = cli(capsys, "study", "run", "s.toml", "-o", "study")
        assert code == 0, err
        assert len(srv.requests) == 24  # systems A and B x 2 runs; the study's same requests came from the cache
    assert (tmp_path / "study" / "judging" / "esa" / "judgments.jsonl").read_bytes() == \
        (tmp_path / "runs" / "esa" / "judgments.jsonl").read_bytes()


def test_plan_totals_add_durations_and_costs_and_an_unknown_duration_makes_the_total_unknown():
    from polyjudge.api import StudyPlan
    from polyjudge.engine.estimate import DurationEstimate, Estimate

    def est(sent: int, cost: float | None, seconds: float | None) -> Estimate:
        return Estimate(requests_total=sent, requests_cached=0, requests_to_send=sent, prompt_tokens=10 * sent,
                        max_completion_tokens=sent, cost_usd=cost, duration=DurationEstimate(seconds, "test"))

    rows = StudyPlan({"a": est(4, 0.5, 30.0), "b": est(6, None, 90.0)}).rows()
    assert rows[-1] == {"judging": "total", "requests_total": 10, "requests_to_send": 10, "prompt_tokens": 100,
                        "max_completion_tokens": 10, "tokens": 110, "cost_usd": 0.5, "duration_s": 120.0}
    rows = StudyPlan({"a": est(4, None, 30.0), "b": est(6, None, None)}).rows()
    assert (rows[-1]["cost_usd"], rows[-1]["duration_s"]) == (None, None)


def test_the_python_api_runs_a_typed_study(tmp_path, monkeypatch):
    """``run_study`` takes frozen objects (no file): the judgings, then a meta-evaluation of them."""
    from polyjudge.api import (
        InputError,
        InputSpec,
        JudgeConfig,
        MetaEvalConfig,
        Study,
        StudyJudging,
        StudyMetaEval,
        plan_study,
        run_study,
    )

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    items, human = _items(tmp_path), _human(tmp_path)
    with ScriptedServer(responder) as srv:
        judgings = tuple(StudyJudging(f"da-{m}", JudgeConfig(
            protocol="da", judges=(f"openai:{m}@{srv.base_url}",), progress=False).spec().replace(
            data=InputSpec(str(items), lp="de-en"))) for m in ("m1", "m2"))
        study = Study(judgings, (StudyMetaEval("h", ("da-m1", "da-m2"), str(human), MetaEvalConfig(task=None, k=0)),))
        assert plan_study(study, tmp_path / "out").rows()[-1]["requests_to_send"] == 36
        result = run_study(study, tmp_path / "out")
        assert len(srv.requests) == 36 and set(result.runs) == {"da-m1", "da-m2"}
        assert result.meta_evals["h"].format("json") == (tmp_path / "out" / "meta_eval" / "h.json").read_text()
        assert result.report is None and not (tmp_path / "out" / "report.html").exists()
        with pytest.raises(InputError, match="'zz' names no"):
            run_study(Study(judgings, (StudyMetaEval("h", ("zz",), str(human), MetaEvalConfig()),)), tmp_path / "o2")
        assert not (tmp_path / "o2").exists()
