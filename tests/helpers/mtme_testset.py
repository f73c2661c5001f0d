"""A small mt-metrics-eval test set from the shared WMT21 TED en-de MQM data (real segments and scores).

:func:`build_ted_testset` writes ``ROOT/wmt21.tedtalks`` (mt-metrics-eval's name for
it: standard reference refA, standard gold ``mqm``) with the first segments of two
talks for a few systems: sources, documents (each talk its own domain label, so
the domain level has two domains), the reference ``refA`` (also as a system, as
mt-metrics-eval keeps it), system outputs, the human MQM scores (segment and
system level, averaged over raters as published) and two simple metrics
(``lenratio-refA``, ``lensrc-src``) at segment and system level.
:func:`judge_items` gives the same test set as JSON-lines items for ``polyjudge
judge``, each with the test-set record an input reader keeps (``extra["testset"]``).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

TED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "wmt-mqm" / "ted" / "ende"
NAME, LP = "wmt21.tedtalks", "en-de"
SYSTEMS = ("Facebook-AI", "HuaweiTSC", "Nemo", "Online-W", "UEdin")
PER_DOC = 6  # segments taken from each of the first two talks
HUMAN_NAMES = {"ref": "refA", "ref-A": "refA"}  # the TSV's and the score file's names of reference A


@dataclass(frozen=True)
class TedTestSet:
    """What was written: the folder, segments (doc, global TED seg id, source), outputs and MQM per system."""

    root: Path
    docs: list[str]
    seg_ids: list[int]
    sources: list[str]
    outputs: dict[str, list[str]]
    mqm: dict[str, list[float | None]]

    @property
    def systems(self) -> list[str]:
        return sorted(self.outputs)


def _read_ted() -> tuple[dict[int, tuple[str, str]], dict[tuple[str, int], str], dict[tuple[str, int], float | None]]:
    if not (TED / "mqm_ted_ende.tsv").is_file():
        pytest.skip(f"shared WMT MQM data not found at {TED}")
    segs: dict[int, tuple[str, str]] = {}
    text: dict[tuple[str, int], str] = {}
    with (TED / "mqm_ted_ende.tsv").open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            seg, system = int(row["seg_id"]), HUMAN_NAMES.get(row["system"], row["system"])
            segs.setdefault(seg, (row["doc"], row["source"]))
            text.setdefault((system, seg), row["target"].replace("<v>", "").replace("</v>", ""))
    mqm: dict[tuple[str, int], float | None] = {}
    for line in (TED / "mqm_ted_ende.avg_seg_scores.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        system, score, seg = line.split()
        mqm[(HUMAN_NAMES.get(system, system), int(seg))] = None if score == "None" else float(score)
    return segs, text, mqm


def _lines(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")


def _fmt(x: float) -> str:
    return repr(round(x, 6))


def _metric(name: str, values: dict[str, list[float]], folder: Path) -> None:
    _lines(folder / f"{name}.seg.score", [f"{s}\t{_fmt(v)}" for s, vs in values.items() for v in vs])
    _lines(folder / f"{name}.sys.score", [f"{s}\t{_fmt(sum(vs) / len(vs))}" for s, vs in values.items()])


def build_ted_testset(root: Path) -> TedTestSet:
    """Write the test set under ``root`` (``root/wmt21.tedtalks``) and say what it holds."""
    segs, text, mqm = _read_ted()
    docs = list(dict.fromkeys(doc for doc, _ in segs.values()))[:2]
    chosen = [s for d in docs for s in sorted(k for k, v in segs.items() if v[0] == d)[:PER_DOC]]
    base = root / NAME
    outputs = {s: [text[(s, g)] for g in chosen] for s in (*SYSTEMS, "refA")}
    sources = [segs[g][1] for g in chosen]
    _lines(base / "sources" / f"{LP}.txt", sources)
    _lines(base / "documents" / f"{LP}.docs", [f"talks-{docs.index(segs[g][0])} {segs[g][0]}" for g in chosen])
    _lines(base / "references" / f"{LP}.refA.txt", outputs["refA"])
    for system, lines in outputs.items():
        _lines(base / "system-outputs" / LP / f"{system}.txt", lines)
    human = {s: [mqm.get((s, g)) for g in chosen] for s in outputs}
    _lines(base / "human-scores" / f"{LP}.mqm.seg.score",
           [f"{s}\t{'None' if v is None else _fmt(v)}" for s, vs in human.items() for v in vs])
    sys_means = {s: [v for v in vs if v is not None] for s, vs in human.items()}
    _lines(base / "human-scores" / f"{LP}.mqm.sys.score",
           [f"{s}\t{_fmt(sum(v) / len(v))}" for s, v in sys_means.items()])
    metrics = base / "metric-scores" / LP
    ref = outputs["refA"]
    _metric("lenratio-refA", {s: [-abs(len(h) / len(r) - 1) for h, r in zip(outputs[s], ref)] for s in SYSTEMS},
            metrics)
    _metric("lensrc-src", {s: [-abs(len(h) / len(x) - 1.1) for h, x in zip(outputs[s], sources)] for s in outputs},
            metrics)
    return TedTestSet(base, [segs[g][0] for g in chosen], chosen, sources, outputs, human)


def testset_record(ts: TedTestSet, systems: list[str]) -> dict[str, object]:
    """The record an mt-metrics-eval input reader keeps in every item's extra (data/testsets.py's shape)."""
    return {"format": "mtme", "root": str(ts.root), "name": NAME, "lp": LP, "systems": systems,
            "all_systems": ts.systems, "n_segments": len(ts.sources), "ref": "refA", "documents": True,
            "domains": True}


def judge_items(ts: TedTestSet, path: Path, systems: list[str] | None = None) -> Path:
    """The test set as JSON lines for ``polyjudge judge``: system by system, segments in order, seg_id the
    1-based line number, doc_id the talk, the domain and the test-set record kept in extra."""
    chosen = systems or ts.systems
    record = testset_record(ts, chosen)
    rows = []
    for system in chosen:
        for k, (src, doc) in enumerate(zip(ts.sources, ts.docs)):
            rows.append({"src": src, "tgt": ts.outputs[system][k], "ref": ts.outputs["refA"][k], "src_lang": "en",
                         "tgt_lang": "de", "system": system, "doc_id": doc, "seg_id": str(k + 1),
                         "domain": f"talks-{sorted(set(ts.docs), key=ts.docs.index).index(doc)}",
                         "testset": record})
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


__all__ = ["LP", "NAME", "SYSTEMS", "TedTestSet", "build_ted_testset", "judge_items", "testset_record"]
