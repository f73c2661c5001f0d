"""``polyjudge judge --until-settled`` on real WMT data: calls used against a full run, pairs settled, and
contradictions against the pairs the full data separates significantly.

The judge is the WMT MQM annotation itself (Freitag et al. 2021, ``../shared/data/wmt-mqm``: newstest2020
en-de and zh-en, newstest2021 en-de and zh-en, TED en-de and zh-en; the segments every system was rated
on): each segment's averaged MQM score, mapped linearly onto DA's 0-100 scale (100 + 4 x MQM, so orders
and tests are unchanged), is served as a DA answer by the scripted OpenAI-compatible server of the tests,
and ``polyjudge.api.judge`` judges in rounds with ``--settle-range 0,100`` (DA's scale: the guarantee
holds exactly). With ``--simulate`` the rounds are replayed on the score matrix through the same
statistics (``analysis.sequential``) without the engine, which is faster for many seeds.

Settled systems are retired as ``api.settle`` does (a system settled against every other one is judged no
more), so a run's calls are the judgments actually made, summed over the systems. Per language pair it
prints: the share of the segments drawn (``drawn``), the calls the run made against a full run's
(``calls``; the target is their mean over the test sets), the systems retired before the run stopped
(``retired``), the mean over pairs of the calls made by the look that settled the pair (``pair mean``; a pair
never settled counts 100%), pairs settled, pairs the full data separates significantly (``sig@.05``: paired
approximate-randomization test at 0.05, 2,000 draws, no correction, ``metaeval.systems.compare_systems``),
how many of those were settled (``sig set``) and settled within 40% of a full run's calls (``sig@40%``: what
a spending cap at 40% would keep), contradictions (a settled pair the full data orders significantly the
other way), and, as a yardstick (``oracle``), how many of the significant pairs a fixed-sample z-test told
each pair's true standard deviation (Bonferroni over pairs, finite-population correction) settles from 40%
of the segments.

    python benchmarks/adaptive.py [--data ../shared/data/wmt-mqm] [--alpha 0.05] [--round-share 0.05]
                                  [--seeds 1] [--simulate]
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

SETS = ("newstest2020/ende", "newstest2020/zhen", "newstest2021/ende", "newstest2021/zhen", "ted/ende", "ted/zhen")


def load(path: Path) -> tuple[list[str], np.ndarray]:
    """Systems and a segments x systems matrix of MQM scores, on the segments every system was rated on."""
    rated: dict[str, dict[str, float]] = collections.defaultdict(dict)
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        system, score, seg = line.split()
        if score != "None":
            rated[system][seg] = float(score)
    systems = sorted(rated)
    segments = sorted(set.intersection(*(set(rated[s]) for s in systems)), key=int)
    return systems, np.array([[rated[s][g] for s in systems] for g in segments])


def significant(systems: list[str], x: np.ndarray, alpha: float) -> set[tuple[str, str]]:
    """(better, worse) of every pair the full data separates at ``alpha`` (paired randomization test)."""
    from polyjudge.metaeval.systems import CompareSettings, compare_systems

    cmp = compare_systems(systems, x.T, CompareSettings(n_perm=2000, seed=0, alpha=alpha))
    return {(p.system_a, p.system_b) for p in cmp.pairs if p.significant}


def oracle(systems: list[str], x: np.ndarray, pairs: set[tuple[str, str]], alpha: float, share: float) -> int:
    """How many of ``pairs`` a fixed-sample z-test with the true deviations settles from ``share`` of the data."""
    from scipy.stats import norm

    n_all, k = x.shape[0], len(systems)
    z = norm.ppf(1 - alpha / (k * (k - 1)))
    col = {s: i for i, s in enumerate(systems)}
    found = 0
    for a, b in pairs:
        d = x[:, col[a]] - x[:, col[b]]
        se = d.std() / math.sqrt(share * n_all) * math.sqrt(1 - share)
        found += bool(abs(d.mean()) > z * se)
    return found


def run_engine(systems: list[str], x: np.ndarray, alpha: float, size: int, seed: int, method: str) -> dict[str, Any]:
    """Judge in rounds through polyjudge.api.judge, the scripted server answering each segment's score."""
    from polyjudge.api import JudgeConfig, judge
    from polyjudge.data.records import Item
    from polyjudge.engine.runner import RetryPolicy
    from tests.helpers.openai_server import ScriptedServer

    da = 100.0 + 4.0 * x
    col = {s: i for i, s in enumerate(systems)}

    def responder(body: dict[str, Any]) -> str:
        m = re.search(r"translation: (\S+) segment (\d+)", body["messages"][-1]["content"])
        assert m is not None
        return json.dumps({"score": float(da[int(m.group(2)), col[m.group(1)]])})

    items = [Item(src=f"source {g}", tgt=f"{s} segment {g}", src_lang="en", tgt_lang="de", seg_id=str(g), system=s)
             for s in systems for g in range(x.shape[0])]
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(responder) as srv:
        os.environ["POLYJUDGE_CACHE"] = str(Path(tmp) / "cache")
        cfg = JudgeConfig(judges=(f"openai:m@{srv.base_url}",), protocol="da", until_settled=True, settle_alpha=alpha,
                          settle_range="0,100", settle_round=size, seed=seed, concurrency=64, settle_method=method,
                          retry=RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.05))
        result = judge(items, cfg, out=Path(tmp) / "run")
        assert len(srv.requests) == result.manifest.settled["sent"]
        return dict(result.manifest.settled)


