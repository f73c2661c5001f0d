"""Undefined statistics, in one place: how they are carried, printed and written.

A statistic that cannot be computed (a correlation over constant scores, one over fewer than three
systems or items, a p-value or interval from too few paired segments; the minimum sizes are in
``docs/explanations/statistics.md``) is NaN while it is computed and None in typed results. Text and
TSV show it as ``n/a``, JSON as ``null``, never as a number such as 0.0000 or 1.000 [1.000, 1.000].
Every table of statistics formats its numbers through :func:`stat_text`, so the rule lives here only.
"""

from __future__ import annotations

import math
from typing import Any

NOT_AVAILABLE = "n/a"

# Fewest items (paired segments, labelled items, a system's scored segments) for a resampling p-value or an
# interval. With n items a sign-flip test has 2**n outcomes, so its smallest two-sided p-value is 2 / 2**n:
# 0.0625 at 5, 0.03125 at 6, the first n at which any difference can be significant at 0.05. Below that an
# interval or p-value from resampling says more than the items can.
MIN_RESAMPLED_ITEMS = 6
# Fewest points for a correlation or any other statistic over items or systems: over two, a correlation
# is +-1 whatever the scores.
MIN_ITEMS = 3


def defined(x: Any) -> float | None:
    """``x`` as a float when it is a finite number; None when it is undefined (None, NaN, +-inf, not a number)."""
    if x is None or isinstance(x, bool):
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def stat_text(x: Any, spec: str = ".4f", missing: str = NOT_AVAILABLE) -> str:
    """A statistic for text and TSV: ``format(x, spec)``, or ``missing`` (``n/a``) when undefined."""
    f = defined(x)
    return missing if f is None else format(f, spec)


def undefined_to_none(x: Any) -> Any:
    """``x`` with every NaN or infinite float (in dicts, lists and tuples) replaced by None: JSON ``null``,
    where ``json.dumps`` would write ``NaN``, which is not JSON."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: undefined_to_none(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [undefined_to_none(v) for v in x]
    if hasattr(x, "dtype") and hasattr(x, "item"):  # a numpy scalar
        return undefined_to_none(x.item())
    return x


__all__ = ["MIN_ITEMS", "MIN_RESAMPLED_ITEMS", "NOT_AVAILABLE", "defined", "stat_text", "undefined_to_none"]
