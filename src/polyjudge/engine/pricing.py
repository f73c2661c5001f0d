"""Token prices for cost accounting (US dollars per million tokens) and context sizes.

Prices come first from ``genai-prices`` (a maintained, shipped table of
per-provider prices with cached-input and long-context tiers; it is read
from the installed package and never updated over the network here), then
from this module's own table for what it lacks (:data:`PRICES_AS_OF` is the
date its rows were read), and ``--prices FILE`` overrides both. Where a
model's price came from is :func:`price_source`, recorded in the manifest.
A row of the own table is
``(input, output)`` or ``(input, output, cached_input, batch_discount)``:
``cached_input`` is what a prompt token served from the provider's prompt
cache costs (the input price when absent) and ``batch_discount`` the share a
Batch API takes off every price (0.5: half price). Users override or extend
the table with ``--prices FILE.json``: ``{"model": [input, output]}`` (the
0.1.0 form) or ``{"model": {"input": .., "output": .., "cached_input": ..,
"batch_discount": ..}}``, optionally with ``"as_of": "YYYY-MM-DD"``. Models
not in the table (local ones) cost nothing. Context sizes (prompt plus
completion, in tokens) let a run warn before sending a prompt the model
cannot take; the embedded judge's is ``--n-ctx``.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from polyjudge.data.errors import InputError

# When the rows below were read from the providers' price pages (every row was checked on that day;
# the gpt-4o and gpt-4.1 rows agree with genai-prices, which answers for them first).
PRICES_AS_OF = "2026-11-23"
# The share OpenAI's, Anthropic's and Google's Batch APIs take off every price (genai-prices has no batch rates).
MAINTAINED_BATCH_DISCOUNT = {"openai": 0.5, "anthropic": 0.5, "google": 0.5}

# model: (input, output) or (input, output, cached_input, batch_discount), USD per million tokens.
DEFAULT_PRICES: dict[str, tuple[float, float] | tuple[float, float, float, float]] = {
    "gpt-4o": (2.50, 10.00, 1.25, 0.5),
    "gpt-4o-mini": (0.15, 0.60, 0.075, 0.5),
    "gpt-4.1": (2.00, 8.00, 0.50, 0.5),
    "gpt-4.1-mini": (0.40, 1.60, 0.10, 0.5),
    "gpt-4.1-nano": (0.10, 0.40, 0.025, 0.5),
    # OpenAI reasoning models, read 2026-11-23 (OpenAI's pricing page; o3 since its 2025-06 price cut).
    # Reasoning tokens are billed as output tokens (they are part of completion_tokens).
    "o3": (2.00, 8.00, 0.50, 0.5),
    "o3-pro": (20.00, 80.00),
    "o4-mini": (1.10, 4.40, 0.275, 0.5),
    "o3-mini": (1.10, 4.40, 0.55, 0.5),
    "o1": (15.00, 60.00, 7.50, 0.5),
    # Anthropic Claude, read 2026-11-23 (platform.claude.com model pages and pricing): cached_input is
    # the cache-hit price; cache writes (1.25x input for 5 minutes) are not priced here. Batch API: half price.
    "claude-fable-5-1": (10.00, 50.00, 0.25, 0.5),
    "claude-fable-5": (10.00, 50.00, 1.00, 0.5),
    "claude-opus-5-5": (4.00, 20.00, 0.20, 0.5),
    "claude-opus-5": (5.00, 25.00, 0.50, 0.5),
    "claude-sonnet-5-5": (2.00, 10.00, 0.10, 0.5),  # cache hits cut from 0.20 on 2026-10-07
    "claude-sonnet-5": (2.00, 10.00, 0.20, 0.5),
    "claude-haiku-5-5": (0.10, 0.50, 0.01, 0.5),  # prompts up to 100,000 tokens; longer ones cost 5x
    "claude-opus-4-8": (5.00, 25.00, 0.50, 0.5),
    "claude-opus-4-7": (5.00, 25.00, 0.50, 0.5),
    "claude-opus-4-6": (5.00, 25.00, 0.50, 0.5),
    "claude-sonnet-4-6": (3.00, 15.00, 0.30, 0.5),
    "claude-opus-4-5": (5.00, 25.00, 0.50, 0.5),
    "claude-opus-4-5-20251101": (5.00, 25.00, 0.50, 0.5),
    "claude-sonnet-4-5": (3.00, 15.00, 0.30, 0.5),
    "claude-sonnet-4-5-20250929": (3.00, 15.00, 0.30, 0.5),
    "claude-haiku-4-5": (1.00, 5.00, 0.10, 0.5),
    "claude-haiku-4-5-20251001": (1.00, 5.00, 0.10, 0.5),
    "claude-opus-4-1": (15.00, 75.00, 1.50, 0.5),
    "claude-opus-4-1-20250805": (15.00, 75.00, 1.50, 0.5),
}

CONTEXT_TOKENS: dict[str, int] = {
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    # read 2026-11-23, with the prices above
    "o3": 200_000,
    "o3-pro": 200_000,
    "o4-mini": 200_000,
    "o3-mini": 200_000,
    "o1": 200_000,
    "claude-fable-5-1": 1_000_000,
    "claude-fable-5": 1_000_000,
    "claude-opus-5-5": 1_000_000,
    "claude-opus-5": 1_000_000,
    "claude-sonnet-5-5": 1_000_000,
    "claude-sonnet-5": 1_000_000,
    "claude-haiku-5-5": 1_000_000,
    "claude-opus-4-8": 1_000_000,
    "claude-opus-4-7": 1_000_000,
    "claude-opus-4-6": 1_000_000,
    "claude-sonnet-4-6": 1_000_000,
    "claude-opus-4-5": 200_000,
    "claude-opus-4-5-20251101": 200_000,
    "claude-sonnet-4-5": 200_000,
    "claude-sonnet-4-5-20250929": 200_000,
    "claude-haiku-4-5": 200_000,
    "claude-haiku-4-5-20251001": 200_000,
    "claude-opus-4-1": 200_000,
    "claude-opus-4-1-20250805": 200_000,
}


# The highest price accepted (USD per million tokens), far above any real one: a typo like 1e300
# would otherwise overflow a cost to infinity.
MAX_PRICE = 1e6


def _valid_price(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) \
        and 0.0 <= value <= MAX_PRICE


@dataclass(frozen=True, slots=True)
class PriceTier:
    """Long-context prices: a request whose prompt has more than ``above`` tokens pays these for all its tokens."""

    above: int
    input: float
    output: float
    cached_input: float | None = None

    def __post_init__(self) -> None:
        """Refused as a flat price is (a tier read back from the shared cache is data from disk)."""
        if not (isinstance(self.above, int) and not isinstance(self.above, bool) and self.above >= 0):
            raise ValueError(f"a price tier starts at a whole number of tokens, got {self.above!r}")
        for name in ("input", "output", "cached_input"):
            value = getattr(self, name)
            if value is not None and not _valid_price(value):
                raise ValueError(f"tier {name} price must be a finite number from 0 to {MAX_PRICE:g}, got {value!r}")


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """One model's prices in USD per million tokens."""

    input: float
    output: float
    cached_input: float | None = None  # None: cached prompt tokens cost the input price
    batch_discount: float = 0.0  # share taken off every price when answered through a Batch API
    tiers: tuple[PriceTier, ...] = ()  # ascending ``above``; the highest one a prompt passes applies

    def __post_init__(self) -> None:
        """A NaN or infinite price would make every cost NaN (and the manifest not JSON): refuse it."""
        for name in ("input", "output", "cached_input"):
            value = getattr(self, name)
            if value is not None and not _valid_price(value):
                raise ValueError(f"{name} price must be a finite number from 0 to {MAX_PRICE:g}, got {value!r}")
        if not (_valid_price(self.batch_discount) and self.batch_discount <= 1.0):
            raise ValueError(f"batch_discount must be a share from 0 to 1, got {self.batch_discount!r}")

    @classmethod
    def of(cls, row: ModelPrice | Any) -> ModelPrice:
        """A price from a table row: a :class:`ModelPrice` or 2 or 4 numbers."""
        if isinstance(row, ModelPrice):
            return row
        values = tuple(float(x) for x in row)
        if len(values) == 2:
            return cls(values[0], values[1])
        if len(values) == 4:
            return cls(values[0], values[1], values[2], values[3])
        raise ValueError(f"a price row has 2 or 4 numbers, got {len(values)}")

    def at(self, prompt_tokens: float) -> ModelPrice:
        """The flat price a request with a prompt of ``prompt_tokens`` pays (its long-context tier, if any)."""
        if not self.tiers:
            return self
        flat = self
        for tier in self.tiers:
            if prompt_tokens > tier.above:
                flat = ModelPrice(tier.input, tier.output, tier.cached_input, self.batch_discount)
        return flat if flat is not self else ModelPrice(self.input, self.output, self.cached_input,
                                                        self.batch_discount)

    def cost(self, prompt_tokens: int, completion_tokens: int, cached_prompt_tokens: int = 0, *,
             batch: bool = False) -> float:
        """USD for one answer; cached prompt tokens are part of ``prompt_tokens``."""
        if self.tiers:
            return self.at(prompt_tokens).cost(prompt_tokens, completion_tokens, cached_prompt_tokens, batch=batch)
        cached = min(max(cached_prompt_tokens, 0), prompt_tokens)
        cached_price = self.input if self.cached_input is None else self.cached_input
        usd = ((prompt_tokens - cached) * self.input + cached * cached_price
               + completion_tokens * self.output) / 1e6
        return usd * (1.0 - self.batch_discount) if batch else usd

    def pair(self) -> tuple[float, float]:
        """(input, output): what the run manifest records (format 1)."""
        return (self.input, self.output)

    @classmethod
    def from_json(cls, d: Any) -> ModelPrice:
        """A price as :meth:`to_json` wrote it (``ValueError`` or ``TypeError`` when it is not one)."""
        if not isinstance(d, dict):
            raise TypeError(f"a price is a JSON object, got {type(d).__name__}")
        tiers = tuple(PriceTier(int(t["above"]), float(t["input"]), float(t["output"]),
                                None if t.get("cached_input") is None else float(t["cached_input"]))
                      for t in d.get("tiers") or ())
        cached = d.get("cached_input")
        return cls(float(d["input"]), float(d["output"]), None if cached is None else float(cached),
                   float(d.get("batch_discount", 0.0)), tiers)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"input": self.input, "output": self.output, "batch_discount": self.batch_discount}
        if self.cached_input is not None:
            out["cached_input"] = self.cached_input
        if self.tiers:
            out["tiers"] = [{"above": t.above, "input": t.input, "output": t.output, "cached_input": t.cached_input}
                            for t in self.tiers]
        return out


