"""Output writers: runs judged against the scripted server, exported, compared with the run's own
files byte for byte and read back with the readers; every unsafe target is refused (exit 2 path)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from polyjudge.cli.main import cli
from polyjudge.data.errors import InputError
from polyjudge.metaeval.readers import read_mtme_score_file
from polyjudge.metaeval.spans.readers import read_spans
from polyjudge.rundir import RunDir
from polyjudge.rundir.writers import WRITERS, check_file_name, mtme_name
from tests.helpers.openai_server import ScriptedServer

FIXTURE_RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run-0.1.0"
ITEMS = [
    {"src": "Er kam am Dienstag an.", "tgt": "He arrived on Monday.", "seg_id": "1", "system": "A"},
    {"src": "Das Haus ist rot.", "tgt": "The house is red.", "seg_id": "2", "system": "A"},
    {"src": "Er kam am Dienstag an.", "tgt": "He came on Tuesday.", "seg_id": "1", "system": "B"},
]
# every system scores every segment: what mt-metrics-eval needs
FULL_ITEMS = [*ITEMS[:3], {"src": "Das Haus ist rot.", "tgt": "The house is red!", "seg_id": "2", "system": "B"}]
TSA = {"Monday": {"annotated_translation": "He arrived on <v0>Monday</v0>.",
                  "errors": [{"severity": "major", "category": "accuracy/mistranslation"}]}}


def _judge(tmp: Path, name: str, responder, items=ITEMS) -> Path:
    protocol = name.split("-")[0]
    inp = tmp / f"{name}.jsonl"
    inp.write_text("".join(json.dumps(it | {"src_lang": "de", "tgt_lang": "en", "doc_id": "d"}) + "\n"
                           for it in items))
    out = tmp / name
    with ScriptedServer(responder) as srv:
        res = CliRunner().invoke(cli, ["judge", str(inp), "--out", str(out), "--protocol", protocol, "--backend",
                                       "openai", "--model", "m", "--base-url", srv.base_url, "-q", "-c", "1",
                                       "--max-failure-rate", "1"])  # unscored segments on purpose
    assert res.exit_code == 0, res.output + str(res.exception)
    return out


def _da(body: dict) -> str:
    text = body["messages"][-1]["content"]
    return json.dumps({"score": 30 if "Monday" in text else 80 if "red" in text else None})


def _da_full(body: dict) -> str:
    text = body["messages"][-1]["content"]
    return json.dumps({"score": 30 if "Monday" in text else 80 if "red" in text else 55})


def _tsa(body: dict) -> str:
    text = body["messages"][-1]["content"]
    tgt = next(it["tgt"] for it in ITEMS if it["tgt"] in text)
    return json.dumps(TSA.get(tgt.split()[-1].rstrip("."), {"annotated_translation": tgt, "errors": []}))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("writers")
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "test-key")
    try:
        return {"da": _judge(tmp, "da", _da), "tsa": _judge(tmp, "tsa", _tsa),
                "da-full": _judge(tmp, "da-full", _da_full, FULL_ITEMS)}
    finally:
        mp.undo()


def _export(kind: str, run: Path, out: Path) -> list[Path]:
    return WRITERS.get(kind).write(RunDir.open(run), out)


def test_mtme_export_is_the_runs_own_mtme_files_and_reads_back(runs, tmp_path):
    written = _export("mtme", runs["da-full"], tmp_path / "out")
    name = json.loads((runs["da-full"] / "manifest.json").read_text())["outputs"]["mtme_name"]
    assert name == "polyjudge-da-src"  # mt-metrics-eval reads the part after the last dash as the reference
    assert sorted(p.name for p in written) == [f"{name}.doc.score", f"{name}.seg.score", f"{name}.sys.score"]
    for p in written:
        assert p.read_bytes() == (runs["da-full"] / "mtme" / p.name).read_bytes()
    # independently: the segment scores per system equal segments.tsv's, in input order
    rows = [line.split("\t") for line in (runs["da-full"] / "segments.tsv").read_text().splitlines()[1:]]
    expected: dict[str, list[float | None]] = {}
    for r in rows:
        expected.setdefault(r[0], []).append(float(r[5]))
    assert read_mtme_score_file(tmp_path / "out" / f"{name}.seg.score") == expected == {"A": [30.0, 80.0],
                                                                                        "B": [55.0, 80.0]}
    assert read_mtme_score_file(tmp_path / "out" / f"{name}.sys.score") == {"A": [55.0], "B": [67.5]}
    assert read_mtme_score_file(tmp_path / "out" / f"{name}.doc.score") == {"A": [55.0], "B": [67.5]}


def test_mtme_export_of_a_run_with_unscored_segments_says_what_is_missing(runs, tmp_path):
    with pytest.raises(InputError) as exc:
        _export("mtme", runs["da"], tmp_path / "out")
    assert "system 'B': 2 of 2 segments without a score" in str(exc.value)
    assert not (tmp_path / "out").exists()  # nothing written, never a None
    manifest = json.loads((runs["da"] / "manifest.json").read_text())
    assert not (runs["da"] / "mtme").exists() and "without a score" in manifest["outputs"]["mtme_skipped"]


def test_mtme_name_of_a_0_1_0_run_comes_from_its_mtme_folder_and_gains_src(tmp_path):
    assert mtme_name(RunDir.open(FIXTURE_RUN)) == "polyjudge-da-src"
    with pytest.raises(InputError, match="system 'A': 8 of 16 segments without a score"):
        _export("mtme", FIXTURE_RUN, tmp_path / "out")  # its systems scored different segments


def test_task2_export_is_the_runs_spans_and_reads_back_as_task2(runs, tmp_path):
    (written,) = _export("task2", runs["tsa"], tmp_path / "out")
    assert written.read_bytes() == (runs["tsa"] / "spans.tsv").read_bytes()
    segs, warnings = read_spans(written)  # auto: the task-2 rule takes it
    spans = {(s.system, s.seg_id): [(x.start, x.end, x.severity) for x in s.spans] for s in segs}
    assert spans == {("A", "1"): [(14, 20, "major")], ("A", "2"): [], ("B", "1"): []} and warnings == []


def test_task2_of_a_run_without_spans_is_an_input_error_and_writes_nothing(runs, tmp_path):
    with pytest.raises(InputError, match="spans.tsv"):
        _export("task2", runs["da"], tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("run", ["da", "fixture"])
def test_segment_table_exports_match_segments_tsv(runs, tmp_path, run):
    root = FIXTURE_RUN if run == "fixture" else runs[run]
    (tsv,) = _export("segments-tsv", root, tmp_path / "out")
    assert tsv.read_bytes() == (root / "segments.tsv").read_bytes()
    (jsonl,) = _export("segments-jsonl", root, tmp_path / "out")  # a second export into the same folder
    header, *rows = [line.split("\t") for line in tsv.read_text().splitlines()]
    objs = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert len(objs) == len(rows)
    for obj, row in zip(objs, rows):
        cells = dict(zip(header, row))
        assert obj["system"] == cells["system"] and obj["seg_id"] == cells["seg_id"]
        assert obj["score"] == (float(cells["score"]) if cells["score"] else None)
        assert obj.get("judge_scores", {}) == {k[6:]: float(v) if v else None for k, v in cells.items()
                                               if k.startswith("score:")}


def test_refuses_the_run_directory_and_its_mtme_folder(runs, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(runs["da"], run)
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    for target in (run, run / "mtme"):
        with pytest.raises(InputError):
            _export("mtme", run, target)
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before


def test_refuses_a_foreign_file_and_a_symlink_and_keeps_them(runs, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "segments.tsv").write_text("mine\n")
    with pytest.raises(InputError, match="not a polyjudge export folder"):
        _export("segments-tsv", runs["da"], out)
    assert (out / "segments.tsv").read_text() == "mine\n"
    ours = tmp_path / "ours"
    _export("segments-jsonl", runs["da"], ours)
    (ours / "segments.tsv").write_text("mine\n")  # the user's file in polyjudge's export folder
    with pytest.raises(InputError, match="not polyjudge's"):
        _export("segments-tsv", runs["da"], ours)
    assert (ours / "segments.tsv").read_text() == "mine\n"
    link_dir = tmp_path / "linked"
    link_dir.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    _export("segments-jsonl", runs["da"], link_dir)  # an export folder of polyjudge's own
    os.symlink(victim, link_dir / "segments.tsv")
    with pytest.raises(InputError, match="symlink"):
        _export("segments-tsv", runs["da"], link_dir)
    assert victim.read_text() == "keep\n"


def test_a_hostile_mtme_name_in_the_manifest_chooses_no_path(runs, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(runs["da"], run)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["outputs"]["mtme_name"] = "../../escaped"
    (run / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(InputError) as exc:
        _export("mtme", run, tmp_path / "out" / "deep")
    assert "manifest.json" in str(exc.value) and "outputs.mtme_name" in str(exc.value)
    assert not list(tmp_path.glob("**/escaped*"))


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "..\\x", ".hidden", "x\0y", "é" * 200])
def test_check_file_name_refuses_anything_but_one_plain_name(name):
    with pytest.raises(InputError):
        check_file_name(name)


def test_every_writer_is_listed_with_what_it_writes():
    res = CliRunner().invoke(cli, ["writers", "--format", "json"])
    assert res.exit_code == 0, res.output
    listed = {e["name"]: e for e in json.loads(res.output)}
    assert list(listed) == WRITERS.names()
    assert all(e["summary"] and e["options"][0]["name"] == "writes" for e in listed.values())
    assert listed["task2"]["options"][0]["default"] == "spans.tsv"
