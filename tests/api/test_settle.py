"""judge --until-settled end to end against the scripted OpenAI-compatible server: rounds stop once the
systems are settled, a later full run sends only what is missing (requests counted at the server), and
the outcome is in the summary, the manifest, systems.tsv and the report."""

from __future__ import annotations

import importlib.util
import json
import re

import numpy as np
import pytest

from polyjudge.api import JudgeConfig, RunDir, judge
from polyjudge.cli.main import main
from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from tests.engine.helpers import FAST_RETRY
from tests.helpers.openai_server import ScriptedServer

MEANS = {"A": 85.0, "B": 55.0, "C": 25.0}


def _responder(body: dict) -> str:
    """A DA judge: each system's mean plus noise fixed by segment, system and run (seed)."""
    m = re.search(r"translation: (\w) says (\d+)", body["messages"][-1]["content"])
    assert m is not None
    system, seg = m.group(1), int(m.group(2))
    noise = np.random.default_rng([seg, ord(system), int(body.get("seed") or 0)]).normal(0, 8)
    return json.dumps({"score": round(float(np.clip(MEANS[system] + noise, 0, 100)))})


def _items(n: int = 200, docs: int | None = None) -> list[Item]:
    return [Item(src=f"source {i}", tgt=f"{s} says {i}", src_lang="en", tgt_lang="de", seg_id=str(i), system=s,
                 doc_id=None if docs is None else f"d{i % docs}")
            for s in MEANS for i in range(n)]


def _config(srv: ScriptedServer, **more: object) -> JudgeConfig:
    return JudgeConfig(judges=(f"openai:m@{srv.base_url}",), retry=FAST_RETRY, protocol="da", **more)


def test_rounds_stop_once_settled_and_a_full_run_sends_only_what_is_missing(tmp_path):
    items, out = _items(), tmp_path / "run"
    with ScriptedServer(_responder) as srv:
        result = judge(items, _config(srv, until_settled=True, settle_range="0,100", settle_round=10), out=out)
        adaptive = [r["messages"][-1]["content"] for r in srv.requests]
        settled = result.manifest.settled
        again = judge(items, _config(srv, until_settled=True, settle_range="0,100", settle_round=10), out=out)
        assert len(srv.requests) == len(adaptive)  # the same adaptive run again: all from the store
        full = judge(items, _config(srv), out=out)
        rest = [r["messages"][-1]["content"] for r in srv.requests[len(adaptive):]]
    assert settled["stopped"] == "settled" and settled["open"] == []
    assert {(p["better"], p["worse"]) for p in settled["settled"]} == {("A", "B"), ("A", "C"), ("B", "C")}
    assert settled["calls"] == len(adaptive) == settled["sent"] < len(items) // 2
    assert settled["calls_full"] == len(items) and settled["units_judged"] * 3 == len(adaptive)
    assert again.manifest.settled["calls"] == len(adaptive) and again.manifest.settled["sent"] == 0
    assert len(rest) == len(items) - len(adaptive) and not set(rest) & set(adaptive)
    assert full.manifest.counts["from_store"] == len(adaptive) and not full.manifest.settled
    assert "settled" not in json.loads((out / "manifest.json").read_text())  # the full run's own manifest


