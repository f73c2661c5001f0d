"""The commands added for issue 17 on a damaged run directory: a result or one error line, never a traceback.

``meta-eval --aggregators all --single-runs`` reads every file of the run
(aggregates.tsv, judgments.jsonl, segments.tsv, manifest.json), and
``compare-formats`` reads the judgments, the manifest and the gold.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz import samples as S
from tests.fuzz.hostile import check_cli, fresh_dir, fuzz_settings, hostile, hostile_json

EXAMPLES = 40
RUN_FILES = S.run_files()
HUMAN_FOR_RUN = b"system\tdoc_id\tseg_id\tscore\n" + b"".join(
    b"\t".join(row.split(b"\t")[:3]) + f"\t{k % 7}\n".encode()
    for k, row in enumerate(RUN_FILES["segments.tsv"].splitlines()[1:]))
COMMANDS = {
    "meta-eval --aggregators all --single-runs": lambda run, d: [
        "meta-eval", "--human", d / "human.tsv", "--metric", f"judge={run}", "--aggregators", "all", "--single-runs",
        "-k", "0", "--missing-metric", "drop"],  # the fixture's runs failed on a few items
    "meta-eval --aggregators rrwa,geo+1": lambda run, d: [
        "meta-eval", "--human", d / "human.tsv", "--metric", f"judge={run}", "--aggregators", "rrwa,geo+1", "-k",
        "0", "--task", "none"],
    "compare-formats": lambda run, d: ["compare-formats", run, "--gold", d / "gold.jsonl", "--lp", "de-en"],
}


@pytest.fixture(scope="module")
def root() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="polyjudge-variants-") as d:
        yield Path(d)


def _write(d: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        p = d / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


def test_the_undamaged_run_is_valid_input(root: Path) -> None:
    d = fresh_dir(root, "valid")
    _write(d / "run", RUN_FILES)
    _write(d, {"human.tsv": HUMAN_FOR_RUN, "gold.jsonl": S.SPAN_GOLD_JSONL})
    assert check_cli(COMMANDS["meta-eval --aggregators all --single-runs"](d / "run", d)) == 0


@pytest.mark.parametrize("command", list(COMMANDS))
@fuzz_settings(EXAMPLES)
@given(data=st.data())
def test_damaged_run_directory(root: Path, command: str, data: st.DataObject) -> None:
    files = dict(RUN_FILES)
    for name in data.draw(st.lists(st.sampled_from(sorted(files)), min_size=1, max_size=2, unique=True)):
        files[name] = data.draw(hostile_json(json.loads(files[name])) if name.endswith(".json")
                                else hostile(files[name]))
    d = fresh_dir(root)
    _write(d / "run", files)
    _write(d, {"human.tsv": HUMAN_FOR_RUN, "gold.jsonl": S.SPAN_GOLD_JSONL})
    check_cli(COMMANDS[command](d / "run", d))
