"""Start-up of the command line, side by side with importing its two main dependencies alone.

Each command runs as a fresh process, several times after a warm-up, the commands taking turns
(A B C A B C ...) so a drift of the machine's speed touches all of them alike. Per command it
prints the wall and CPU (user + system) seconds of the whole process, min and median, and the
ratios of its CPU min and CPU median to the baseline's (``python -c "import click, aiohttp"``),
then the worst ratio. The target (issue 33) is ``polyjudge --help`` and ``polyjudge COMMAND --help``,
for every command of ``polyjudge.cli.main.COMMANDS``, within 2x of that baseline.

    python benchmarks/startup.py                 # every command, 7 runs each, 1 warm-up
    python benchmarks/startup.py --runs 15 --commands judge,meta-eval

The machine should be otherwise idle; on a shared one quote the ratios, not absolute times
(CPU time is less disturbed by other processes than wall time, so the ratios use it).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

BASELINE_NAME = "import click, aiohttp"
BASELINE = [sys.executable, "-c", "import click, aiohttp"]
CLI = "from polyjudge.cli.main import main; main()"
TARGET = 2.0


def _one_run(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one child process (CPU from the kernel's accounting of reaped children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _cases(commands: list[str]) -> dict[str, list[str]]:
    cases = {BASELINE_NAME: BASELINE, "polyjudge --help": [sys.executable, "-c", CLI, "--help"]}
    for name in commands:
        cases[f"polyjudge {name} --help"] = [sys.executable, "-c", CLI, name, "--help"]
    return cases


def measure(commands: list[str], runs: int, warmup: int) -> dict[str, tuple[list[float], list[float]]]:
    cases = _cases(commands)
    for _ in range(warmup):
        for argv in cases.values():
            _one_run(argv)
    times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in cases}
    for _ in range(runs):
        for name, argv in cases.items():
            wall, cpu = _one_run(argv)
            times[name][0].append(wall)
            times[name][1].append(cpu)
    return times


def ratios(times: dict[str, tuple[list[float], list[float]]]) -> dict[str, tuple[float, float]]:
    """Per case: (CPU min / baseline CPU min, CPU median / baseline CPU median)."""
    base_cpu = times[BASELINE_NAME][1]
    base_min, base_med = min(base_cpu), statistics.median(base_cpu)
    return {name: (min(cpu) / base_min, statistics.median(cpu) / base_med) for name, (_, cpu) in times.items()}


def render(times: dict[str, tuple[list[float], list[float]]]) -> str:
    ratio = ratios(times)
    width = max(len(name) for name in times) + 1
    lines = [f"{'command':<{width}} {'wall min':>9} {'wall med':>9} {'cpu min':>8} {'cpu med':>8} "
             f"{'min/base':>9} {'med/base':>9}"]
    for name, (wall, cpu) in times.items():
        lo, med = ratio[name]
        lines.append(f"{name:<{width}} {min(wall):>9.3f} {statistics.median(wall):>9.3f} {min(cpu):>8.3f} "
                     f"{statistics.median(cpu):>8.3f} {lo:>8.2f}x {med:>8.2f}x")
    worst = max((n for n in ratio if n != BASELINE_NAME), key=lambda n: ratio[n][1])
    verdict = "met" if ratio[worst][1] <= TARGET else "NOT met"
    lines.append(f"worst (median CPU ratio): {worst} at {ratio[worst][1]:.2f}x "
                 f"(min {ratio[worst][0]:.2f}x); target {TARGET:g}x {verdict}")
    return "\n".join(lines)


def main() -> None:
    from polyjudge.cli.main import COMMANDS

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="counted runs of each command (default 7)")
    parser.add_argument("--warmup", type=int, default=1, help="uncounted runs first (default 1)")
    parser.add_argument("--commands", default=",".join(COMMANDS),
                        help="commands whose --help is timed, comma-separated (default: every command)")
    args = parser.parse_args()
    commands = [c for c in args.commands.split(",") if c]
    unknown = [c for c in commands if c not in COMMANDS]
    if unknown:
        parser.error(f"unknown command(s): {', '.join(unknown)}; known: {', '.join(COMMANDS)}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, {args.runs} runs after {args.warmup} warm-up")
    print(render(measure(commands, args.runs, args.warmup)))


if __name__ == "__main__":
    main()
