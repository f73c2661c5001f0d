"""The self-reward guard on real data: MBR with chrF over the WMT21 TED en-de systems, checked by held-out scores.

Candidates per segment are the systems' translations (the human reference and the five synthetic
``metricsystem`` outputs left out); the baseline is the first system (Facebook-AI). The gain of the chosen
translations over the baseline is shown under the selecting utility (expected chrF against the other
candidates: self-reward), under chrF against the human reference (held out) and under the human MQM scores
(held out; higher is better, 0 = no error). Needs ../shared/data (skips otherwise).

    python benchmarks/rerank_ted.py [--segments 529]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from polyjudge.api import rerank
from polyjudge.data.readers import read_items

HERE = Path(__file__).resolve().parents[1]
ROOTS = (HERE.parent / "shared", HERE.parent.parent / "shared")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=529)
    args = parser.parse_args()
    folder = next((r / "data" / "wmt-mqm" / "ted" / "ende" for r in ROOTS
                   if (r / "data" / "wmt-mqm" / "ted" / "ende").is_dir()), None)
    if folder is None:
        sys.exit("the shared WMT MQM data is absent")
    items = read_items(folder / "mqm_ted_ende.tsv", src_lang="en", tgt_lang="de")
    mqm: dict[tuple[str, str], float] = {}
    for line in (folder / "mqm_ted_ende.avg_seg_scores.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        system, score, seg = line.split()
        if score != "None":
            mqm[(system, seg)] = float(score)
    by_seg: dict[str, dict[str, str]] = {}
    src: dict[str, str] = {}
    for it in items:
        if it.seg_id is not None:
            by_seg.setdefault(it.seg_id, {})[it.system or ""] = it.tgt
            src[it.seg_id] = it.src
    systems = sorted(s for s in {it.system or "" for it in items} if s != "ref" and not s.startswith("metricsystem"))
    segs = [s for s in sorted(by_seg, key=int) if all(n in by_seg[s] for n in [*systems, "ref"])][:args.segments]
    lists = [[by_seg[s][n] for n in systems] for s in segs]
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        ref_file = Path(tmp) / "refs.txt"
        ref_file.write_text("".join(by_seg[s]["ref"].replace("\n", " ") + "\n" for s in segs), encoding="utf-8")
        res = rerank([src[s] for s in segs], lists, method="mbr", utility="chrf", references=str(ref_file))
    choices = res.choices
    chosen_mqm = [mqm.get((systems[c.chosen], s)) for c, s in zip(choices, segs) if c.chosen is not None]
    base_mqm = [mqm.get((systems[0], s)) for s in segs]
    mean = lambda xs: math.fsum(x for x in xs if x is not None) / sum(1 for x in xs if x is not None)  # noqa: E731
    print(f"{len(segs)} segments, {len(systems)} candidates each ({', '.join(systems)}); baseline {systems[0]}")
    print(res.to_text(), end="")
    print(f"  human MQM (held out): chosen {mean(chosen_mqm):.4g}, baseline {mean(base_mqm):.4g}, "
          f"gain {mean(chosen_mqm) - mean(base_mqm):+.4g}")
    picks = {n: sum(1 for c in choices if c.chosen is not None and systems[c.chosen] == n) for n in systems}
    print("chosen per system: " + ", ".join(f"{n} {k}" for n, k in picks.items()))


if __name__ == "__main__":
    main()
