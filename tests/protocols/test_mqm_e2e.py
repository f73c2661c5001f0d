"""End to end: ``polyjudge judge --protocol mqm --runs 10`` against the scripted
local OpenAI-compatible server, with answers that vary by run."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from polyjudge.analysis import variability_report
from polyjudge.cli.main import cli
from polyjudge.rundir import RunDir
from tests.helpers.openai_server import ScriptedServer

# Table 1 of GEMBA-MQM V2 as (critical, major, minor) per run -> -50, -11, -6, ...
TABLE1_COUNTS = [(2, 0, 0), (0, 2, 1), (0, 1, 1), (0, 1, 1), (0, 2, 1), (0, 1, 1), (0, 1, 1),
                 (2, 1, 0), (0, 1, 1), (0, 2, 1)]
ITEMS = [
    {"src": "The museum opens at nine.", "tgt": "Das Museum öffnet um neun Uhr.", "system": "good",
     "doc_id": "d1", "seg_id": "1"},
    {"src": "Tickets are sold at the door.", "tgt": "Karten werden an der Tür verkauft.", "system": "good",
     "doc_id": "d1", "seg_id": "2"},
    {"src": "The museum opens at nine.", "tgt": "BAD Museum neun.", "system": "bad", "doc_id": "d1", "seg_id": "1"},
    {"src": "Tickets are sold at the door.", "tgt": "FLAKY Tickets Tür.", "system": "bad", "doc_id": "d1",
     "seg_id": "2"},
]


def answer(counts: tuple[int, int, int]) -> str:
    err = {"type": "accuracy/mistranslation", "desc": "wrong"}
    c, M, m = counts
    return json.dumps({"errors": {"critical": [err] * c, "major": [err] * M, "minor": [err] * m}})


def responder(body: dict) -> str:
    run = body["seed"]  # the engine sends seed + run index; seed is 0 here
    target = json.loads(body["messages"][-1]["content"])["target"]
    if target.startswith("BAD"):
        return answer(TABLE1_COUNTS[run])
    if target.startswith("FLAKY"):
        if run < 3:
            return '{"errors": {"critical": [], "major": [{"type": "accuracy/omis'  # truncated JSON
        if run == 3:
            return '{"errors": {"blocker": []}}'  # unknown severity
        return answer((0, 1, 0)) if run % 2 else f"Here you go:\n```json\n{answer((0, 0, 1))}\n```"
    return '{"errors": {"critical": [], "major": [], "minor": []}}'


@pytest.fixture
def run_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    inp = tmp_path / "doc.jsonl"
    inp.write_text("\n".join(json.dumps(it | {"src_lang": "en", "tgt_lang": "de"}) for it in ITEMS) + "\n",
                   encoding="utf-8")
    out = tmp_path / "run"
    with ScriptedServer(responder) as srv:
        res = CliRunner().invoke(cli, ["judge", str(inp), "--out", str(out), "--protocol", "mqm",
                                       "--runs", "10", "--backend", "openai", "--model", "m",
                                       "--base-url", srv.base_url, "-q", "-c", "4"])
        requests = list(srv.requests)
    assert res.exit_code == 0, res.output + str(res.exception)
    return out, requests


def test_requests_follow_the_protocol(run_dir):
    out, requests = run_dir
    assert len(requests) == 40
    for body in requests:
        assert body["temperature"] == 0.4
        system, user = body["messages"][0], body["messages"][1]
        assert len(body["messages"]) == 2 and system["role"] == "system"
        assert "The museum opens at nine.\nTickets are sold at the door." in system["content"]
        assert set(json.loads(user["content"])) == {"source_language", "source", "target_language", "target"}
    assert sorted(b["seed"] for b in requests if "BAD" in b["messages"][1]["content"]) == list(range(10))


def test_judgments_scores_and_outputs(run_dir):
    out, _ = run_dir
    rows = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
    assert len(rows) == 40
    flaky = sorted((r for r in rows if r["item_index"] == 3), key=lambda r: r["run_index"])
    assert [r["status"] for r in flaky] == ["parse_failed"] * 4 + ["ok"] * 6
    assert all(r["score"] is None and r["error"] for r in flaky[:4])
    assert [r["score"] for r in flaky[4:]] == [-1.0, -5.0, -1.0, -5.0, -1.0, -5.0]
    bad = sorted((r for r in rows if r["item_index"] == 2), key=lambda r: r["run_index"])
    assert [r["score"] for r in bad] == [-50, -11, -6, -6, -11, -6, -6, -55, -6, -11]

    seg = [ln.split("\t") for ln in (out / "segments.tsv").read_text().splitlines()]
    head = seg[0]
    cells = [dict(zip(head, r)) for r in seg[1:]]
    assert float(cells[0]["score"]) == 0.0 and cells[0]["runs_ok"] == "10"
    assert float(cells[2]["score"]) == pytest.approx(-8.496, abs=1e-3)  # rrwa of Table 1
    # flaky: 6 ok runs -1,-5,-1,-5,-1,-5; rrwa = sorted desc with 1/r weights
    kept = np.array([-1, -1, -1, -5, -5, -5.0])
    w = 1 / np.arange(1, 7)
    assert float(cells[3]["score"]) == pytest.approx(float((w * kept).sum() / w.sum()), abs=1e-4)
    assert (cells[3]["runs_ok"], cells[3]["runs_failed"]) == ("6", "4")

    sys_rows = [ln.split("\t") for ln in (out / "systems.tsv").read_text().splitlines()[1:]]
    assert [r[0] for r in sys_rows] == ["good", "bad"]
    mt = (out / "mtme").iterdir()
    files = {p.name: p.read_text().splitlines() for p in mt}
    seg_file = next(v for k, v in files.items() if k.endswith(".seg.score"))
    sys_file = next(v for k, v in files.items() if k.endswith(".sys.score"))
    assert [ln.split("\t")[0] for ln in seg_file] == ["good", "good", "bad", "bad"]
    assert float(sys_file[1].split("\t")[1]) == pytest.approx(
        (float(cells[2]["score"]) + float(cells[3]["score"])) / 2, abs=1e-5)
    manifest = json.loads((out / "manifest.json").read_text())
    assert "mqm" in json.dumps(manifest)


def test_variability_of_the_run(run_dir):
    out, _ = run_dir
    m = RunDir.open(out).run_score_matrices()["m"]
    rep = variability_report(m)
    assert rep.delta_max == 49 and rep.n_runs == 10 and rep.scored_items == 4
    assert rep.share_delta_zero == 0.5
