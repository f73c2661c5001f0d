"""Every number the report shows, formatted in one place.

Tables, plot labels and summaries call these functions, so one quantity
always reads the same wherever it appears. Files the engine writes have their
own formats (:mod:`polyjudge.rundir.records`); nothing here touches them.
"""

from __future__ import annotations

import math
from typing import Any

from polyjudge.data.numbers import NOT_AVAILABLE
from polyjudge.data.numbers import defined as _finite  # the one rule of what is undefined


def number(x: float | None) -> str:
    """A short number for tables and plot labels: three significant digits, whole
    numbers from 1000, scientific notation from 1e5 and below 1e-3; ``n/a`` for none."""
    f = _finite(x)
    if f is None:
        return NOT_AVAILABLE
    if f != 0 and (abs(f) >= 1e5 or abs(f) < 1e-3):
        return f"{f:.2e}"
    return f"{f:.3g}" if abs(f) < 1000 else f"{f:.0f}"


def interval(lo: float | None, hi: float | None) -> str:
    """A confidence interval: ``[lo, hi]`` in :func:`number` form; ``n/a`` when either end is undefined."""
    if _finite(lo) is None or _finite(hi) is None:
        return NOT_AVAILABLE
    return f"[{number(lo)}, {number(hi)}]"


def percent(part: float, whole: float = 1.0, *, digits: int = 1) -> str:
    """``part`` as a percentage of ``whole`` (a share when ``whole`` is 1); ``n/a`` if undefined."""
    if not whole:
        return NOT_AVAILABLE
    p = _finite(100 * part / whole)
    return NOT_AVAILABLE if p is None else f"{p:.{digits}f}%"


def usd(x: float) -> str:
    """A cost in US dollars, to a hundredth of a cent (small runs cost fractions of a cent)."""
    return f"${x:.4f}"


def seconds(x: float, *, digits: int = 1) -> str:
    """A duration in seconds."""
    return f"{x:.{digits}f} s"


def general(x: Any) -> str:
    """``%.4g``, the form ``polyjudge validate`` uses for β and τ in its JSON keys
    (so the report can find them) and in the labels that name them."""
    if x is None:
        return "-"
    if isinstance(x, float | int) and not isinstance(x, bool):
        f = float(x)
        return "nan" if math.isnan(f) else f"{f:.4g}"
    return str(x)


def svg_number(x: float, *, digits: int = 1) -> str:
    """A coordinate or attribute value inside SVG markup (not text the reader sees)."""
    return f"{x:.{digits}f}"


__all__ = ["NOT_AVAILABLE", "general", "interval", "number", "percent", "seconds", "svg_number", "usd"]
