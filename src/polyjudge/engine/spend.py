"""Spending caps and rate limits: what may be sent, and when.

:class:`Budget` keeps a run under ``--max-cost``: before a request goes out
its worst case (the prompt with a margin, every completion at its token
limit) is reserved, and nothing is sent whose reservation would pass the cap
with what is spent and what is still in flight. When the answer comes back
the reservation is replaced by what the answer cost.

:class:`RateLimiter` holds ``--rpm`` and ``--tpm`` per judge with two token
buckets that refill continuously; a request takes one request token and its
prompt plus its completion limit in tokens (what providers count against
their limits when the request arrives).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping

from polyjudge.backends.base import GenerateRequest, Usage
from polyjudge.engine.pricing import ModelPrice

# Prompt tokens per UTF-8 byte assumed before any answer says better: estimates use
# bytes / 4, the reservation a third more, so an English prompt is never under-reserved.
INITIAL_TOKENS_PER_BYTE = 1 / 3
# Tokens a chat format adds around each message (role markers) and once per request.
MESSAGE_OVERHEAD_TOKENS, REQUEST_OVERHEAD_TOKENS = 8, 8


def prompt_bytes(request: GenerateRequest) -> int:
    return sum(len(m.content.encode("utf-8", "surrogatepass")) for m in request.messages)


def estimated_prompt_tokens(request: GenerateRequest) -> int:
    """The estimate every count uses: UTF-8 bytes / 4."""
    return prompt_bytes(request) // 4


class Budget:
    """The spending cap of one run: ``spent`` so far (previous sessions included) and what is reserved."""

    def __init__(self, cap: float, prices: Mapping[str, ModelPrice], spent: float = 0.0) -> None:
        self.cap, self.prices = cap, prices
        self.spent, self.reserved = spent, 0.0
        self.tokens_per_byte = INITIAL_TOKENS_PER_BYTE
        self.refused: float | None = None  # the worst case of the first request that did not fit
        self._settled = asyncio.Event()  # set at each settlement, so waiting requests look again
        self._generation = 0

    @property
    def left(self) -> float:
        return max(0.0, self.cap - self.spent)

    def worst_case(self, judge: str, request: GenerateRequest, *, batch: bool = False) -> float:
        """USD the request can cost at most: the prompt with a margin, every choice at its token limit."""
        price = self.prices.get(judge)
        if price is None:
            return 0.0
        prompt = (int(prompt_bytes(request) * self.tokens_per_byte) + REQUEST_OVERHEAD_TOKENS
                  + MESSAGE_OVERHEAD_TOKENS * len(request.messages))
        return price.cost(prompt, request.max_tokens * max(1, request.n), batch=batch)

    def reserve(self, judge: str, request: GenerateRequest, *, batch: bool = False) -> float | None:
        """Reserve the request's worst case; None (and nothing reserved) when it would pass the cap."""
        need = self.worst_case(judge, request, batch=batch)
        if self.spent + self.reserved + need > self.cap + 1e-12:
            if self.refused is None:
                self.refused = need
            return None
        self.reserved += need
        return need

    async def admit(self, judge: str, request: GenerateRequest, *, batch: bool = False) -> float | None:
        """Reserve the request's worst case, waiting while requests in flight may leave room
        once they are answered; None when it cannot fit even with nothing in flight."""
        while True:
            need = self.worst_case(judge, request, batch=batch)
            if self.spent + self.reserved + need <= self.cap + 1e-12:
                self.reserved += need
                return need
            if self.reserved <= 1e-12:
                if self.refused is None:
                    self.refused = need
                return None
            generation = self._generation
            while self._generation == generation:
                if self._settled.is_set():
                    self._settled.clear()
                await self._settled.wait()

    def settle(self, reserved: float, actual: float) -> None:
        """The answer came (``actual`` USD, 0 for a failed attempt): release its reservation."""
        self.reserved = max(0.0, self.reserved - reserved)
        self.spent += actual
        self._generation += 1
        self._settled.set()

    def cost_of(self, judge: str, usage: Usage, *, batch: bool = False) -> float:
        price = self.prices.get(judge)
        if price is None:
            return 0.0
        return price.cost(usage.prompt_tokens, usage.completion_tokens, usage.cached_prompt_tokens, batch=batch)

    def learn(self, request: GenerateRequest, usage: Usage) -> None:
        """Raise the prompt margin when a provider counted more tokens per byte than assumed."""
        size = prompt_bytes(request)
        if size and usage.prompt_tokens:
            self.tokens_per_byte = max(self.tokens_per_byte, usage.prompt_tokens / size)

    def describe(self) -> str:
        return f"${self.spent:.4f} spent, ${self.left:.4f} left of the ${self.cap:.4f} cap"


class TokenBucket:
    """``rate`` tokens per second, at most ``capacity`` saved up; takes may run into debt
    (a request larger than the bucket waits for a full one, later ones wait longer)."""

    def __init__(self, rate: float, capacity: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.capacity, self.clock = rate, capacity, clock
        self.level, self.stamp = capacity, clock()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = self.clock()
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    async def take(self, amount: float) -> None:
        async with self._lock:  # first come, first served
            need = min(amount, self.capacity)
            while True:
                self._refill()
                if self.level >= need:
                    self.level -= amount
                    return
                await asyncio.sleep((need - self.level) / self.rate)


class RateLimiter:
    """``--rpm`` and ``--tpm`` of one judge (either may be None: no limit)."""

    def __init__(self, rpm: float | None = None, tpm: float | None = None) -> None:
        # Bursts of at most one second's worth: providers enforce per-minute limits over shorter windows.
        self.requests = TokenBucket(rpm / 60.0, max(1.0, rpm / 60.0)) if rpm else None
        self.tokens = TokenBucket(tpm / 60.0, max(1.0, tpm / 60.0)) if tpm else None

    async def acquire(self, request: GenerateRequest) -> None:
        if self.requests is not None:
            await self.requests.take(1.0)
        if self.tokens is not None:
            await self.tokens.take(float(estimated_prompt_tokens(request) + request.max_tokens * max(1, request.n)))


__all__ = ["Budget", "RateLimiter", "TokenBucket", "estimated_prompt_tokens", "prompt_bytes"]
