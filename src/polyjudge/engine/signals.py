"""Ctrl-C and SIGTERM during a run: stop sending, keep what is done, write the files.

While a run holds :func:`catching_interrupts`, SIGINT and SIGTERM no longer end
the process: the first one says at once on standard error what happens next
(requests in flight, answers kept, a second signal stops now), calls the
listeners (the engine stops sending and cancels what is in flight) and is
remembered, so the run's files are written from the store before the session
reports the interruption. A second signal ends the process within the moment
(exit 128 + the signal's number): every answer already in the store is kept
there (each is committed as it arrives) and the run resumes from it; the
embedded judge's native generation, which cannot be cancelled, is not waited
for. Before it ends, the run's files are written from what the store holds
(the engine hands :meth:`Interrupts.finish_with` a writer while it sends); a
third signal, or a writer that fails, ends it at once with one line saying
that re-running the same command writes them. A signal that arrives while the files are being written
(:meth:`Interrupts.writing`) waits until they are complete.
Signals can only be caught in the main thread; a run in another thread is stopped by
:func:`interrupt_thread` (what the Python API calls when its caller sees KeyboardInterrupt).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

CAUGHT = (signal.SIGINT, signal.SIGTERM)


# The latest counts of the run being judged (the engine's ExecStats), for what the first signal says.
_STATUS: list[Any] = [None]


def show_status(stats: Any) -> None:
    """Remember the run's latest counts (called on every answer: one assignment)."""
    _STATUS[0] = stats


def latest_status() -> Any:
    """The counts :func:`show_status` remembered last (None before the first answer)."""
    return _STATUS[0]


def _say(text: str) -> None:
    try:
        sys.stderr.write(f"\n{text}\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed or broken standard error: the signal still works
        pass


def _show_cursor() -> None:
    try:
        if sys.stderr.isatty():
            sys.stderr.write("\x1b[?25h")
            sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _next_steps(signum: int, deadline_s: float | None, in_flight: int | None) -> str:
    """What the first signal starts: nothing new is sent, what is in flight, what is kept, how to stop now."""
    name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
    stats = _STATUS[0]
    done, failed = getattr(stats, "done", None), getattr(stats, "failed", None)
    kept = "the answers so far are"
    if isinstance(done, int) and isinstance(failed, int):
        kept = f"the {done + failed} answer(s) of this session are"
    flying = f"the requests in flight (at most {in_flight})" if in_flight else "the requests in flight"
    within = f" within their {deadline_s:g}s deadline" if deadline_s else ""
    return (f"polyjudge: {name}: stopping. No new request is sent; {flying} are given up (an embedded model "
            f"first finishes the answer it is writing){within}; {kept} kept and the run's files written. "
            f"A second {name} stops now (answers already stored are kept; re-run the same command to resume).")


class Interrupts:
    """The first stop signal received (``signum``) and who to tell when one comes.

    ``deadline_s`` (the requests' timeout, when the session knows it) and ``in_flight`` (the most requests in
    flight, ``--concurrency``) are quoted in what the first signal says.
    """

    def __init__(self, deadline_s: float | None = None, in_flight: int | None = None) -> None:
        self.signum: int | None = None
        self.deadline_s, self.in_flight = deadline_s, in_flight
        self.received = 0
        self._writing = False
        self._listeners: list[Callable[[], None]] = []
        # Writes the run's files from the store on a second signal; returns the line that says so.
        self._finisher: Callable[[], str] | None = None
        self._finishing = False

    def finish_with(self, writer: Callable[[], str] | None) -> None:
        """What a second signal calls before it ends the process (None: nothing to write)."""
        self._finisher = writer

    @contextmanager
    def writing(self) -> Iterator[None]:
        """While the run's files are written a second signal waits for them instead of ending the process."""
        self._writing, self._finisher = True, None
        try:
            yield
        finally:
            self._writing = False

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

    def handle(self, signum: int, frame: FrameType | None = None) -> None:
        """The installed handler: say what happens next, then :meth:`notify`; a second signal ends the
        process now, unless the run's files are being written."""
        self.received += 1
        if self.received == 1:
            _say(_next_steps(signum, self.deadline_s, self.in_flight))
        elif self._writing:
            _say("polyjudge: the run's files are being written; they are complete in a moment")
        else:
            self._stop_now(signum)
        self.notify(signum, frame)

    def _stop_now(self, signum: int) -> None:
        """End the process now, the run's files written from the store first when a writer is set and this
        is not the signal that interrupted that writing."""
        line = ("polyjudge: stopped now; the answers already stored are kept, the run's files are not written: "
                "re-run the same command to write them (it resumes from the store)")
        finisher, self._finisher = self._finisher, None
        if finisher is not None and not self._finishing and not _importing():
            self._finishing = True
            _say("polyjudge: stopping now; writing the run's files from the answers stored so far "
                 "(another signal skips this)")
            try:
                line = finisher()
            except Exception as exc:  # noqa: BLE001 - whatever failed, the process still ends with its line
                line = f"{line} ({type(exc).__name__}: {exc})"
        _say(line)
        _show_cursor()  # a progress bar hides it, and exiting now skips the bar's own clean-up
        os._exit(128 + signum)


def _importing() -> bool:
    """Whether the signal interrupted an import (a module still initialising): code run now could find
    that module half made, so the files are then left to the re-run."""
    return any(getattr(getattr(m, "__spec__", None), "_initializing", False) for m in list(sys.modules.values()))


# The runs judging in threads other than the main one (no signal reaches them), by thread id.
_BY_THREAD: dict[int, Interrupts] = {}


def interrupt_thread(ident: int, signum: int = signal.SIGINT) -> bool:
    """Stop the run judging in thread ``ident`` as a first Ctrl-C stops one in the main thread (nothing new is
    sent, the answers so far are kept); False when that thread judges nothing now. Python's API runs a
    judging in a worker thread while an event loop runs (Jupyter) and calls this on KeyboardInterrupt."""
    found = _BY_THREAD.get(ident)
    if found is None:
        return False
    found.notify(signum)
    return True


@contextmanager
def catching_interrupts(deadline_s: float | None = None, in_flight: int | None = None) -> Iterator[Interrupts]:
    """Catch SIGINT/SIGTERM for the duration (main thread only), then restore the old handlers."""
    interrupts = Interrupts(deadline_s, in_flight)
    if threading.current_thread() is not threading.main_thread():
        _BY_THREAD[threading.get_ident()] = interrupts  # the thread that started it stops it (interrupt_thread)
        try:
            yield interrupts
        finally:
            _BY_THREAD.pop(threading.get_ident(), None)
        return
    previous = {s: signal.getsignal(s) for s in CAUGHT}
    for s in CAUGHT:
        signal.signal(s, interrupts.handle)
    try:
        yield interrupts
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)


__all__ = ["Interrupts", "catching_interrupts", "interrupt_thread", "latest_status", "show_status"]
