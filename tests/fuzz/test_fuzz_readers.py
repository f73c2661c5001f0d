"""Every reader of a user's file, fed hostile bytes: it returns or raises a one-line InputError.

Random bytes, truncated valid files, wrong JSON types, BOMs, CRLF/CR line
ends and 2 MB lines (see :mod:`tests.fuzz.hostile`). Nothing else may escape:
no UnicodeDecodeError, KeyError, TypeError, csv.Error, RecursionError or
MemoryError.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from polyjudge.data.parallel import load_mgsm_parallel, load_xquad_parallel
from polyjudge.data.rating_task import load_task
from polyjudge.data.readers import read_items, read_parallel
from polyjudge.data.wmt_mqm import read_wmt_mqm_report, wmt_mqm_items
from polyjudge.metaeval.ratings.calibration import calibrate
from polyjudge.metaeval.ratings.calibration import read_ratings as read_long_ratings
from polyjudge.report.adapters import read_study
from polyjudge.report.load import load_run
from polyjudge.rundir import RunDir
from polyjudge.validation.ratings import read_ratings
from polyjudge.validation.task import RatingTask
from tests.fuzz import samples as S
from tests.fuzz.hostile import check_reader, count, fuzz_settings, hostile, hostile_json

EXAMPLES = 100


@pytest.fixture(scope="module")
def root() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="polyjudge-fuzz-") as d:
        yield Path(d)


def _write(root: Path, name: str, data: bytes) -> Path:
    p = root / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return p


ITEM_FILES = {"in.jsonl": S.ITEMS_JSONL, "in.tsv": S.ITEMS_TSV, "in.csv": S.ITEMS_CSV,
              "mqm_ted_ende.tsv": S.MQM_TSV}


@pytest.mark.parametrize("name", list(ITEM_FILES))
@fuzz_settings(EXAMPLES)
@given(data=st.data())
def test_read_items(root: Path, name: str, data: st.DataObject) -> None:
    p = _write(root, name, data.draw(hostile(ITEM_FILES[name])))
    count(f"read_items[{name}]")
    items = check_reader(read_items, p)
    if items is not None:
        assert items and all(isinstance(it.src, str) and isinstance(it.tgt, str) for it in items)


@fuzz_settings(EXAMPLES)
@given(src=hostile(S.PARALLEL_SRC), tgt=hostile(S.PARALLEL_TGT))
def test_read_parallel(root: Path, src: bytes, tgt: bytes) -> None:
    count("read_parallel")
    check_reader(read_parallel, _write(root, "s.txt", src), _write(root, "t.txt", tgt),
                 src_lang="en", tgt_lang="de")


@fuzz_settings(EXAMPLES)
@given(content=hostile(S.MQM_TSV))
def test_wmt_mqm_reader(root: Path, content: bytes) -> None:
    count("read_wmt_mqm_report")
    got = check_reader(read_wmt_mqm_report, _write(root, "mqm.tsv", content))
    if got is not None:
        annotations, _ = got
        for it in wmt_mqm_items(annotations, "en", "de"):
            assert isinstance(it.src, str) and isinstance(it.tgt, str)


@pytest.mark.parametrize("name", ["task.json", "task.toml"])
@fuzz_settings(EXAMPLES)
@given(data=st.data())
def test_rating_task_loader(root: Path, name: str, data: st.DataObject) -> None:
    strategy = hostile_json(S.TASK) if name == "task.json" else hostile(S.TASK_TOML)
    path = _write(root, name, data.draw(strategy))
    count(f"load_task[{name}]")
    check_reader(load_task, path)


TASK = RatingTask.build(["Very toxic", "Toxic", "Not toxic"],
                        [["Very toxic"], ["Toxic"], ["Not toxic"], ["Very toxic", "Toxic"], "BC"])


@pytest.mark.parametrize("name,valid", [("r.jsonl", S.RATINGS_JSONL), ("r.tsv", S.RATINGS_TSV)])
@fuzz_settings(EXAMPLES)
@given(data=st.data())
def test_validation_ratings(root: Path, name: str, valid: bytes, data: st.DataObject) -> None:
    path = _write(root, name, data.draw(hostile(valid)))
    count(f"validation.read_ratings[{name}]")
    check_reader(read_ratings, path, TASK)


@pytest.mark.parametrize("name,sep", [("a.tsv", b"\t"), ("a.csv", b","), ("a.jsonl", None)])
@fuzz_settings(EXAMPLES)
@given(data=st.data())
def test_agreement_ratings(root: Path, name: str, sep: bytes | None, data: st.DataObject) -> None:
    if sep is None:
        header, *rows = S.AGREEMENT_TSV.decode().splitlines()
        keys = header.split("\t")
        valid = "".join(json.dumps(dict(zip(keys, r.split("\t")))) + "\n" for r in rows).encode()
    else:
        valid = S.AGREEMENT_TSV.replace(b"\t", sep)
    path = _write(root, name, data.draw(hostile(valid)))
    count(f"calibration.read_ratings[{name}]")
    rows = check_reader(read_long_ratings, path)
    if rows is not None:
        calibrate(rows)


STUDIES = {"metaeval.json": S.METAEVAL_OUTPUT, "consistency.json": S.CONSISTENCY_OUTPUT,
           "validation.json": S.VALIDATION_OUTPUT}


@pytest.mark.parametrize("kind", list(STUDIES))
@fuzz_settings(EXAMPLES)
@given(data=st.data())
def test_report_study_readers(root: Path, kind: str, data: st.DataObject) -> None:
    """A study file is read as one of its shapes or refused; its section data then builds."""
    from polyjudge.report.sections import study_sections

    path = _write(root, kind, data.draw(hostile_json(STUDIES[kind])))
    count(f"read_study[{kind}]")
    obj = check_reader(read_study, path, kind)
    if obj is not None:
        assert study_sections({kind: obj}), "a study file that passes the check must show a section"


@fuzz_settings(EXAMPLES)
@given(en=hostile(S.MGSM), de=st.one_of(st.just(S.MGSM), hostile(S.MGSM)), xquad=hostile_json(S.XQUAD))
def test_consistency_data_readers(root: Path, en: bytes, de: bytes, xquad: bytes) -> None:
    _write(root, "mgsm/mgsm_en.tsv", en)
    _write(root, "mgsm/mgsm_de.tsv", de)
    count("parallel datasets")
    check_reader(load_mgsm_parallel, root / "mgsm", ["en", "de"])
    _write(root, "xquad/xquad.en.json", xquad)
    _write(root, "xquad/xquad.de.json", json.dumps(S.XQUAD).encode())
    check_reader(load_xquad_parallel, root / "xquad", ["en", "de"])


RUN_FILES = S.run_files()


def _read_everything(path: Path) -> None:
    rd = RunDir.open(path)
    _ = rd.manifest, rd.judgments, rd.items, rd.segment_rows, rd.segment_table(), rd.system_rows(), rd.n_runs
    for judge in rd.judges:
        rd.run_scores(judge)
        rd.final_scores(judge)
        for name in rd.aggregate_names():
            rd.aggregate_scores(judge, name)
    rd.merged_rows()


@st.composite
def damaged_run(draw: st.DrawFn) -> dict[str, bytes]:
    """The fixture run directory with one or two files damaged (or removed)."""
    files = dict(RUN_FILES)
    for name in draw(st.lists(st.sampled_from(sorted(files)), min_size=1, max_size=2, unique=True)):
        if draw(st.integers(0, 9)) == 0:
            del files[name]
        elif name.endswith(".json"):
            files[name] = draw(hostile_json(json.loads(files[name])))
        else:
            files[name] = draw(hostile(files[name]))
    return files


def _write_run(root: Path, files: dict[str, bytes]) -> Path:
    d = root / "run"
    if d.exists():
        shutil.rmtree(d)
    for name, data in files.items():
        _write(d, name, data)
    return d


@fuzz_settings(EXAMPLES)
@given(files=damaged_run())
def test_rundir_reader_on_damaged_run_directories(root: Path, files: dict[str, bytes]) -> None:
    count("RunDir (damaged run directories)")
    check_reader(_read_everything, _write_run(root, files))


@fuzz_settings(EXAMPLES // 2)
@given(files=damaged_run())
def test_report_loader_on_damaged_run_directories(root: Path, files: dict[str, bytes]) -> None:
    from polyjudge.report.sections import build_sections

    count("report.load_run (damaged run directories)")
    run = check_reader(load_run, _write_run(root, files))
    if run is not None:
        check_reader(build_sections, [run], n_boot=100)
