"""One judge served by several servers (``openai:MODEL@http://a/v1,http://b/v1``).

Teams that host open judges run several vLLM or SGLang servers of one model.
:class:`PoolBackend` wraps one backend per server and is itself a backend,
so the engine sees one judge:

* each request goes to the least-loaded server (fewest requests in flight,
  then fewest sent), never above ``max_per_server`` in flight on one server,
  nor above what the server says it runs at once (llama.cpp's ``total_slots``,
  asked of every server before the first request; see ``backends/slots.py``);
* a server that refuses connections, or fails ``failures_to_cool`` times in a
  row (5xx, timeouts, broken bodies), is taken out for a cool-down that
  doubles each time it is taken out again (up to ``max_cooldown_s``); the
  request is retried at once on another server;
* a 429 with Retry-After rests that server for that long and the request
  goes elsewhere (no failure counted);
* an answer that no server would change (400, 401, 402, 403, 404, rejected
  parameters) is raised as it is, with the server named, and the engine
  decides (401/402/403/404 stop the run);
* when every server has failed the request or is cooling down, the most
  telling error is raised (an answer or a timeout before a refused
  connection: a slow survivor is not reported as an unreachable pool), its
  retryable flag kept, so the engine's retries and its circuit breaker see a
  dead pool like a dead server;
* every re-send to another server is counted (``resends`` on the answer or
  the error), and the engine counts it as a retry.

:meth:`PoolBackend.server_counts` and :meth:`PoolBackend.server_stats` tell
how requests were spread; :attr:`PoolBackend.servers` lists the servers with
credentials masked.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from polyjudge.backends.base import Backend, BackendError
from polyjudge.data.chat import GenerateRequest, GenerateResult
from polyjudge.data.secrets import redact_url


@dataclass(slots=True)
class ServerStats:
    """One server of a pool: where it stands and what it did."""

    url: str  # credentials masked
    in_flight: int = 0
    sent: int = 0  # requests sent to it (attempts, whatever came back)
    answered: int = 0
    failed: int = 0
    cooldowns: int = 0  # times it was taken out
    failures_in_a_row: int = 0
    down_until: float = 0.0  # monotonic time it may be used again
    last_error: BackendError | None = None


class PoolBackend:
    """A judge whose requests are spread over several servers of the same model."""

    def __init__(self, members: Sequence[Backend], servers: Sequence[str], *, max_per_server: int | None = None,
                 cooldown_s: float = 5.0, max_cooldown_s: float = 60.0, failures_to_cool: int = 3,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not members or len(members) != len(servers):
            raise ValueError("a pool needs one backend per server")
        models = {m.model for m in members}
        if len(models) != 1:
            raise ValueError(f"the servers of one judge must serve one model, got {sorted(models)}")
        if max_per_server is not None and max_per_server < 1:
            raise ValueError(f"max_per_server must be at least 1, got {max_per_server}")
        self.model = members[0].model
        self.members = list(members)
        self.max_per_server = max_per_server
        self.cooldown_s, self.max_cooldown_s, self.failures_to_cool = cooldown_s, max_cooldown_s, failures_to_cool
        self._clock = clock
        self._stats = [ServerStats(redact_url(u) or "") for u in servers]
        self._slot_freed: asyncio.Condition | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._slots_asked = False

    # ------------------------------------------------------------------ what the engine may show

    @property
    def servers(self) -> list[str]:
        """Every server, credentials masked, in the order given."""
        return [s.url for s in self._stats]

    def server_counts(self) -> dict[str, int]:
        """Requests sent to each server (attempts, answered or not), by masked URL."""
        return {s.url: s.sent for s in self._stats}

    def server_stats(self) -> list[ServerStats]:
        """A snapshot of every server's counters."""
        return [ServerStats(s.url, s.in_flight, s.sent, s.answered, s.failed, s.cooldowns, s.failures_in_a_row,
                            s.down_until, s.last_error) for s in self._stats]

    @property
    def adaptations(self) -> dict[str, str]:
        """What the servers' backends changed in requests they rejected (see the openai backend)."""
        merged: dict[str, str] = {}
        for member in self.members:
            merged.update(getattr(member, "adaptations", {}) or {})
        return merged

    def describe(self) -> dict[str, Any]:
        """The pool as a manifest may show it: model, servers (masked) and the per-server cap."""
        return {"model": self.model, "servers": self.servers, "max_per_server": self.max_per_server}

    # ------------------------------------------------------------------ routing

    def _condition(self) -> asyncio.Condition:
        loop = asyncio.get_running_loop()
        if self._slot_freed is None or self._loop is not loop:  # a condition belongs to one event loop
            self._slot_freed, self._loop = asyncio.Condition(), loop
        return self._slot_freed

    async def _acquire(self, tried: set[int]) -> int | None:
        """The least-loaded usable server not yet tried for this request (waiting for a slot
        when all are at their cap), or None when none is left."""
        cond = self._condition()
        async with cond:
            while True:
                now = self._clock()
                usable = [i for i, s in enumerate(self._stats) if i not in tried and s.down_until <= now]
                if not usable:
                    return None
                free = [i for i in usable if self._has_room(i)]
                if free:
                    best = min(free, key=lambda i: (self._stats[i].in_flight, self._stats[i].sent, i))
                    self._stats[best].in_flight += 1
                    self._stats[best].sent += 1
                    return best
                await cond.wait()

    def _has_room(self, index: int) -> bool:
        caps = [c for c in (self.max_per_server, getattr(self.members[index], "server_slots", None)) if c]
        return not caps or self._stats[index].in_flight < min(caps)

    async def _ask_slots(self) -> None:
        """Ask every server how many requests it runs at once, together, before the first request."""
        self._slots_asked = True
        learners = [m.learn_slots() for m in self.members if hasattr(m, "learn_slots")]
        if learners:
            await asyncio.gather(*learners)

    async def _release(self, index: int) -> None:
        cond = self._condition()
        async with cond:
            self._stats[index].in_flight -= 1
            cond.notify_all()

    def _take_out(self, server: ServerStats) -> None:
        server.cooldowns += 1
        server.failures_in_a_row = 0
        wait = min(self.max_cooldown_s, self.cooldown_s * 2 ** (server.cooldowns - 1))
        server.down_until = self._clock() + wait

    def _count_failure(self, server: ServerStats, exc: BackendError) -> None:
        """Book a failed attempt; take the server out when it looks down."""
        server.failed += 1
        server.last_error = exc
        if exc.status == 429:  # busy, not broken: rest it as long as it asks
            if exc.retry_after:
                server.down_until = self._clock() + min(exc.retry_after, self.max_cooldown_s)
            return
        if not exc.retryable:
            return  # about the request, not the server
        server.failures_in_a_row += 1
        refused = exc.status is None and str(exc).startswith("connection error")
        if refused or server.failures_in_a_row >= self.failures_to_cool:
            self._take_out(server)

    @staticmethod
    def _named(exc: BackendError, server: ServerStats, note: str = "") -> BackendError:
        """``exc`` with the server it came from named at the end (the message's start is kept:
        the engine sorts errors by it)."""
        err = BackendError(f"{exc} ({note}server {server.url})", retryable=exc.retryable, status=exc.status,
                           retry_after=exc.retry_after, unsupported=exc.unsupported, fatal=exc.fatal)
        err.resends = exc.resends
        return err

    def _exhausted(self, errors: list[BackendError], *, last: bool = False) -> BackendError:
        """The error for a request no server could answer: an answer or a timeout says more about the
        pool than a refused connection does (the servers that answered are reachable). It carries
        every re-send the request had."""
        if errors:
            reached = [e for e in errors if not str(e).startswith("connection error")]
            chosen = errors[-1] if last else (reached or errors)[-1]
            chosen.resends = len(errors) - 1 + sum(e.resends for e in errors)
            return chosen
        # Every server is cooling down: report the freshest failure of one of them.
        failed = [s for s in self._stats if s.last_error is not None]
        if not failed:
            return BackendError("connection error: no server of the pool is available", retryable=True)
        server = max(failed, key=lambda s: s.down_until)
        assert server.last_error is not None
        err = self._named(server.last_error, server, f"all {len(self._stats)} servers cooling down; last: ")
        err.fatal = False  # an earlier request's verdict: this one reached no server, and one may come back
        return err

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        if not self._slots_asked:
            await self._ask_slots()
        tried: set[int] = set()
        errors: list[BackendError] = []
        while True:
            index = await self._acquire(tried)
            if index is None:
                raise self._exhausted(errors)
            tried.add(index)
            server = self._stats[index]
            try:
                result = await self.members[index].generate(request)
            except BackendError as exc:
                self._count_failure(server, exc)
                errors.append(self._named(exc, server))
                if not exc.retryable:
                    raise self._exhausted(errors, last=True) from None
                continue
            finally:
                await self._release(index)
            server.answered += 1
            server.failures_in_a_row = 0
            server.cooldowns = 0
            resends = len(errors) + sum(e.resends for e in errors) + result.resends
            return dataclasses.replace(result, resends=resends) if resends != result.resends else result

    async def aclose(self) -> None:
        for member in self.members:
            await member.aclose()


__all__ = ["PoolBackend", "ServerStats"]