def run_simulated(systems: list[str], x: np.ndarray, alpha: float, size: int, seed: int,
                  method: str, margin: float = 0.0) -> dict[str, Any]:
    """The same rounds on the matrix: the draw order of api.settle, the statistics of analysis.sequential,
    settled pairs frozen and settled systems retired (their later units not judged) as api.settle does.

    ``margin`` > 0 is a what-if polyjudge does not offer: an open pair whose interval lies within
    +-``margin`` (DA points) is frozen as a tie (the full data's difference is that small, with the same
    guarantee), so it no longer keeps its systems judged."""
    from polyjudge.analysis.sequential import Retirement, settle_state

    n_all, k = x.shape
    keys = sorted(range(n_all), key=lambda g: repr((None, None, None, str(g))))  # api.settle.draw_units' keys
    order = np.array([keys[k] for k in np.random.default_rng(seed).permutation(n_all)])
    retire, taken, calls_at = Retirement(tuple(systems)), 0, {}
    while True:
        taken = min(n_all, taken + size)
        units = retire.units(taken)
        seen = 100.0 + 4.0 * x[order[:taken]]
        for c, name in enumerate(systems):
            seen[units[name]:, c] = np.nan  # retired: not judged on the units drawn since
        state = settle_state(seen, systems, n_all, alpha, (0.0, 100.0), method=method, frozen=retire.frozen)
        retire.update(state)
        for p in state.settled:
            calls_at.setdefault((p.a, p.b), sum(units.values()))
        if margin > 0 and _tie(state, retire, margin) or state.all_settled or taken == n_all:
            break
    units = retire.units(taken)
    return {"calls": sum(units.values()), "calls_full": n_all * k, "units_total": n_all, "units_judged": taken,
            "systems": [{"system": s, "units": units[s]} for s in systems],
            "settled": [{"better": p.a if p.order > 0 else p.b, "worse": p.b if p.order > 0 else p.a,
                         "units": retire.settled_at[(p.a, p.b)], "calls": calls_at[(p.a, p.b)]}
                        for p in state.settled],
            "open": [{"a": p.a, "b": p.b} for p in state.open]}


def _tie(state: Any, retire: Any, margin: float) -> bool:
    """Freeze the open pairs within +-margin as ties, retire the systems left in no open pair; True when no
    pair is left open."""
    for p in state.open:
        if -margin <= p.low and p.high <= margin:
            retire.frozen[(p.a, p.b)] = p
    still = {s for p in state.pairs if p.order == 0 and (p.a, p.b) not in retire.frozen for s in (p.a, p.b)}
    for s in retire.systems:
        if s not in still:
            retire.retired_at.setdefault(s, state.n)
    return not still


