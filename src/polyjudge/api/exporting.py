"""Export a finished run in the field's formats: ``polyjudge export RUN --to mtme|wmt25|wmt23 -o DIR``.

The formats are the output-writer registry's (``polyjudge writers``,
:mod:`polyjudge.rundir.writers`); this module opens the run, asks the writer
(which refuses an unsuitable run before anything is written, exit 2 on the
command line) and says what it made up because the input did not say it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from polyjudge.data.errors import InputError
from polyjudge.data.shapes import normalise_fields
from polyjudge.rundir import RunDir
from polyjudge.rundir.writers import COMET_SCORE_KEY, WRITERS, comet_json, derived_keys

# The formats `export --to` offers first; every registered writer is accepted.
FIELD_FORMATS = ("mtme", "wmt25", "wmt23")


def export_formats() -> list[str]:
    """``--to`` choices: the field's formats first, then every other registered writer (plugins too)."""
    names = WRITERS.names()
    return [*[n for n in FIELD_FORMATS if n in names], *[n for n in names if n not in FIELD_FORMATS]]


@dataclass(frozen=True, slots=True)
class ExportConfig:
    """Which run to export, in which registered format (``to``), into which folder (``out``)."""

    def __post_init__(self) -> None:
        normalise_fields(self)  # Python shapes; TypeError names a field

    run: str | Path
    to: str
    out: str | Path


@dataclass(frozen=True, slots=True)
class ExportResult:
    """The files written and what was derived (keys the input did not give, said once each)."""

    files: list[Path]
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        lines = [f"wrote {p}" for p in self.files]
        lines += [f"note: derived {n}" for n in self.notes]
        return "\n".join(lines) + "\n"


def export(config: ExportConfig) -> ExportResult:
    """Write the run's files of format ``config.to`` into ``config.out`` (InputError when the run
    cannot be written so, e.g. unscored segments for mtme, naming what is missing)."""
    if config.to not in WRITERS:
        raise InputError(f"unknown export format {config.to!r} (choose from {', '.join(export_formats())})",
                         field="--to")
    run = RunDir.open(config.run)
    files = WRITERS.get(config.to).write(run, config.out)
    notes = derived_keys(run) if config.to in ("wmt25", "wmt23") else []
    return ExportResult(files, notes)


def comet_json_text(run: str | Path) -> str:
    """A run's segment scores as ``comet-score --to_json`` writes them (see
    :func:`polyjudge.rundir.writers.comet_json`), as text for ``score --to-json FILE``."""
    return json.dumps(comet_json(RunDir.open(run)), ensure_ascii=False, indent=4) + "\n"


__all__ = ["COMET_SCORE_KEY", "FIELD_FORMATS", "ExportConfig", "ExportResult", "comet_json_text", "export",
           "export_formats"]
