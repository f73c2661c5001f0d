"""Holding a judge's requests while the server is teaching it how to write them.

A backend that adapts to 400 answers (a reasoning model rejecting
``max_tokens``, a server without structured output) would otherwise learn the
same lesson once per request in flight: 64 rejected requests at ``-c 64``,
each counted against the rate limits. A :class:`FormGate` prevents that:

* while the form of a judge's requests is unsettled, the first request goes
  out alone and the others wait for its answer, for at most
  :data:`HOLD_S` seconds (a rejected parameter is answered in well under
  that: the server checks the request before it generates anything);
* a rejection holds every request not yet sent until the adapted resend is
  answered (a second rejection keeps holding);
* the first accepted answer settles the form: nothing waits from then on.

So a run costs one rejected request per adapted parameter (as long as the
rejection comes within the hold), and a model that takes the default form
loses at most one hold at the start of a run. When the time the server takes
to answer a question it answers without generating is known (a self-hosted
server's ``GET /props``, asked before the first request), the hold lasts
:data:`ROUND_TRIPS` such answers (at least :data:`MIN_HOLD_S`, at most
:data:`HOLD_S`): a rejection comes back as fast, so a server on the same
machine or network holds a first run's requests for milliseconds, not for
the whole first answer.

Billing errors are recognised here too: no retry or adaptation helps them,
whatever status code the server gives them.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

# The longest the first request of an unsettled judge holds the others (seconds).
HOLD_S = 0.5
# With a measured answer time of the server: the hold lasts this many of them, and at least MIN_HOLD_S.
ROUND_TRIPS = 10
# 20 ms: ten round trips to a server on this machine or network; a rejection after it costs only a
# rejected request per request in flight (self-hosted servers, the only ones measured, charge nothing).
MIN_HOLD_S = 0.02

# Answers that say the account cannot pay (Anthropic's low-credit 400, OpenAI's quota and billing codes).
_BILLING = re.compile(r"credit balance|insufficient[_ ]quota|exceeded your current quota|billing[_ ]"
                      r"(hard[_ ]limit|not[_ ]active)|payment required|purchase credits", re.I)


def is_billing_error(*texts: str | None) -> bool:
    """True when a server's error message, type or code says the account cannot pay."""
    return any(t and _BILLING.search(t) for t in texts)


class FormGate:
    """Requests wait while the form is being learned; once it is settled they never do."""

    def __init__(self, *, settled: bool, hold_s: float = HOLD_S) -> None:
        self.settled = settled
        self.hold_s = hold_s
        self._open: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._holder: asyncio.Task[object] | None = None  # the request the others wait for
        self._adapting = False  # the holder's request was rejected and is being resent adapted

    def _event(self) -> asyncio.Event:
        loop = asyncio.get_running_loop()
        if self._open is None or self._loop is not loop:  # an event belongs to one event loop
            self._open, self._loop, self._adapting = asyncio.Event(), loop, False
            self._holder = asyncio.current_task()  # the first request goes alone
            loop.call_later(self.hold_s, self._hold_over)
        return self._open

    def answers_within(self, seconds: float) -> None:
        """The server answered a request it checks without generating in ``seconds``: a rejection of the
        form would come about as fast, so the hold lasts :data:`ROUND_TRIPS` times that (within
        :data:`MIN_HOLD_S` and the hold given)."""
        self.hold_s = min(self.hold_s, max(MIN_HOLD_S, ROUND_TRIPS * seconds))

    def _hold_over(self) -> None:
        if self._holder is not None and self._open is not None and not self._adapting:
            self._holder = None
            self._open.set()

    def settle(self) -> None:
        """The server accepted the form: let every request through from now on."""
        self.settled = True
        self._holder, self._adapting = None, False
        if self._open is not None:
            self._open.set()

    def hold(self) -> None:
        """A rejection came back: requests not yet sent wait until the adapted resend is answered."""
        if self.settled or self._open is None:
            return
        self._holder, self._adapting = asyncio.current_task(), True
        self._open.clear()

    async def run(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """``attempt()``, after waiting while another request is teaching the judge its form."""
        if self.settled:
            return await attempt()
        event = self._event()
        while not event.is_set() and self._holder is not asyncio.current_task():
            await event.wait()
        try:
            return await attempt()
        finally:
            if self._holder is asyncio.current_task():  # no answer settled it (a failure): let the others try
                self._holder, self._adapting = None, False
                event.set()


__all__ = ["HOLD_S", "MIN_HOLD_S", "ROUND_TRIPS", "FormGate", "is_billing_error"]
