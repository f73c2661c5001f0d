"""Issue 26 end to end, through the real readers and writers: an mt-metrics-eval test set judged where it
lives (the reader of data/testsets.py), exported with `export --to mtme`, and read back by meta-eval in place."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from polyjudge.cli.main import cli
from polyjudge.metaeval.readers import read_mtme_score_file
from tests.helpers.mtme_testset import LP, build_ted_testset
from tests.helpers.openai_server import ScriptedServer


def _score(body: dict) -> str:
    return json.dumps({"score": zlib.crc32(body["messages"][-1]["content"].encode()) % 101})


def test_a_test_set_judged_in_place_exports_every_system_in_order_and_ranks_among_the_stored_metrics(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    ts = build_ted_testset(tmp_path / "mtme")
    run = tmp_path / "run"
    with ScriptedServer(_score) as srv:
        res = CliRunner().invoke(cli, ["judge", str(ts.root), "--lp", LP, "--out", str(run), "-p", "da",
                                       "--backend", "openai", "--model", "m", "--base-url", srv.base_url,
                                       "-q", "-c", "2"])
    assert res.exit_code == 0, res.output
    out = tmp_path / "export"
    res = CliRunner().invoke(cli, ["export", str(run), "--to", "mtme", "-o", str(out)])
    assert res.exit_code == 0, res.output
    seg_files = sorted(out.rglob("*.seg.score"))
    assert seg_files and all(p.name.startswith("polyjudge-da-src") for p in seg_files)
    lines = seg_files[0].read_text(encoding="utf-8").splitlines()
    systems = list(dict.fromkeys(line.split("\t")[0] for line in lines))
    assert set(systems) == set(ts.systems)  # refA judged as a system: the run is reference-free
    assert len(lines) == len(ts.systems) * len(ts.sources) and "None" not in "".join(lines)
    scores = read_mtme_score_file(seg_files[0])
    assert all(len(v) == len(ts.sources) for v in scores.values())
    res = CliRunner().invoke(cli, ["meta-eval", str(run), "--mtme", str(ts.root), "--lp", LP,
                                   "--with-stored-metrics", "--format", "json", "-k", "20"])
    assert res.exit_code == 0, res.output
    assert "polyjudge-da-src" in res.output and "lenratio-refA" in res.output
