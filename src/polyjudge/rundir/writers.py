"""Output writers: a finished run's results in the field's file formats, one registry.

A writer is registered with :func:`register_writer` on a *render* function,
``render(run: RunDir) -> {file name: body}``: it reads what it needs from the
run (so a damaged or unsuitable run is refused before anything is written) and
returns one body per file, a function that writes that file at the path it is
given. :meth:`OutputWriter.write` then does what every polyjudge output does,
so no writer can skip it: the target folder is compared with the run
directory's own files (``rundir.clash``: never onto an input), taken as an
``export`` folder (``rundir.ownership``: new, empty or polyjudge's own
exports; foreign files and symlinks are refused), every name is recorded
before it is written, and each file is written to a fresh temporary file and
renamed into place.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from polyjudge.data.spans import write_task2_tsv
from polyjudge.data.textio import short
from polyjudge.registry import Registry
from polyjudge.rundir.clash import Target, refuse_clashes, run_dir_target
from polyjudge.rundir.directory import RunDir
from polyjudge.rundir.mtme import (
    DOMAIN_KEY,
    MtmeGrid,
    check_metric_name,
    level_scores,
    mtme_files,
    mtme_grid,
    require_complete,
    testset_record,
)
from polyjudge.rundir.names import AGGREGATES, MANIFEST, MERGED, MTME_DIR, SEGMENTS, SPANS, SYSTEMS
from polyjudge.rundir.ownership import claim
from polyjudge.rundir.records import SegmentRow, format_mtme, tsv_text
from polyjudge.rundir.render import aggregate_lines, merged_lines, segment_lines, system_lines

EXPORT_KIND = "export"

FileBody = Callable[[Path], None]
"""Writes one output file at the (fresh, empty) path it is given."""
RunFiles = Mapping[str, FileBody]
Render = Callable[[RunDir], RunFiles]


@dataclass(frozen=True, slots=True)
class OutputWriter:
    """A registered output format: its name, summary, what files it writes, and its renderer."""

    name: str
    summary: str
    writes: str
    render: Render

    def write(self, run: RunDir, target: str | Path, *, flag: str = "-o/--out") -> list[Path]:
        """Write the run's files into the folder ``target`` (see the module docstring); returns them."""
        return write_files(run, target, self.render(run), flag=flag)


WRITERS: Registry[OutputWriter] = Registry("output writer", entry_point_group="polyjudge.writers")


def register_writer(name: str, *, writes: str, summary: str | None = None) -> Callable[[Render], Render]:
    """Decorator: register ``render(run) -> {file name: body}`` as output writer ``name``.

    ``writes`` says which files it writes (listed by ``polyjudge writers``); the summary
    defaults to the render function's first docstring line.
    """

    def deco(fn: Render) -> Render:
        doc = (fn.__doc__ or "").strip()
        text = summary if summary is not None else (doc.splitlines()[0] if doc else "")
        WRITERS.add(name, OutputWriter(name, text, writes, fn))
        return fn

    return deco


def check_file_name(name: str, *, path: str | None = None, field: str | None = None) -> str:
    """A file name a writer may create: one plain path component (names can come from a run's
    manifest, which is data: ``../x`` or ``a/b`` must never choose where a file lands)."""
    bad = (not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name
           or name.startswith(".") or len(name.encode("utf-8", "surrogatepass")) > 255)
    if bad:
        raise InputError(f"{name!r} is not a plain file name; refusing to write it", path=path, field=field)
    return name


def write_files(run: RunDir, target: str | Path, files: RunFiles, *, flag: str = "-o/--out") -> list[Path]:
    """Write rendered ``files`` into the export folder ``target``, safely (module docstring)."""
    names = tuple(check_file_name(n) for n in files)
    refuse_clashes([Target(flag, os.fspath(target), names)], run_dir_target("RUN", run.path))
    owned = claim(target, EXPORT_KIND, names=names, flag=flag)
    owned.record(names)
    return [_write_one(owned.path / name, body) for name, body in files.items()]


