"""Requests per source of polyjudge rerank for N = 4, 8, 16, 32 candidates, with and without pruning.

No judge is called: the utility of a pair is simulated (each candidate has a latent quality q ~ N(50, 15);
u(h, r) = 100 - |q_h - q_r| + judge noise N(0, 5), fixed per ordered pair), which is what pruning reacts to.
"With duplicates" draws each source's N candidates from a pool of 0.6 N texts (sampling repeats itself).
The pruned columns are means over ``--sources`` simulated sources; "same choice" is the share of sources
where pruning chose what the full matrix chose.

    python benchmarks/rerank_cost.py [--sources 200] [--seed 0]
"""

from __future__ import annotations

import argparse
import random

from polyjudge.reranking.choose import MbrSearch, Pruning
from polyjudge.reranking.run import mbr_requests_per_source


def simulate(n: int, rng: random.Random, *, pruning: Pruning | None, symmetric: bool = False,
             pool: int | None = None) -> tuple[int, int | None]:
    """(requests, chosen index) for one simulated source."""
    texts = [f"t{k}" for k in range(pool or n)]
    cands = tuple(rng.choice(texts) for _ in range(n)) if pool else tuple(texts)
    quality = {t: rng.gauss(50, 15) for t in texts}
    base = rng.random()

    def u(h: str, r: str) -> float:  # the noise of a pair is fixed, whatever order the pairs are asked in
        a, b = (min(h, r), max(h, r)) if symmetric else (h, r)
        return 100 - abs(quality[h] - quality[r]) + random.Random(f"{base}/{a}/{b}").gauss(0, 5)

    search = MbrSearch(cands, symmetric=symmetric, pruning=pruning)
    while not search.done:
        search.advance({k: u(*k) for k in search.wanted()})
    return len(search.utilities), search.chosen()


def row(n: int, sources: int, seed: int, schedule: tuple[int, ...]) -> list[str]:
    prune = Pruning(schedule, seed=seed)
    full_counts, pruned_counts, same, sym_pruned = [], [], 0, []
    for s in range(sources):
        full_req, full_choice = simulate(n, random.Random(f"{seed}/{n}/{s}"), pruning=None)
        pr_req, pr_choice = simulate(n, random.Random(f"{seed}/{n}/{s}"), pruning=prune)
        sp_req, _ = simulate(n, random.Random(f"{seed}/{n}/{s}"), pruning=prune, symmetric=True)
        full_counts.append(full_req)
        pruned_counts.append(pr_req)
        sym_pruned.append(sp_req)
        same += pr_choice == full_choice
    dup = [simulate(n, random.Random(f"dup/{seed}/{n}/{s}"), pruning=None, pool=max(2, round(0.6 * n)))[0]
           for s in range(sources)]
    cands = [f"c{k}" for k in range(n)]
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    return [str(n), str(n), str(mbr_requests_per_source(cands)), str(mbr_requests_per_source(cands, symmetric=True)),
            f"{mean(dup):.1f}", f"{mean(pruned_counts):.1f}", f"{mean(sym_pruned):.1f}", f"{same / sources:.0%}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--schedule", default=",".join(map(str, Pruning().schedule)),
                        help="pseudo-references per pruning step")
    args = parser.parse_args()
    schedule = tuple(int(x) for x in args.schedule.split(","))
    header = ["N", "QE", "MBR full N(N-1)", "MBR symmetric", "MBR w/ duplicates", "MBR pruned", "pruned+symmetric",
              "same choice"]
    rows = [row(n, args.sources, args.seed, schedule) for n in (4, 8, 16, 32)]
    widths = [max(len(r[k]) for r in [header, *rows]) for k in range(len(header))]
    print(f"Requests per source (pruning: schedule {schedule}, alpha {Pruning().alpha}, "
          f"{Pruning().n_boot} bootstrap resamples; means over {args.sources} simulated sources)")
    for r in [header, *rows]:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))


if __name__ == "__main__":
    main()
