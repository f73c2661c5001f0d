"""Test sets in the field's layouts, written from the shared WMT21 TED MQM data (real segments).

``write_mtme`` writes an mt-metrics-eval folder (``wmt21.tedtalks``, whose
standard en-de reference is refA) and ``write_wmt25`` a WMT25 task-1 TSV, both
from the first segments of two TED talks for a few systems. ``TedSample`` holds
what was written, so tests compare what a reader returns with the data itself.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import pytest

TED_ENDE = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "wmt-mqm" / "ted" / "ende" / \
    "mqm_ted_ende.tsv"
# Two documents, three segments each (global seg ids of the TED file).
SEGMENTS = (("talk.1", (1, 2, 3)), ("talk.3", (218, 219, 220)))
SYSTEMS = ("Facebook-AI", "HuaweiTSC", "Online-W")


@dataclass(frozen=True)
class TedSample:
    """Sources, documents and every system's outputs (``refA`` and ``refB`` among them), in order."""

    sources: list[str]
    docs: list[str]
    outputs: dict[str, list[str]]


def ted_sample() -> TedSample:
    """The sample from the shared data (the test skips when it is absent)."""
    if not TED_ENDE.is_file():
        pytest.skip(f"shared WMT MQM data not found at {TED_ENDE}")
    wanted = {seg: doc for doc, segs in SEGMENTS for seg in segs}
    names = {**{s: s for s in SYSTEMS}, "ref": "refA", "Nemo": "refB"}  # Nemo stands in as a second reference
    text: dict[tuple[str, int], str] = {}
    sources: dict[int, str] = {}
    with TED_ENDE.open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            seg = int(row["seg_id"])
            if seg in wanted and row["system"] in names:
                sources[seg] = row["source"]
                text.setdefault((names[row["system"]], seg), row["target"].replace("<v>", "").replace("</v>", ""))
    order = [seg for _, segs in SEGMENTS for seg in segs]
    outputs = {name: [text[(name, seg)] for seg in order] for name in sorted(set(names.values()))}
    return TedSample([sources[s] for s in order], [wanted[s] for s in order], outputs)


def write_mtme(root: Path, sample: TedSample, name: str = "wmt21.tedtalks") -> Path:
    """An mt-metrics-eval test-set folder with en-de: sources, documents, refA/refB, systems (refA too)."""
    base = root / name
    for sub in ("sources", "documents", "references", "system-outputs/en-de"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    (base / "sources" / "en-de.txt").write_text("".join(s + "\n" for s in sample.sources), encoding="utf-8")
    (base / "documents" / "en-de.docs").write_text("".join(f"ted {d}\n" for d in sample.docs), encoding="utf-8")
    for ref in ("refA", "refB"):
        (base / "references" / f"en-de.{ref}.txt").write_text("".join(t + "\n" for t in sample.outputs[ref]),
                                                              encoding="utf-8")
    for system in (*SYSTEMS, "refA"):
        (base / "system-outputs" / "en-de" / f"{system}.txt").write_text(
            "".join(t + "\n" for t in sample.outputs[system]), encoding="utf-8")
    return base


WMT25_HEADER = ("doc_id", "segment_id", "source_lang", "target_lang", "set_id", "system_id", "source_segment",
                "hypothesis_segment", "reference_segment", "domain_name", "method")


def write_wmt25(path: Path, sample: TedSample) -> Path:
    """A WMT25 task-1 TSV of the sample: per-document segment ids, no references, method "MQM"."""
    rows = ["\t".join(WMT25_HEADER)]
    for system in SYSTEMS:
        position: dict[str, int] = {}
        for src, doc, hyp in zip(sample.sources, sample.docs, sample.outputs[system]):
            position[doc] = position.get(doc, 0) + 1
            rows.append("\t".join((f"ted_{doc}", str(position[doc]), "en", "de_DE", "wmttest2025", system, src, hyp,
                                   "", "speech", "MQM")))
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path
