"""What the command line needs from the engine, the run directory and the readers, in one place.

The CLI reaches everything below it through :mod:`polyjudge.api` (a layer
test holds it to that), so a change inside the engine or ``rundir`` never
ripples into the commands. These are the light names the commands use to
check their flags, read their input, guard their outputs and report how a run
stopped; the API's public names (``polyjudge.api``) are the rest.
"""

from __future__ import annotations

from polyjudge.data import limits
from polyjudge.data.limits import DEFAULT_JUDGE
from polyjudge.data.readers import read_items, read_parallel
from polyjudge.data.records import Item
from polyjudge.data.secrets import redact
from polyjudge.engine.errors import BudgetExceeded, RunInterrupted, RunStopped
from polyjudge.rundir.clash import Target, file_target, input_target, refuse_clashes, run_dir_target
from polyjudge.rundir.names import SEGMENTS, SYSTEMS
from polyjudge.rundir.ownership import OwnedDir, atomic_write, check_out_path, claim
from polyjudge.rundir.records import PENDING

# All light (no numpy, no judging session), so `polyjudge judge --help` may import them. The heavier names a
# command needs later (RunDir, JudgeConfig, BatchOptions) are public names of polyjudge.api (its one table),
# which load on first use.
__all__ = ["DEFAULT_JUDGE", "PENDING", "SEGMENTS", "SYSTEMS", "BudgetExceeded", "Item",
           "OwnedDir", "RunInterrupted", "RunStopped", "Target", "atomic_write",
           "check_out_path", "claim", "file_target", "input_target", "limits", "read_items", "read_parallel",
           "redact", "refuse_clashes", "run_dir_target"]