def _write_one(path: Path, body: FileBody) -> Path:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        body(Path(tmp))
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return path


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def lines_body(lines: Iterable[str]) -> FileBody:
    """A body writing already-formatted lines (each with its line end) as UTF-8."""
    kept = list(lines)

    def body(path: Path) -> None:
        with path.open("w", encoding="utf-8", newline="\n") as fh:
            fh.writelines(kept)

    return body


# --------------------------------------------------------------------------- built-in writers

def mtme_name(run: RunDir) -> str:
    """The run's mt-metrics-eval metric name: the manifest's, else its one ``mtme/*.seg.score`` (0.1.0).

    Runs written before reference-free names ended in ``-src`` are named ``polyjudge-PROTOCOL``;
    mt-metrics-eval would read that as a reference ``PROTOCOL``, so ``-src`` is added.
    """
    name = run.manifest.outputs.get("mtme_name")
    if name:
        name = check_file_name(f"{name}.seg.score", path=str(run.path / MANIFEST),
                               field="outputs.mtme_name").removesuffix(".seg.score")
    else:
        found = sorted((run.path / MTME_DIR).glob("*.seg.score"))
        if len(found) != 1:
            raise InputError(f"the run names no mt-metrics-eval metric (no outputs.mtme_name in {MANIFEST}, "
                             f"{len(found)} {MTME_DIR}/*.seg.score files)", path=str(run.path))
        name = found[0].name.removesuffix(".seg.score")
    if name == f"polyjudge-{run.manifest.protocol}":
        name += "-src"
    return check_metric_name(name)


def _segment_rows(run: RunDir) -> list[SegmentRow]:
    rows = run.segment_rows
    if not rows:
        raise InputError(f"no segment scores in the run directory ({SEGMENTS} missing or empty)",
                         path=str(run.path))
    return rows


def complete_grid(run: RunDir, name: str) -> MtmeGrid:
    """The run's scores laid out as its test set, every system and segment scored (else exit 2)."""
    rows = _segment_rows(run)
    grid = mtme_grid(run.items, [r.score for r in rows])
    require_complete(grid, name, path=str(run.path))
    return grid


@register_writer("mtme", writes="NAME.seg.score, NAME.sys.score, and NAME.doc.score / NAME.domain.score when the "
                                "input had documents / domains (NAME: the run's NAME-src or NAME-REF)")
def render_mtme(run: RunDir) -> RunFiles:
    """mt-metrics-eval metric files: every system and segment of the test set, in its order, no None."""
    name = mtme_name(run)
    return {file: lines_body(lines) for file, lines in mtme_files(complete_grid(run, name), name).items()}


@register_writer("task2", writes=SPANS)
def render_task2(run: RunDir) -> RunFiles:
    """WMT25 task-2 span TSV: a span protocol's merged spans (start_indices, end_indices, error_types)."""
    segments, _ = run.span_segments()

    def body(path: Path) -> None:
        write_task2_tsv(path, segments)

    return {SPANS: body}


@register_writer("segments-tsv", writes=SEGMENTS)
def render_segments_tsv(run: RunDir) -> RunFiles:
    """The run's segment table as TSV: ids, languages, final score, runs ok and failed (+ score:JUDGE)."""
    rows = _segment_rows(run)
    return {SEGMENTS: lines_body(segment_lines(rows, list(rows[0].judge_scores)))}


@register_writer("systems-tsv", writes=SYSTEMS)
def render_systems_tsv(run: RunDir) -> RunFiles:
    """The run's system table as TSV: each system's mean final score, segments scored and unscored."""
    rows = run.system_rows()
    if not rows:
        raise InputError(f"no system scores in the run directory ({SYSTEMS} missing or empty)", path=str(run.path))
    return {SYSTEMS: lines_body(system_lines(rows))}


