"""The names of a run directory's files: the contract's vocabulary, apart from the reader and writer
(which load numpy), so a module that only names files (the clash check, a spec) stays light."""

from __future__ import annotations

MANIFEST = "manifest.json"
JUDGMENTS = "judgments.jsonl"
ITEMS = "items.jsonl"
SEGMENTS = "segments.tsv"
SYSTEMS = "systems.tsv"
AGGREGATES = "aggregates.tsv"
MERGED = "merged.jsonl"
SPANS = "spans.tsv"
STORE = "store.sqlite"
# Ray's own log lines of a run with --executor ray (engine.ray_executor), kept off the terminal.
RAY_LOG = "ray.log"
MTME_DIR = "mtme"
# Outputs that only some runs have: removed when a rewrite does not produce them,
# so a directory reused with another protocol never keeps a stale file.
OPTIONAL_OUTPUTS = (AGGREGATES, MERGED, SPANS)
# Every file a judging run writes besides mtme/ and the store; --restart removes these (when polyjudge's).
RUN_OUTPUTS = (MANIFEST, JUDGMENTS, ITEMS, SEGMENTS, SYSTEMS, *OPTIONAL_OUTPUTS)
STORE_FILES = (STORE, STORE + "-wal", STORE + "-shm", STORE + "-journal")
RUN_KIND = "judge run"

__all__ = ["AGGREGATES", "ITEMS", "JUDGMENTS", "MANIFEST", "MERGED", "MTME_DIR", "OPTIONAL_OUTPUTS", "RAY_LOG",
           "RUN_KIND", "RUN_OUTPUTS", "SEGMENTS", "SPANS", "STORE", "STORE_FILES", "SYSTEMS"]
