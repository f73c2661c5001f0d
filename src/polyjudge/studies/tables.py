"""Small helpers shared by the typed results of studies and of the API.

``to_pandas()`` is optional (pandas is an extra), and the plain-text view of a
table is the TSV with aligned columns, so every result renders the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PANDAS_HINT = "pip install 'polyjudge[pandas]'"


def require_pandas() -> Any:
    """The pandas module, or an ImportError that says how to install it."""
    try:
        import pandas
    except ImportError:
        raise ImportError(PANDAS_HINT) from None
    return pandas


def data_frame(records: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> Any:
    """A pandas DataFrame of ``records`` with exactly ``columns`` (in that order)."""
    pd = require_pandas()
    return pd.DataFrame([{c: r.get(c) for c in columns} for r in records], columns=list(columns))


def aligned(tsv: str) -> str:
    """A TSV table as plain text: columns padded to their widest cell, numbers right-aligned."""
    lines = tsv.splitlines()
    if not lines:
        return ""
    rows = [line.split("\t") for line in lines]
    n = max(len(r) for r in rows)
    rows = [r + [""] * (n - len(r)) for r in rows]
    widths = [max(len(r[c]) for r in rows) for c in range(n)]

    def numeric(cell: str) -> bool:
        try:
            float(cell)
        except ValueError:
            return False
        return True

    out = []
    for i, r in enumerate(rows):
        cells = [x.rjust(w) if i > 0 and numeric(x) else x.ljust(w) for x, w in zip(r, widths)]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out) + "\n"


__all__ = ["PANDAS_HINT", "aligned", "data_frame", "require_pandas"]