@register_writer("aggregates-tsv", writes=AGGREGATES)
def render_aggregates_tsv(run: RunDir) -> RunFiles:
    """Each judge's per-item score under every run aggregator, side by side (runs of several runs)."""
    tables = run.aggregate_tables()
    if not tables:
        raise InputError(f"no aggregator scores in the run directory ({AGGREGATES} missing: a run of one run "
                         "or of a categorical protocol has none)", path=str(run.path))
    return {AGGREGATES: lines_body(aggregate_lines(run.items, tables))}


@register_writer("merged-jsonl", writes=MERGED)
def render_merged_jsonl(run: RunDir) -> RunFiles:
    """Each judge's annotation of an item merged over its runs, as JSON lines."""
    rows = run.merged_rows()
    if not rows:
        raise InputError(f"no merged annotations in the run directory ({MERGED} missing or empty)",
                         path=str(run.path))
    return {MERGED: lines_body(merged_lines(rows))}


@register_writer("segments-jsonl", writes="segments.jsonl")
def render_segments_jsonl(run: RunDir) -> RunFiles:
    """The run's segment table as JSON lines (one object per item; judge_scores for panels)."""
    lines = []
    for r in _segment_rows(run):
        obj: dict[str, object] = {"system": r.system, "doc_id": r.doc_id, "seg_id": r.seg_id,
                                  "src_lang": r.src_lang, "tgt_lang": r.tgt_lang, "score": r.score,
                                  "runs_ok": r.runs_ok, "runs_failed": r.runs_failed}
        if r.judge_scores:
            obj["judge_scores"] = r.judge_scores
        lines.append(json.dumps(obj, ensure_ascii=False) + "\n")
    return {"segments.jsonl": lines_body(lines)}


# --------------------------------------------------------------------------- the field's submission formats

WMT25_KEYS = ("doc_id", "segment_id", "source_lang", "target_lang", "set_id", "system_id", "domain_name", "method")
"""The keys of a WMT25 task-1 row that a scored submission repeats (wmt25-mteval's layout), then ``overall``."""
WMT25_COLUMNS = (*WMT25_KEYS, "overall")
DEFAULT_SET = "polyjudge"  # the set_id / test-set name written when the input named none


def _record(run: RunDir) -> dict[str, Any]:
    found = testset_record(run.items)
    return dict(found) if found is not None else {}


def wmt25_row_keys(item: Item, record: Mapping[str, Any]) -> dict[str, str]:
    """An item's task-1 keys: as read from a WMT25 task-1 TSV (fields, ``extra``), else derived from
    its fields (set_id: the test set's name or ``polyjudge``; domain_name: its domain; method: empty)."""
    extra = item.extra
    name = str(record.get("name") or DEFAULT_SET)
    values = {"doc_id": item.doc_id, "segment_id": item.seg_id, "source_lang": item.src_lang,
              "target_lang": item.tgt_lang, "system_id": item.system,
              "set_id": extra.get("set_id") or name, "domain_name": extra.get("domain_name") or extra.get(DOMAIN_KEY),
              "method": extra.get("method")}
    return {key: tsv_text(values[key] or "") for key in WMT25_KEYS}


def derived_keys(run: RunDir) -> list[str]:
    """What an export made up because the input did not say it (empty for a WMT25 task-1 input)."""
    record = _record(run)
    if record.get("format") == "wmt25":
        return []
    said = []
    if not record.get("name"):
        said.append(f"test set / set_id '{DEFAULT_SET}' (the input named no test set)")
    if not any(it.extra.get("method") for it in run.items[:1]):
        said.append("method empty (the input had no WMT25 method column)")
    return said


def _scored_rows(run: RunDir) -> list[tuple[Item, float]]:
    """(item, score) for every item, all scored: a submission holds no empty score (else exit 2)."""
    rows = _segment_rows(run)
    gaps = [(it, r) for it, r in zip(run.items, rows) if r.score is None]
    if gaps:
        it = gaps[0][0]
        raise InputError(f"{len(gaps)} of {len(rows)} segments have no score (first: system "
                         f"{short(str(it.system))}, segment {short(str(it.seg_id))}); a submission needs every "
                         "segment scored: re-run the judge to resume", path=str(run.path))
    return [(it, float(r.score)) for it, r in zip(run.items, rows) if r.score is not None]


