"""Write the demo's example and its human scores from the WMT21 TED MQM annotations (issue 37, item 5).

``polyjudge demo`` judges ``src/polyjudge/examples/demo_ende.jsonl``; its "next" lines meta-evaluate that run
against ``demo_ende_human.tsv``. Both are cut from real data so the meta-evaluation means something: two
short segments of TED talk 1 (en-de), each translated differently by three WMT21 systems that the experts
rated apart (no error, minor errors, a major error), with the experts' segment scores averaged over raters.

Source: google/wmt-mqm-human-evaluation (Freitag et al. 2021), Apache-2.0, read from ../shared/data/wmt-mqm.
Run from the project root:  python scripts/make_demo_example.py [DATA_DIR]
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "polyjudge" / "examples"
SYSTEMS = ("Facebook-AI", "UEdin", "Nemo")  # published TED en-de MQM 1.06, 1.77, 2.14 error points per segment
SEGMENTS = ("104", "107")  # short; per segment three different translations and three different scores


def main(data: Path) -> None:
    ted = data / "wmt-mqm" / "ted" / "ende"
    texts: dict[tuple[str, str], tuple[str, str, str]] = {}
    with open(ted / "mqm_ted_ende.tsv", encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE):
            if row["system"] in SYSTEMS and row["seg_id"] in SEGMENTS:
                # the annotated error span is marked inline with <v>...</v>: the translation is the text without it
                target = re.sub(r"</?v>", "", row["target"])
                texts.setdefault((row["system"], row["seg_id"]), (row["doc"], row["source"], target))
    scores: dict[tuple[str, str], str] = {}
    with open(ted / "mqm_ted_ende.avg_seg_scores.tsv", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            system, score, seg_id = line.split()
            if system in SYSTEMS and seg_id in SEGMENTS:
                scores[(system, seg_id)] = f"{abs(float(score)):g}" if float(score) == 0 else f"{float(score):g}"
    keys = [(s, g) for s in SYSTEMS for g in SEGMENTS]
    missing = [k for k in keys if k not in texts or k not in scores]
    if missing:
        sys.exit(f"not in {ted}: {missing}")
    with open(OUT / "demo_ende.jsonl", "w", encoding="utf-8", newline="\n") as fh:
        for system, seg_id in keys:
            doc, source, target = texts[(system, seg_id)]
            fh.write(json.dumps({"src": source, "tgt": target, "src_lang": "en", "tgt_lang": "de", "doc_id": doc,
                                 "seg_id": seg_id, "system": system}, ensure_ascii=False) + "\n")
    with open(OUT / "demo_ende_human.tsv", "w", encoding="utf-8", newline="\n") as fh:
        fh.write("system\tdoc_id\tseg_id\tscore\n")
        for system, seg_id in keys:
            fh.write(f"{system}\t{texts[(system, seg_id)][0]}\t{seg_id}\t{scores[(system, seg_id)]}\n")
    shutil.copyfile(data / "wmt-mqm" / "LICENSE", OUT / "LICENSE-wmt-mqm")
    print(f"wrote {len(keys)} items and their human scores to {OUT}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "data")
