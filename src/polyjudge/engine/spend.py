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

:func:`vet_usage` stands between what a server reports and every count:
usage that is unknown (negative, NaN, text), above what the request could
use (a completion beyond ``max_tokens`` per choice, a prompt beyond one token
per byte plus a margin) or too small for the text of several choices is
accounted at a bound, and what the server said is kept beside it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from polyjudge.data.chat import GenerateRequest, GenerateResult, Usage
from polyjudge.engine.long_prompts import prompt_bytes as messages_bytes
from polyjudge.engine.pricing import ModelPrice

# Prompt tokens per UTF-8 byte assumed before any answer says better: estimates use
# bytes / 4, the reservation a third more, so an English prompt is never under-reserved.
INITIAL_TOKENS_PER_BYTE = 1 / 3
# Tokens a chat format adds around each message (role markers) and once per request.
MESSAGE_OVERHEAD_TOKENS, REQUEST_OVERHEAD_TOKENS = 8, 8


def prompt_bytes(request: GenerateRequest) -> int:
    """UTF-8 bytes of the request's messages (:func:`long_prompts.prompt_bytes`), measured once for the
    runs of a prompt (they share one tuple of messages: every answer is vetted against its size)."""
    messages = request.messages
    seen = _SIZES.get(id(messages))
    if seen is not None and seen[0] is messages:
        return seen[1]
    size = messages_bytes(messages)
    if len(_SIZES) >= _SIZES_KEPT:
        _SIZES.clear()
    _SIZES[id(messages)] = (messages, size)  # the tuple is held, so its id is not another's while it is here
    return size


# The sizes of the prompts measured last, by the identity of their messages.
_SIZES: dict[int, tuple[object, int]] = {}
_SIZES_KEPT = 512  # about the prompts in flight at once (they are held by their requests anyway)


def estimated_prompt_tokens(request: GenerateRequest) -> int:
    """The estimate every count uses: UTF-8 bytes / 4."""
    return prompt_bytes(request) // 4


# Tokens a provider may add around a prompt beyond one per byte (chat templates, tool definitions).
PROMPT_SLACK_TOKENS = 1024


@dataclass(frozen=True, slots=True)
class VettedUsage:
    """The usage every count and the spending cap use, and why it differs from what was reported."""

    usage: Usage
    anomalies: tuple[str, ...] = ()
    reported: str | None = None  # the server's usage as sent (JSON text), when it was not used as is

    @property
    def note(self) -> str | None:
        """What the store keeps beside an answer whose usage was not taken as reported."""
        if not self.anomalies:
            return None
        return json.dumps({"anomalies": list(self.anomalies), "reported": self.reported}, ensure_ascii=False)


def prompt_token_bound(request: GenerateRequest) -> int:
    """The most prompt tokens a request can be billed: a token per byte of its messages and schema, plus slack."""
    schema = len(json.dumps(request.json_schema)) if request.json_schema else 0
    return prompt_bytes(request) + schema + PROMPT_SLACK_TOKENS


def _bounded(name: str, value: int, bound: int, notes: list[str], *, unknown_as: int) -> int:
    if value < 0:
        notes.append(f"{name} is not a usable count; accounted as {unknown_as:,}")
        return unknown_as
    if value > bound:
        notes.append(f"{name} {value:,} is above the {bound:,} the request allows; accounted as {bound:,}")
        return bound
    return value


def _choices_covered(result: GenerateResult, prompt: int, prompt_size: int, completion: int, limit: int,
                     notes: list[str]) -> int:
    """The completion count of a several-choice answer, corrected when it cannot cover the choices' text
    (servers such as llama.cpp report the usage of one choice): scaled by the text of all choices.

    The text is expected at the prompt's tokens per byte; a count below that by more than the square
    root of the number of choices (a count of one choice in n is 1/n of it) is corrected."""
    if len(result.choices) < 2:
        return completion
    sizes = [len(c.encode("utf-8", "surrogatepass")) for c in result.choices]
    density = prompt / prompt_size if prompt > 0 and prompt_size > 0 else 0.25  # tokens per byte
    expected = density * sum(sizes)
    if completion >= expected / math.sqrt(len(sizes)):
        return completion
    corrected = math.ceil(completion * sum(sizes) / sizes[0]) if completion and sizes[0] else math.ceil(expected)
    corrected = max(completion, min(limit, corrected))
    notes.append(f"completion_tokens {completion:,} cannot cover the text of {len(sizes)} choices "
                 f"({sum(sizes):,} bytes); accounted as {corrected:,}")
    return corrected


