"""How often ``polyjudge drift`` raises a false alarm, and how often it finds a real shift.

A simulated judge scores items on 0-100: item i has a quality q_i (uniform 20-90) and each answer is
round(q_i + e), e ~ Normal(0, --noise) (sampling at a temperature above 0), clipped to 0-100, and fails
to parse with probability --parse-fail. A check draws --sample items; the stored and the fresh answer
are independent answers of the judge, the fresh one shifted by `shift` score points when the judge
changed. Every check runs the same family of tests the command runs (scores, parse rate, refusal rate;
``polyjudge.analysis.drift.verdict``, Holm at --alpha), so the false-alarm rate is the whole check's.

    python benchmarks/drift_power.py [--checks 2000] [--power-checks 400] [--noise 10] [--alpha 0.05]

Prints the false-alarm rate with a 95% Wilson interval, then the detection power table
(shift in score points x sample size), as Markdown.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402

from polyjudge.analysis.drift import difference_test, rate_test, verdict  # noqa: E402

SAMPLES = (10, 20, 50, 100, 200)
SHIFTS = (1.0, 2.0, 3.0, 5.0, 10.0)


def answers(rng: np.random.Generator, quality: np.ndarray, noise: float, shift: float,
            parse_fail: float) -> tuple[np.ndarray, np.ndarray]:
    scores = np.clip(np.round(quality + rng.normal(0, noise, quality.size) + shift), 0, 100)
    return scores, rng.random(quality.size) >= parse_fail


def one_check(rng: np.random.Generator, n: int, shift: float, args: argparse.Namespace) -> bool:
    quality = rng.uniform(20, 90, n)
    s_score, s_ok = answers(rng, quality, args.noise, 0.0, args.parse_fail)
    f_score, f_ok = answers(rng, quality, args.noise, shift, args.parse_fail)
    both = s_ok & f_ok
    seed = int(rng.integers(2**31))
    tests = [difference_test("scores", s_score[both].tolist(), f_score[both].tolist(),
                             resamples=args.resamples, seed=seed),
             rate_test("parsed", s_ok.tolist(), f_ok.tolist()),
             rate_test("refused", [False] * n, [False] * n)]
    return verdict(tests, args.alpha).drift


def wilson(k: int, n: int) -> tuple[float, float]:
    z = 1.959964
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checks", type=int, default=2000, help="checks of an unchanged judge (false alarms)")
    ap.add_argument("--power-checks", type=int, default=400, help="checks per cell of the power table")
    ap.add_argument("--noise", type=float, default=10.0, help="sd of one answer around the item's quality")
    ap.add_argument("--parse-fail", type=float, default=0.02, help="share of answers that fail to parse")
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    print(f"judge: 0-100 scores, answer noise sd {args.noise:g}, {args.parse_fail:.0%} parse failures; "
          f"alpha {args.alpha:g}, {args.resamples} sign-flip resamples\n")
    print("| sample | checks | false alarms | rate | 95% CI |\n|---|---|---|---|---|")
    for n in SAMPLES:
        k = sum(one_check(rng, n, 0.0, args) for _ in range(args.checks))
        lo, hi = wilson(k, args.checks)
        print(f"| {n} | {args.checks} | {k} | {k / args.checks:.3f} | {lo:.3f}-{hi:.3f} |")
    print(f"\npower: share of {args.power_checks} checks that flag a judge whose scores moved by `shift` points\n")
    print("| shift \\ sample | " + " | ".join(str(n) for n in SAMPLES) + " |")
    print("|---|" + "---|" * len(SAMPLES))
    for shift in SHIFTS:
        row = [sum(one_check(rng, n, shift, args) for _ in range(args.power_checks)) / args.power_checks
               for n in SAMPLES]
        print(f"| {shift:g} (d_z {shift / (args.noise * math.sqrt(2)):.2f}) | "
              + " | ".join(f"{p:.2f}" for p in row) + " |")
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
