"""Character voting over several runs' spans, against a plain per-character count."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from polyjudge.aggregate.spanvote import vote_spans
from polyjudge.metaeval.spans import vote_merger
from polyjudge.protocols import tsa

LENGTH = 12


def _reference(runs: list[list[dict[str, Any]]], threshold: float) -> list[tuple[int, int, str]]:
    """Located spans only: each character's votes counted one run at a time, stretches joined by hand."""
    labels = []
    for c in range(LENGTH):
        major = sum(any(s["start"] <= c < s["end"] and s["severity"] == "major" for s in run) for run in runs)
        minor = sum(any(s["start"] <= c < s["end"] and s["severity"] == "minor" for s in run) for run in runs
                    if not any(s["start"] <= c < s["end"] and s["severity"] == "major" for s in run))
        marked = major + minor >= threshold * len(runs) - 1e-9
        labels.append(("major" if major >= minor else "minor") if marked else None)
    out, c = [], 0
    while c < LENGTH:
        if labels[c] is None:
            c += 1
            continue
        end = c
        while end < LENGTH and labels[end] == labels[c]:
            end += 1
        out.append((c, end, labels[c]))
        c = end
    return out


span = st.tuples(st.integers(0, LENGTH - 1), st.integers(1, LENGTH), st.sampled_from(["major", "minor"])).map(
    lambda t: {"start": min(t[0], t[1] - 1), "end": t[1], "severity": t[2], "category": "c"})


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(span, max_size=3), min_size=1, max_size=4), st.sampled_from([0.25, 0.5, 0.75, 1.0]))
def test_vote_spans_matches_a_per_character_count(runs, threshold):
    merged, problems = vote_spans(runs, LENGTH, threshold)
    assert [(s["start"], s["end"], s["severity"]) for s in merged] == _reference(runs, threshold)
    assert problems == []


def test_one_voting_for_protocols_and_span_f1():
    """The tsa protocol and span F1's run merger use the same function (it lives below both)."""
    assert tsa.vote_spans is vote_spans
    runs = [[{"start": 0, "end": 4, "severity": "major", "category": "a"}],
            [{"start": 2, "end": 6, "severity": "major", "category": "a"}],
            [{"start": None, "end": None, "severity": "minor", "category": "b"}]]
    merged = vote_merger(0.5)([{"spans": r} for r in runs] + [{"not": "spans"}])
    assert merged == {"spans": vote_spans(runs, 6, 0.5)[0]}
    assert merged["spans"] == [{"start": 2, "end": 4, "severity": "major", "category": "a"}]
    assert vote_merger(0.5)([{"no": "spans"}]) is None
