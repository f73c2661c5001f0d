"""Benchmark: polyjudge span F1 next to the official WMT25 task-2 span scorer, same files, same run.

The peer is the real tool, run from a checkout outside the project
(``--wmt25 PATH``, a checkout of wmt-conference/wmt25-mteval; nothing of it is
copied here): ``scripts/scoring/task2/scoring_esa.py``. Three comparisons,
each checked for equal numbers and timed side by side (interleaved runs,
min and median; ratio = official time / polyjudge time):

1. end to end, one new process each: ``python scoring_esa.py IN_DIR OUT_DIR``
   (``IN_DIR/ref/task2_refs.tsv``, ``IN_DIR/res/predictions.tsv`` -> ``scores.txt``)
   against ``polyjudge span-f1 -g task2_refs.tsv --pred predictions.tsv --format json -o scores.json``;
   every per-pair precision, recall and F1 printed by the official script (4
   significant digits) must equal polyjudge's rounded the same way;
2. end to end in one process (no interpreter start-up or imports): the
   official ``main()`` against ``polyjudge.api.span_f1`` plus writing its JSON;
3. the core scoring function on data already in memory, per language pair:
   the official ``get_char_f1`` (lists of error dicts) against
   ``polyjudge.metaeval.spans.score_lp`` (tuples of ``Span``); P, R and F1 must
   agree to 1e-9.

An extra row, labelled so, times start-up and imports alone (``python -c
"import polyjudge.cli.main, polyjudge.api"``, what ``polyjudge span-f1``
imports, against ``python -c "import pandas, numpy"``, what the official
script imports), to show how much of the end-to-end time is not scoring.

Data (``--data``, default both):

* ``ted`` (default): real WMT21 TED MQM annotations, en-de and zh-en (every
  annotated system, one rater per segment): gold = the MQM error spans on the
  real hypotheses; predictions = the gold spans perturbed with a fixed seed
  (25 % dropped, boundaries moved by up to 4 characters, 20 % severity flips,
  false alarms added), so that P, R and F1 are neither 0 nor 1.
* ``synthetic``: ``--segments`` random segments per language pair (2 pairs,
  40-400 characters, 0-5 spans a side).

Files are written here in the task-2 TSV layout with the csv module (not with
polyjudge's writer); both tools read the same files.

    python benchmarks/span_f1.py --wmt25 /tmp/wmt25 [--data both] [--segments 10000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import io
import json
import logging
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from types import ModuleType
from typing import Any

from polyjudge.api.spans import SpanF1Config
from polyjudge.api.spans import span_f1 as api_span_f1
from polyjudge.data.spans import Span
from polyjudge.data.wmt_mqm import read_wmt_mqm
from polyjudge.metaeval.spans import score_lp, segments_from_mqm

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "wmt-mqm" / "ted"
SCORER = Path("scripts") / "scoring" / "task2" / "scoring_esa.py"
COLUMNS = ["doc_id", "segment_id", "source_lang", "target_lang", "set_id", "system_id", "source_segment",
           "hypothesis_segment", "reference_segment", "domain_name", "method", "start_indices",
           "end_indices", "error_types"]

# one segment: (lp, system, doc_id, seg_id, source, hypothesis, spans)
Segment = tuple[str, str, str, str, str, str, list[Span]]


def load_official(path: str | None) -> tuple[ModuleType, Path]:
    """Import the official scorer from a checkout, or exit 2 saying what is missing."""
    if not path:
        print("span_f1.py: missing --wmt25 PATH: a checkout of wmt-conference/wmt25-mteval (the official\n"
              "  WMT25 scorer, scripts/scoring/task2/scoring_esa.py; e.g. git clone\n"
              "  https://github.com/wmt-conference/wmt25-mteval /tmp/wmt25); this benchmark compares\n"
              "  against the real tool and has nothing to run without it", file=sys.stderr)
        sys.exit(2)
    script = Path(path) / SCORER
    if not script.is_file():
        print(f"span_f1.py: {path} has no {SCORER}: not a wmt25-mteval checkout", file=sys.stderr)
        sys.exit(2)
    spec = importlib.util.spec_from_file_location("wmt25_scoring_esa", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # outside the project, read and run only
    return module, script


# --------------------------------------------------------------------------- data
def ted_gold() -> list[Segment]:
    """Real TED MQM spans (en-de, zh-en) on their hypotheses."""
    out: list[Segment] = []
    for pair, lp in (("ende", "en-de"), ("zhen", "zh-en")):
        path = DATA / pair / f"mqm_ted_{pair}.tsv"
        if not path.is_file():
            print(f"span_f1.py: {path} not found (../shared/data is needed for --data ted)", file=sys.stderr)
            sys.exit(2)
        for s in segments_from_mqm(read_wmt_mqm(path), lp=lp, path=str(path)):
            out.append((lp, s.system or "", s.doc_id or "", s.seg_id or "", s.source or "",
                        s.hypothesis or "", list(s.spans)))
    return out


def synthetic_gold(n_seg: int, rng: random.Random) -> list[Segment]:
    out: list[Segment] = []
    letters = "abcdefghijklmnopqrstuvwxyz     "
    for lp in ("en-de", "en-ja"):
        for i in range(n_seg):
            n = rng.randint(40, 400)
            hyp = "".join(rng.choice(letters) for _ in range(n)).strip() or "x"
            spans = []
            for _ in range(rng.choice([0, 0, 1, 1, 2, 3, 5])):
                s = rng.randrange(len(hyp))
                spans.append(Span(s, min(len(hyp), s + rng.randint(1, 25)), rng.choice(["major", "minor"])))
            out.append((lp, f"sys{i % 10}", f"doc{i // 10}", str(i), "src", hyp, spans))
    return out


def perturb(gold: list[Segment], rng: random.Random) -> list[Segment]:
    """A plausible judge: misses some errors, misplaces boundaries, confuses severities, adds false alarms."""
    flip = {"major": "minor", "minor": "major"}
    out: list[Segment] = []
    for lp, sysname, doc, seg, src, hyp, spans in gold:
        n = len(hyp)
        pred = []
        for sp in spans:
            if sp.start is None or sp.end is None or rng.random() < 0.25:
                continue
            s = min(max(0, sp.start + rng.randint(-4, 4)), n)
            e = min(max(s, sp.end + rng.randint(-4, 4)), n)
            sev = flip[sp.severity] if rng.random() < 0.2 else sp.severity
            if e > s:
                pred.append(Span(s, e, sev))
        if n and rng.random() < 0.3:
            s = rng.randrange(n)
            pred.append(Span(s, min(n, s + rng.randint(1, 20)), rng.choice(["major", "minor"])))
        out.append((lp, sysname, doc, seg, src, hyp, pred))
    return out


def write_tsv(path: Path, segs: list[Segment]) -> None:
    """The task-2 layout: a segment without spans is -1 / -1 / no-error, an unlocated span 'missing'."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, delimiter="\t", lineterminator="\n")
        w.writerow(COLUMNS)
        for lp, sysname, doc, seg, src, hyp, spans in segs:
            sl, tl = lp.split("-")
            if spans:
                starts = " ".join("missing" if x.start is None else str(x.start) for x in spans)
                ends = " ".join("missing" if x.end is None else str(x.end) for x in spans)
                types = " ".join(x.severity for x in spans)
            else:
                starts, ends, types = "-1", "-1", "no-error"
            w.writerow([doc, seg, sl, tl, "official", sysname, src, hyp, "", "ted", "bench", starts, ends, types])


