"""Token prices for cost accounting (US dollars per million tokens) and context sizes.

The tables are a convenience, not a promise: prices change. Users override or
extend the prices with ``--prices FILE.json`` (``{"model": [input, output], ...}``).
Models not in the table (local ones) cost nothing. Context sizes (prompt plus
completion, in tokens) let a run warn before sending a prompt the model cannot
take; the embedded judge's is ``--n-ctx``.
"""

from __future__ import annotations

import json
from pathlib import Path

from polyjudge.data.errors import InputError

DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
}

CONTEXT_TOKENS: dict[str, int] = {
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
}


def approx_tokens(text: str) -> int:
    """A token count estimated without a tokenizer: UTF-8 bytes / 4.

    That is characters / 4 for English (about right for GPT tokenizers) and
    more for other scripts, whose characters take more tokens each.
    """
    return len(text.encode("utf-8", "surrogatepass")) // 4


def load_prices(path: str | None) -> dict[str, tuple[float, float]]:
    prices = dict(DEFAULT_PRICES)
    if not path:
        return prices
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read price table: {exc}", path=path) from None
    if not isinstance(data, dict):
        raise InputError("price table must be a JSON object {model: [input, output]}", path=path)
    for model, pair in data.items():
        if (not isinstance(pair, list | tuple) or len(pair) != 2
                or not all(isinstance(x, int | float) for x in pair)):
            raise InputError("expected [input_usd_per_mtok, output_usd_per_mtok]", path=path, field=model)
        prices[model] = (float(pair[0]), float(pair[1]))
    return prices


def cost_usd(prices: dict[str, tuple[float, float]], model: str, prompt_tokens: int,
             completion_tokens: int) -> float:
    inp, out = prices.get(model, (0.0, 0.0))
    return (prompt_tokens * inp + completion_tokens * out) / 1e6
