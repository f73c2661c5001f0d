"""Robustness probes for judges (Hada et al., 2024, ablations): perturbation
sensitivity, repeated-run consistency and temperature sweeps.

These are pure functions on texts and score arrays; the CLI
(``polyjudge probe``) runs the judge and hands the scores in. A failed
judgment is ``None``/``NaN`` and is counted as a failure, never compared.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from polyjudge.data.errors import InputError
from polyjudge.data.records import Item

__all__ = ["shuffle_words", "perturb_items", "SensitivityRow", "sensitivity_table", "RepeatRow",
           "repeat_table", "TemperatureRow", "temperature_table", "records_tsv"]


def shuffle_words(text: str, fraction: float, rng: np.random.Generator) -> str:
    """Move ``round(fraction * n_words)`` (at least 2 when ``fraction > 0`` and
    the text has 2+ words) randomly chosen words into each other's places.

    The chosen positions are rotated by one, so every chosen word leaves its
    place (the text changes unless the chosen words are identical). Spacing is
    normalised to single spaces.
    """
    if not 0.0 <= fraction <= 1.0:
        raise InputError(f"shuffle fraction must be in [0, 1], got {fraction}")
    words = text.split()
    n = len(words)
    k = min(n, max(2, int(round(fraction * n)))) if fraction > 0 and n >= 2 else 0
    if k < 2:
        return " ".join(words)
    pos = np.sort(rng.choice(n, size=k, replace=False))
    perm = rng.permutation(pos)  # random order of the chosen positions ...
    moved = list(words)
    for a, b in zip(perm, np.roll(perm, 1)):  # ... each takes the word of the previous one
        moved[a] = words[b]
    return " ".join(moved)


def perturb_items(items: Sequence[Item], fraction: float = 0.1, seed: int = 0) -> list[Item]:
    """Copies of ``items`` with words of the candidate (``tgt``) shuffled;
    reproducible for a given seed. ``extra['perturbed']`` records the fraction."""
    rng = np.random.default_rng(seed)
    return [dataclasses.replace(it, tgt=shuffle_words(it.tgt, fraction, rng),
                                extra={**it.extra, "perturbed": fraction}) for it in items]


def _arr(x: Sequence[float | None]) -> np.ndarray:
    return np.array([np.nan if v is None else float(v) for v in x], dtype=float)


def _groups(keys: Sequence[str] | None, n: int) -> list[tuple[str, np.ndarray]]:
    if keys is None:
        return [("all", np.ones(n, bool))]
    if len(keys) != n:
        raise InputError(f"{len(keys)} group keys for {n} items")
    k = np.asarray(keys, dtype=object)
    out = [("all", np.ones(n, bool))]
    if len(set(keys)) > 1:
        out += [(g, k == g) for g in sorted(set(keys))]
    return out


@dataclass
class SensitivityRow:
    group: str
    n_items: int
    n_compared: int  # both judgments scored
    failures: int  # items where either judgment failed
    dropped: int
    unchanged: int
    rose: int
    drop_rate: float  # dropped / n_compared
    mean_original: float
    mean_perturbed: float


def sensitivity_table(original: Sequence[float | None], perturbed: Sequence[float | None],
                      groups: Sequence[str] | None = None) -> list[SensitivityRow]:
    """How often the score of a perturbed item is below the unperturbed one."""
    o, p = _arr(original), _arr(perturbed)
    if o.shape != p.shape:
        raise InputError(f"{o.size} original scores but {p.size} perturbed scores")
    out = []
    for g, mask in _groups(groups, o.size):
        ok = mask & ~np.isnan(o) & ~np.isnan(p)
        n = int(ok.sum())
        d = p[ok] - o[ok]
        out.append(SensitivityRow(g, int(mask.sum()), n, int(mask.sum()) - n, int((d < 0).sum()),
                                  int((d == 0).sum()), int((d > 0).sum()),
                                  float((d < 0).mean()) if n else math.nan,
                                  float(o[ok].mean()) if n else math.nan,
                                  float(p[ok].mean()) if n else math.nan))
    return out


@dataclass
class RepeatRow:
    group: str
    n_items: int
    runs: int
    n_complete: int  # items with every run scored
    failures: int  # failed runs
    all_agree: int  # complete items whose runs all gave the same score
    agree_rate: float  # all_agree / n_complete
    mean_sd: float  # mean within-item standard deviation (complete items)


def repeat_table(matrix: Any, groups: Sequence[str] | None = None) -> list[RepeatRow]:
    """Consistency of repeated runs from an ``items x runs`` score matrix (NaN = failed)."""
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2:
        raise InputError(f"expected an items x runs matrix, got shape {m.shape}")
    out = []
    for g, mask in _groups(groups, m.shape[0]):
        sub = m[mask]
        complete = ~np.isnan(sub).any(1)
        c = sub[complete]
        agree = (c == c[:, :1]).all(1) if c.size else np.zeros(0, bool)
        out.append(RepeatRow(g, int(mask.sum()), m.shape[1], int(complete.sum()), int(np.isnan(sub).sum()),
                             int(agree.sum()), float(agree.mean()) if c.shape[0] else math.nan,
                             float(c.std(1, ddof=1).mean()) if c.shape[0] and m.shape[1] > 1 else math.nan))
    return out


@dataclass
class TemperatureRow:
    temperature: float
    group: str
    n_items: int
    n_scored: int
    failures: int
    mean: float
    sd: float  # standard deviation of the item scores (ddof=1)


def temperature_table(scores: dict[float, Sequence[float | None]],
                      groups: Sequence[str] | None = None) -> list[TemperatureRow]:
    """Mean, standard deviation and failures of the scores at each temperature."""
    out = []
    for t in sorted(scores):
        s = _arr(scores[t])
        for g, mask in _groups(groups, s.size):
            v = s[mask]
            ok = v[~np.isnan(v)]
            out.append(TemperatureRow(float(t), g, int(mask.sum()), int(ok.size), int(np.isnan(v).sum()),
                                      float(ok.mean()) if ok.size else math.nan,
                                      float(ok.std(ddof=1)) if ok.size > 1 else math.nan))
    return out


def records_tsv(rows: Sequence[Any]) -> str:
    """TSV of dataclass rows (NaN as empty)."""
    if not rows:
        return ""
    cols = list(asdict(rows[0]))
    def fmt(v: Any) -> str:
        if isinstance(v, float):
            return "" if math.isnan(v) else (str(int(v)) if v.is_integer() else str(round(v, 4)))
        return str(v)
    return "\n".join(["\t".join(cols)] + ["\t".join(fmt(getattr(r, c)) for c in cols) for r in rows]) + "\n"
