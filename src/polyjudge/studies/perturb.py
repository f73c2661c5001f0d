"""Robustness probes for judges (Hada et al., 2024, ablations): perturbation
sensitivity, repeated-run consistency and temperature sweeps.

These are pure functions on texts and score arrays; the CLI
(``polyjudge probe``) runs the judge and hands the scores in. Hada et al.
shuffle 10% of the words; text in a script written without spaces
(Japanese, Chinese, Thai, Lao, Khmer, Burmese) has no words to split on, so
there its grapheme clusters are shuffled (:func:`perturb_text`). A failed
judgment is ``None``/``NaN`` and is counted as a failure, never compared.
"""

from __future__ import annotations

import dataclasses
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from polyjudge.data.errors import InputError
from polyjudge.data.graphemes import graphemes, uses_spaceless_script
from polyjudge.data.languages import language_info
from polyjudge.data.records import Item

__all__ = ["shuffle_words", "shuffle_graphemes", "perturb_text", "perturb_items", "SensitivityRow",
           "sensitivity_table", "RepeatRow", "repeat_table", "TemperatureRow", "temperature_table", "records_tsv"]


def _rotate(units: list[str], movable: list[int], fraction: float, rng: np.random.Generator) -> list[str] | None:
    """Rotate ``round(fraction * len(movable))`` (at least 2) randomly chosen movable
    units through each other's places; None when nothing can change.

    A rotation changes the text unless every chosen unit is the same string, so
    such a draw is repeated (then two different units are taken): a
    perturbed item always differs from the original when it has two different units.
    """
    n = len(movable)
    if fraction <= 0 or n < 2 or len({units[i] for i in movable}) < 2:
        return None
    k = min(n, max(2, int(round(fraction * n))))
    for _ in range(20):
        pos = np.sort(rng.choice(n, size=k, replace=False))
        if len({units[movable[p]] for p in pos}) > 1:
            break
    else:  # nearly all units are equal: swap one of them with a different one
        first = int(rng.integers(n))
        other = [p for p in range(n) if units[movable[p]] != units[movable[first]]]
        pos = np.array(sorted({first, int(rng.choice(other))}))
    perm = rng.permutation(pos)  # random order of the chosen positions ...
    moved = list(units)
    for a, b in zip(perm, np.roll(perm, 1)):  # ... each takes the unit of the previous one
        moved[movable[a]] = units[movable[b]]
    return moved


def shuffle_words(text: str, fraction: float, rng: np.random.Generator) -> str:
    """Move ``round(fraction * n_words)`` (at least 2 when ``fraction > 0`` and the
    text has two different words) randomly chosen words into each other's places.

    Words are the runs of text between whitespace; the whitespace between them
    stays where it was, so a text with nothing to move is returned unchanged.
    """
    if not 0.0 <= fraction <= 1.0:
        raise InputError(f"shuffle fraction must be in [0, 1], got {fraction}")
    parts = re.split(r"(\s+)", text)
    words = [i for i, p in enumerate(parts) if p and not p.isspace()]
    moved = _rotate(parts, words, fraction, rng)
    return text if moved is None else "".join(moved)


def _movable(cluster: str) -> bool:
    """A grapheme cluster that carries a letter or a digit (not space or punctuation)."""
    return unicodedata.category(cluster[0])[0] in ("L", "N", "M")


def shuffle_graphemes(text: str, fraction: float, rng: np.random.Generator) -> str:
    """Like :func:`shuffle_words`, but the units are grapheme clusters holding a
    letter or digit, for scripts written without spaces (Japanese, Chinese, Thai,
    Lao, Khmer, Burmese): a cluster (a Thai consonant with its vowel and tone
    marks, a kana with its voicing mark) moves as a whole, and whitespace and
    punctuation stay where they are."""
    if not 0.0 <= fraction <= 1.0:
        raise InputError(f"shuffle fraction must be in [0, 1], got {fraction}")
    clusters = graphemes(text)
    movable = [i for i, c in enumerate(clusters) if _movable(c)]
    moved = _rotate(clusters, movable, fraction, rng)
    return text if moved is None else "".join(moved)


def perturb_text(text: str, fraction: float, rng: np.random.Generator,
                 language: str | None = None) -> tuple[str, str]:
    """``(perturbed text, unit)``: grapheme clusters are shuffled for a language
    written without spaces (``word_spaces`` in the shipped language table), or,
    when the language is not given or not in the table, when most of the text's
    letters are in such a script; words otherwise."""
    info = language_info(language)
    spaceless = (not info.word_spaces) if info is not None else uses_spaceless_script(text)
    if spaceless:
        return shuffle_graphemes(text, fraction, rng), "grapheme"
    return shuffle_words(text, fraction, rng), "word"


def perturb_items(items: Sequence[Item], fraction: float = 0.1, seed: int = 0) -> list[Item]:
    """Copies of ``items`` with words (or, in scripts without spaces, grapheme
    clusters) of the candidate (``tgt``) shuffled; reproducible for a given seed.
    The item's ``tgt_lang`` decides the unit (see :func:`perturb_text`).

    ``extra`` records ``perturbed`` (the fraction), ``perturb_unit`` (``word`` or
    ``grapheme``) and ``perturb_changed`` (False when the candidate had nothing
    to move, e.g. a single word: such an item is not a perturbation and the
    sensitivity table leaves it out).
    """
    rng = np.random.default_rng(seed)
    out = []
    for it in items:
        new, unit = perturb_text(it.tgt, fraction, rng, it.tgt_lang)
        out.append(dataclasses.replace(it, tgt=new, extra={**it.extra, "perturbed": fraction,
                                                           "perturb_unit": unit, "perturb_changed": new != it.tgt}))
    return out


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
    n_compared: int  # perturbed items with both judgments scored
    failures: int  # perturbed items where either judgment failed
    not_perturbed: int  # items with nothing to move (left out: they are not perturbations)
    dropped: int
    unchanged: int
    rose: int
    drop_rate: float  # dropped / n_compared
    mean_original: float
    mean_perturbed: float


def sensitivity_table(original: Sequence[float | None], perturbed: Sequence[float | None],
                      groups: Sequence[str] | None = None,
                      changed: Sequence[bool] | None = None) -> list[SensitivityRow]:
    """How often the score of a perturbed item is below the unperturbed one.

    ``changed`` marks the items whose text the perturbation actually changed
    (default: all); the others are counted in ``not_perturbed`` and compared
    with nothing, so an unperturbed text never counts as "unchanged score".
    """
    o, p = _arr(original), _arr(perturbed)
    if o.shape != p.shape:
        raise InputError(f"{o.size} original scores but {p.size} perturbed scores")
    ch = np.ones(o.size, bool) if changed is None else np.asarray(changed, dtype=bool)
    if ch.shape != o.shape:
        raise InputError(f"{ch.size} 'changed' flags for {o.size} items")
    out = []
    for g, mask in _groups(groups, o.size):
        real = mask & ch
        ok = real & ~np.isnan(o) & ~np.isnan(p)
        n = int(ok.sum())
        d = p[ok] - o[ok]
        out.append(SensitivityRow(g, int(mask.sum()), n, int(real.sum()) - n, int((mask & ~ch).sum()),
                                  int((d < 0).sum()),
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
