"""Holding a judge's requests behind the first until the server has accepted how they are written.

A backend that adapts to 400 answers (a reasoning model rejecting
``max_tokens``, a server without structured output) would otherwise learn the
same lesson once per request in flight: 64 rejected requests at ``-c 64``,
each counted against the rate limits. With a :class:`FormGate` only one
request is out while the form is unknown; once one answer shows the form is
accepted (or a rejection has been adapted to and the resend accepted), the
others go out together. So a run costs at most one rejected request per
adapted parameter.

Billing errors are recognised here too: no retry or adaptation helps them,
whatever status code the server gives them.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

# Answers that say the account cannot pay (Anthropic's low-credit 400, OpenAI's quota and billing codes).
_BILLING = re.compile(r"credit balance|insufficient[_ ]quota|exceeded your current quota|billing[_ ]"
                      r"(hard[_ ]limit|not[_ ]active)|payment required|purchase credits", re.I)


def is_billing_error(*texts: str | None) -> bool:
    """True when a server's error message, type or code says the account cannot pay."""
    return any(t and _BILLING.search(t) for t in texts)


class FormGate:
    """One request at a time until the form of the requests is settled, then all at once."""

    def __init__(self, *, settled: bool) -> None:
        self.settled = settled
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _the_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._lock is None or self._loop is not loop:  # a lock belongs to one event loop
            self._lock, self._loop = asyncio.Lock(), loop
        return self._lock

    def settle(self) -> None:
        """The server accepted the form: let every request through from now on."""
        self.settled = True

    async def run(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """``attempt()``, alone while the form is unsettled (the attempt calls :meth:`settle`)."""
        if self.settled:
            return await attempt()
        async with self._the_lock():
            if not self.settled:
                return await attempt()
        return await attempt()


__all__ = ["FormGate", "is_billing_error"]