def _row(name: str, systems: list[str], x: np.ndarray, rec: dict[str, Any], sig: set[tuple[str, str]],
         best: int, totals: dict[str, list[float]]) -> str:
    """One line of the table, and the totals it adds to."""
    full = rec["calls_full"]
    # a pair's share of the calls: the calls made (as judged, retired systems no longer counting) by the look
    # that settled it, against a full run's
    at = {(p["better"], p["worse"]): p["calls"] / full for p in rec["settled"]}
    n_pairs = len(rec["settled"]) + len(rec["open"])
    per_pair = [at.get((a, b), at.get((b, a), 1.0)) for a in systems for b in systems if a < b]  # never: 100%
    by_cap = {pair for pair, share in at.items() if share <= 0.4 + 1e-9}
    contra = len({(b, a) for a, b in at} & sig)
    share = rec["calls"] / full
    retired = sum(s["units"] < rec["units_judged"] for s in rec["systems"])
    totals["calls"].append(share)
    totals["per_pair"].append(float(np.mean(per_pair)))
    for key, value in (("sig", len(sig)), ("sig_settled", len(set(at) & sig)), ("sig_by_cap", len(by_cap & sig)),
                       ("contra", contra), ("oracle", best)):
        totals[key].append(value)
    return (f"{name:18} {len(systems):3} {x.shape[0]:5} {rec['units_judged'] / rec['units_total']:5.0%} "
            f"{share:6.0%} {retired:7} {np.mean(per_pair):9.0%} {n_pairs:5} {len(at):7} {len(sig):7} "
            f"{len(set(at) & sig):7} {len(by_cap & sig):7} {contra:6} {best:7}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    found = [p for p in (ROOT.parent / "shared", ROOT.parents[1] / "shared") if p.is_dir()]  # a clone, a worktree
    parser.add_argument("--data", default=str((found or [ROOT.parent / "shared"])[0] / "data" / "wmt-mqm"))
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--round-share", type=float, default=0.05, help="segments per round, as a share")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--method", choices=("bernstein", "asymptotic"), default="bernstein")
    parser.add_argument("--simulate", action="store_true", help="replay the rounds without the engine")
    parser.add_argument("--tie-margin", type=float, default=0.0,
                        help="with --simulate, a what-if: also freeze a pair as a tie once its interval lies within "
                             "+-this many DA points (4 per MQM point)")
    args = parser.parse_args()
    if args.tie_margin and not args.simulate:
        parser.error("--tie-margin is a what-if of the simulation: give --simulate")
    root = Path(args.data)
    print(f"method {args.method}, alpha {args.alpha}, rounds of {args.round_share:.0%} of the segments, "
          f"{'simulated' if args.simulate else 'through polyjudge.api.judge and the scripted server'}"
          + (f", what-if: ties within +-{args.tie_margin:g} DA points frozen" if args.tie_margin else ""))
    print(f"{'test set':18} {'sys':>3} {'segs':>5} {'drawn':>5} {'calls':>6} {'retired':>7} {'pair mean':>9} "
          f"{'pairs':>5} {'settled':>7} {'sig@.05':>7} {'sig set':>7} {'sig@40%':>7} {'contra':>6} {'oracle':>7}")
    totals: dict[str, list[float]] = collections.defaultdict(list)
    for name in SETS:
        files = sorted((root / name).glob("*avg_seg_scores.tsv"))
        if not files:
            print(f"{name}: not found under {root}", file=sys.stderr)
            continue
        systems, x = load(files[0])
        sig = significant(systems, x, args.alpha)
        best = oracle(systems, x, sig, args.alpha, 0.4)
        size = max(1, math.ceil(args.round_share * x.shape[0]))
        for seed in range(args.seeds):
            rec = (run_simulated(systems, x, args.alpha, size, seed, args.method, args.tie_margin) if args.simulate
                   else run_engine(systems, x, args.alpha, size, seed, args.method))
            print(_row(name, systems, x, rec, sig, best, totals), flush=True)
    if not totals:
        return
    sig_total = sum(totals["sig"])
    print(f"calls of the runs (settled systems retired, stop when every pair is settled): "
          f"{np.mean(totals['calls']):.1%} of a full run's on average over the test sets (target <= 40%); "
          f"per pair (the calls made when it was settled, 100% if never): {np.mean(totals['per_pair']):.1%}")
    print(f"significant pairs settled: {sum(totals['sig_settled']):.0f} of {sig_total:.0f} "
          f"({sum(totals['sig_settled']) / sig_total:.1%}, target >= 90%); by 40% of the calls "
          f"{sum(totals['sig_by_cap']) / sig_total:.1%} (the oracle: {sum(totals['oracle']) / sig_total:.1%}); "
          f"contradictions: {sum(totals['contra']):.0f} (target 0)")


if __name__ == "__main__":
    main()