def test_the_outcome_is_in_systems_tsv_the_manifest_and_the_report(tmp_path):
    from polyjudge.api import ReportConfig, report

    out = tmp_path / "run"
    with ScriptedServer(_responder) as srv:
        judge(_items(), _config(srv, until_settled=True, settle_range="0,100", settle_round=10), out=out)
    rows = RunDir(out).system_rows()
    assert [(r.system, r.group) for r in rows] == [("A", 1), ("B", 2), ("C", 3)]
    for r in rows:
        assert r.low is not None and r.high is not None and r.low <= r.score <= r.high
    header = (out / "systems.tsv").read_text().splitlines()[0].split("\t")
    assert header == ["system", "score", "n_segments", "n_unscored", "low", "high", "group"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["settled"]["alpha"] == 0.05 and manifest["settled"]["range_given"] is True
    assert RunDir(out).manifest.settled == manifest["settled"]
    html = tmp_path / "report.html"
    report([str(out)], ReportConfig(out=str(html)))
    page = html.read_text()
    assert "Settled by judging in rounds" in page and "of a full run" in page


def test_open_pairs_are_shown_as_ties_and_runs_go_together(tmp_path, capsys):
    """Two systems with the same judge: never settled, judged to the end, shown as a tie; two runs per
    item are judged in the same round (calls count both)."""
    items = [it for it in _items(60) if it.system in ("A", "B")]
    items += [Item(src=it.src, tgt=it.tgt.replace("A says", "A says"), src_lang="en", tgt_lang="de",
                   seg_id=it.seg_id, system="A2") for it in items if it.system == "A"]
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps(it.to_dict()) + "\n" for it in items))
    with ScriptedServer(_responder) as srv:
        with pytest.raises(SystemExit) as exc:
            main(["judge", str(data), "-o", str(tmp_path / "run"), "-p", "da", "--judge", f"openai:m@{srv.base_url}",
                  "--runs", "2", "--until-settled", "--settle-range", "0,100", "--settle-round", "20", "-q"])
    assert exc.value.code == 0
    captured = capsys.readouterr()
    settled = RunDir(tmp_path / "run").manifest.settled
    # B is settled against both and retired (judged no more); A and A2 are judged to the end
    units = {s["system"]: s["units"] for s in settled["systems"]}
    assert settled["stopped"] == "exhausted" and settled["calls_full"] == 2 * len(items)
    assert units["A"] == units["A2"] == 60 > units["B"] and settled["calls"] == 2 * sum(units.values())
    assert [(p["a"], p["b"]) for p in settled["open"]] == [("A", "A2")]
    assert "open pairs, shown as ties (their order is not known): A = A2" in captured.err
    assert f"retired once settled against every other system (score and interval from the segments judged): " \
           f"B {units['B']}" in captured.err
    assert "until settled: 60 of 60 segments in 3 round(s)" in captured.err
    table = [line.split("\t") for line in captured.out.splitlines()]
    assert table[0] == ["system", "score", "n_segments", "low", "high", "group"]
    assert {row[0]: row[-1] for row in table[1:]} == {"A": "1", "A2": "1", "B": "2"}


def test_with_document_context_rounds_draw_whole_documents(tmp_path):
    with ScriptedServer(_responder) as srv:
        result = judge(_items(100, docs=10), _config(srv, until_settled=True, settle_range="0,100",
                                                     settle_round=2), out=tmp_path / "run")
    judged = {(it.doc_id, it.seg_id) for it in result.items}
    docs = {d for d, _ in judged}
    assert result.manifest.settled["unit"] == "document" and len(judged) == 10 * len(docs)


def test_bad_settings_are_input_errors(tmp_path):
    with ScriptedServer(_responder) as srv:
        with pytest.raises(InputError, match="LOW,HIGH"):
            judge(_items(20), _config(srv, until_settled=True, settle_range="100,0"), out=tmp_path / "a")
        one = [it for it in _items(20) if it.system == "A"]
        with pytest.raises(InputError, match="orders systems"):
            judge(one, _config(srv, until_settled=True), out=tmp_path / "b")
        from polyjudge.engine.session import judge as judge_every_item

        with pytest.raises(InputError, match="until-settled"):
            judge_every_item(_items(20), _config(srv, until_settled=True), out=tmp_path / "c")
        assert srv.requests == []


def test_a_study_file_judges_until_settled(tmp_path):
    from polyjudge.api import run_study

    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps(it.to_dict()) + "\n" for it in _items()))
    with ScriptedServer(_responder) as srv:
        study = tmp_path / "study.toml"
        study.write_text(f'[[judging]]\nname = "da"\ninput = "{data}"\nprotocol = "da"\n'
                         f'judge = ["openai:m@{srv.base_url}"]\nuntil_settled = true\nsettle_range = "0,100"\n'
                         f'settle_round = 10\nquiet = true\n')
        run_study(str(study), out=str(tmp_path / "study"))
        sent = len(srv.requests)
    assert 0 < sent < len(_items()) // 2


def test_each_round_is_one_batch(tmp_path):
    from tests.engine.helpers import FAST_BATCH

    with ScriptedServer(_responder) as srv:
        result = judge(_items(), _config(srv, until_settled=True, settle_range="0,100", settle_round=10, batch=True,
                                         batch_options=FAST_BATCH), out=tmp_path / "run")
        settled = result.manifest.settled
        assert len(srv.batches) == settled["rounds"] and len(srv.batch_lines) == settled["calls"] < len(_items())
    assert settled["stopped"] == "settled"


