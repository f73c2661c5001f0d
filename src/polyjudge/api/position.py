"""Position bias of a contrastive run (``polyjudge position-bias RUN``)."""

from __future__ import annotations

from pathlib import Path

from polyjudge.analysis.position import PositionRow
from polyjudge.analysis.position import position_bias as _table
from polyjudge.data.errors import InputError


def position_bias(run: str | Path) -> list[PositionRow]:
    """Per position of the prompt, the mean score relative to the mean of its source's translations
    (:mod:`polyjudge.analysis.position`), from a run directory judged by a protocol that records
    positions (``contrastive-esa``); InputError for a run without them."""
    from polyjudge.rundir import RunDir

    rows = _table(RunDir.open(run).judgments)
    if not rows:
        raise InputError("no positions in the run's judgments: position bias needs a run of a contrastive "
                         "protocol (contrastive-esa) with at least two scored translations of a source",
                         path=str(run))
    return rows


__all__ = ["position_bias"]
