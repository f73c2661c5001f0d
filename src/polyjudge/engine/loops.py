"""Running the engine's coroutine from synchronous code, where an event loop may be running already.

``asyncio.run`` refuses to start inside a running loop, and a Jupyter or IPython cell runs inside one. There
the coroutine runs in a thread of its own with a loop of its own, and the calling thread waits for it (its
signal handlers still run while it waits, so Ctrl-C stops the run as in a script)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_coroutine(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)``, or the same in a thread of its own when this thread runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001 - raised again in the calling thread
            box["error"] = exc

    thread = threading.Thread(target=work, name="polyjudge-loop", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


__all__ = ["run_coroutine"]