@pytest.fixture(scope="module")
def cluster():
    from tests.helpers.ray_tests import local_cluster

    yield from local_cluster()


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="needs Ray: pip install 'polyjudge[ray]'")
def test_rounds_through_the_ray_executor_judge_what_the_local_executor_judges(cluster, tmp_path):
    with ScriptedServer(_responder) as srv:
        cfg = {"until_settled": True, "settle_range": "0,100", "settle_round": 10, "use_cache": False}
        local = judge(_items(), _config(srv, **cfg), out=tmp_path / "local")
        ray = judge(_items(), _config(srv, executor="ray", ray_actors=2, **cfg), out=tmp_path / "ray")
    assert ray.manifest.settled["calls"] == local.manifest.settled["calls"]
    assert (tmp_path / "ray" / "systems.tsv").read_text() == (tmp_path / "local" / "systems.tsv").read_text()


def test_the_spending_cap_ends_the_rounds_with_what_was_settled_recorded(tmp_path):
    from polyjudge.api import BudgetExceeded, ModelPrice

    out = tmp_path / "run"
    with ScriptedServer(_responder) as srv:
        cfg = _config(srv, until_settled=True, settle_range="0,100", settle_round=10, settle_alpha=1e-12,
                      prices={"m": ModelPrice(1000.0, 1000.0)}, max_cost=20.0, concurrency=4)
        with pytest.raises(BudgetExceeded) as exc:
            judge(_items(), cfg, out=out)
        sent = len(srv.requests)
    settled = json.loads((out / "manifest.json").read_text())["settled"]
    assert settled["stopped"] == "budget" and exc.value.spent <= 20.0
    assert settled["sent"] == sent < len(_items()) and settled["rounds"] >= 1


def test_a_bad_range_on_the_command_line_is_one_line_and_exit_2(tmp_path, capsys):
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps(it.to_dict()) + "\n" for it in _items(5)))
    with pytest.raises(SystemExit) as exc:
        main(["judge", str(data), "-o", str(tmp_path / "run"), "-p", "da", "--judge", "openai:m@http://127.0.0.1:9/v1",
              "--until-settled", "--settle-range", "high,low"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and "settle" in err[0] and "LOW,HIGH" in err[0]


def test_a_dry_run_says_the_rounds_may_send_less(tmp_path, capsys):
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps(it.to_dict()) + "\n" for it in _items(5)))
    with ScriptedServer(_responder) as srv:
        with pytest.raises(SystemExit) as exc:
            main(["judge", str(data), "-p", "da", "--judge", f"openai:m@{srv.base_url}", "--until-settled",
                  "--dry-run"])
        assert srv.requests == []
    captured = capsys.readouterr()
    assert exc.value.code == 0 and "15 requests to send" in captured.out
    assert "the numbers above are the most it can send" in captured.err


@pytest.mark.parametrize("protocol", ["mqm", "gemba-esa", "tsa", "pointwise", "rubric"])
def test_every_scoring_protocol_judges_in_rounds(protocol, tmp_path):
    """The documentation's scripted judge answers any protocol; its runs go together in a round, and the
    full run after the rounds sends only the judgments they left out."""
    from tests.docs.judge import answer

    items = [Item(src=f"Der Satz Nummer {i} ist hier.", tgt=f"{'The sentence number' if s == 'A' else 'Sentence'} "
                  f"{i} {'is here.' if s == 'A' else 'here is the.'}", src_lang="de", tgt_lang="en", seg_id=str(i),
                  system=s) for s in "AB" for i in range(12)]
    with ScriptedServer(answer) as srv:
        cfg = {"judges": (f"openai:m@{srv.base_url}",), "retry": FAST_RETRY, "protocol": protocol,
               "use_context": False}
        result = judge(items, JudgeConfig(**cfg, until_settled=True, settle_round=4), out=tmp_path / "run")
        full = judge(items, JudgeConfig(**cfg), out=tmp_path / "run")
    settled = result.manifest.settled
    assert settled["calls"] == settled["units_judged"] * 2 * result.runs and settled["calls_full"] == 24 * result.runs
    assert len(settled["settled"]) + len(settled["open"]) == 1 and settled["stopped"] in ("settled", "exhausted")
    assert full.manifest.counts["from_store"] == settled["calls"]
    assert full.manifest.counts["sent_this_session"] == settled["calls_full"] - settled["calls"]


def test_units_keep_every_systems_item_together_in_a_seeded_order():
    from polyjudge.api.settle import draw_units

    items = _items(30, docs=4)
    one, again, other = (draw_units(items, "segment", s) for s in (3, 3, 4))
    assert one == again and one.members != other.members
    assert all(sorted(items[i].system for i in unit) == ["A", "B", "C"] for unit in one.members)
    docs = draw_units(items, "document", 3)
    assert len(docs.members) == 4 and sum(len(u) for u in docs.members) == len(items)
    # a document's weight is its share of the segments times the number of documents
    sizes = [len({items[i].seg_id for i in unit}) for unit in docs.members]
    assert docs.weights == pytest.approx([n * 4 / 30 for n in sizes])


