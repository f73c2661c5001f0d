"""A run's scores as mt-metrics-eval metric files, under mt-metrics-eval's own rules.

mt-metrics-eval (its README's "Specification" and ``data.py``'s loader) accepts a
metric only when:

* the file is ``NAME-REF.LEVEL.score``, the metric name's last dash part naming the
  reference(s) used or ``src`` (a name ``polyjudge-mqm`` is read as metric
  ``polyjudge`` with reference ``mqm`` and refused: "Bad reference(s)");
* it scores every system of the test set but the reference(s) it used, every
  segment (``seg``), document (``doc``, in the documents file's order) or domain
  (``domain``, lines ``DOMAIN SYSTEM SCORE``) of each, in the test set's order;
* no score is ``None``, and every line splits on whitespace into its fields.

This module turns a run's items and segment scores into that grid
(:func:`mtme_grid`), says what is missing (:func:`missing`), and renders the
files (:func:`mtme_files`). Items read from a test set carry its record in
``extra["testset"]`` (their ``seg_id`` is the 1-based line number) and the
document's domain in ``extra["domain"]``; other runs are laid out by the order
their segments first appear, every system having the same segments.
Document, domain and system scores are the mean of their segments' scores.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from polyjudge.data.testsets import DOMAIN_KEY, LEVELS, TESTSET_KEY, score_file_name
from polyjudge.data.textio import short
from polyjudge.rundir.records import format_mtme

_WHITESPACE = re.compile(r"\s")


@dataclass(frozen=True, slots=True)
class MtmeGrid:
    """Scores laid out as mt-metrics-eval lays out a test set: systems x segment positions.

    ``scores[system][k]`` is segment ``k``'s score (None: unscored or not judged);
    ``docs``/``domains`` name each position's document and domain (None: the input had none);
    ``required`` are the systems the test set holds (the run's own when it names no test set).
    """

    systems: tuple[str, ...]
    n_segments: int
    scores: Mapping[str, Sequence[float | None]]
    docs: tuple[str, ...] | None = None
    domains: tuple[str, ...] | None = None
    required: tuple[str, ...] = ()

    def doc_order(self) -> list[str]:
        """Documents in the order they first occur (mt-metrics-eval's documents-file order)."""
        return list(dict.fromkeys(self.docs or ()))

    def domain_order(self) -> list[str]:
        """Domains sorted by name, as mt-metrics-eval canonicalises them."""
        return sorted(set(self.domains or ()))


def testset_record(items: Sequence[Item]) -> Mapping[str, Any] | None:
    """The test-set record the input reader kept with the items (the first item's), if any."""
    record = items[0].extra.get(TESTSET_KEY) if items else None
    return record if isinstance(record, Mapping) else None


def _line_number(item: Item, n_segments: int) -> int:
    """A test-set item's position: its seg_id is the 1-based line number of the test set."""
    try:
        k = int(str(item.seg_id))
    except ValueError:
        k = 0
    if not 1 <= k <= n_segments:
        raise InputError(f"seg_id {short(str(item.seg_id))} is not a line number of the test set "
                         f"(1..{n_segments})", path=item.origin, field="seg_id")
    return k - 1


def _positions(items: Sequence[Item], record: Mapping[str, Any] | None,
               n_segments: int | None = None) -> tuple[list[int], int]:
    """Each item's segment position, and the number of positions (``n_segments``: the test set's,
    when the caller knows it; seg_ids are then its line numbers)."""
    n = n_segments if n_segments is not None else record.get("n_segments") if record is not None else None
    if isinstance(n, int) and not isinstance(n, bool) and n > 0:
        return [_line_number(it, n) for it in items], n
    keys: dict[tuple[str, str], int] = {}
    out = [keys.setdefault((it.doc_id or "", it.seg_id or ""), len(keys)) for it in items]
    return out, len(keys)


def _names(record: Mapping[str, Any] | None, key: str) -> tuple[str, ...]:
    value = record.get(key) if record is not None else None
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _labels(items: Sequence[Item], positions: list[int], n: int, label: Any) -> tuple[str, ...] | None:
    """One document (or domain) name per position, from the items (None when no item has one)."""
    found: list[str | None] = [None] * n
    for it, k in zip(items, positions):
        value = label(it)
        if value:
            found[k] = str(value)
    return tuple(v or "" for v in found) if any(found) else None


def mtme_grid(items: Sequence[Item], scores: Sequence[float | None], n_segments: int | None = None) -> MtmeGrid:
    """Lay the run's segment scores (one per item, None or NaN: unscored) out as a test set.

    ``n_segments``: the test set's segment count, when known (meta-evaluation against a test set
    in place); every seg_id must then be one of its line numbers. A system scoring one segment
    twice is an input error naming the item.
    """
    record = testset_record(items)
    if n_segments is not None and record is not None and record.get("n_segments") not in (None, n_segments):
        raise InputError(f"the run was judged on a test set of {record.get('n_segments')} segments, this one has "
                         f"{n_segments}", field="n_segments")
    positions, n = _positions(items, record, n_segments)
    systems = tuple(dict.fromkeys(it.system or "-" for it in items))
    grid: dict[str, list[float | None]] = {s: [None] * n for s in systems}
    seen: set[tuple[str, int]] = set()
    for it, k, score in zip(items, positions, scores):
        system = it.system or "-"
        if (system, k) in seen:
            raise InputError(f"system {short(system)} has segment {short(str(it.seg_id))} twice",
                             path=it.origin, field="seg_id")
        seen.add((system, k))
        grid[system][k] = None if score is None or math.isnan(score) else float(score)
    required = _names(record, "all_systems") or _names(record, "systems") or systems
    return MtmeGrid(systems, n, grid, _labels(items, positions, n, lambda it: it.doc_id),
                    _labels(items, positions, n, lambda it: it.extra.get(DOMAIN_KEY)), required)


def references_used(name: str) -> set[str]:
    """The references a metric name says it used (``X-refA.refB`` -> {refA, refB}; ``X-src`` -> none)."""
    refs = name.rsplit("-", 1)[1] if "-" in name else ""
    return set() if refs in ("src", "all") else set(refs.split("."))


def check_metric_name(name: str) -> str:
    """A metric name mt-metrics-eval parses: ``BASE-src`` or ``BASE-REF`` (REF: names joined by dots)."""
    base, _, refs = name.rpartition("-")
    if not base or not refs or _WHITESPACE.search(name) or "/" in name or name.startswith("."):
        raise InputError(f"metric name {short(name)!r} is not NAME-src or NAME-REF, as mt-metrics-eval "
                         "names metrics (the part after the last dash is the reference used)", field="name")
    return name


def missing(grid: MtmeGrid, name: str) -> list[str]:
    """What mt-metrics-eval would refuse in ``name``'s files: each a sentence (empty: nothing)."""
    problems = [f"system {short(s)} of the test set was not judged" for s in grid.required
                if s not in grid.scores and s not in references_used(name)]
    for system, values in grid.scores.items():
        gaps = [k for k, v in enumerate(values) if v is None]
        if gaps:
            problems.append(f"system {short(system)}: {len(gaps)} of {grid.n_segments} segments without a score "
                            f"(first: segment {gaps[0] + 1})")
        if _WHITESPACE.search(system) or not system:
            problems.append(f"system name {short(system)!r} is empty or holds whitespace (mt-metrics-eval splits "
                            "score lines on whitespace)")
    for kind, labels in (("document", grid.doc_order()), ("domain", grid.domain_order())):
        bad = [d for d in labels if not d or _WHITESPACE.search(d)]
        if bad:
            problems.append(f"{kind} name {short(bad[0])!r} is empty or holds whitespace")
    return problems


def require_complete(grid: MtmeGrid, name: str, *, path: str | None = None) -> None:
    """Raise an InputError listing what is missing (never write ``None`` into a metric file)."""
    problems = missing(grid, name)
    if problems:
        more = f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""
        raise InputError(f"mt-metrics-eval needs every segment of every system of the test set scored: "
                         f"{'; '.join(problems[:5])}{more}", path=path)


def _mean(values: Sequence[float | None]) -> float:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else float("nan")


def level_scores(grid: MtmeGrid, level: str) -> dict[str, list[tuple[str | None, float]]]:
    """system -> [(label, score)] at ``level``: segments, documents (in order), domains (sorted), or
    the system (one value). Labels are the document or domain names (None for seg and sys)."""
    out: dict[str, list[tuple[str | None, float]]] = {}
    for system, values in grid.scores.items():
        if level == "seg":
            out[system] = [(None, float(v)) for v in values if v is not None]
        elif level == "sys":
            out[system] = [(None, _mean(values))]
        else:
            names = grid.docs if level == "doc" else grid.domains
            order = grid.doc_order() if level == "doc" else grid.domain_order()
            by_label: dict[str | None, list[float | None]] = {}  # each label's values in segment order, in one pass
            for v, n in zip(values, names or ()):
                by_label.setdefault(n, []).append(v)
            out[system] = [(label, _mean(by_label.get(label, []))) for label in order]
    return out


def available_levels(grid: MtmeGrid) -> tuple[str, ...]:
    """seg and sys always; doc when the input had documents, domain when it had domains."""
    return tuple(lv for lv in LEVELS if lv in ("seg", "sys") or (lv == "doc" and grid.docs is not None)
                 or (lv == "domain" and grid.domains is not None))


def mtme_files(grid: MtmeGrid, name: str) -> dict[str, list[str]]:
    """``NAME.LEVEL.score`` -> its lines, for every level the input supports (check first:
    :func:`require_complete`)."""
    files: dict[str, list[str]] = {}
    for level in available_levels(grid):
        lines = []
        for system, values in level_scores(grid, level).items():
            for label, score in values:
                prefix = f"{label}\t" if level == "domain" else ""
                lines.append(f"{prefix}{system}\t{format_mtme(score)}\n")
        files[score_file_name(name, level)] = lines
    return files


__all__ = ["DOMAIN_KEY", "LEVELS", "TESTSET_KEY", "MtmeGrid", "available_levels", "check_metric_name",
           "level_scores", "missing", "mtme_files", "mtme_grid", "references_used",
           "require_complete", "testset_record"]
