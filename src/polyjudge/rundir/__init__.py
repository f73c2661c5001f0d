"""The run directory contract: typed records, one writer, one reader, one lock.

``write_run(path, RunContents(...))`` writes a run; ``RunDir.open(path)``
reads one (any format version); ``RunDirLock(path)`` keeps a second judging
process out. See DEVELOPERS.md for the file layout.

Names load on first use (``__getattr__``): a module that needs one group (the outputs spec of a
judging, say) does not pay for the reader's numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from polyjudge.registry import lazy_members

if TYPE_CHECKING:
    from polyjudge.rundir.directory import AGGREGATES as AGGREGATES
    from polyjudge.rundir.directory import ITEMS as ITEMS
    from polyjudge.rundir.directory import JUDGMENTS as JUDGMENTS
    from polyjudge.rundir.directory import MANIFEST as MANIFEST
    from polyjudge.rundir.directory import MERGED as MERGED
    from polyjudge.rundir.directory import SEGMENTS as SEGMENTS
    from polyjudge.rundir.directory import SPANS as SPANS
    from polyjudge.rundir.directory import STORE as STORE
    from polyjudge.rundir.directory import SYSTEMS as SYSTEMS
    from polyjudge.rundir.directory import JudgmentLines as JudgmentLines
    from polyjudge.rundir.directory import JudgmentSpool as JudgmentSpool
    from polyjudge.rundir.directory import RunContents as RunContents
    from polyjudge.rundir.directory import RunDir as RunDir
    from polyjudge.rundir.directory import RunScores as RunScores
    from polyjudge.rundir.directory import output_sizes as output_sizes
    from polyjudge.rundir.directory import write_manifest as write_manifest
    from polyjudge.rundir.directory import write_run as write_run
    from polyjudge.rundir.directory import write_settled as write_settled
    from polyjudge.rundir.lock import LOCK_FILE as LOCK_FILE
    from polyjudge.rundir.lock import RunDirInUse as RunDirInUse
    from polyjudge.rundir.lock import RunDirLock as RunDirLock
    from polyjudge.rundir.lock import claim_run_dir as claim_run_dir
    from polyjudge.rundir.lock import clear_run as clear_run
    from polyjudge.rundir.ownership import OWNED_RECORD as OWNED_RECORD
    from polyjudge.rundir.ownership import OwnedDir as OwnedDir
    from polyjudge.rundir.ownership import check_out_path as check_out_path
    from polyjudge.rundir.ownership import claim as claim
    from polyjudge.rundir.records import FORMAT_VERSION as FORMAT_VERSION
    from polyjudge.rundir.records import OK as OK
    from polyjudge.rundir.records import PARSE_FAILED as PARSE_FAILED
    from polyjudge.rundir.records import PENDING as PENDING
    from polyjudge.rundir.records import REQUEST_FAILED as REQUEST_FAILED
    from polyjudge.rundir.records import STATUSES as STATUSES
    from polyjudge.rundir.records import TRUNCATED as TRUNCATED
    from polyjudge.rundir.records import JudgmentRecord as JudgmentRecord
    from polyjudge.rundir.records import Manifest as Manifest
    from polyjudge.rundir.records import MergedRow as MergedRow
    from polyjudge.rundir.records import RunConfig as RunConfig
    from polyjudge.rundir.records import SegmentRow as SegmentRow
    from polyjudge.rundir.records import SystemRow as SystemRow
    from polyjudge.rundir.records import format_cell as format_cell
    from polyjudge.rundir.records import format_mtme as format_mtme
    from polyjudge.rundir.records import tsv_text as tsv_text

_HOMES = {
    "AGGREGATES": "polyjudge.rundir.directory",
    "ITEMS": "polyjudge.rundir.directory",
    "JUDGMENTS": "polyjudge.rundir.directory",
    "MANIFEST": "polyjudge.rundir.directory",
    "MERGED": "polyjudge.rundir.directory",
    "SEGMENTS": "polyjudge.rundir.directory",
    "SPANS": "polyjudge.rundir.directory",
    "STORE": "polyjudge.rundir.directory",
    "SYSTEMS": "polyjudge.rundir.directory",
    "JudgmentLines": "polyjudge.rundir.directory",
    "JudgmentSpool": "polyjudge.rundir.directory",
    "RunContents": "polyjudge.rundir.directory",
    "RunDir": "polyjudge.rundir.directory",
    "RunScores": "polyjudge.rundir.directory",
    "output_sizes": "polyjudge.rundir.directory",
    "write_manifest": "polyjudge.rundir.directory",
    "write_settled": "polyjudge.rundir.directory",
    "write_run": "polyjudge.rundir.directory",
    "LOCK_FILE": "polyjudge.rundir.lock",
    "RunDirInUse": "polyjudge.rundir.lock",
    "RunDirLock": "polyjudge.rundir.lock",
    "claim_run_dir": "polyjudge.rundir.lock",
    "clear_run": "polyjudge.rundir.lock",
    "OWNED_RECORD": "polyjudge.rundir.ownership",
    "OwnedDir": "polyjudge.rundir.ownership",
    "check_out_path": "polyjudge.rundir.ownership",
    "claim": "polyjudge.rundir.ownership",
    "FORMAT_VERSION": "polyjudge.rundir.records",
    "OK": "polyjudge.rundir.records",
    "PARSE_FAILED": "polyjudge.rundir.records",
    "PENDING": "polyjudge.rundir.records",
    "REQUEST_FAILED": "polyjudge.rundir.records",
    "STATUSES": "polyjudge.rundir.records",
    "TRUNCATED": "polyjudge.rundir.records",
    "JudgmentRecord": "polyjudge.rundir.records",
    "Manifest": "polyjudge.rundir.records",
    "MergedRow": "polyjudge.rundir.records",
    "RunConfig": "polyjudge.rundir.records",
    "SegmentRow": "polyjudge.rundir.records",
    "SystemRow": "polyjudge.rundir.records",
    "format_cell": "polyjudge.rundir.records",
    "format_mtme": "polyjudge.rundir.records",
    "tsv_text": "polyjudge.rundir.records",
}


__getattr__, __dir__ = lazy_members(__name__, _HOMES)


__all__ = sorted(_HOMES)
