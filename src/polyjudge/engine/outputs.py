"""Writing a run directory (format documented in DEVELOPERS.md).

Files are written to a temporary name and renamed, so a reader never sees a
half-written file and an interrupted write never destroys the previous one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from polyjudge.engine.result import RunResult


def _atomic_write(path: Path, lines: Iterable[str]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        for line in lines:
            fh.write(line)
    os.replace(tmp, path)


def _fmt(x: float | None) -> str:
    return "" if x is None else repr(round(float(x), 6))


def _tsv_cell(x: Any) -> str:
    return "" if x is None else str(x).replace("\t", " ").replace("\n", " ")


def system_scores(result: RunResult, seg_scores: list[float | None]) -> list[tuple[str, float | None, int, int]]:
    """(system, mean score over scored segments, n scored, n unscored), best first."""
    per: dict[str, list[float | None]] = {}
    for item, s in zip(result.items, seg_scores):
        per.setdefault(item.system or "-", []).append(s)
    rows = []
    for system, vals in per.items():
        got = [v for v in vals if v is not None]
        rows.append((system, sum(got) / len(got) if got else None, len(got), len(vals) - len(got)))
    sign = 1 if result.protocol.higher_is_better else -1
    rows.sort(key=lambda r: (r[1] is None, -sign * (r[1] if r[1] is not None else 0.0)))
    return rows


def write_run_dir(result: RunResult, out_dir: str | Path, name: str | None = None) -> None:
    out = Path(out_dir)
    (out / "mtme").mkdir(parents=True, exist_ok=True)
    items = result.items
    per_judge = {j: result.segments(j) for j in result.judges}
    panel = result.segment_scores()

    def judgment_lines() -> Iterable[str]:
        for jd in result.judgments:
            it = items[jd.item_index]
            d = {"item_index": jd.item_index, "system": it.system, "doc_id": it.doc_id,
                 "seg_id": it.seg_id, **jd.to_dict()}
            yield json.dumps(d, ensure_ascii=False) + "\n"

    _atomic_write(out / "judgments.jsonl", judgment_lines())
    # The judged texts, so reports can show spans in context without the input file.
    _atomic_write(out / "items.jsonl", (json.dumps({"item_index": i, **it.to_dict()}, ensure_ascii=False) + "\n"
                                        for i, it in enumerate(items)))

    multi = len(result.judges) > 1
    header = ["system", "doc_id", "seg_id", "src_lang", "tgt_lang", "score", "runs_ok", "runs_failed"]
    if multi:
        header += [f"score:{j}" for j in result.judges]

    def segment_lines() -> Iterable[str]:
        yield "\t".join(header) + "\n"
        for i, it in enumerate(items):
            segs = [per_judge[j][i] for j in result.judges]
            row = [_tsv_cell(it.system), _tsv_cell(it.doc_id), _tsv_cell(it.seg_id),
                   _tsv_cell(it.src_lang), _tsv_cell(it.tgt_lang), _fmt(panel[i]),
                   str(sum(s.runs_ok for s in segs)), str(sum(s.runs_failed for s in segs))]
            if multi:
                row += [_fmt(s.score) for s in segs]
            yield "\t".join(row) + "\n"

    _atomic_write(out / "segments.tsv", segment_lines())

    merged_rows = [(i, j, per_judge[j][i].merged) for i in range(len(items)) for j in result.judges
                   if per_judge[j][i].merged is not None]
    if merged_rows:
        _atomic_write(out / "merged.jsonl", (
            json.dumps({"item_index": i, "judge": j, "system": items[i].system, "seg_id": items[i].seg_id,
                        "annotation": m}, ensure_ascii=False) + "\n" for i, j, m in merged_rows))

    if result.runs > 1:
        _write_aggregates(result, out / "aggregates.tsv")

    systems = system_scores(result, panel)
    _atomic_write(out / "systems.tsv", ["system\tscore\tn_segments\tn_unscored\n"] + [
        f"{_tsv_cell(s)}\t{_fmt(sc)}\t{n}\t{u}\n" for s, sc, n, u in systems])

    # mt-metrics-eval layout: per system, its segments in input order; None for unscored.
    name = name or f"polyjudge-{result.protocol.name}"
    by_system: dict[str, list[float | None]] = {}
    for it, s in zip(items, panel):
        by_system.setdefault(it.system or "-", []).append(s)
    _atomic_write(out / "mtme" / f"{name}.seg.score", (
        f"{sys_}\t{'None' if s is None else repr(round(s, 6))}\n"
        for sys_, vals in by_system.items() for s in vals))
    _atomic_write(out / "mtme" / f"{name}.sys.score", (
        f"{s}\t{'None' if sc is None else repr(round(sc, 6))}\n" for s, sc, _, _ in systems))

    manifest = dict(result.manifest)
    manifest["outputs"] = {"mtme_name": name}
    _atomic_write(out / "manifest.json", [json.dumps(manifest, indent=2, ensure_ascii=False, default=str) + "\n"])




def _write_aggregates(result: RunResult, path: Path) -> None:
    """Every aggregator's segment score side by side, to compare aggregators."""
    from polyjudge.aggregate.variability import aggregate_table

    tables = {j: aggregate_table(result.run_matrix(j), min_runs=result.min_runs) for j in result.judges}
    names = list(next(iter(tables.values())))
    if all(all(v != v for v in col) for t in tables.values() for col in t.values()):
        return  # nothing numeric to compare (categorical protocol)

    def lines() -> Iterable[str]:
        yield "\t".join(["judge", "system", "doc_id", "seg_id", *names]) + "\n"
        for judge, table in tables.items():
            for i, it in enumerate(result.items):
                vals = [table[n][i] for n in names]
                yield "\t".join([judge, _tsv_cell(it.system), _tsv_cell(it.doc_id), _tsv_cell(it.seg_id),
                                 *(_fmt(None if v != v else v) for v in vals)]) + "\n"

    _atomic_write(path, lines())
