"""``polyjudge human-mqm`` (human MQM scores from a WMT TSV) and
``polyjudge variability`` (run-to-run spread of a run directory).

``human-mqm`` prints a line saying what the numbers are, then one
``system<TAB>points`` line per system, best first, in positive MQM error
points as WMT publishes them (lower is better); ``--format tsv|json`` prints
the systems table or a JSON document naming the unit. With ``-o/--out DIR``
(``-O`` is the deprecated 0.1.0 spelling) it writes ``DIR/segments.tsv`` (``system doc seg_id points
score n_raters``; ``score`` = −points, higher is better) and
``DIR/systems.tsv`` (``system points score n_segments``). A row repeated word
for word (same rater, segment and error) counts once, with a warning; a file
with no annotation rows is bad input (exit 2). A segment rated by several raters
scores the mean of its raters (as mt-metrics-eval scores WMT's MQM); ``--rater
NAME`` scores one rater's annotations alone (a name the file lacks: exit 2,
naming the raters it has).
"""

from __future__ import annotations

from pathlib import Path

import click

from polyjudge.api.formats import SEGMENT_SCORE_FORMATS
from polyjudge.api.runs import SEGMENTS, SYSTEMS, OwnedDir, Target, claim, file_target
from polyjudge.cli.options import format_option, guard_outputs, out_option, warn

HUMAN_MQM_KIND = "human-mqm"
_SEGMENTS_HEADER = "system\tdoc\tseg_id\tpoints\t"


def claim_human_mqm_dir(out: str) -> OwnedDir:
    """The ``-o`` folder, taken as a human-mqm folder: new, empty, or one human-mqm wrote (a
    judge run directory or the user's files are refused, exit 2)."""
    return claim(out, HUMAN_MQM_KIND, names=(SEGMENTS, SYSTEMS), adopt=_adopt_human_mqm_dir, flag="-o/--out")


def _adopt_human_mqm_dir(root: Path) -> set[str] | None:
    """A folder of an earlier version's human-mqm: exactly its two tables, with its header."""
    names = {p.name for p in root.iterdir()}
    if not names <= {SEGMENTS, SYSTEMS}:
        return None
    seg = root / SEGMENTS
    try:
        head = seg.read_text(encoding="utf-8")[:len(_SEGMENTS_HEADER)] if seg.is_file() else ""
    except (OSError, UnicodeDecodeError):
        return None
    return names if head == _SEGMENTS_HEADER and not seg.is_symlink() else None


def _fmt(x: float) -> str:
    return f"{x:.6f}".rstrip("0").rstrip(".") if x == x else ""


@click.command("human-mqm")
@click.argument("tsv", type=click.Path(dir_okay=False))
@out_option("Folder for segments.tsv and systems.tsv (MQM error points and their negation per segment and "
            "system).", legacy_decls=("-O",))
@format_option()
@click.option("--classic", is_flag=True,
              help="Classic GEMBA-MQM scoring instead of Freitag et al.'s: every minor error 1 (punctuation "
                   "included), a non-translation counted as critical, at most 5 errors, capped at 25.")
@click.option("--quirks", is_flag=True, help="Also report markup quirks of the file on stderr.")
@click.option("--rater", default=None, metavar="NAME",
              help="Score this rater's annotations alone (default: every rater's, each segment the mean over "
                   "its raters, as mt-metrics-eval scores WMT's MQM).")
