"""Benchmark: tie calibration and a 1000-draw acc-t permutation test, WMT-sized.

Synthetic matrix: 15 systems x 2000 items, 30 % of items without human scores.
Compares polyjudge.metaeval with straightforward implementations written here
(per-pair Python objects for calibration; a per-draw, per-item loop for the
permutation test). With ``--mtme PATH`` (a checkout of
google-research/mt-metrics-eval, run outside the project) its figures are
printed too. Slow baselines run fewer draws (``--baseline-k``) and are
scaled per draw; the printout says so.

    python benchmarks/meta_eval.py [--k 1000] [--baseline-k 50] [--mtme /tmp/mtme]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from polyjudge.metaeval import significance as sig
from polyjudge.metaeval import stats


def synthetic(S=15, T=2000, missing=0.3, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(S, 1)) * 0.5 + rng.normal(size=(S, T))
    human = -np.round(np.clip(-3 * q, 0, 25))          # MQM-like: many ties, many zeros
    m1 = q + rng.normal(scale=0.8, size=(S, T))
    m2 = q + rng.normal(scale=1.0, size=(S, T))
    human[:, rng.random(T) < missing] = np.nan
    return human, m1, m2


def naive_tie_calibration(human, metric):
    """Item-grouped acc23 calibration, one Python tuple per pair, incremental update."""
    rows = {}
    pairs = []
    for t in range(human.shape[1]):
        h, m = human[:, t], metric[:, t]
        ok = [s for s in range(len(h)) if not np.isnan(h[s])]
        if len(ok) < 2:
            continue
        n = len(ok) * (len(ok) - 1) // 2
        good = 0
        for a in range(len(ok)):
            for b in range(a + 1, len(ok)):
                i, j = ok[a], ok[b]
                dh, dm = h[j] - h[i], m[j] - m[i]
                c = (dh == 0 and dm == 0) or (dh * dm > 0)
                good += c
                gain = 1 if (dh == 0 and dm != 0) else (-1 if (dh != 0 and dm != 0 and dh * dm > 0) else 0)
                pairs.append((abs(dm), t, gain))
        rows[t] = [good, n]
    R = len(rows)
    total = sum(g / n for g, n in rows.values())
    best, best_eps = total / R, 0.0
    pairs.sort(key=lambda p: p[0])
    for d, t, gain in pairs:
        total += gain / rows[t][1]
        if total / R > best + 1e-12:
            best, best_eps = total / R, d
    return best, best_eps


def naive_pairs_test(human, m1, m2, e1, e2, k, seed=0):
    """Per draw, per item: symmetric random swap matrix, recount (reference-style loop)."""
    rng = np.random.default_rng(seed)
    groups = []
    for t in range(human.shape[1]):
        ok = ~np.isnan(human[:, t])
        if ok.sum() < 2:
            continue
        h, a, b = human[ok, t], m1[ok, t], m2[ok, t]
        dh = h[None, :] - h[:, None]
        out = []
        for m, e in ((a, e1), (b, e2)):
            dm = m[None, :] - m[:, None]
            mt, ht = np.abs(dm) <= e, dh == 0
            out.append((mt & ht) | (~mt & ~ht & (np.sign(dh) == np.sign(dm))))
        groups.append((out[0], out[1], len(h)))

    def acc(mats):
        return np.mean([np.triu(c, 1).sum() / (n * (n - 1) / 2) for c, n in mats])

    delta = acc([(a, n) for a, _, n in groups]) - acc([(b, n) for _, b, n in groups])
    count = 0
    for _ in range(k):
        h1, h2 = [], []
        for a, b, n in groups:
            w = np.triu(rng.integers(0, 2, (n, n)), 1).astype(bool)
            w = w | w.T
            h1.append((np.where(w, a, b), n))
            h2.append((np.where(w, b, a), n))
        count += acc(h1) - acc(h2) >= delta
    return count / k, delta


def timed(fn, *a, **kw):
    t = time.perf_counter()
    out = fn(*a, **kw)
    return out, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=1000)
    ap.add_argument("--baseline-k", type=int, default=50)
    ap.add_argument("--mtme", help="path of an mt-metrics-eval checkout (run outside the project)")
    args = ap.parse_args()
    human, m1, m2 = synthetic()
    print(f"matrix 15 x 2000, {np.isnan(human).mean():.0%} human cells missing")

    tc, t_fast = timed(stats.tie_calibration, human, m1, "item")
    (nv, ne), t_naive = timed(naive_tie_calibration, human, m1)
    assert abs(nv - tc.value) < 1e-12 and ne == tc.epsilon, (nv, tc.value, ne, tc.epsilon)
    print(f"tie calibration (item): polyjudge {t_fast:.3f} s, straightforward {t_naive:.2f} s, "
          f"speed-up x{t_naive / t_fast:.0f}  (acc-t {tc.value:.4f}, eps {tc.epsilon:.4g}, equal)")

    e2 = stats.tie_calibration(human, m2, "item").epsilon
    res, t_perm = timed(sig.pairs_permutation_test, human, m1, m2, "item", tc.epsilon, e2, args.k, 0)
    (p_naive, d_naive), t_np = timed(naive_pairs_test, human, m1, m2, tc.epsilon, e2, args.baseline_k)
    per_draw = t_np / args.baseline_k
    print(f"acc-t pairs permutation test, k={args.k}: polyjudge {t_perm:.3f} s; straightforward "
          f"{per_draw * 1000:.1f} ms/draw -> {per_draw * args.k:.1f} s for k={args.k} "
          f"(measured on {args.baseline_k} draws), speed-up x{per_draw * args.k / t_perm:.0f}; "
          f"delta {res.delta:.6f} vs {d_naive:.6f}, p {res.p_value:.3f} vs {p_naive:.3f}")

    spa, t_spa = timed(stats.soft_pairwise_accuracy, human, m1)
    print(f"SPA (1000 sign flips): polyjudge {t_spa:.3f} s, value {spa:.4f}")

    if args.mtme:
        sys.path.insert(0, args.mtme)
        from mt_metrics_eval import stats as R  # noqa: E402  (outside the project)

        def packed(x):
            return [None if np.isnan(v) else float(v) for v in x.reshape(-1)]
        c1 = R.Correlation(15, packed(human), [float(v) for v in m1.reshape(-1)])
        c2 = R.Correlation(15, packed(human), [float(v) for v in m2.reshape(-1)])
        (rv, re_, _), t_ref = timed(R.KendallWithTiesOpt, c1.gold_scores, c1.metric_scores, "acc23",
                                    15, "item", 1.0)
        print(f"mt-metrics-eval tie calibration: {t_ref:.2f} s (x{t_ref / t_fast:.0f} slower than "
              f"polyjudge), |diff| acc-t {abs(rv - tc.value):.2g}, eps {abs(re_ - tc.epsilon):.2g}")
        kk = args.baseline_k
        psd = R.PermutationSigDiffParams(block_size=10 ** 9)
        np.random.seed(0)
        (rp, rd, _, _), t_rp = timed(R.PairwisePermutationSigDiff, c2, c1, "acc23", "item", kk, psd,
                                     e2, tc.epsilon, 1.0)  # corr1 = m2, corr2 = m1
        print(f"mt-metrics-eval pairs permutation test: {t_rp / kk * 1000:.1f} ms/draw -> "
              f"{t_rp / kk * args.k:.1f} s for k={args.k} (x{t_rp / kk * args.k / t_perm:.0f} slower), "
              f"delta {rd:.6f}")


if __name__ == "__main__":
    main()