OWN_TABLE = f"polyjudge table {PRICES_AS_OF}"
OVERRIDE = "--prices"


class PriceMemo(Protocol):
    """What genai-prices answered for a model, kept beyond one process (the shared response cache does:
    ``engine.caching.RememberedPrices``), so a later run does not load that package to ask again."""

    def get(self, model: str) -> tuple[bool, ModelPrice | None]:
        """(whether ``model`` was looked up, the price found: None when genai-prices lacks it)."""
        ...

    def put(self, model: str, price: ModelPrice | None) -> None: ...


class PriceTable(dict[str, ModelPrice]):
    """Prices by model: rows set here (the own table, overrides) win; a model without one is looked up
    in genai-prices when first asked for, so a run prices every model that package knows.

    With a ``memo`` (set while a run has the shared response cache open), what genai-prices said of a
    model is asked of the memo first: loading that package and its data costs a run about 0.1 s of CPU."""

    def __init__(self, rows: Mapping[str, ModelPrice] | None = None, *, maintained: bool = True,
                 fallback: Mapping[str, ModelPrice] | None = None) -> None:
        super().__init__(rows or {})
        self.maintained = maintained
        # Rows used only for models genai-prices lacks (the own table): looked at when first asked for,
        # so a run reads genai-prices for its own judges only, not for every row of the table.
        self.fallback = dict(fallback or {})
        self.sources: dict[str, str] = {}  # model -> where its row came from
        self.memo: PriceMemo | None = None
        self._asked: dict[str, ModelPrice | None] = {}  # what genai-prices (or the memo) said, found or not

    def _maintained(self, model: str) -> ModelPrice | None:
        if model in self._asked:
            return self._asked[model]
        memo, found = self.memo, None
        known = False
        if memo is not None:
            known, found = memo.get(model)
        if not known:
            found = maintained_price(model)
            if memo is not None:
                memo.put(model, found)
        self._asked[model] = found
        return found

    def _lookup(self, model: object) -> ModelPrice | None:
        if not isinstance(model, str):
            return None
        found = self._maintained(model) if self.maintained else None
        if found is not None:
            self[model] = found
            self.sources[model] = maintained_source()
            return found
        own = self.fallback.get(model)
        if own is not None:
            self[model] = own
        return own

    def __missing__(self, model: str) -> ModelPrice:
        found = self._lookup(model)
        if found is None:
            raise KeyError(model)
        return found

    def __contains__(self, model: object) -> bool:
        return dict.__contains__(self, model) or self._lookup(model) is not None

    def get(self, model: str, default: Any = None) -> Any:
        return self[model] if model in self else default

    def source(self, model: str) -> str | None:
        """Where ``model``'s price comes from: genai-prices, the own table, --prices; None without one."""
        return self.sources.get(model, OWN_TABLE) if model in self else None


