"""The executor seam: what sends a run's tasks, here or on a Ray cluster.

An executor gets the planned tasks that the store does not hold yet, sends
them, and writes every answer (or recorded failure) to the store from the
calling process, which stays its only writer. Everything else about a run
(plan, cache keys, resume, parsing, outputs) happens around it and does not
depend on which executor ran. :func:`polyjudge.engine.runner.execute` is the
local one; :class:`polyjudge.engine.ray_executor.RayExecutor` spreads the
same work over a pool of Ray actors.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

from polyjudge.data.errors import InputError

if TYPE_CHECKING:  # the sending machinery loads with make_executor: --help reads EXECUTORS alone
    from polyjudge.backends.base import Backend
    from polyjudge.backends.registry import BackendSettings, JudgeSpec
    from polyjudge.engine.plan import Task
    from polyjudge.engine.ray_executor import RayOptions
    from polyjudge.engine.runner import ExecStats, SendControls
    from polyjudge.engine.store import Store

LOCAL, RAY = "local", "ray"
# The executors, each with its one-line summary: the one list (``--executor``'s choices read it).
EXECUTORS: dict[str, str] = {
    LOCAL: "this process sends the requests",
    RAY: "a pool of Ray actors sends them (pip install 'polyjudge[ray]')",
}


class Executor(Protocol):
    """Sends ``tasks`` (tasks, or runs of one prompt sent as one request) and writes each answer
    to ``store``; the contract of :func:`~polyjudge.engine.runner.execute` (retries, giving up,
    ``stop``, progress, rate ``limiters`` per judge, the spending ``budget``: all in
    :class:`~polyjudge.engine.runner.SendControls`).

    A run is handed over in bounded chunks of items, one call per chunk (an
    executor with costly set-up may ask for larger ones with an ``items_per_call``
    attribute; see :data:`polyjudge.engine.core.ITEMS_PER_CHUNK`)."""

    async def __call__(self, tasks: Iterable[Task | Sequence[Task]], backends: list[Backend], store: Store,
                       controls: SendControls = ...) -> ExecStats: ...


def make_executor(name: str, specs: Sequence[JudgeSpec], settings: BackendSettings, *,
                  ray: RayOptions | None = None) -> Executor:
    """The executor called ``name`` (``local`` or ``ray``).

    Checks what can be checked before a run directory is touched: an unknown
    name, Ray not installed, or bad Ray options raise :class:`InputError`.
    """
    if name == LOCAL:
        from polyjudge.engine.runner import execute

        return execute
    if name == RAY:
        from polyjudge.engine.ray_executor import RayExecutor, RayOptions

        return RayExecutor(specs, settings, ray if ray is not None else RayOptions())
    raise InputError(f"unknown executor '{name}'; use one of {', '.join(EXECUTORS)}", field="executor")


__all__ = ["EXECUTORS", "LOCAL", "RAY", "Executor", "make_executor"]
