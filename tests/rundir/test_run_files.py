"""Every table of a run directory has one rendering, a registered writer's (issue 36, item 4).

Runs are judged against the scripted server (a panel of two judges, two runs each: score columns per
judge and aggregates; gemba-esa: merged annotations and spans), then every table is exported through
its writer and compared byte for byte with the file the run directory holds: one layout, whichever
path writes the file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from polyjudge.cli.main import cli
from polyjudge.data.errors import InputError
from polyjudge.rundir import AGGREGATES, MERGED, SEGMENTS, SPANS, SYSTEMS, RunDir
from polyjudge.rundir.directory import MTME_DIR
from polyjudge.rundir.writers import WRITERS
from tests.helpers.openai_server import ScriptedServer

# file of the run directory -> the writer that renders it
RUN_TABLES = {SEGMENTS: "segments-tsv", SYSTEMS: "systems-tsv", AGGREGATES: "aggregates-tsv",
              MERGED: "merged-jsonl", SPANS: "task2"}


def _items() -> list[dict[str, str]]:
    return [{"src": f"Er kam am Dienstag {d}{s} an.", "tgt": f"He arrived on Monday {d}{s} {system}.",
             "seg_id": str(s), "doc_id": f"doc{d}", "system": system, "src_lang": "de", "tgt_lang": "en"}
            for d in range(2) for s in range(3) for system in "ABC"]


def _responder(protocol: str):
    def answer(body: dict) -> str:
        text = body["messages"][-1]["content"]
        h = (sum(map(ord, text)) + 7 * int(body.get("seed") or 0) + len(body["model"])) % 100
        if protocol == "gemba-esa":
            return json.dumps({"errors": [{"span": "Monday", "severity": "major" if h % 2 else "minor"}],
                               "score": h})
        return "no idea" if h % 17 == 0 else str(h)  # a few unparseable answers: empty cells

    return answer


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("run-files")
    inp = tmp / "in.jsonl"
    inp.write_text("".join(json.dumps(it) + "\n" for it in _items()), encoding="utf-8")
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "test-key")
    out = {}
    try:
        for protocol in ("da", "gemba-esa"):
            with ScriptedServer(_responder(protocol)) as srv:
                res = CliRunner().invoke(cli, [
                    "judge", str(inp), "-o", str(tmp / protocol), "-p", protocol, "--runs", "2", "-q", "-c", "1",
                    "--judge", f"openai:m1@{srv.base_url}", "--judge", f"openai:m2@{srv.base_url}"])
            assert res.exit_code == 0, res.output + str(res.exception)
            out[protocol] = tmp / protocol
    finally:
        mp.undo()
    return out


@pytest.mark.parametrize("protocol", ["da", "gemba-esa"])
def test_every_table_exported_by_its_writer_is_the_run_directorys_own_file(runs, tmp_path, protocol):
    run = runs[protocol]
    compared = []
    for name, writer in RUN_TABLES.items():
        if not (run / name).is_file():
            continue
        (written,) = WRITERS.get(writer).write(RunDir.open(run), tmp_path / writer)
        assert written.name == name
        assert written.read_bytes() == (run / name).read_bytes(), name
        compared.append(name)
    expected = [SEGMENTS, SYSTEMS, AGGREGATES] + ([MERGED, SPANS] if protocol == "gemba-esa" else [])
    assert sorted(compared) == sorted(expected)
    assert "score:m1" in (run / SEGMENTS).read_text().splitlines()[0]  # the panel's columns are compared too
    for written in WRITERS.get("mtme").write(RunDir.open(run), tmp_path / "mtme"):
        assert written.read_bytes() == (run / MTME_DIR / written.name).read_bytes(), written.name


def test_every_run_table_has_a_registered_writer():
    writes = {w.writes for _, w in WRITERS.items()}
    assert set(RUN_TABLES) <= writes
    assert {WRITERS.get(w).writes for w in RUN_TABLES.values()} == set(RUN_TABLES)


def test_a_run_without_the_table_is_refused_naming_the_file(runs, tmp_path):
    with pytest.raises(InputError, match=MERGED.replace(".", r"\.")):
        WRITERS.get("merged-jsonl").write(RunDir.open(runs["da"]), tmp_path / "out")
    assert not (tmp_path / "out" / MERGED).exists()


def test_export_on_the_command_line_writes_the_systems_table(runs, tmp_path):
    res = CliRunner().invoke(cli, ["export", str(runs["da"]), "--to", "systems-tsv", "-o", str(tmp_path / "x")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "x" / SYSTEMS).read_bytes() == (runs["da"] / SYSTEMS).read_bytes()
    assert Path(runs["da"] / SYSTEMS).read_text().startswith("system\tscore\tn_segments\tn_unscored\n")
