"""engine.loops.run_coroutine: asyncio.run where no loop runs, a thread of its own where one does."""

from __future__ import annotations

import asyncio
import threading

import pytest

from polyjudge.engine.loops import run_coroutine


async def where() -> str:
    await asyncio.sleep(0)
    return threading.current_thread().name


async def fails() -> None:
    raise ValueError("inside")


def test_without_a_running_loop_it_runs_here():
    assert run_coroutine(where()) == threading.current_thread().name


def test_inside_a_running_loop_it_runs_in_a_thread_and_raises_here():
    async def cell():
        with pytest.raises(ValueError, match="inside"):
            run_coroutine(fails())
        return run_coroutine(where())

    assert asyncio.run(cell()) == "polyjudge-loop"
