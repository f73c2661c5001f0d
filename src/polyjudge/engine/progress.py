"""A rich progress bar with request rate, ETA, failure count, and what was spent so far.

Spending is read from a :class:`SpendMeter`: the run's budget (the spending
cap when there is one, an unbounded one when the bar is shown without a
cap). Every answer is priced once by the budget's ``cost_of`` (the live
runner, the batch collector and the Ray driver each price an answer when it
is settled), so the meter counts that answer's tokens there.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from polyjudge.data.chat import Usage
from polyjudge.engine.pricing import ModelPrice
from polyjudge.engine.signals import show_status
from polyjudge.engine.spend import Budget
from polyjudge.rundir.records import PRICE_UNKNOWN

# Seconds between two updates of the bar's counts.
UPDATE_EVERY_S = 0.1


class SpendMeter(Budget):
    """A budget that also counts the tokens of the answers it prices, for the progress bar."""

    def __init__(self, cap: float | None, prices: Mapping[str, ModelPrice], spent: float = 0.0, *,
                 free: Collection[str] = ()) -> None:
        super().__init__(math.inf if cap is None else cap, prices, spent)
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.free = frozenset(free)
        self.unpriced: set[str] = set()  # paid judges answering without a price: their $0 is unknown, not free

    @property
    def capped(self) -> bool:
        return math.isfinite(self.cap)

    def cost_of(self, judge: str, usage: Usage, *, batch: bool = False) -> float:
        self.prompt_tokens += max(0, usage.prompt_tokens)
        self.completion_tokens += max(0, usage.completion_tokens)
        if judge not in self.prices and judge not in self.free:
            self.unpriced.add(judge)
        return super().cost_of(judge, usage, batch=batch)


def spend_text(meter: SpendMeter | None) -> str:
    """``12,345 in / 800 out tok  $0.0123 of $5.00 cap``; empty without a meter. Judges answering without
    a known price are named (``$0.0000 (price unknown: m)``): their answers are not counted as free."""
    if meter is None:
        return ""
    text = f"{meter.prompt_tokens:,} in / {meter.completion_tokens:,} out tok  ${meter.spent:,.4f}"
    if meter.unpriced:
        text += f" ({PRICE_UNKNOWN}: {', '.join(sorted(meter.unpriced))})"
    return f"{text} of ${meter.cap:,.2f} cap" if meter.capped else text


@contextmanager
def progress_bar(total: int, *, enabled: bool, meter: SpendMeter | None = None) -> Iterator[Callable[[Any], None]]:
    """A bar on standard error (nothing when not ``enabled``); the callable it yields takes the stats."""
    if not enabled:
        yield show_status  # what a Ctrl-C says counts the answers even without a bar
        return
    # rich is loaded only when a bar is shown (importing it costs ~40 ms of CPU per run).
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

    console = Console(file=sys.stderr)
    columns = (TextColumn("judging"), BarColumn(), MofNCompleteColumn(), TaskProgressColumn(),
               TextColumn("{task.fields[rate]:.1f} req/s"), TextColumn("[red]{task.fields[failed]} failed"),
               TextColumn("{task.fields[spend]}"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=False, refresh_per_second=4) as bar:
        task = bar.add_task("judging", total=total, rate=0.0, failed=0, spend=spend_text(meter))
        last: list[Any] = [None, 0.0]  # the latest stats seen, and when the bar was last updated

        def show(stats: Any) -> None:
            done = stats.done + stats.failed
            elapsed = bar.tasks[0].elapsed or 1e-9
            bar.update(task, completed=done, rate=done / elapsed, failed=stats.failed, spend=spend_text(meter))

        def update(stats: Any) -> None:
            # Called once per answer: at a thousand answers a second the bar is updated ten times a
            # second (it is drawn four times a second), not on every call.
            last[0] = stats
            show_status(stats)
            now = time.monotonic()
            if now - last[1] >= UPDATE_EVERY_S:
                last[1] = now
                show(stats)

        try:
            yield update
        finally:
            if last[0] is not None:
                show(last[0])  # the final counts, whatever the throttle skipped


__all__ = ["SpendMeter", "progress_bar", "spend_text"]