@register_writer("wmt25", writes="segments.tsv, systems.tsv")
def render_wmt25(run: RunDir) -> RunFiles:
    """WMT25 scored submission: segments.tsv and systems.tsv, task-1 keys and an overall score."""
    record = _record(run)
    head = "\t".join(WMT25_COLUMNS) + "\n"
    seg = [head]
    groups: dict[tuple[str, ...], list[float]] = {}
    for item, score in _scored_rows(run):
        keys = wmt25_row_keys(item, record)
        seg.append("\t".join([*keys.values(), format_mtme(score)]) + "\n")
        group = tuple("" if k in ("doc_id", "segment_id", "domain_name") else v for k, v in keys.items())
        groups.setdefault(group, []).append(score)
    sys_ = [head] + ["\t".join([*group, format_mtme(sum(v) / len(v))]) + "\n" for group, v in groups.items()]
    return {"segments.tsv": lines_body(seg), "systems.tsv": lines_body(sys_)}


def _one_lp(run: RunDir, record: Mapping[str, Any]) -> str:
    lps = {f"{it.src_lang}-{it.tgt_lang}" for it in run.items if it.src_lang and it.tgt_lang}
    lp = record.get("lp") or (lps.pop() if len(lps) == 1 else None)
    if not lp or _WS.search(str(lp)):
        raise InputError("the WMT23 format names one language pair per line, and the run has "
                         f"{'several' if lps else 'none'} (give items src_lang/tgt_lang)", path=str(run.path))
    return str(lp)


_WS = re.compile(r"\s")


@register_writer("wmt23", writes="NAME.seg.score, NAME.sys.score (WMT23 metrics task TSV)")
def render_wmt23(run: RunDir) -> RunFiles:
    """WMT23 metrics-task submission TSV (9 fields per segment, 7 per system and domain)."""
    name = mtme_name(run)
    base, refs = name.rsplit("-", 1)
    grid = complete_grid(run, name)
    record = _record(run)
    lp, testset = _one_lp(run, record), tsv_text(record.get("name") or DEFAULT_SET)
    seg = []
    for system, values in grid.scores.items():
        for k, score in enumerate(values):
            domain = grid.domains[k] if grid.domains else "all"
            doc = grid.docs[k] if grid.docs else "-"
            seg.append("\t".join([base, lp, testset, domain, doc, refs, system, str(k + 1),
                                  format_mtme(score)]) + "\n")
    sys_ = [f"{base}\t{lp}\t{testset}\tall\t{refs}\t{system}\t{format_mtme(v[0][1])}\n"
            for system, v in level_scores(grid, "sys").items()]
    if grid.domains:
        sys_ += [f"{base}\t{lp}\t{testset}\t{domain}\t{refs}\t{system}\t{format_mtme(score)}\n"
                 for system, v in level_scores(grid, "domain").items() for domain, score in v]
    return {f"{base}.seg.score": lines_body(seg), f"{base}.sys.score": lines_body(sys_)}


ERROR_FREE_KEY = "error_free"  # the annotation field of a binary error-free judgment (protocol error-free)
WMT26_FILE = "predictions.jsonl"


def _binary_labels(run: RunDir) -> bool:
    """Whether the run's judgments are error-free labels (task 3) rather than quality scores (task 2)."""
    return any(isinstance(j.annotation, dict) and ERROR_FREE_KEY in j.annotation for j in run.judgments)


