"""The outputs group of a judging's specification: the run directory and whether to start it over."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from polyjudge.data.settings import default
from polyjudge.data.shapes import normalise_fields


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """``out``: the run directory (None: nothing is written, answers stay in memory); re-running
    into it resumes. ``restart`` deletes the run already there (outputs and store) instead."""

    out: str | Path | None = None
    restart: bool = default("restart")

    def __post_init__(self) -> None:
        normalise_fields(self)
        if self.out is not None and not isinstance(self.out, Path):
            object.__setattr__(self, "out", Path(self.out))

    @property
    def path(self) -> Path | None:
        return None if self.out is None else Path(self.out)


__all__ = ["OutputSpec"]
