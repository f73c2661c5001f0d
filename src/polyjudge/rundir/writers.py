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
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from polyjudge.data.errors import InputError
from polyjudge.data.spans import write_task2_tsv
from polyjudge.registry import Registry
from polyjudge.rundir.clash import Target, refuse_clashes, run_dir_target
from polyjudge.rundir.directory import MANIFEST, MTME_DIR, SEGMENTS, SPANS, RunDir
from polyjudge.rundir.ownership import claim
from polyjudge.rundir.records import SegmentRow, format_cell, format_mtme, tsv_text

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
    """The run's mt-metrics-eval metric name: the manifest's, else its one ``mtme/*.seg.score`` (0.1.0)."""
    name = run.manifest.outputs.get("mtme_name")
    if name:
        return check_file_name(f"{name}.seg.score", path=str(run.path / MANIFEST),
                               field="outputs.mtme_name").removesuffix(".seg.score")
    found = sorted((run.path / MTME_DIR).glob("*.seg.score"))
    if len(found) != 1:
        raise InputError(f"the run names no mt-metrics-eval metric (no outputs.mtme_name in {MANIFEST}, "
                         f"{len(found)} {MTME_DIR}/*.seg.score files)", path=str(run.path))
    return found[0].name.removesuffix(".seg.score")


def _segment_rows(run: RunDir) -> list[SegmentRow]:
    rows = run.segment_rows
    if not rows:
        raise InputError(f"no segment scores in the run directory ({SEGMENTS} missing or empty)",
                         path=str(run.path))
    return rows


@register_writer("mtme", writes="NAME.seg.score, NAME.sys.score (NAME: the run's mt-metrics-eval name)")
def render_mtme(run: RunDir) -> RunFiles:
    """mt-metrics-eval score files: per system its segment scores in input order, and system scores."""
    name = mtme_name(run)
    rows = _segment_rows(run)
    by_system: dict[str, list[float | None]] = {}
    for item, row in zip(run.items, rows):
        by_system.setdefault(item.system or "-", []).append(row.score)
    seg = [f"{system}\t{format_mtme(s)}\n" for system, values in by_system.items() for s in values]
    sys_ = [f"{s.system}\t{format_mtme(s.score)}\n" for s in run.system_rows()]
    return {f"{name}.seg.score": lines_body(seg), f"{name}.sys.score": lines_body(sys_)}


@register_writer("task2", writes=SPANS)
def render_task2(run: RunDir) -> RunFiles:
    """WMT25 task-2 span TSV: a span protocol's merged spans (start_indices, end_indices, error_types)."""
    segments, _ = run.span_segments()

    def body(path: Path) -> None:
        write_task2_tsv(path, segments)

    return {SPANS: body}


def _segment_header(rows: list[SegmentRow]) -> list[str]:
    return [*SegmentRow.HEADER, *(f"score:{j}" for j in rows[0].judge_scores)]


@register_writer("segments-tsv", writes=SEGMENTS)
def render_segments_tsv(run: RunDir) -> RunFiles:
    """The run's segment table as TSV: ids, languages, final score, runs ok and failed (+ score:JUDGE)."""
    rows = _segment_rows(run)
    judges = list(rows[0].judge_scores)
    lines = ["\t".join(_segment_header(rows)) + "\n"]
    for r in rows:
        cells = [tsv_text(r.system), tsv_text(r.doc_id), tsv_text(r.seg_id), tsv_text(r.src_lang),
                 tsv_text(r.tgt_lang), format_cell(r.score), str(r.runs_ok), str(r.runs_failed)]
        lines.append("\t".join(cells + [format_cell(r.judge_scores.get(j)) for j in judges]) + "\n")
    return {SEGMENTS: lines_body(lines)}


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


__all__ = ["EXPORT_KIND", "WRITERS", "FileBody", "OutputWriter", "Render", "RunFiles", "check_file_name",
           "lines_body", "mtme_name", "register_writer", "render_mtme", "render_segments_jsonl",
           "render_segments_tsv", "render_task2", "write_files"]
