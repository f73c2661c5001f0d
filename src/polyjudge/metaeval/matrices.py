"""System x item score matrices, the one shape every statistic here consumes.

Missing scores are NaN. Rows are systems, columns are items (segments,
documents, ...). Keeping names next to the numbers lets human and metric
scores from different files be aligned by name rather than by position.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from polyjudge.data.errors import InputError


@dataclass(frozen=True)
class ScoreMatrix:
    """Scores of ``systems`` (rows) on ``items`` (columns); NaN = missing."""

    systems: tuple[str, ...]
    items: tuple[str, ...]
    values: np.ndarray

    def __post_init__(self) -> None:
        vals = np.asarray(self.values, dtype=float)
        if vals.ndim != 2 or vals.shape != (len(self.systems), len(self.items)):
            raise ValueError(f"values shape {vals.shape} does not match "
                             f"{len(self.systems)} systems x {len(self.items)} items")
        if len(set(self.systems)) != len(self.systems):
            raise ValueError("duplicate system names")
        if len(set(self.items)) != len(self.items):
            raise ValueError("duplicate item ids")
        object.__setattr__(self, "values", vals)

    @property
    def shape(self) -> tuple[int, int]:
        rows, cols = self.values.shape
        return int(rows), int(cols)

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[str, str, float | None]], *,
                  source: str | None = None) -> ScoreMatrix:
        """Build from (system, item, score) triples; absent cells stay NaN.

        Systems and items keep their first-seen order. A repeated
        (system, item) pair is an input error: silently keeping one would
        change the statistics.
        """
        sys_index: dict[str, int] = {}
        item_index: dict[str, int] = {}
        cells: dict[tuple[int, int], float] = {}
        for system, item, score in rows:
            s = sys_index.setdefault(system, len(sys_index))
            i = item_index.setdefault(item, len(item_index))
            if (s, i) in cells:
                raise InputError(f"duplicate score for system '{system}', item '{item}'",
                                 path=source)
            cells[(s, i)] = np.nan if score is None else float(score)
        vals = np.full((len(sys_index), len(item_index)), np.nan)
        for (s, i), v in cells.items():
            vals[s, i] = v
        return cls(tuple(sys_index), tuple(item_index), vals)

    @classmethod
    def from_lists(cls, scores: Mapping[str, Sequence[float | None]], *,
                   source: str | None = None) -> ScoreMatrix:
        """Build from system -> scores in item order (the mt-metrics-eval shape)."""
        lengths = {len(v) for v in scores.values()}
        if len(lengths) > 1:
            detail = ", ".join(f"{k}: {len(v)}" for k, v in scores.items())
            raise InputError(f"systems have different numbers of scores ({detail})", path=source)
        n = lengths.pop() if lengths else 0
        vals = np.array([[np.nan if x is None else float(x) for x in v] for v in scores.values()],
                        dtype=float).reshape(len(scores), n)
        return cls(tuple(scores), tuple(str(i) for i in range(n)), vals)

    def select(self, systems: Sequence[str] | None = None,
               items: Sequence[str] | None = None) -> ScoreMatrix:
        """Rows/columns by name, in the given order; unknown names become NaN rows/columns."""
        systems = tuple(self.systems if systems is None else systems)
        items = tuple(self.items if items is None else items)
        srow = {s: k for k, s in enumerate(self.systems)}
        icol = {s: k for k, s in enumerate(self.items)}
        out = np.full((len(systems), len(items)), np.nan)
        rs = np.array([srow.get(s, -1) for s in systems], dtype=int)
        cs = np.array([icol.get(i, -1) for i in items], dtype=int)
        ok_r, ok_c = rs >= 0, cs >= 0
        if ok_r.any() and ok_c.any():
            out[np.ix_(ok_r, ok_c)] = self.values[np.ix_(rs[ok_r], cs[ok_c])]
        return ScoreMatrix(systems, items, out)

    def drop_systems(self, names: Iterable[str]) -> ScoreMatrix:
        drop = set(names)
        return self.select([s for s in self.systems if s not in drop])

    def negated(self) -> ScoreMatrix:
        """Flip orientation (e.g. MQM error points -> higher is better)."""
        return ScoreMatrix(self.systems, self.items, -self.values)

    def system_means(self) -> np.ndarray:
        """Mean over the items a system has scores for (NaN when it has none; no overflow, see row_means)."""
        return row_means(self.values, ~np.isnan(self.values))

    def system_scores(self) -> dict[str, float]:
        return dict(zip(self.systems, self.system_means().tolist()))


def row_means(values: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Mean of each row over the given cells only (NaN for a row without any).

    System scores compared with each other must average the same cells: this is
    how a system score is restricted to the segments both sides scored.
    """
    v = np.where(cells, np.asarray(values, dtype=float), np.nan)
    n = np.sum(cells, axis=1)
    s = np.nansum(v, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        means: np.ndarray = np.where(n > 0, s / np.maximum(n, 1), np.nan)
    wild = ~np.isfinite(s) & (n > 0)  # a sum of 1e308s overflowed; the mean itself never does: divide first
    if wild.any():
        means[wild] = np.nansum(v[wild] / n[wild, None], axis=1)
    return means


def align(human: ScoreMatrix, metric: ScoreMatrix, *, name: str = "metric",
          missing_metric: str = "error", source: str | None = None) -> np.ndarray:
    """Metric values laid out like ``human`` (same systems and items, same order).

    A metric must score every cell that has a human score; with
    ``missing_metric="drop"`` such cells become NaN (and statistics skip them)
    instead of raising.
    """
    if missing_metric not in ("error", "drop"):
        raise ValueError(f"missing_metric must be 'error' or 'drop', not {missing_metric!r}")
    out = metric.select(human.systems, human.items).values
    need = ~np.isnan(human.values) & np.isnan(out)
    if need.any() and missing_metric == "error":
        s, i = np.argwhere(need)[0]
        raise InputError(
            f"metric '{name}' has no score for {int(need.sum())} cell(s) that have human scores "
            f"(first: system '{human.systems[s]}', item '{human.items[i]}'); "
            "score them, or leave such cells out explicitly with --missing-metric drop",
            path=source)
    return out
