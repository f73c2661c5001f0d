"""Ctrl-C and SIGTERM during a run: stop sending, keep what is done, write the files.

While a run holds :func:`catching_interrupts`, SIGINT and SIGTERM no longer end
the process: the first one calls the listeners (the engine stops sending and
cancels what is in flight) and is remembered, so the run's files are written
from the store before the session reports the interruption. A signal that
arrives while the files are being written waits until they are complete.
Signals can only be caught in the main thread; elsewhere nothing changes.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

CAUGHT = (signal.SIGINT, signal.SIGTERM)


class Interrupts:
    """The first stop signal received (``signum``) and who to tell when one comes."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._listeners: list[Callable[[], None]] = []

    @property
    def requested(self) -> bool:
        return self.signum is not None

    def listen(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` on each signal; returns the function that stops listening."""
        self._listeners.append(callback)

        def remove() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)

        return remove

    def notify(self, signum: int, frame: FrameType | None = None) -> None:
        """Record a stop signal (the installed handler; tests call it directly)."""
        if self.signum is None:
            self.signum = signum
        for callback in list(self._listeners):
            callback()


@contextmanager
def catching_interrupts() -> Iterator[Interrupts]:
    """Catch SIGINT/SIGTERM for the duration (main thread only), then restore the old handlers."""
    interrupts = Interrupts()
    if threading.current_thread() is not threading.main_thread():
        yield interrupts
        return
    previous = {s: signal.getsignal(s) for s in CAUGHT}
    for s in CAUGHT:
        signal.signal(s, interrupts.notify)
    try:
        yield interrupts
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)


__all__ = ["Interrupts", "catching_interrupts"]
