"""``polyjudge export``: a finished run as files the field's tools accept.

The work is :func:`polyjudge.api.exporting.export`; this module parses and prints.
"""

from __future__ import annotations

from pathlib import Path

import click

from polyjudge.api.exporting import export_formats
from polyjudge.cli.options import out_option


@click.command("export")
@click.argument("run", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--to", "to", type=click.Choice(export_formats()), required=True,
              help="mtme: mt-metrics-eval metric files (NAME-src/NAME-REF, seg/sys, doc/domain when the input "
                   "had them); wmt25: segments.tsv and systems.tsv of a WMT25 submission; wmt23: the WMT23 "
                   "metrics task TSV; or any other registered writer (`polyjudge writers`).")
@out_option("Folder to write the files into (new, empty, or an earlier export).", required=True)
def export(run: Path, to: str, out: str) -> None:
    """Write RUN's scores in a format the field's tools read.

    An -o folder is polyjudge's own: export beside a test set, then copy the files in.

    \b
    polyjudge export runs/mqm --to mtme -o exports/en-de
    cp exports/en-de/*.score wmt23/metric-scores/en-de/
    polyjudge export runs/mqm --to wmt25 -o submission/
    """
    from polyjudge.api.exporting import ExportConfig
    from polyjudge.api.exporting import export as write

    click.echo(write(ExportConfig(run, to, out)).summary(), nl=False)
