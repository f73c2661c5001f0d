"""The judgments spool, the one JSON form of a judgment line, and the outputs' fingerprint."""

import json

from polyjudge.data.records import Item
from polyjudge.rundir import (
    JudgmentRecord,
    JudgmentSpool,
    Manifest,
    RunContents,
    RunDir,
    output_sizes,
    write_manifest,
    write_run,
)
from polyjudge.rundir.records import SegmentRow


def record(i, reasoning=None):
    return JudgmentRecord(item_index=i, system="A", doc_id="d", seg_id=str(i), run_index=0, judge="m", status="ok",
                          error=None, raw_text='{"score": 5}', annotation={"score": 5}, score=5.0, prompt_tokens=3,
                          completion_tokens=2, latency_s=0.5, finish_reason="stop", reasoning=reasoning)


def contents(judgments):
    items = [Item(src_lang="en", tgt_lang="de",
                  src=f"s{i}", tgt=f"t{i}", system="A", doc_id="d", seg_id=str(i)) for i in range(2)]
    segments = [SegmentRow("A", "d", str(i), None, None, 5.0, 1, 0, {"m": 5.0}) for i in range(2)]
    return RunContents(manifest=Manifest(), items=items, judges=["m"], judgments=judgments, segments=segments,
                       systems=[], mtme_name="x-src")


def test_a_spooled_run_is_the_same_as_a_written_one(tmp_path):
    records = [record(0), record(1, reasoning="thought")]
    write_run(tmp_path / "direct", contents(records))
    spool = JudgmentSpool(tmp_path / "spooled")
    for r in records:
        spool.add(r if r.reasoning else r.to_json())  # records and their JSON objects alike
    assert spool.available and spool.count == 2
    write_run(tmp_path / "spooled", contents(spool))
    assert not spool.available
    assert (tmp_path / "spooled" / "judgments.jsonl").read_bytes() == \
        (tmp_path / "direct" / "judgments.jsonl").read_bytes()
    assert not [p for p in (tmp_path / "spooled").iterdir() if p.name.endswith(".tmp")]
    mode = (tmp_path / "spooled" / "judgments.jsonl").stat().st_mode & 0o777
    assert mode == (tmp_path / "direct" / "judgments.jsonl").stat().st_mode & 0o777  # not private to its writer
    back = RunDir.open(tmp_path / "spooled").judgments
    assert back == records


def test_the_reasoning_key_is_written_only_when_there_is_some():
    plain, thinking = record(0).to_json(), record(0, reasoning="").to_json()
    assert "reasoning" not in plain and thinking["reasoning"] == ""
    assert list(plain) == ["item_index", "system", "doc_id", "seg_id", "run_index", "judge", "status", "error",
                           "raw_text", "annotation", "score", "usage", "latency_s", "finish_reason"]
    assert record(1, reasoning="x").to_json()["reasoning"] == "x"


def test_a_discarded_spool_leaves_nothing(tmp_path):
    spool = JudgmentSpool(tmp_path)
    spool.add(record(0))
    assert len(list(tmp_path.iterdir())) == 1
    spool.discard()
    assert list(tmp_path.iterdir()) == [] and not spool.available


def test_output_sizes_see_an_edit_and_the_manifest_is_rewritten_alone(tmp_path):
    write_run(tmp_path, contents([record(0), record(1)]))
    before = output_sizes(tmp_path)
    assert set(before) == {"judgments.jsonl", "items.jsonl", "segments.tsv", "systems.tsv", "mtme/x-src.seg.score",
                           "mtme/x-src.sys.score", "mtme/x-src.doc.score"}
    m = Manifest(signature="sig")
    write_manifest(tmp_path, m)
    assert json.loads((tmp_path / "manifest.json").read_text())["signature"] == "sig"
    assert output_sizes(tmp_path) == before  # the manifest is not one of them
    p = tmp_path / "segments.tsv"
    p.write_text(p.read_text().replace("\t", " ", 1))  # same size, edited
    assert output_sizes(tmp_path) != before
