"""Test sets as the field keeps them, fed hostile files: the readers return or raise one InputError line.

One file of an mt-metrics-eval folder at a time (source, documents, a reference,
a system output, in text or JSONL) is damaged; a WMT25 task-1 TSV, an ESA
JSONL and a table read through ``--columns`` are damaged whole; and ``judge
--dry-run`` on a damaged test-set folder keeps the CLI's contract.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from polyjudge.data.columns import parse_columns
from polyjudge.data.readers import ItemDefaults, read_items
from polyjudge.data.testsets import TestSetSelection
from tests.fuzz.hostile import check_cli, check_reader, count, fresh_dir, fuzz_settings, hostile

EXAMPLES = 50
SOURCES = b"Hello world.\nSecond sentence.\nThird one.\n"
MTME_FILES = {
    "sources/en-de.txt": SOURCES,
    "documents/en-de.docs": b"news doc1\nnews doc1\nweb doc2\n",
    "references/en-de.refA.txt": b"Hallo Welt.\nZweiter Satz.\nDritter.\n",
    "system-outputs/en-de/refA.txt": b"Hallo Welt.\nZweiter Satz.\nDritter.\n",
    "system-outputs/en-de/sysA.txt": b"Hallo, Welt.\nDer zweite Satz.\n[No translation supplied]\n",
}
JSONL_OUTPUT = b"".join(json.dumps({"hypothesis": t}).encode() + b"\n" for t in ("Hallo.", "Zwei.", "Drei."))
WMT25_TSV = (b"doc_id\tsegment_id\tsource_lang\ttarget_lang\tset_id\tsystem_id\tsource_segment\thypothesis_segment\t"
             b"reference_segment\tdomain_name\tmethod\n"
             b"d1\t1\ten\tcs_CZ\twmt25\tsysA\tHello.\tAhoj.\t\tnews\tESA\n"
             b"d1\t2\ten\tcs_CZ\twmt25\tsysA\tBye.\tSbohem.\t\tnews\tESA\n")
ESA_JSONL = b"".join(json.dumps({"line_id": k, "doc_id": "d", "system": "A", "src": s, "tgt": t,
                                  "langs": "en-cs_CZ"}).encode() + b"\n"
                     for k, (s, t) in enumerate((("Hi.", "Ahoj."), ("Bye.", "Sbohem."))))
MAPPED_CSV = b"lp,src,mt,ref,system\nen-de,Hello.,Hallo.,Hallo!,A\nen-de,Bye.,Tschuess.,Tschuess!,B\n"


@pytest.fixture(scope="module")
def root() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="polyjudge-fuzz-testsets-") as d:
        yield Path(d)


def _mtme(d: Path, damaged: str, data: bytes) -> Path:
    base = d / "wmt23"
    for name, content in {**MTME_FILES, damaged: data}.items():
        path = base / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return base


@pytest.mark.parametrize("name", [*MTME_FILES, "system-outputs/en-de/sysB.jsonl"])
@fuzz_settings(EXAMPLES)
@given(data=st.data())
def test_read_mtme_with_one_damaged_file(root: Path, name: str, data: st.DataObject) -> None:
    valid = MTME_FILES.get(name, JSONL_OUTPUT)
    base = _mtme(fresh_dir(root), name, data.draw(hostile(valid)))
    count(f"read_items[mtme {name}]")
    items = check_reader(read_items, base, how=ItemDefaults(testset=TestSetSelection(lp="en-de")))
    if items is not None:
        assert {it.seg_id for it in items} == {"1", "2", "3"} and all(isinstance(it.tgt, str) for it in items)


@pytest.mark.parametrize(("name", "valid", "columns"), [("wmt25.tsv", WMT25_TSV, None),
                                                        ("esa.jsonl", ESA_JSONL, None),
                                                        ("mqm.csv", MAPPED_CSV, "tgt=mt")])
@fuzz_settings(EXAMPLES)
@given(data=st.data())
def test_read_field_tables(root: Path, name: str, valid: bytes, columns: str | None, data: st.DataObject) -> None:
    path = fresh_dir(root) / name
    path.write_bytes(data.draw(hostile(valid)))
    count(f"read_items[{name}]")
    items = check_reader(read_items, path, how=ItemDefaults(columns=parse_columns(columns)))
    if items is not None:
        assert items and all(isinstance(it.src, str) and isinstance(it.tgt, str) for it in items)


@fuzz_settings(EXAMPLES // 2)
@given(data=st.data(), name=st.sampled_from(sorted(MTME_FILES)))
def test_judge_dry_run_on_a_damaged_test_set(root: Path, data: st.DataObject, name: str) -> None:
    d = fresh_dir(root, "cli")
    base = _mtme(d, name, data.draw(hostile(MTME_FILES[name])))
    (d / "recording.jsonl").write_bytes(b"")
    count("judge --dry-run [mtme folder]")
    check_cli(["judge", base, "--lp", "en-de", "-o", d / "run", "--judge", f"replay:{d / 'recording.jsonl'}",
               "--dry-run", "-q"])
