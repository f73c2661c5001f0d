"""What the command line needs from the engine, the run directory and the readers, in one place.

The CLI reaches everything below it through :mod:`polyjudge.api` (a layer
test holds it to that), so a change inside the engine or ``rundir`` never
ripples into the commands. These are the names the commands use to build a
run's configuration, read its input, guard its outputs and report how it
stopped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from polyjudge.data import limits
from polyjudge.data.limits import DEFAULT_JUDGE
from polyjudge.data.readers import read_items, read_parallel
from polyjudge.data.records import Item
from polyjudge.data.secrets import redact
from polyjudge.engine.errors import BudgetExceeded, RunInterrupted, RunStopped
from polyjudge.registry import lazy_members
from polyjudge.rundir.clash import Target, file_target, input_target, refuse_clashes, run_dir_target
from polyjudge.rundir.ownership import atomic_write, check_out_path

if TYPE_CHECKING:
    from polyjudge.engine.session import BatchOptions as BatchOptions
    from polyjudge.engine.session import JudgeConfig as JudgeConfig
    from polyjudge.rundir import PENDING as PENDING
    from polyjudge.rundir import SEGMENTS as SEGMENTS
    from polyjudge.rundir import SYSTEMS as SYSTEMS
    from polyjudge.rundir import OwnedDir as OwnedDir
    from polyjudge.rundir import RunDir as RunDir
    from polyjudge.rundir import claim as claim

# The run directory's reader (and its numpy) loads when a command first reads or claims a run, and the
# engine when a command first builds a configuration, not when the command line is parsed
# (`polyjudge judge --help`: its flag bounds come from data.limits).
_LAZY = {"BatchOptions": "polyjudge.engine.session", "JudgeConfig": "polyjudge.engine.session",
         "PENDING": "polyjudge.rundir", "SEGMENTS": "polyjudge.rundir", "SYSTEMS": "polyjudge.rundir",
         "OwnedDir": "polyjudge.rundir", "RunDir": "polyjudge.rundir", "claim": "polyjudge.rundir"}


__getattr__, __dir__ = lazy_members(__name__, _LAZY)


__all__ = ["DEFAULT_JUDGE", "PENDING", "SEGMENTS", "SYSTEMS", "BatchOptions", "BudgetExceeded", "Item",
           "JudgeConfig", "OwnedDir", "RunDir", "RunInterrupted", "RunStopped", "Target", "atomic_write",
           "check_out_path", "claim", "file_target", "input_target", "limits", "read_items", "read_parallel",
           "redact", "refuse_clashes", "run_dir_target"]
