"""Inputs every reader refuses with exit 2 and one line naming the file (issue 34, readers): broken
links, loops, folders and pipes in an mt-metrics-eval test set, one system given twice, a header row
repeated inside a table, one column mapped to two fields, segment ids that are not whole numbers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from polyjudge.api.inputs import InputSpec, read_input
from polyjudge.data.errors import InputError
from polyjudge.data.readers import read_items
from polyjudge.data.testsets import WMT25_COLUMNS
from tests.helpers.cli import cli
from tests.helpers.extras import needs_extra

DRY = ("--dry-run", "--judge", "openai:m@http://127.0.0.1:9/v1", "-q")


def _testset(root: Path) -> Path:
    """A two-system mt-metrics-eval folder (text files) for en-de."""
    for folder in ("sources", "references", "system-outputs/en-de"):
        (root / folder).mkdir(parents=True)
    (root / "sources" / "en-de.txt").write_text("The dog runs.\nIt rains.\n")
    (root / "references" / "en-de.refA.txt").write_text("Der Hund rennt.\nEs regnet.\n")
    for name in ("sysA", "sysB"):
        (root / "system-outputs" / "en-de" / f"{name}.txt").write_text("Der Hund läuft.\nEs regnet.\n")
    return root


def _refused(capsys: pytest.CaptureFixture[str], path: object, *extra: object) -> str:
    assert cli("judge", path, *extra, *DRY) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def test_the_testset_reads_as_built(tmp_path):
    assert len(read_input(InputSpec(str(_testset(tmp_path / "ts")), lp="en-de"))) == 4


@pytest.mark.parametrize("kind", ["dangling", "loop", "folder"])
def test_a_source_file_that_is_no_file_is_refused_naming_it(tmp_path, capsys, kind):
    root = _testset(tmp_path / "ts")
    src = root / "sources" / "en-de.txt"
    src.unlink()
    if kind == "dangling":
        src.symlink_to(tmp_path / "gone.txt")
    elif kind == "loop":
        src.symlink_to(src)
    else:
        src.mkdir()
    err = _refused(capsys, root, "--lp", "en-de")
    assert "sources/en-de.txt" in err
    with pytest.raises(InputError, match="en-de.txt"):
        read_input(InputSpec(str(root), lp="en-de"))


def test_a_pipe_as_a_system_output_is_refused_before_it_is_opened(tmp_path, capsys):
    root = _testset(tmp_path / "ts")
    out = root / "system-outputs" / "en-de" / "sysB.txt"
    out.unlink()
    os.mkfifo(out)  # opening it for reading would wait for a writer forever
    err = _refused(capsys, root, "--lp", "en-de")
    assert "sysB.txt" in err and "not a regular file" in err


def test_a_system_in_both_text_and_jsonl_is_refused_naming_both(tmp_path, capsys):
    root = _testset(tmp_path / "ts")
    folder = root / "system-outputs" / "en-de"
    (folder / "sysB.jsonl").write_text("".join(json.dumps({"hypothesis": t}) + "\n" for t in ("a", "b")))
    err = _refused(capsys, root, "--lp", "en-de")
    assert "sysB.txt" in err and "sysB.jsonl" in err


def test_a_wmt25_header_repeated_inside_the_file_is_not_an_item(tmp_path, capsys):
    header = "\t".join(WMT25_COLUMNS)
    row = "\t".join({"doc_id": "d1", "segment_id": "1", "source_lang": "en", "target_lang": "de_DE"}.get(c, c + "1")
                    for c in WMT25_COLUMNS)
    path = tmp_path / "genmt.tsv"
    path.write_text(f"{header}\n{row}\n{header}\n{row.replace('d1', 'd2')}\n")
    err = _refused(capsys, path)
    assert f"{path}:3" in err and "header row again" in err


def test_a_csv_header_repeated_inside_the_file_is_refused(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("src,tgt,src_lang,tgt_lang\na,b,en,de\nsrc,tgt,src_lang,tgt_lang\nc,d,en,de\n")
    with pytest.raises(InputError, match="header row again"):
        read_items(path)


def test_one_column_mapped_to_two_fields_is_refused(tmp_path, capsys):
    path = tmp_path / "in.csv"
    path.write_text("src,mt,lp\nThe dog.,Der Hund.,en-de\n")
    err = _refused(capsys, path, "--columns", "tgt=mt,ref=mt")
    assert "'mt'" in err and "two fields" in err
    assert cli("judge", path, "--columns", "tgt=mt", *DRY) == 0


@pytest.mark.parametrize("seg_id", ["NaN", "2.5", "Infinity"])
def test_a_segment_id_that_is_not_a_whole_number_is_refused_in_jsonl(tmp_path, capsys, seg_id):
    path = tmp_path / "in.jsonl"
    path.write_text('{"src": "a", "tgt": "b", "src_lang": "en", "tgt_lang": "de", "seg_id": 1}\n'
                    f'{{"src": "c", "tgt": "d", "src_lang": "en", "tgt_lang": "de", "seg_id": {seg_id}}}\n')
    err = _refused(capsys, path)
    assert f"{path}:2" in err and "seg_id" in err and "whole number" in err


def test_a_whole_float_segment_id_reads_as_the_integer(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"src": "a", "tgt": "b", "seg_id": 3.0}\n')
    assert read_items(path)[0].seg_id == "3"


@needs_extra("datasets")  # pyarrow comes with it
def test_a_parquet_segment_id_with_a_gap_is_refused(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"src": ["a", "c"], "tgt": ["b", "d"], "seg_id": [1.0, float("nan")]}), path)
    with pytest.raises(InputError, match="whole number") as exc:
        read_items(path)
    assert exc.value.field == "seg_id" and exc.value.path == str(path)


def test_mtme_meta_eval_with_only_system_level_human_scores_says_so(tmp_path, capsys):
    from tests.helpers.mtme_testset import LP, build_ted_testset

    ts = build_ted_testset(tmp_path / "mtme")
    for f in (ts.root / "human-scores").glob(f"{LP}.*.seg.score"):
        f.unlink()
    assert list((ts.root / "human-scores").glob("*.sys.score"))
    assert cli("meta-eval", "--mtme", ts.root, "--lp", LP) == 2
    err = capsys.readouterr().err
    assert "several" not in err and "no seg-level human scores" in err and "mqm at sys" in err, err
