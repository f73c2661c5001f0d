"""The run directory contract: typed records, one writer, one reader, one lock.

``write_run(path, RunContents(...))`` writes a run; ``RunDir.open(path)``
reads one (any format version); ``RunDirLock(path)`` keeps a second judging
process out. See DEVELOPERS.md for the file layout.
"""

from polyjudge.rundir.directory import (
    AGGREGATES,
    ITEMS,
    JUDGMENTS,
    MANIFEST,
    MERGED,
    SEGMENTS,
    SPANS,
    STORE,
    SYSTEMS,
    JudgmentSpool,
    RunContents,
    RunDir,
    RunScores,
    output_sizes,
    write_manifest,
    write_run,
)
from polyjudge.rundir.lock import LOCK_FILE, RunDirInUse, RunDirLock, claim_run_dir, clear_run
from polyjudge.rundir.ownership import OWNED_RECORD, OwnedDir, check_out_path, claim
from polyjudge.rundir.records import (
    FORMAT_VERSION,
    OK,
    PARSE_FAILED,
    PENDING,
    REQUEST_FAILED,
    STATUSES,
    TRUNCATED,
    JudgmentRecord,
    Manifest,
    MergedRow,
    RunConfig,
    SegmentRow,
    SystemRow,
    format_cell,
    format_mtme,
    tsv_text,
)

__all__ = ["AGGREGATES", "FORMAT_VERSION", "ITEMS", "JUDGMENTS", "LOCK_FILE", "MANIFEST", "MERGED", "OK",
           "OWNED_RECORD",
           "PARSE_FAILED", "PENDING", "REQUEST_FAILED", "SEGMENTS", "SPANS", "STATUSES", "STORE", "SYSTEMS",
           "TRUNCATED", "JudgmentRecord", "JudgmentSpool", "Manifest", "MergedRow", "RunConfig", "RunContents",
           "OwnedDir", "RunDir", "RunDirInUse", "RunDirLock", "RunScores", "SegmentRow", "SystemRow",
           "check_out_path", "claim", "claim_run_dir", "clear_run", "format_cell",
           "format_mtme", "output_sizes", "tsv_text", "write_manifest", "write_run"]