def vet_usage(request: GenerateRequest | None, result: GenerateResult) -> VettedUsage:
    """The usage of ``result`` to account: every count non-negative and within what ``request`` allows
    (unknown prompt and completion counts at their bound, so the spending cap holds); unknown cached
    and reasoning counts are 0 (they never raise a bill). Without the request only unknown counts are fixed."""
    u = result.usage
    if request is not None and u.reported is None and len(result.choices) < 2 and _within(request, u):
        return VettedUsage(u)  # the common case: every count plain and within its bound, taken as reported
    notes: list[str] = []
    prompt_cap = _prompt_cap(request, u.prompt_tokens)
    limit = request.max_tokens * max(1, request.n) if request is not None \
        else max(u.completion_tokens, 0)
    prompt = _bounded("prompt_tokens", u.prompt_tokens, prompt_cap, notes, unknown_as=prompt_cap)
    completion = _bounded("completion_tokens", u.completion_tokens, limit, notes, unknown_as=limit)
    if request is not None and len(result.choices) > 1:
        trusted_prompt = u.prompt_tokens if 0 < u.prompt_tokens <= prompt_cap else 0
        completion = _choices_covered(result, trusted_prompt, prompt_bytes(request), completion, limit, notes)
    cached = _bounded("cached_prompt_tokens", u.cached_prompt_tokens, prompt, notes, unknown_as=0)
    reasoning = _bounded("reasoning_tokens", u.reasoning_tokens, completion, notes, unknown_as=0)
    if u.reported is not None and not notes:
        notes.append("usage counts that are not plain integers (rounded up)")
    if not notes:  # the common case: the counts as reported
        return VettedUsage(Usage(prompt, completion, cached, reasoning), (), None)
    reported = u.reported if u.reported is not None else json.dumps(
        {"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens,
         "cached_prompt_tokens": u.cached_prompt_tokens, "reasoning_tokens": u.reasoning_tokens})
    return VettedUsage(Usage(prompt, completion, cached, reasoning), tuple(notes), reported)


def _within(request: GenerateRequest, u: Usage) -> bool:
    """True when every count of ``u`` is a count within its bound (:func:`vet_usage` would change none):
    the prompt within the messages' bytes plus slack (below :func:`prompt_token_bound`, schema or not).
    A prompt within the messages' characters is within their bytes (a character is at least one byte):
    only a count above that has the bytes measured."""
    prompt = u.prompt_tokens
    chars = 0
    for m in request.messages:
        chars += len(m.content)
    return (0 <= prompt and (prompt <= chars + PROMPT_SLACK_TOKENS
                             or prompt <= prompt_bytes(request) + PROMPT_SLACK_TOKENS)
            and 0 <= u.completion_tokens <= request.max_tokens * max(1, request.n)
            and 0 <= u.cached_prompt_tokens <= prompt and 0 <= u.reasoning_tokens <= u.completion_tokens)


def _prompt_cap(request: GenerateRequest | None, reported: int) -> int:
    """:func:`prompt_token_bound` of ``request``; its schema is measured only when the reported count
    could be above it (a count within the messages' bytes alone is within the bound)."""
    if request is None:
        return max(reported, 0)
    without_schema = prompt_bytes(request) + PROMPT_SLACK_TOKENS
    if 0 <= reported <= without_schema:
        return without_schema if not request.json_schema else max(without_schema, reported)
    return prompt_token_bound(request)


def with_usage(result: GenerateResult, usage: Usage) -> GenerateResult:
    return dataclasses.replace(result, usage=usage)


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
        self.spent += max(0.0, actual) if math.isfinite(actual) else reserved
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


__all__ = ["Budget", "RateLimiter", "TokenBucket", "VettedUsage", "estimated_prompt_tokens", "prompt_bytes",
           "prompt_token_bound", "vet_usage", "with_usage"]
