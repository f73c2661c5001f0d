"""Judge panels: several judges' labels for one item -> one panel label.

Rules (per item, over the judges whose judgment succeeded; NaN = failed):

- ``majority`` (categorical): the most frequent label. **Tie rule**: when
  several labels share the top count, ``tie="low"`` (default) takes the
  lowest of them (for correct=1/incorrect=0 a split panel says incorrect,
  for grades the lower grade: the conservative choice); ``"high"`` takes the
  highest, ``"none"`` leaves the item undecided (NaN) and ``"first"`` takes
  the tied label given by the earliest judge in panel order.
- ``mean`` / ``median`` (numeric).

The panel's agreement is recorded per item: the share of valid votes equal
to the most frequent label (1.0 = unanimous), whether it was unanimous, the
spread (max - min) and whether a tie occurred.

Fu & Liu (2025) report an ensemble against its weakest member:
:func:`ens_minus_min` gives Delta = Ens - Min for any statistic.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from polyjudge.aggregate.exact import exact_mean
from polyjudge.data.errors import InputError

if TYPE_CHECKING:  # numpy is imported where it computes: listing the aggregators (--help) needs none
    import numpy as np
    from numpy.typing import ArrayLike

Method = Literal["majority", "mean", "median"]
TieRule = Literal["low", "high", "none", "first"]


@dataclass(frozen=True, slots=True)
class PanelResult:
    """Per-item panel decisions (arrays of length n_items)."""

    value: np.ndarray  # panel label/score; NaN when no judge succeeded (or tie="none")
    n_votes: np.ndarray  # judges with a valid vote
    agreement: np.ndarray  # share of valid votes equal to the modal label; NaN if none
    unanimous: np.ndarray  # bool: every valid vote the same (and at least one)
    spread: np.ndarray  # max - min of the valid votes; NaN if none
    tie: np.ndarray  # bool: top count shared by several labels

    def mean_agreement(self) -> float:
        import numpy as np

        ok = ~np.isnan(self.agreement)
        return float(self.agreement[ok].mean()) if ok.any() else float("nan")


def _exact_row_means(v: np.ndarray) -> np.ndarray:
    """Each row's mean over its valid votes, correctly rounded (the panel's score does not depend on
    numpy's summation order, so equal panel scores tie on every machine); NaN for a row without votes."""
    import numpy as np

    out = np.full(v.shape[0], np.nan)
    for i, row in enumerate(v):
        votes = row[~np.isnan(row)].tolist()
        if votes:
            out[i] = exact_mean(votes)
    return out


def aggregate_panel(votes: ArrayLike, method: Method = "majority", tie: TieRule = "low") -> PanelResult:
    """Aggregate an ``items x judges`` matrix of numeric labels (NaN = missing)."""
    import numpy as np

    v = np.asarray(votes, dtype=float)
    if v.ndim != 2:
        raise InputError(f"panel votes must be an items x judges matrix, got shape {v.shape}")
    if method not in ("majority", "mean", "median"):
        raise InputError(f"unknown panel method '{method}'; use majority, mean or median")
    if tie not in ("low", "high", "none", "first"):
        raise InputError(f"unknown tie rule '{tie}'; use low, high, none or first")
    n_items, n_judges = v.shape
    valid = ~np.isnan(v)
    n_votes = valid.sum(1)
    has = n_votes > 0

    # counts[i, j] = how many valid votes of item i equal judge j's vote
    eq = (v[:, :, None] == v[:, None, :]) & valid[:, :, None] & valid[:, None, :]
    counts = eq.sum(2)
    top = counts.max(1) if n_judges else np.zeros(n_items, int)
    is_top = (counts == top[:, None]) & valid & has[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        agreement = np.where(has, top / np.maximum(n_votes, 1), np.nan)
        vmax = np.where(valid, v, -np.inf).max(1) if n_judges else np.full(n_items, -np.inf)
        vmin = np.where(valid, v, np.inf).min(1) if n_judges else np.full(n_items, np.inf)
    spread = np.where(has, vmax - vmin, np.nan)
    unanimous = has & (spread == 0)
    top_vals_lo = np.where(is_top, v, np.inf).min(1) if n_judges else np.full(n_items, np.inf)
    top_vals_hi = np.where(is_top, v, -np.inf).max(1) if n_judges else np.full(n_items, -np.inf)
    tie_arr = has & (top_vals_lo != top_vals_hi)

    if method == "majority":
        if tie == "low":
            value = top_vals_lo
        elif tie == "high":
            value = top_vals_hi
        elif tie == "first":
            first = is_top.argmax(1)
            value = v[np.arange(n_items), first]
        else:
            value = np.where(tie_arr, np.nan, top_vals_lo)
        value = np.where(has, value, np.nan)
    else:
        with warnings.catch_warnings():  # all-NaN rows warn; they are masked below
            warnings.simplefilter("ignore", RuntimeWarning)
            value = _exact_row_means(v) if method == "mean" else np.nanmedian(v, 1)
        value = np.where(has, value, np.nan)
    return PanelResult(value=value.astype(float), n_votes=n_votes, agreement=agreement,
                       unanimous=unanimous, spread=spread, tie=tie_arr)


@dataclass(frozen=True, slots=True)
class EnsMinReport:
    """Ensemble vs its weakest single judge: Delta = Ens - Min."""

    statistic: str
    ensemble: float
    min_judge: str
    min_value: float
    delta: float
    per_judge: dict[str, float]

    def to_dict(self) -> dict[str, object]:
        return {"statistic": self.statistic, "ens": self.ensemble, "min_judge": self.min_judge,
                "min": self.min_value, "delta": self.delta, "per_judge": dict(self.per_judge)}


def ens_minus_min(per_judge: Mapping[str, float], ensemble: float,
                  statistic: str = "fleiss_kappa") -> EnsMinReport:
    """Delta = Ens - Min, where Min is the lowest value among the single judges
    (NaN values are ignored; all NaN gives NaN)."""
    import numpy as np

    finite = {k: float(x) for k, x in per_judge.items() if x is not None and not np.isnan(x)}
    if not finite:
        return EnsMinReport(statistic, float(ensemble), "", float("nan"), float("nan"),
                            dict(per_judge))
    name = min(finite, key=finite.__getitem__)
    return EnsMinReport(statistic, float(ensemble), name, finite[name],
                        float(ensemble) - finite[name], dict(per_judge))