def sources_of(table: Mapping[str, ModelPrice], models: Sequence[str]) -> dict[str, str]:
    """Where each priced model's price came from (for the manifest: a report never guesses)."""
    if isinstance(table, PriceTable):
        return {m: src for m in models if (src := table.source(m)) is not None}
    return {m: OVERRIDE for m in models if m in table}


def maintained_source() -> str:
    """The maintained price table and its version, as the manifest names it."""
    from importlib import metadata

    try:
        return f"genai-prices {metadata.version('genai-prices')}"
    except metadata.PackageNotFoundError:
        return "genai-prices"


def _decimal_at(value: Any, above: int | None) -> float | None:
    """A genai-prices price (a number or tiered prices) as it applies above ``above`` tokens (None: base)."""
    if value is None:
        return None
    tiers = getattr(value, "tiers", None)
    if tiers is None:
        return float(value)
    price = value.base
    for tier in tiers:
        if above is not None and above >= tier.start:
            price = tier.price
    return float(price)


@functools.lru_cache(maxsize=512)
def maintained_price(model: str) -> ModelPrice | None:
    """``model``'s price in genai-prices' shipped data (None when it lacks the model); no network."""
    try:
        from genai_prices import data_snapshot
    except ImportError:
        return None
    try:
        provider, info = data_snapshot.get_snapshot().find_provider_model(model, None, None, None)
    except LookupError:
        return None
    row = info.get_prices(datetime.now(UTC))
    keys = ("input_mtok", "output_mtok", "cache_read_mtok")
    values = [getattr(row, k, None) for k in keys]
    if values[0] is None or values[1] is None:
        return None
    starts = sorted({t.start for v in values if v is not None for t in getattr(v, "tiers", None) or ()})
    at = [(_decimal_at(values[0], s), _decimal_at(values[1], s), _decimal_at(values[2], s)) for s in starts]
    tiers = tuple(PriceTier(s, i or 0.0, o or 0.0, c) for s, (i, o, c) in zip(starts, at))
    base = (_decimal_at(values[0], None), _decimal_at(values[1], None), _decimal_at(values[2], None))
    return ModelPrice(base[0] or 0.0, base[1] or 0.0, base[2], MAINTAINED_BATCH_DISCOUNT.get(provider.id, 0.0),
                      tiers)