def test_the_metric_object_judges_in_rounds_and_leaves_unjudged_rows_none(monkeypatch):
    """polyjudge.Judge(until_settled=True) is the same run in rounds: fewer requests than rows, each row
    either its judged score or None (not judged), never a made-up number."""
    from polyjudge.api import Judge

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    items = _items()
    rows = [{"src": it.src, "mt": it.tgt, "lp": "en-de", "system": it.system, "seg_id": it.seg_id} for it in items]
    with ScriptedServer(_responder) as srv:
        metric = Judge(protocol="da", judge=f"openai:m@{srv.base_url}", until_settled=True, settle_range="0,100",
                       settle_round=10, progress=False)
        pred = metric.predict(rows)
        sent = len(srv.requests)
    judged = [s for s in pred.scores if s is not None]
    assert 0 < len(judged) == sent < len(rows) // 2
    assert len(pred.scores) == len(rows)
    assert pred.systems["A"] > pred.systems["B"] > pred.systems["C"]


def _twins(body: dict) -> str:
    """X far above Y and Z, which the judge scores the same on every segment (their pair never settles)."""
    m = re.search(r"translation: (\w) says (\d+)", body["messages"][-1]["content"])
    assert m is not None
    system, seg = m.group(1), int(m.group(2))
    noise = np.random.default_rng([seg, 1 if system == "X" else 2]).normal(0, 8)
    return json.dumps({"score": round(float(np.clip((85.0 if system == "X" else 50.0) + noise, 0, 100)))})


def test_a_system_settled_against_every_other_is_no_longer_judged_while_the_open_pair_goes_on(tmp_path, capsys):
    """Requests counted at the server: once X is settled against Y and Z, no request for X's items is sent;
    Y and Z are judged on every segment; a later full run sends only X's segments left out."""
    from polyjudge.api import ReportConfig, report
    from polyjudge.api.settle import draw_units

    items = [Item(src=f"source {i}", tgt=f"{s} says {i}", src_lang="en", tgt_lang="de", seg_id=str(i), system=s)
             for s in "XYZ" for i in range(100)]
    out = tmp_path / "run"
    with ScriptedServer(_twins) as srv:
        result = judge(items, _config(srv, until_settled=True, settle_range="0,100", settle_round=10), out=out)
        sent = [re.search(r"translation: (\w) says (\d+)", r["messages"][-1]["content"]).groups()
                for r in srv.requests]
        html = tmp_path / "report.html"
        report([str(out)], ReportConfig(out=str(html)))  # before the full run rewrites the manifest
        full = judge(items, _config(srv), out=out)
        rest = len(srv.requests) - len(sent)
    settled = result.manifest.settled
    units = {s["system"]: s["units"] for s in settled["systems"]}
    assert settled["stopped"] == "exhausted" and [(p["a"], p["b"]) for p in settled["open"]] == [("Y", "Z")]
    assert {(p["better"], p["worse"]): p["units"] for p in settled["settled"]} == {("X", "Y"): units["X"],
                                                                                  ("X", "Z"): units["X"]}
    assert units["Y"] == units["Z"] == 100 and units["X"] <= 50
    order = [int(items[unit[0]].seg_id) for unit in draw_units(items, "segment", 0).members]
    # X's requests are for the segments drawn before it was retired, and none is sent after
    assert {int(seg) for s, seg in sent if s == "X"} == set(order[:units["X"]])
    last_x = max(k for k, (s, _) in enumerate(sent) if s == "X")
    assert all(s != "X" for s, _ in sent[last_x + 1:]) and len(sent) - last_x - 1 >= 2 * (100 - units["X"])
    assert {int(seg) for s, seg in sent if s == "Y"} == set(range(100))
    assert len(sent) == settled["sent"] == settled["calls"] == sum(units.values()) < settled["calls_full"] == 300
    x = next(s for s in settled["systems"] if s["system"] == "X")
    assert x["low"] <= x["score"] <= x["high"] and x["score"] == pytest.approx(
        np.mean([json.loads(_twins({"messages": [{"content": f"translation: X says {g}"}]}))["score"]
                 for g in order[:units["X"]]]))
    # a later full run resumes: it sends only X's segments the rounds left out
    assert rest == 100 - units["X"] and full.manifest.counts["from_store"] == settled["calls"]
    assert "segments judged" in html.read_text() and "retired" in html.read_text()
