"""Size and generation time of the HTML report for a large synthetic run.

Builds a run directory of N segments x R runs (default 10,000 x 10, TSA-style
spans, failures of every kind), then times `polyjudge report` on it (load,
statistics, rendering, writing) and prints the file size.

    python benchmarks/report_size.py [--segments 10000] [--runs 10] [--keep DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from polyjudge.report.html import write_report  # noqa: E402
from polyjudge.report.load import load_run  # noqa: E402
from tests.report.fixtures import build_run  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--segments", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--keep", type=Path, default=None, help="write the run and report here")
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="pj-report-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    run = build_run(root, name="synthetic", n_items=args.segments, n_runs=args.runs,
                    systems=tuple(f"system-{k:02d}" for k in range(20)))
    t_build = time.perf_counter() - t0
    jsize = (run / "judgments.jsonl").stat().st_size

    t0 = time.perf_counter()
    load_run(run)  # warm imports (numpy/scipy/jinja2) so the timing is the report's own work
    t_load = time.perf_counter() - t0
    out = root / "report.html"
    t0 = time.perf_counter()
    rep = write_report([run], out, plots_dir=root / "plots")
    t_total = time.perf_counter() - t0
    size = out.stat().st_size
    print(f"synthetic run: {args.segments} segments x {args.runs} runs = {args.segments * args.runs} judgments "
          f"(judgments.jsonl {jsize / 1e6:.1f} MB, built in {t_build:.1f} s)")
    print(f"load (first, with imports): {t_load:.2f} s")
    print(f"report: {t_total:.2f} s end to end (render {rep.seconds:.2f} s), {size / 1e6:.2f} MB, "
          f"{len(rep.sections)} sections, {len(rep.figures)} plots")
    print(f"files under {root}")


if __name__ == "__main__":
    main()
