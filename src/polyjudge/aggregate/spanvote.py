"""Several runs' error spans of one translation merged into one set by character voting.

Below both the span protocols (which merge their runs with it) and span F1
(which merges a run directory's runs before scoring), so neither imports the other.
"""

from __future__ import annotations

from collections import Counter
from typing import Any


def vote_spans(runs: list[list[dict[str, Any]]], length: int,
               threshold: float = 0.5) -> tuple[list[dict[str, Any]], list[str]]:
    """Merge the spans of several runs by voting on every character.

    A character is marked when at least ``threshold`` of the runs mark it
    (a run counts once per character however many of its spans cover it).
    Its severity is the one most of those runs gave it (major on a tie, the
    cautious choice). Merged spans are maximal stretches of marked characters
    of one severity; their category is the most frequent category among the
    run spans they overlap. Omissions vote on their insertion point the same
    way. Errors without location are not merged (counted in the problems).
    """
    import numpy as np  # here, not at the top: --help lists the span protocols without numpy

    n = len(runs)
    major = np.zeros((n, length), dtype=bool)
    minor = np.zeros((n, length), dtype=bool)
    gap_major = np.zeros((n, length + 1), dtype=bool)
    gap_minor = np.zeros((n, length + 1), dtype=bool)
    unlocated = 0
    for r, spans in enumerate(runs):
        for s in spans:
            if s.get("start") is None:
                unlocated += 1
                continue
            a, b = max(0, int(s["start"])), min(length, int(s["end"]))
            target = (major if s["severity"] == "major" else minor) if b > a else \
                (gap_major if s["severity"] == "major" else gap_minor)
            if b > a:
                target[r, a:b] = True
            elif a == b:
                target[r, a] = True
    need = threshold * n - 1e-9
    out: list[dict[str, Any]] = []
    for maj, mnr, is_gap in ((major, minor, False), (gap_major, gap_minor, True)):
        n_maj = maj.sum(axis=0)
        n_min = (mnr & ~maj).sum(axis=0)  # a run marking both counts once, as major
        marked = (n_maj + n_min) >= need
        sev = np.where(n_maj >= n_min, 0, 1)
        label = np.where(marked, sev, -1)
        k = 0
        while k < len(label):
            if label[k] < 0:
                k += 1
                continue
            j = k + 1
            if not is_gap:
                while j < len(label) and label[j] == label[k]:
                    j += 1
            start, end = (k, j) if not is_gap else (k, k)
            sev_name = "major" if label[k] == 0 else "minor"
            cats = Counter(s.get("category", "") for run in runs for s in run
                           if s.get("start") is not None and s["severity"] == sev_name
                           and _overlaps(int(s["start"]), int(s["end"]), start, end))
            out.append({"start": start, "end": end, "severity": sev_name,
                        "category": cats.most_common(1)[0][0] if cats else ""})
            k = j
    out.sort(key=lambda s: (s["start"], s["end"]))
    problems = [f"{unlocated} errors without location were not merged"] if unlocated else []
    return out, problems


def _overlaps(a: int, b: int, s: int, e: int) -> bool:
    if s == e:
        return a == b == s
    return a < e and s < b


__all__ = ["vote_spans"]
