"""A rich progress bar with request rate, ETA and failure count."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


@contextmanager
def progress_bar(total: int, *, enabled: bool) -> Iterator[Callable[[Any], None]]:
    if not enabled:
        yield lambda stats: None
        return
    console = Console(file=sys.stderr)
    columns = (TextColumn("judging"), BarColumn(), MofNCompleteColumn(), TaskProgressColumn(),
               TextColumn("{task.fields[rate]:.1f} req/s"), TextColumn("[red]{task.fields[failed]} failed"),
               TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=False, refresh_per_second=4) as bar:
        task = bar.add_task("judging", total=total, rate=0.0, failed=0)

        def update(stats: Any) -> None:
            done = stats.done + stats.failed
            elapsed = bar.tasks[0].elapsed or 1e-9
            bar.update(task, completed=done, rate=done / elapsed, failed=stats.failed)

        yield update
