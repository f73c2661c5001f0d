"""How many requests one server can run at once, so it is never sent more.

A self-hosted server queues what it cannot run: llama.cpp has a fixed
number of slots, and a request waiting for one spends its ``--timeout``
queued, is given up and sent again, to start generating from scratch. So
each server gets at most as many requests in flight as it can run: the
judge option ``?per_server=N`` (or ``--per-server-concurrency``) when given,
else what the server says about itself (llama.cpp's ``GET /props`` answers
``total_slots``). vLLM and SGLang publish no such number (they batch
continuously): only ``--concurrency`` and ``per_server`` cap them. The
wait for a slot happens before a request's deadline starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from polyjudge.backends.base import BackendError

if TYPE_CHECKING:
    from polyjudge.backends.http import HttpClients

# How long the one question about slots may take (a server that does not answer it is not capped).
PROBE_DEADLINE_S = 5.0


def props_url(base_url: str) -> str:
    """llama.cpp's ``/props`` beside an OpenAI-compatible base URL (``http://h:8080/v1`` -> ``http://h:8080/props``)."""
    root = base_url.rstrip("/")
    return f"{root.removesuffix('/v1')}/props"


async def ask_total_slots(http: HttpClients, base_url: str, headers: dict[str, str]) -> int | None:
    """The server's ``total_slots`` from ``/props``; None when it does not say (any answer but a count).

    Raises BackendError only when no connection could be made (ask again later).
    """
    try:
        resp = await http.request("GET", props_url(base_url), headers=headers,
                                  deadline=min(PROBE_DEADLINE_S, http.timeout.read))
    except BackendError as exc:
        if str(exc).startswith("connection error: ConnectError"):
            raise
        return None
    if resp.status_code != 200:
        return None
    try:
        data = resp.json()
    except ValueError:
        return None
    slots = data.get("total_slots") if isinstance(data, dict) else None
    return slots if isinstance(slots, int) and not isinstance(slots, bool) and slots > 0 else None


class ServerSlots:
    """The cap on one server's requests in flight: given, learned once from the server, or none."""

    def __init__(self, base_url: str, *, given: int | None, ask: bool) -> None:
        self.base_url = base_url
        self.limit = given
        self.known = given is not None or not ask
        # How long the server took to answer the question (any answer): how fast it answers a request it
        # checks without generating (backends.adaptation: the hold of a judge whose form is unsettled).
        self.answer_s: float | None = None
        self._sem: asyncio.Semaphore | None = None
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _for_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # semaphores and locks belong to one event loop
            self._loop, self._lock = loop, asyncio.Lock()
            self._sem = asyncio.Semaphore(self.limit) if self.limit else None

    async def learn(self, http: HttpClients, headers: dict[str, str]) -> None:
        """Ask the server once (the first request of many waits for the one answer)."""
        self._for_loop()
        assert self._lock is not None
        async with self._lock:
            if self.known:
                return
            with contextlib.suppress(BackendError):  # unreachable now: the next request asks again
                http.open_session()  # not timed: the hold scales with the server's answer, not aiohttp's import
                start = time.perf_counter()
                self.limit = await ask_total_slots(http, self.base_url, headers)
                self.answer_s = time.perf_counter() - start
                self.known = True
                self._sem = asyncio.Semaphore(self.limit) if self.limit else None

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """One of the server's slots while the request is out (no wait when it has no cap)."""
        self._for_loop()
        if self._sem is None:
            yield
            return
        async with self._sem:
            yield


__all__ = ["PROBE_DEADLINE_S", "ServerSlots", "ask_total_slots", "props_url"]