def default_prices() -> PriceTable:
    """The own table as :class:`ModelPrice` rows under genai-prices (which answers first for what it knows)."""
    return PriceTable(fallback={model: ModelPrice.of(row) for model, row in DEFAULT_PRICES.items()})


def price_table(prices: Mapping[str, ModelPrice | Any] | None) -> PriceTable:
    """Any price mapping (rows of 2 or 4 numbers or :class:`ModelPrice`) over genai-prices and the own table."""
    if isinstance(prices, PriceTable):
        return prices
    table = default_prices()
    for model, row in (prices or {}).items():
        table[str(model)] = ModelPrice.of(row)
        table.sources[str(model)] = OVERRIDE
    return table


def approx_tokens(text: str) -> int:
    """A token count estimated without a tokenizer: UTF-8 bytes / 4.

    That is characters / 4 for English (about right for GPT tokenizers) and
    more for other scripts, whose characters take more tokens each.
    """
    return len(text.encode("utf-8", "surrogatepass")) // 4


_FIELDS = ("input", "output", "cached_input", "batch_discount")


def _number(value: Any, path: str, field: str) -> float:
    if not _valid_price(value):
        raise InputError(f"expected a finite number from 0 to {MAX_PRICE:g}, got {value!r}", path=path, field=field)
    return float(value)


