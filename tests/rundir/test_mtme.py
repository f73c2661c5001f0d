"""rundir/mtme.py: a run laid out as mt-metrics-eval lays out a test set, under its rules; and a re-run of
an older run directory (files named polyjudge-PROTOCOL.*) removes its old-named files, never the user's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from polyjudge.cli.main import cli
from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from polyjudge.rundir.mtme import check_metric_name, missing, mtme_files, mtme_grid, references_used
from tests.helpers.openai_server import ScriptedServer

OWNED = ".polyjudge-owned.json"


def _items(systems=("A", "B"), segs=("1", "2")) -> list[Item]:
    return [Item(f"s{g}", f"{s}{g}", system=s, doc_id="d1" if g == "1" else "d2", seg_id=g) for s in systems
            for g in segs]


def test_a_complete_grid_renders_every_level_the_input_had():
    items = _items()
    grid = mtme_grid(items, [1.0, 2.0, 3.0, None])
    assert missing(grid, "x-src") == ["system 'B': 1 of 2 segments without a score (first: segment 2)"]
    grid = mtme_grid(items, [1.0, 2.0, 3.0, 5.0])
    files = mtme_files(grid, "x-src")
    assert files == {"x-src.seg.score": ["A\t1.0\n", "A\t2.0\n", "B\t3.0\n", "B\t5.0\n"],
                     "x-src.doc.score": ["A\t1.0\n", "A\t2.0\n", "B\t3.0\n", "B\t5.0\n"],
                     "x-src.sys.score": ["A\t1.5\n", "B\t4.0\n"]}


def test_hostile_names_and_repeats_are_refused_before_any_file():
    with pytest.raises(InputError, match="has segment '1' twice"):
        mtme_grid([*_items(("A",), ("1",)), *_items(("A",), ("1",))], [1.0, 2.0])
    grid = mtme_grid(_items(("A B",), ("1",)), [1.0])
    assert any("holds whitespace" in p for p in missing(grid, "x-src"))
    for bad in ("polyjudge", "a b-src", "-src", "x-", "../x-src"):
        with pytest.raises(InputError, match="NAME-src or NAME-REF"):
            check_metric_name(bad)
    assert references_used("m-refA.refB") == {"refA", "refB"} and references_used("m-src") == set()


def test_the_test_sets_systems_are_required_but_the_reference_the_metric_used():
    record = {"n_segments": 1, "all_systems": ["A", "refA"], "systems": ["A"]}
    item = Item("s", "t", system="A", seg_id="1", extra={"testset": record})
    grid = mtme_grid([item], [1.0])
    assert missing(grid, "m-refA") == []  # mt-metrics-eval needs every system but the reference used
    assert missing(grid, "m-src") == ["system 'refA' of the test set was not judged"]


def _judge(inp: Path, run: Path) -> None:
    with ScriptedServer(lambda b: json.dumps({"score": 70})) as srv:
        res = CliRunner().invoke(cli, ["judge", str(inp), "--out", str(run), "-p", "da", "--backend", "openai",
                                       "--model", "m", "--base-url", srv.base_url, "-q"])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("recorded", [True, False], ids=["ownership-recorded", "adopted"])
def test_a_rerun_of_an_older_run_dir_removes_its_old_named_files_only(tmp_path, monkeypatch, recorded):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"src_lang": "en", "tgt_lang": "de",
                                       "src": f"s{g}", "tgt": f"{s}{g}", "seg_id": g, "system": s}) + "\n"
                           for s in "AB" for g in "12"))
    run = tmp_path / "run"
    _judge(inp, run)
    # as an earlier polyjudge left it: polyjudge-da.* files, that name in the manifest and the record
    for level in ("seg", "sys"):
        (run / "mtme" / f"polyjudge-da-src.{level}.score").rename(run / "mtme" / f"polyjudge-da.{level}.score")
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["outputs"] = {"mtme_name": "polyjudge-da"}
    (run / "manifest.json").write_text(json.dumps(manifest))
    if recorded:
        owned = json.loads((run / OWNED).read_text())
        owned["files"] = [f.replace("polyjudge-da-src.", "polyjudge-da.") for f in owned["files"]]
        (run / OWNED).write_text(json.dumps(owned))
    else:
        (run / OWNED).unlink()  # written before ownership was recorded: adopted by its manifest's name
    (run / "mtme" / "COMET-refA.seg.score").write_text("A\t0.5\n")  # the user's
    (run / "mtme" / "polyjudge-da-src.doc.score").write_text("mine\n")  # the user's, under a name polyjudge skips
    _judge(inp, run)
    names = sorted(p.name for p in (run / "mtme").iterdir())
    assert names == ["COMET-refA.seg.score", "polyjudge-da-src.doc.score", "polyjudge-da-src.seg.score",
                     "polyjudge-da-src.sys.score"]
    assert (run / "mtme" / "COMET-refA.seg.score").read_text() == "A\t0.5\n"
    assert (run / "mtme" / "polyjudge-da-src.doc.score").read_text() == "mine\n"
