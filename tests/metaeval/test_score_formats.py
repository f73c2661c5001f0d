"""Score formats are one registry: each built-in format's rule, auto asking the rules, the choices,
and a format registered from outside read by the same entry points as the built-ins."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyjudge.data.errors import InputError
from polyjudge.metaeval import readers
from polyjudge.metaeval.readers import (
    SCORE_FORMAT_REGISTRY,
    RunChoice,
    ScoreTable,
    read_score_table,
    register_score_format,
    sniff_format,
)

FIXTURE_RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run-0.1.0"


@pytest.fixture
def scratch_registry(monkeypatch):
    """Formats registered by a test vanish after it (the registry's entries are restored)."""
    SCORE_FORMAT_REGISTRY.names()  # loaded (built-ins and any plugins) before the copy
    monkeypatch.setattr(SCORE_FORMAT_REGISTRY, "_entries", dict(SCORE_FORMAT_REGISTRY._entries))


def _files(tmp: Path) -> dict[str, Path]:
    (tmp / "m.seg.score").write_text("A\t1\nB\t2\n")
    (tmp / "m.sys.score").write_text("A\t1\nB\t2\n")
    (tmp / "s.tsv").write_text("system\tseg_id\tscore\nA\t1\t0.5\n")
    (tmp / "s.jsonl").write_text('{"system": "A", "seg_id": "1", "score": 0.5}\n')
    (tmp / "q.tsv").write_text("system\tdoc\tdoc_id\tseg_id\trater\tsource\ttarget\tcategory\tseverity\n")
    (tmp / "systems.tsv").write_text("system\tscore\nA\t1\n")
    (tmp / "sysdir").mkdir()
    (tmp / "sysdir" / "x.sys.score").write_text("A\t1\n")
    return {"run": FIXTURE_RUN, "mtme": tmp / "m.seg.score", "tsv": tmp / "s.tsv", "jsonl": tmp / "s.jsonl",
            "mqm": tmp / "q.tsv", "sys": tmp / "m.sys.score", "sys-tsv": tmp / "systems.tsv",
            "sys-dir": tmp / "sysdir"}


def test_each_builtin_rule_takes_its_files(tmp_path):
    found = {kind: sniff_format(path) for kind, path in _files(tmp_path).items()}
    assert found == {"run": "run", "mtme": "mtme", "tsv": "tsv", "jsonl": "jsonl", "mqm": "mqm", "sys": "sys",
                     "sys-tsv": "sys", "sys-dir": "sys"}


def test_choices_are_the_registry_in_order_and_system_only_formats_are_not_segment_formats():
    names = SCORE_FORMAT_REGISTRY.names()
    assert readers.FORMATS == ("auto", *names)
    assert readers.SEGMENT_FORMATS == ("auto", *(n for n in names if n != "sys"))
    assert SCORE_FORMAT_REGISTRY.get("sys").levels == ("sys",) and readers.is_system_level("x", "sys")


def test_a_registered_format_is_detected_after_the_builtins_and_read(tmp_path, scratch_registry):
    def is_pipes(probe) -> bool:
        """a file named *.pipes"""
        return probe.name.endswith(".pipes")

    @register_score_format("pipes", detect=is_pipes)
    def read_pipes(path: Path, choice: RunChoice) -> ScoreTable:
        """system|seg_id|score lines."""
        rows = tuple((s, None, g, float(v), n) for n, (s, g, v) in
                     enumerate((line.split("|") for line in path.read_text().splitlines()), 1))
        return ScoreTable(str(path), rows, has_doc_id=False)

    f = tmp_path / "x.pipes"
    f.write_text("A|1|0.25\nB|1|0.75\n")
    assert sniff_format(f) == "pipes" and "pipes" in readers.FORMATS and "pipes" in readers.SEGMENT_FORMATS
    m = read_score_table(f).matrix()
    assert m.systems == ("A", "B") and m.items == ("1",) and m.values.tolist() == [[0.25], [0.75]]
    assert sniff_format(_files(tmp_path)["tsv"]) == "tsv"  # built-in rules first: nothing else moved
    with pytest.raises(InputError, match="not of a pipes file"):
        read_score_table(f, judge="m1")


def test_unknown_format_lists_the_registered_ones(tmp_path):
    with pytest.raises(InputError) as exc:
        read_score_table(tmp_path / "x.tsv", "xml")
    assert str(exc.value).endswith("unknown score format 'xml' (auto, run, mtme, mqm, tsv, csv, jsonl, sys)")
