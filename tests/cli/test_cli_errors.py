"""cli/errors.py: how a command runs (its garbage collection) and how it ends."""

from __future__ import annotations

import gc

import click
import pytest

from polyjudge.cli.errors import COMMAND_GC_THRESHOLDS, EXIT_BAD_INPUT, EXIT_OK, run_cli
from polyjudge.data.errors import InputError


def _group(seen: list[tuple[int, int, int]], fail: bool) -> click.Group:
    @click.group()
    def group() -> None:
        pass

    @group.command()
    def work() -> None:
        seen.append(gc.get_threshold())
        if fail:
            raise InputError("bad", field="x")

    return group


@pytest.mark.parametrize("fail", [False, True])
def test_a_command_collects_garbage_as_a_batch_job_and_leaves_the_callers_thresholds(fail):
    """Python's young-generation threshold (700) made a run scan its requests in flight again and again (about
    a tenth of a first run's CPU at 256 in flight); the command runs with larger thresholds, and the process
    that called it (a test, a script) gets its own back, whether the command ended well or not."""
    before = gc.get_threshold()
    gc.set_threshold(650, 9, 8)
    try:
        seen: list[tuple[int, int, int]] = []
        code = run_cli(_group(seen, fail), ["work"])
        assert code == (EXIT_BAD_INPUT if fail else EXIT_OK)
        assert seen == [COMMAND_GC_THRESHOLDS]
        assert COMMAND_GC_THRESHOLDS[0] > 700 * 10
        assert gc.get_threshold() == (650, 9, 8)
    finally:
        gc.set_threshold(*before)
