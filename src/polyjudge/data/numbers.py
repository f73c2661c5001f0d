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


__all__ = ["NOT_AVAILABLE", "defined", "stat_text", "undefined_to_none"]
