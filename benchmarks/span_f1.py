"""Span F1 scorer speed: vectorised scorer vs a per-character Python loop.

Builds TED-like synthetic data (segments of 40-200 characters, 0-5 spans of
either severity per side), checks both give the same P/R/F1, and prints the
characters scored per second for each and their ratio, all from this one run.
The reference (``char_f1_reference``) is a plain transcription of the
task-2 rules, one character at a time, as the official scorer does them.

    python benchmarks/span_f1.py [--segments 20000] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from polyjudge.metaeval.spans import Span, char_f1_reference, score_lp  # noqa: E402


def synth(n_seg, seed):
    rng = random.Random(seed)
    lengths, gold, pred = [], [], []
    for _ in range(n_seg):
        n = rng.randint(40, 200)
        lengths.append(n)
        for side in (gold, pred):
            spans = []
            for _ in range(rng.choice([0, 0, 1, 1, 2, 3, 5])):
                s = rng.randint(0, n - 1)
                spans.append(Span(s, min(n, s + rng.randint(1, 25)), rng.choice(["major", "minor"])))
            side.append(spans)
    return lengths, gold, pred


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--segments", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    lengths, gold, pred = synth(args.segments, args.seed)
    chars = sum(lengths)
    t = time.perf_counter()
    ref = char_f1_reference(lengths, gold, pred)
    t_ref = time.perf_counter() - t
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        res = score_lp(lengths, gold, pred)
        best = min(best, time.perf_counter() - t)
    assert abs(res.f1 - ref[2]) < 1e-9 and abs(res.precision - ref[0]) < 1e-9
    print(f"segments {args.segments}, characters {chars}, F1 {res.f1:.4f} (both implementations)")
    print(f"per-character loop: {chars / t_ref:,.0f} chars/s ({t_ref:.3f} s)")
    print(f"vectorised:         {chars / best:,.0f} chars/s ({best:.4f} s, best of 5)")
    print(f"speed-up: {t_ref / best:.1f}x")


if __name__ == "__main__":
    main()