def _row(model: str, row: Any, path: str) -> ModelPrice:
    if isinstance(row, list | tuple):
        if len(row) != 2:
            raise InputError("expected [input_usd_per_mtok, output_usd_per_mtok] or an object with input, output, "
                             "cached_input, batch_discount", path=path, field=model)
        return ModelPrice(_number(row[0], path, model), _number(row[1], path, model))
    if isinstance(row, dict):
        unknown = sorted(set(row) - set(_FIELDS))
        if unknown:
            raise InputError(f"unknown price field(s) {', '.join(unknown)}; use {', '.join(_FIELDS)}",
                             path=path, field=model)
        for need in ("input", "output"):
            if need not in row:
                raise InputError(f"missing '{need}'", path=path, field=model)
        values = {k: _number(v, path, f"{model}.{k}") for k, v in row.items()}
        discount = values.get("batch_discount", 0.0)
        if discount > 1.0:
            raise InputError("batch_discount is a share between 0 and 1", path=path, field=f"{model}.batch_discount")
        return ModelPrice(values["input"], values["output"], values.get("cached_input"), discount)
    raise InputError("expected [input, output] or {input, output, cached_input, batch_discount}",
                     path=path, field=model)


def load_prices(path: str | None) -> PriceTable:
    """The built-in table, overridden and extended by the JSON file at ``path``."""
    prices = default_prices()
    if not path:
        return prices
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read price table: {exc}", path=path) from None
    if not isinstance(data, dict):
        raise InputError("price table must be a JSON object {model: [input, output]}", path=path)
    for model, row in data.items():
        if model == "as_of":
            if not isinstance(row, str):
                raise InputError("as_of is the date the prices were read, e.g. \"2025-06-01\"", path=path,
                                 field="as_of")
            continue
        prices[model] = _row(model, row, path)
        prices.sources[model] = f"{OVERRIDE} {Path(path).name}"
    return prices


def cost_usd(prices: Mapping[str, ModelPrice | Any], model: str, prompt_tokens: int, completion_tokens: int,
             cached_prompt_tokens: int = 0, *, batch: bool = False) -> float:
    """USD for one answer of ``model`` (0 for a model without a price)."""
    row = prices.get(model)
    if row is None:
        return 0.0
    return ModelPrice.of(row).cost(prompt_tokens, completion_tokens, cached_prompt_tokens, batch=batch)


__all__ = ["CONTEXT_TOKENS", "DEFAULT_PRICES", "OVERRIDE", "OWN_TABLE", "PRICES_AS_OF", "ModelPrice",
           "PriceMemo", "PriceTable", "PriceTier", "approx_tokens", "cost_usd", "default_prices", "load_prices",
           "maintained_price", "maintained_source", "price_table", "sources_of"]