def human_mqm(tsv: str, out: str | None, fmt: str, classic: bool, quirks: bool, rater: str | None) -> None:
    """Score a WMT MQM annotation TSV: MQM error points per system (lower is better), the mean over
    segments of each segment's mean over raters (--rater: one rater's alone).

    --format text prints a line saying what the numbers are, then system and points best first;
    tsv prints the systems table (points, score = -points, segments); json the same with the
    unit and the scoring.
    """
    from polyjudge.api.mqm import MQMWeights, human_mqm_table, of_rater, read_wmt_mqm_report, score_human_annotations

    if out is not None:  # refused before the file is read: exit 2 naming the clash
        claim_human_mqm_dir(out)
        guard_outputs({"out": [Target("-o/--out", out, (SEGMENTS, SYSTEMS))]})
    annotations, report = read_wmt_mqm_report(tsv)
    if report.duplicate_rows:
        warn(f"{tsv}: dropped {report.duplicate_rows} duplicate annotation row(s) (the same rater, system, "
             "document, segment and error repeated word for word)")
    annotations = of_rater(annotations, rater, tsv)
    table = human_mqm_table(tsv, score_human_annotations(annotations, MQMWeights(classic=classic)), classic=classic)
    for line in table.format(fmt).splitlines():  # line by line: a reader that goes away stops it (exit 141)
        click.echo(line)
    if quirks:
        click.echo(f"{report.rows} rows, {report.no_error_rows} no-error rows, "
                   f"{report.unclosed_spans} unclosed / {report.unopened_spans} unopened / "
                   f"{report.multiple_spans} multiple <v> spans, {report.source_spans} source-side spans, "
                   f"{report.target_mismatches} target mismatches", err=True)
    if out:
        owned = claim_human_mqm_dir(out)
        seg_path = owned.write_text(SEGMENTS, table.segments_tsv())
        sys_path = owned.write_text(SYSTEMS, table.to_tsv())
        click.echo(f"wrote {seg_path} and {sys_path}", err=True)


@click.command("variability")
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option("--aggregator", default="rrwa", show_default=True,
              help="Aggregate the single runs are compared with.")
@out_option("Write per-item delta / distinct / aggregates as TSV to this file.", legacy_decls=("-O",))
@click.option("--expected", "expected_dir", type=click.Path(file_okay=False), default=None, metavar="RUN_DIR",
              help="A run of the same judge and items judged with --score-mode expected: compare its one "
                   "request per item with RUN_DIR's runs under every aggregator (ties, ranking stability).")
@click.option("--human", type=click.Path(), default=None, metavar="FILE",
              help="With --expected: human scores (as meta-eval reads them) for SPA and acc-t.")
@click.option("--human-format", type=click.Choice(SEGMENT_SCORE_FORMATS), default="auto",
              show_default=True, help="Format of --human.")
@click.option("--item-key", type=click.Choice(["auto", "seg", "doc-seg"]), default="auto", show_default=True,
              help="How segments are matched with --human: seg_id, or doc_id + seg_id.")
@format_option()
def variability(run_dir: str, aggregator: str, out: str | None, expected_dir: str | None, human: str | None,
                human_format: str, item_key: str, fmt: str) -> None:
    """Run-to-run spread of a judged run directory (delta, ties, ranking stability)."""
    import numpy as np

    if expected_dir is not None:
        import json

        from polyjudge.api.expected import ExpectedConfig, compare_expected_runs

        found = compare_expected_runs(ExpectedConfig(run_dir, expected_dir, human, human_format, item_key))
        if fmt == "json":
            click.echo(json.dumps([c.to_json() for c in found], indent=1))
            return
        if fmt == "tsv":
            fields = next((list(c.to_json()["ways"][0]) for c in found if c.ways), [])
            click.echo("\t".join(["judge", "n_items", "n_sampled_runs", "n_systems", *fields]))
            for c in found:
                click.echo("\n".join(c.tsv_rows()))
            return
        for c in found:
            click.echo(c.to_text())
    elif human is not None:
        raise click.UsageError("--human needs --expected")

    from polyjudge.api import RunDir
    from polyjudge.api.mqm import COMPARISON, aggregate_table, distinct_counts, segment_deltas, variability_report

    guard_outputs({"out": file_target("-o/--out", out)})
    mats = RunDir.open(run_dir).run_score_matrices()
    lines: list[str] = []
    for judge, m in mats.items():
        click.echo(variability_report(m, stability_aggregator=aggregator).to_text())
        if out:
            table = aggregate_table(m.scores, COMPARISON)
            d, k = segment_deltas(m.scores), distinct_counts(m.scores)
            if not lines:
                lines.append("\t".join(["judge", "item_index", "system", "seg_id", "runs_ok", "delta",
                                        "distinct", *COMPARISON]))
            for i in range(m.scores.shape[0]):
                ok = int(np.sum(~np.isnan(m.scores[i])))
                lines.append("\t".join([judge, str(i), m.systems[i], m.seg_ids[i] or str(i), str(ok), _fmt(d[i]),
                                        str(k[i]), *(_fmt(table[n][i]) for n in COMPARISON)]))
    if out:
        from polyjudge.api.runs import atomic_write

        atomic_write(Path(out), ["\n".join(lines) + "\n"])
