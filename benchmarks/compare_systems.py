"""How long ``polyjudge compare-systems``' statistics take, next to sacrebleu's paired bootstrap.

polyjudge: 20 systems x 2,000 segments (synthetic normal scores, a few missing), every one of
the 190 pairs tested with 1,000 bootstrap resamples, 1,000 approximate randomization draws and
the t-test (``polyjudge.metaeval.systems.compare_systems``; draws are matrix products).

sacrebleu (when a Python with sacrebleu is given, e.g. a venv at /tmp/sacrebleu-venv, so
polyjudge's own environment stays as it is): ``sacrebleu --paired-bs`` as its users run it,
i.e. ``PairedTest(test_type="bs", n_samples=1000)`` with chrF on 20 synthetic systems of 2,000
sentences, which compares 19 systems with one baseline (19 pairs, not 190) and includes
chrF's statistics extraction. Same machine, one process each; min and median of --repeats runs.

    python benchmarks/compare_systems.py [--systems 20] [--segments 2000] [--draws 1000] [--repeats 5]
                                         [--sacrebleu-python /tmp/sacrebleu-venv/bin/python]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

SACREBLEU_SCRIPT = r"""
import json, sys, time
import numpy as np
from sacrebleu.metrics import CHRF
from sacrebleu.significance import PairedTest

systems, segments, draws, repeats = map(int, sys.argv[1:5])
rng = np.random.default_rng(0)
vocab = [f"w{k}" for k in range(3000)]
refs = [" ".join(rng.choice(vocab, 20)) for _ in range(segments)]

def noisy(ref, p):
    words = ref.split()
    return " ".join(w if rng.random() > p else str(rng.choice(vocab)) for w in words)

named = [(f"s{k}", [noisy(r, 0.1 + 0.01 * k) for r in refs]) for k in range(systems)]
times = []
for _ in range(repeats):
    start = time.perf_counter()
    test = PairedTest(named, {"chrF": CHRF()}, [refs], test_type="bs", n_samples=draws)
    test()
    times.append(time.perf_counter() - start)
print(json.dumps(times))
"""


def _ours(systems: int, segments: int, draws: int, repeats: int) -> list[float]:
    import numpy as np

    from polyjudge.metaeval.systems import CompareSettings, compare_systems

    rng = np.random.default_rng(0)
    x = rng.normal(size=(systems, segments)) + np.linspace(0.3, 0.0, systems)[:, None]
    x[rng.random(x.shape) < 0.01] = np.nan
    names = [f"s{k}" for k in range(systems)]
    settings = CompareSettings(n_boot=draws, n_perm=draws)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        compare_systems(names, x, settings)
        times.append(time.perf_counter() - start)
    return times


def _sacrebleu(python: str, systems: int, segments: int, draws: int, repeats: int) -> list[float] | str:
    try:
        done = subprocess.run([python, "-c", SACREBLEU_SCRIPT, str(systems), str(segments), str(draws), str(repeats)],
                              capture_output=True, text=True, check=True, timeout=3600)
    except subprocess.CalledProcessError as exc:
        return f"not run ({(exc.stderr or '').strip().splitlines()[-1:]})"
    except (OSError, subprocess.SubprocessError) as exc:
        return f"not run ({type(exc).__name__})"
    times: list[float] = json.loads(done.stdout.strip().splitlines()[-1])
    return times


def _line(name: str, pairs: int, times: list[float]) -> str:
    return (f"{name:<44} {pairs:>5} pairs   min {min(times):7.3f} s   median {statistics.median(times):7.3f} s   "
            f"({len(times)} runs)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", type=int, default=20)
    ap.add_argument("--segments", type=int, default=2000)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--sacrebleu-python", default="/tmp/sacrebleu-venv/bin/python",
                    help="A Python with sacrebleu installed (skipped when absent).")
    args = ap.parse_args()
    n_pairs = args.systems * (args.systems - 1) // 2
    print(f"{args.systems} systems x {args.segments} segments, {args.draws} draws")
    print(_line("polyjudge compare-systems (bootstrap+AR+t)", n_pairs,
                _ours(args.systems, args.segments, args.draws, args.repeats)))
    if Path(args.sacrebleu_python).exists():
        found = _sacrebleu(args.sacrebleu_python, args.systems, args.segments, args.draws, max(1, args.repeats // 2))
        print(_line("sacrebleu --paired-bs (chrF, vs a baseline)", args.systems - 1, found)
              if isinstance(found, list) else f"sacrebleu: {found}")
    else:
        print(f"sacrebleu: not run ({args.sacrebleu_python} not found)")


if __name__ == "__main__":
    main()