# --------------------------------------------------------------------------- running both tools
def run(cmd: list[str], cwd: Path) -> None:
    """Run a command; on failure show its exit status and error output, then stop."""
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    if proc.returncode != 0:
        print(f"span_f1.py: exit status {proc.returncode} from {' '.join(cmd)}\n{proc.stdout[-3000:]}"
              f"{proc.stderr[-3000:]}", file=sys.stderr)
        sys.exit(1)


def official_scores(path: Path) -> dict[str, float]:
    """The official scores.txt as {name: value} (its 4 significant digits)."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        name, _, value = line.partition(":")
        out[name.strip()] = float(value)
    return out


def polyjudge_as_official(result: dict[str, Any]) -> dict[str, float]:
    """polyjudge's JSON under the official names, rounded as the official script prints.

    The official script prints average precision under ``avg_rec`` and average
    recall under ``avg_prec`` (labels swapped); mapped the same way here so
    the comparison is of numbers, and the swap is reported.
    """
    out = {}
    for lp, d in result.items():
        if isinstance(d, dict):
            key = lp.replace("-", "")
            out[f"{key}_f1"], out[f"{key}_rec"], out[f"{key}_prec"] = d["f1"], d["recall"], d["precision"]
    out["avg_f1"] = result["avg_f1"]
    out["avg_rec"] = result["avg_precision"]   # official label swap
    out["avg_prec"] = result["avg_recall"]
    return {k: float(f"{v:.4}") for k, v in out.items()}


def error_dicts(spans: list[Span]) -> list[dict[str, str]]:
    """Spans as the official scorer holds them after reading a TSV row (strings, as split from the file)."""
    return [{"start": "missing" if x.start is None else str(x.start),
             "end": "missing" if x.end is None else str(x.end), "severity": x.severity} for x in spans]


class Timer:
    """Run timed functions round-robin, so that machine load affects each alike."""

    def __init__(self) -> None:
        self.jobs: list[tuple[str, Callable[[], Any], int]] = []
        self.times: dict[str, list[float]] = {}
        self.results: dict[str, Any] = {}

    def add(self, name: str, fn: Callable[[], Any], repeats: int) -> None:
        self.jobs.append((name, fn, repeats))
        self.times[name] = []

    def run(self) -> None:
        for r in range(max(n for _, _, n in self.jobs)):
            for name, fn, n in self.jobs:
                if r < n:
                    t = time.perf_counter()
                    self.results[name] = fn()
                    self.times[name].append(time.perf_counter() - t)
                    print(f"  [{name} run {r + 1}/{n}: {self.times[name][-1]:.3f} s]", file=sys.stderr,
                          flush=True)


def row(label: str, pj: list[float], peer: list[float], check: str) -> str:
    pmin, pmed, rmin, rmed = min(pj), statistics.median(pj), min(peer), statistics.median(peer)
    return (f"{label:<34} {pmin:>8.3f} {pmed:>8.3f} {len(pj):>3}   {rmin:>8.3f} {rmed:>8.3f} {len(peer):>3}"
            f"   {rmin / pmin:>6.1f}x {rmed / pmed:>6.1f}x   {check}")


def bench(name: str, segs: list[Segment], official: ModuleType, script: Path, repeats: int,
          peer_repeats: int, work: Path) -> bool:
    rng = random.Random(1)
    pred = perturb(segs, rng)
    run_dir = work / name.split()[0]
    gold_tsv, pred_tsv = run_dir / "in" / "ref" / "task2_refs.tsv", run_dir / "in" / "res" / "predictions.tsv"
    write_tsv(gold_tsv, segs)
    write_tsv(pred_tsv, pred)
    out_off, out_pj = run_dir / "out_official", run_dir / "out_polyjudge"
    out_off.mkdir()
    out_pj.mkdir()
    lps = sorted({s[0] for s in segs})
    chars = sum(len(s[5]) for s in segs)
    n_gold = sum(len(s[6]) for s in segs)
    n_pred = sum(len(s[6]) for s in pred)
    print(f"\n== data: {name}: {len(segs):,} segments, {chars:,} hypothesis characters, {n_gold:,} gold spans, "
          f"{n_pred:,} predicted spans, language pairs {', '.join(lps)}")

    exe = Path(sys.executable).parent / "polyjudge"
    cli = [str(exe)] if exe.exists() else [shutil.which("polyjudge") or "polyjudge"]

    def off_cli() -> dict[str, float]:
        run([sys.executable, str(script), str(run_dir / "in"), str(out_off)], run_dir)
        return official_scores(out_off / "scores.txt")

    def pj_cli() -> dict[str, float]:
        run(cli + ["span-f1", "-g", str(gold_tsv), "--pred", str(pred_tsv), "--format", "json",
                   "-o", str(out_pj / "scores.json")], run_dir)
        return polyjudge_as_official(json.loads((out_pj / "scores.json").read_text(encoding="utf-8")))

    def off_start() -> None:  # what the official script imports before it reads anything
        run([sys.executable, "-c", "import pandas, numpy"], run_dir)

    def pj_start() -> None:  # what `polyjudge span-f1` imports before it reads anything
        run([sys.executable, "-c", "import polyjudge.cli.main, polyjudge.api"], run_dir)

    def off_inproc() -> dict[str, float]:
        argv = sys.argv
        sys.argv = ["scoring_esa.py", str(run_dir / "in"), str(out_off)]
        try:
            with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
                official.main()
        finally:
            sys.argv = argv
        return official_scores(out_off / "scores.txt")

    def pj_inproc() -> dict[str, float]:
        res = api_span_f1(SpanF1Config(gold=gold_tsv, pred=pred_tsv))
        (out_pj / "scores.json").write_text(res.to_json(), encoding="utf-8")
        return polyjudge_as_official(res.as_dict())

    # core: each tool's own in-memory structures, built untimed
    core_in = {}
    for lp in lps:
        g = [s for s in segs if s[0] == lp]
        p = [s for s in pred if s[0] == lp]
        lengths = [len(s[5]) for s in g]
        core_in[lp] = (lengths, [error_dicts(s[6]) for s in g], [error_dicts(s[6]) for s in p],
                       [tuple(s[6]) for s in g], [tuple(s[6]) for s in p])

    def off_core() -> dict[str, tuple[float, ...]]:
        return {lp: tuple(float(x) for x in official.get_char_f1(L, gd, pd_, partial_credit=0.5))
                for lp, (L, gd, pd_, _, _) in core_in.items()}

    def pj_core() -> dict[str, tuple[float, ...]]:
        out: dict[str, tuple[float, ...]] = {}
        for lp, (L, _, _, gs, ps) in core_in.items():
            s = score_lp(L, gs, ps)
            out[lp] = (s.precision, s.recall, s.f1)
        return out

    logging.disable(logging.CRITICAL)  # the official main() logs progress at INFO; not part of the work compared
    pj_inproc()  # warm-up, untimed: first-call costs of imports and lazy modules
    pj_core()
    timer = Timer()
    for label, pj_fn, off_fn, n_off in (("CLI", pj_cli, off_cli, peer_repeats),
                                        ("in-process", pj_inproc, off_inproc, peer_repeats),
                                        ("core", pj_core, off_core, peer_repeats),
                                        ("start-up", pj_start, off_start, peer_repeats)):
        timer.add(f"polyjudge {label}", pj_fn, repeats)
        timer.add(f"official {label}", off_fn, n_off)
    timer.run()
    logging.disable(logging.NOTSET)
    T, R = timer.times, timer.results

    ok = True
    lines = []
    for label in ("CLI", "in-process"):
        a, b = R[f"polyjudge {label}"], R[f"official {label}"]
        same = a == b
        ok &= same
        lines.append(f"{label}: official scores.txt {b}" + ("" if same else f"\n    polyjudge (rounded) {a}"))
    a, b = R["polyjudge core"], R["official core"]
    dmax = max(abs(x - y) for lp in lps for x, y in zip(a[lp], b[lp]))
    core_ok = dmax <= 1e-9
    ok &= core_ok
    for lp in lps:
        lines.append(f"core {lp}: P/R/F1 polyjudge {a[lp][0]:.10f} {a[lp][1]:.10f} {a[lp][2]:.10f}; "
                     f"official {b[lp][0]:.10f} {b[lp][1]:.10f} {b[lp][2]:.10f}")

    print(f"{'':<34} {'polyjudge (s)':>21}   {'official scorer (s)':>21}   {'official / polyjudge':>16}")
    print(f"{'comparison':<34} {'min':>8} {'median':>8} {'n':>3}   {'min':>8} {'median':>8} {'n':>3}"
          f"   {'min':>7} {'median':>7}   check")
    for label, text in (("CLI", "end to end, new process (CLI)"), ("in-process", "end to end, in process"),
                        ("core", "core scoring function")):
        if label == "core":
            check = f"P/R/F1 max |diff| {dmax:.0e}" if core_ok else "MISMATCH"
        else:
            check = ("every printed score equal" if R[f"polyjudge {label}"] == R[f"official {label}"]
                     else "MISMATCH")
        print(row(text, T[f"polyjudge {label}"], T[f"official {label}"], check))
    print(row("(extra) start-up + imports only", T["polyjudge start-up"], T["official start-up"],
              "import polyjudge.cli.main, polyjudge.api / import pandas, numpy"))
    print(f"core throughput: polyjudge {chars / min(T['polyjudge core']):,.0f} chars/s, "
          f"official {chars / min(T['official core']):,.0f} chars/s")
    for line in lines:
        print(line)
    return bool(ok)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wmt25", help="path of a wmt-conference/wmt25-mteval checkout (required)")
    ap.add_argument("--data", choices=["ted", "synthetic", "both"], default="both")
    ap.add_argument("--segments", type=int, default=10000, help="synthetic segments per language pair")
    ap.add_argument("--repeats", type=int, default=5, help="timed runs of each polyjudge path")
    ap.add_argument("--peer-repeats", type=int, default=5, help="timed runs of each official path")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    official, script = load_official(args.wmt25)
    import numpy
    import pandas
    print(f"official scorer: {script}; python {sys.version.split()[0]}, pandas {pandas.__version__}, "
          f"numpy {numpy.__version__}")
    ok = True
    with tempfile.TemporaryDirectory(prefix="span_f1_bench_") as tmp:
        if args.data in ("ted", "both"):
            ok &= bench("ted (real WMT21 TED MQM spans, perturbed predictions)", ted_gold(), official, script,
                        args.repeats, args.peer_repeats, Path(tmp))
        if args.data in ("synthetic", "both"):
            ok &= bench(f"synthetic ({args.segments:,} segments per pair)",
                        synthetic_gold(args.segments, random.Random(args.seed)), official, script,
                        args.repeats, args.peer_repeats, Path(tmp))
    print("\nnote: the official script prints average precision under 'avg_rec' and average recall under "
          "'avg_prec'; polyjudge labels them correctly (compared above with the official labels).")
    if not ok:
        print("RESULTS DIFFER: see above", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
