"""Start-up of the command line, side by side with importing its two main dependencies alone.

Each command runs as a fresh process, several times after a warm-up, the commands taking turns
(A B C A B C ...) so a drift of the machine's speed touches all of them alike. Per command it
prints the wall and CPU (user + system) seconds of the whole process, min and median, and the
median's ratio to the baseline ``python -c "import click, aiohttp"``. The target (issue 33) is
``polyjudge --help`` and ``polyjudge COMMAND --help`` within 2x of that baseline.

    python benchmarks/startup.py                 # 7 runs each, 1 warm-up
    python benchmarks/startup.py --runs 15 --commands judge,meta-eval

The machine should be otherwise idle; on a shared one quote the ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

BASELINE = "import click, aiohttp"
CLI = "from polyjudge.cli.main import main; main()"


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
    cases = {"import click, aiohttp": [sys.executable, "-c", BASELINE],
             "polyjudge --help": [sys.executable, "-c", CLI, "--help"]}
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


def render(times: dict[str, tuple[list[float], list[float]]]) -> str:
    base = statistics.median(times["import click, aiohttp"][0])
    lines = [f"{'command':<34} {'wall min':>9} {'wall med':>9} {'cpu min':>8} {'cpu med':>8} {'med / base':>10}"]
    for name, (wall, cpu) in times.items():
        lines.append(f"{name:<34} {min(wall):>9.3f} {statistics.median(wall):>9.3f} {min(cpu):>8.3f} "
                     f"{statistics.median(cpu):>8.3f} {statistics.median(wall) / base:>9.2f}x")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="counted runs of each command (default 7)")
    parser.add_argument("--warmup", type=int, default=1, help="uncounted runs first (default 1)")
    parser.add_argument("--commands", default="judge,meta-eval,protocols",
                        help="commands whose --help is timed too, comma-separated")
    args = parser.parse_args()
    commands = [c for c in args.commands.split(",") if c]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, {args.runs} runs after {args.warmup} warm-up")
    print(render(measure(commands, args.runs, args.warmup)))


if __name__ == "__main__":
    main()