def _spans_by_segment(run: RunDir) -> dict[tuple[str | None, str | None, str | None], list[dict[str, Any]]]:
    """The run's merged spans (``spans.tsv``) by (system, doc_id, seg_id); empty for a run without spans."""
    if not (run.path / SPANS).exists():
        return {}
    segments, _ = run.span_segments()
    return {(s.system, s.doc_id, s.seg_id): [{"start": sp.start, "end": sp.end, "severity": sp.severity,
                                              "category": sp.category} for sp in s.spans] for s in segments}


def _omissions(run: RunDir) -> dict[int, list[dict[str, Any]]]:
    """Per item index, the unlocated errors (omissions) of the runs that report one in at least half
    of the item's successful runs (``spans.tsv`` holds located spans only); one per severity seen."""
    ok: dict[int, int] = {}
    seen: dict[int, list[set[str]]] = {}
    for j in run.judgments:
        if j.status != "ok" or not isinstance(j.annotation, dict):
            continue
        ok[j.item_index] = ok.get(j.item_index, 0) + 1
        sev = {str(sp.get("severity")) for sp in j.annotation.get("spans") or []
               if isinstance(sp, dict) and sp.get("start") is None}
        if sev:
            seen.setdefault(j.item_index, []).append(sev)
    return {k: [{"start": None, "end": None, "severity": s} for s in sorted(set().union(*v))]
            for k, v in seen.items() if 2 * len(v) >= ok[k]}


@register_writer("wmt26", writes=WMT26_FILE)
def render_wmt26(run: RunDir) -> RunFiles:
    """WMT26 MT-evaluation submission JSONL: per item_id, each system's spans, score or error-free label."""
    from polyjudge.data import wmt26

    binary = _binary_labels(run)
    spans = _spans_by_segment(run)
    missing = _omissions(run) if spans else {}
    entries = []
    for k, (item, score) in enumerate(_scored_rows(run)):
        preds: dict[str, Any] = {}
        if spans:
            located = spans.get((item.system, item.doc_id, item.seg_id), [])
            preds[wmt26.TASK1] = wmt26.task1_entry([*located, *missing.get(k, [])])
        if binary:
            preds[wmt26.TASK3] = score >= 0.5
        else:
            preds[wmt26.TASK2] = score
        entries.append((item, preds))
    lines = [json.dumps(row, ensure_ascii=False) + "\n" for row in wmt26.submission_rows(entries)]
    return {WMT26_FILE: lines_body(lines)}


COMET_SCORE_KEY = "COMET"


def comet_json(run: RunDir) -> dict[str, list[dict[str, Any]]]:
    """The run's segment scores shaped like ``comet-score --to_json``'s output: system -> one object per
    segment with ``src``, ``mt``, ``ref`` (when the item has one) and the score under ``COMET`` (null:
    unscored), so tools that read COMET's JSON read a judge's scores too."""
    out: dict[str, list[dict[str, Any]]] = {}
    for item, row in zip(run.items, _segment_rows(run)):
        entry: dict[str, Any] = {"src": item.src, "mt": item.tgt}
        if item.ref is not None:
            entry["ref"] = item.ref
        entry[COMET_SCORE_KEY] = row.score
        out.setdefault(item.system or "-", []).append(entry)
    return out


@register_writer("comet-json", writes="comet.json")
def render_comet_json(run: RunDir) -> RunFiles:
    """COMET-style JSON: per system its segments (src, mt, ref) and the score under COMET."""
    text = json.dumps(comet_json(run), ensure_ascii=False, indent=4) + "\n"
    return {"comet.json": lines_body([text])}


__all__ = ["COMET_SCORE_KEY", "EXPORT_KIND", "WMT25_COLUMNS", "WMT25_KEYS", "WRITERS", "FileBody", "OutputWriter",
           "Render", "RunFiles", "check_file_name", "comet_json", "complete_grid", "derived_keys", "lines_body",
           "mtme_name", "register_writer", "render_comet_json", "render_mtme", "render_segments_jsonl",
           "render_segments_tsv", "render_task2", "render_wmt23", "render_wmt25", "render_wmt26",
           "wmt25_row_keys", "write_files"]
