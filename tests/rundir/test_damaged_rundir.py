"""A damaged run directory is an InputError naming the file, line and field, never a crash (issue 13)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from polyjudge.data.errors import InputError
from polyjudge.rundir import JUDGMENTS, MANIFEST, SEGMENTS, SYSTEMS, RunDir

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run-0.1.0"


@pytest.fixture
def run(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    shutil.copytree(RUN, d)
    return d


def _everything(rd: RunDir) -> None:
    """Every reading method, as the report, meta-eval and validation call them."""
    _ = rd.manifest, rd.judgments, rd.items, rd.segment_rows, rd.segment_table(), rd.system_rows()
    for judge in rd.judges:
        rd.run_scores(judge)
        rd.final_scores(judge)
    rd.aggregate_names()


def test_bom_and_crlf_read_like_the_original(run):
    want = RunDir.open(RUN)
    for name in (JUDGMENTS, SEGMENTS, SYSTEMS, MANIFEST, "items.jsonl", "aggregates.tsv"):
        p = run / name
        p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes().replace(b"\n", b"\r\n"))
    got = RunDir.open(run)
    assert got.manifest == want.manifest and got.judgments == want.judgments
    assert got.segment_rows == want.segment_rows and got.system_rows() == want.system_rows()
    assert [i.to_dict() for i in got.items] == [i.to_dict() for i in want.items]
    np.testing.assert_array_equal(got.aggregate_scores("m1", "median"), want.aggregate_scores("m1", "median"))


@pytest.mark.parametrize("name,edit,line,field", [
    (JUDGMENTS, lambda b: b.replace(b'"ok"', b'"o\xffk"', 1), 1, None),
    (SEGMENTS, lambda b: b"\n".join(x + b"\xc3" if i == 2 else x for i, x in enumerate(b.split(b"\n"))), 3, None),
    (SEGMENTS, lambda b: b.replace(b"\t", b" ", 9), 2, None),  # a short row
    (SYSTEMS, lambda b: b.replace(b"\t8\t", b"\tmany\t", 1), 2, "n_segments"),
    (MANIFEST, lambda b: b"\xef\xbb\xbf" + b"[" * 100_000, None, None),
])
def test_damaged_files_name_file_and_line(run, name, edit, line, field):
    p = run / name
    p.write_bytes(edit(p.read_bytes()))
    with pytest.raises(InputError) as exc:
        _everything(RunDir.open(run))
    assert exc.value.path == str(p) and exc.value.line == line and exc.value.field == field


@pytest.mark.parametrize("key,value,field", [
    ("versions", ["not", "an", "object"], "versions"),
    ("counts", {"items": "many"}, "counts.items"),
    ("cost_usd", "cheap", "cost_usd"),
    ("wall_time_s", 10**400, "wall_time_s"),
    ("judges", 5, "judges"),
    ("prices", [1, 2], "prices"),
    ("config", {"aggregator": ["mean"]}, "config.aggregator"),
    ("config", {"runs": True}, "config.runs"),
    ("config", {"temperature": "hot"}, "config.temperature"),
    ("format_version", "1", "format_version"),
])
def test_manifest_of_wrong_types(run, key, value, field):
    m = json.loads((run / MANIFEST).read_text())
    m[key] = value
    (run / MANIFEST).write_text(json.dumps(m))
    with pytest.raises(InputError) as exc:
        _ = RunDir.open(run).manifest
    assert exc.value.path == str(run / MANIFEST) and exc.value.field == field


@pytest.mark.parametrize("change,field", [
    ({"run_index": 10**12}, "run_index"),
    ({"item_index": 10**12}, "item_index"),
    ({"usage": {"prompt_tokens": "12"}}, "usage.prompt_tokens"),
    ({"usage": {"completion_tokens": 10**30}}, "usage.completion_tokens"),
    ({"latency_s": "slow"}, "latency_s"),
    ({"score": float("inf")}, "score"),
])
def test_judgments_of_wrong_types_or_impossible_indices(run, change, field):
    rows = [json.loads(x) for x in (run / JUDGMENTS).read_text().splitlines()]
    rows[0].update(change)
    (run / JUDGMENTS).write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (run / "items.jsonl").unlink()  # items are then rebuilt from the judgments
    with pytest.raises(InputError) as exc:
        _everything(RunDir.open(run))
    assert exc.value.path == str(run / JUDGMENTS) and exc.value.field == field
