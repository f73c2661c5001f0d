"""Span formats are one registry: each built-in rule, auto asking the rules, a registered format read."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyjudge.data.errors import InputError
from polyjudge.data.spans import Span, SpanSegment
from polyjudge.metaeval.spans import readers
from polyjudge.metaeval.spans.readers import (
    SPAN_FORMAT_REGISTRY,
    SpanRequest,
    _detect_format,
    read_spans,
    register_span_format,
)

FIXTURE_RUN = Path(__file__).resolve().parents[2] / "fixtures" / "run-0.1.0"


def test_each_builtin_rule_takes_its_files(tmp_path):
    (tmp_path / "t.tsv").write_text("doc_id\tsegment_id\tstart_indices\n")
    (tmp_path / "m.tsv").write_text("system\tdoc\ttarget\tseverity\n")
    (tmp_path / "s.jsonl").write_text("{}\n")
    found = {name: _detect_format(p) for name, p in (("task2", tmp_path / "t.tsv"), ("mqm", tmp_path / "m.tsv"),
                                                      ("jsonl", tmp_path / "s.jsonl"), ("run", FIXTURE_RUN),
                                                      ("judgments", FIXTURE_RUN / "judgments.jsonl"))}
    assert found == {"task2": "task2", "mqm": "mqm", "jsonl": "jsonl", "run": "run", "judgments": "run"}
    (tmp_path / "u.tsv").write_text("a\tb\n")
    with pytest.raises(InputError, match="cannot tell the format"):
        _detect_format(tmp_path / "u.tsv")
    with pytest.raises(InputError, match="file not found"):
        _detect_format(tmp_path / "missing.jsonl")
    assert readers.SPAN_FORMATS == ("auto", *SPAN_FORMAT_REGISTRY.names()) == ("auto", "task2", "mqm", "jsonl", "run")


def test_a_registered_span_format_is_detected_and_read(tmp_path, monkeypatch):
    SPAN_FORMAT_REGISTRY.names()
    monkeypatch.setattr(SPAN_FORMAT_REGISTRY, "_entries", dict(SPAN_FORMAT_REGISTRY._entries))

    def is_marks(probe) -> bool:
        """a file named *.marks"""
        return probe.name.endswith(".marks")

    @register_span_format("marks", detect=is_marks)
    def read_marks(path: Path, request: SpanRequest) -> tuple[list[SpanSegment], list[str]]:
        """seg_id start end severity lines."""
        segs = []
        for line in path.read_text().splitlines():
            seg, start, end, sev = line.split()
            segs.append(SpanSegment(system="S", doc_id=None, seg_id=seg, spans=(Span(int(start), int(end), sev),),
                                    lp=request.lp))
        return segs, []

    f = tmp_path / "x.marks"
    f.write_text("1 0 4 major\n")
    segs, warnings = read_spans(f, lp="de-en")
    assert [(s.seg_id, s.lp, s.spans) for s in segs] == [("1", "de-en", (Span(0, 4, "major"),))]
    assert "marks" in readers.SPAN_FORMATS
    with pytest.raises(InputError, match="unknown span file format 'xml'"):
        read_spans(f, fmt="xml")
