"""Aggregations, human–judge agreement metrics and downstream metrics.

Every array is ``items x options``: ``O`` (forced-choice distribution, rows sum
to 1) or ``Ω`` (multi-label vector, entries in [0, 1]). Aggregations (Table 1):

* ``hard``: one-hot of the mode of O (ties go to the lowest option index);
* ``soft``: O itself;
* ``hrs``: ``1[Ω >= τ]`` (a set of options);
* ``srs``: Ω itself.

Per-item metrics are averaged over items (Eq. 1). The chance-corrected ones
(Cohen's κ, Fleiss' κ, Scott's π, Krippendorff's α) are corpus statistics over
the two label columns (human mode, judge mode). With these two "raters"
Fleiss' κ equals Scott's π; both are kept because practice reports both.

Logarithms are natural. Distributions are floored at ``EPS`` and renormalised
before logs, so a judge that puts zero mass on an option humans use gets a
large but finite divergence.

Downstream (§2.2.2): an item is positive for option k at cutoff τ when
``y_k >= τ`` (greater-or-equal, used everywhere in this package).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from polyjudge.metaeval.ratings import agreement

EPS = 1e-6
Agg = Literal["hard", "soft", "hrs", "srs"]

__all__ = ["EPS", "hard", "soft", "hrs", "srs", "aggregate", "METRICS", "Metric",
           "Definition", "DEFAULT_DEFINITIONS", "evaluate", "decisions",
           "decision_consistency", "estimation_bias", "prevalence"]


# -- aggregations -------------------------------------------------------------
def hard(fc_dist: np.ndarray) -> np.ndarray:
    out = np.zeros_like(fc_dist, dtype=float)
    out[np.arange(fc_dist.shape[0]), np.argmax(fc_dist, axis=1)] = 1.0
    return out


def soft(fc_dist: np.ndarray) -> np.ndarray:
    return np.asarray(fc_dist, dtype=float)


def hrs(omega: np.ndarray, tau: float) -> np.ndarray:
    return (np.asarray(omega) >= tau).astype(float)


def srs(omega: np.ndarray) -> np.ndarray:
    return np.asarray(omega, dtype=float)


def aggregate(agg: Agg, fc_dist: np.ndarray, omega: np.ndarray, tau: float) -> np.ndarray:
    """One side's vectors under an aggregation: ``fc_dist`` is O, ``omega`` is Ω."""
    if agg == "hard":
        return hard(fc_dist)
    if agg == "soft":
        return soft(fc_dist)
    if agg == "hrs":
        return hrs(omega, tau)
    if agg == "srs":
        return srs(omega)
    raise ValueError(f"unknown aggregation {agg!r}")


# -- metrics: (judge, human) -> float --------------------------------------------
def _norm(p: np.ndarray) -> np.ndarray:
    p = np.maximum(p, EPS)
    out: np.ndarray = p / p.sum(1, keepdims=True)
    return out


def kl(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Per-item KL(p ‖ q)."""
    p, q = _norm(p), _norm(q)
    per_item: np.ndarray = (p * np.log(p / q)).sum(1)
    return per_item


def cross_entropy(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Per-item H(p, q) = -Σ p log q."""
    per_item: np.ndarray = -(_norm(p) * np.log(_norm(q))).sum(1)
    return per_item


def js_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    p, q = _norm(p), _norm(q)
    m = (p + q) / 2
    per_item: np.ndarray = 0.5 * (p * np.log(p / m)).sum(1) + 0.5 * (q * np.log(q / m)).sum(1)
    return per_item


def _labels(y: np.ndarray) -> np.ndarray:
    return np.asarray(np.argmax(y, axis=1))


def hit_rate(j: np.ndarray, h: np.ndarray) -> float:
    """Mean over items of Σ_k j_k h_k: with one-hot (hard) vectors on both sides
    the share of items whose labels match; with a soft judge and a hard human
    label, the chance that one judge rating hits the human mode."""
    return float(np.mean((j * h).sum(1)))


def _sets(j: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    jb, hb = j > 0.5, h > 0.5
    return jb, hb, (jb & hb).sum(1)


def coverage(j: np.ndarray, h: np.ndarray) -> float:
    """Share of items where the judge's option set and the human set overlap:
    with a one-option judge, 'the judge's label is admissible to humans'; with a
    one-option human label, 'the judge's set covers it'."""
    _, _, inter = _sets(j, h)
    return float(np.mean(inter > 0))


def precision(j: np.ndarray, h: np.ndarray) -> float:
    """Mean |J ∩ H| / |J| over items with a non-empty judge set."""
    jb, _, inter = _sets(j, h)
    n = jb.sum(1)
    ok = n > 0
    return float(np.mean(inter[ok] / n[ok])) if ok.any() else float("nan")


def recall(j: np.ndarray, h: np.ndarray) -> float:
    """Mean |J ∩ H| / |H| over items with a non-empty human set."""
    _, hb, inter = _sets(j, h)
    n = hb.sum(1)
    ok = n > 0
    return float(np.mean(inter[ok] / n[ok])) if ok.any() else float("nan")


def efficiency(j: np.ndarray, h: np.ndarray) -> float:
    """Predictive efficiency: mean size of the judge's option set (lower is sharper)."""
    return float(np.mean((j > 0.5).sum(1)))


def bce(j: np.ndarray, h: np.ndarray) -> float:
    """Binary cross-entropy of judge probabilities against human targets, averaged
    over items and options."""
    p = np.clip(j, EPS, 1 - EPS)
    return float(np.mean(-(h * np.log(p) + (1 - h) * np.log(1 - p))))


def mse(j: np.ndarray, h: np.ndarray) -> float:
    """Squared L2 distance per item, averaged over items (the paper's MSE:
    Appendix C gives 0.01 for (.4,.6) vs (.5,.6))."""
    return float(np.mean(((j - h) ** 2).sum(1)))


def _kappa(fn: Callable[..., float]) -> Callable[[np.ndarray, np.ndarray], float]:
    def metric(j: np.ndarray, h: np.ndarray) -> float:
        q = j.shape[1]
        return fn(_labels(j), _labels(h), labels=list(range(q)))
    return metric


def _fleiss(j: np.ndarray, h: np.ndarray) -> float:
    q = j.shape[1]
    counts = hard(j) + hard(h)
    assert counts.shape[1] == q
    return agreement.fleiss_kappa(counts)


def _alpha(j: np.ndarray, h: np.ndarray) -> float:
    return agreement.krippendorff_alpha(np.stack([_labels(j), _labels(h)]).astype(float),
                                        level="nominal")


@dataclass(frozen=True)
class Metric:
    name: str
    fn: Callable[[np.ndarray, np.ndarray], float]
    higher_is_better: bool


def _mean(f: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[[np.ndarray, np.ndarray], float]:
    return lambda j, h: float(np.mean(f(j, h)))


METRICS: dict[str, Metric] = {m.name: m for m in [
    Metric("hit_rate", hit_rate, True),
    Metric("cohen_kappa", _kappa(agreement.cohen_kappa), True),
    Metric("fleiss_kappa", _fleiss, True),
    Metric("scott_pi", _kappa(agreement.scott_pi), True),
    Metric("krippendorff_alpha", _alpha, True),
    Metric("kl_hj", _mean(lambda j, h: kl(h, j)), False),  # KL(human ‖ judge)
    Metric("kl_jh", _mean(lambda j, h: kl(j, h)), False),  # KL(judge ‖ human)
    Metric("ce_hj", _mean(lambda j, h: cross_entropy(h, j)), False),  # H(human, judge)
    Metric("ce_jh", _mean(lambda j, h: cross_entropy(j, h)), False),  # H(judge, human)
    Metric("js_divergence", _mean(js_divergence), False),
    Metric("js_distance", _mean(lambda j, h: np.sqrt(np.maximum(js_divergence(j, h), 0))), False),
    Metric("coverage", coverage, True),
    Metric("efficiency", efficiency, False),
    Metric("precision", precision, True),
    Metric("recall", recall, True),
    Metric("bce", bce, False),
    Metric("mse", mse, False),
]}


@dataclass(frozen=True)
class Definition:
    """A definition of performance p = (human aggregation, judge aggregation, metric)."""

    metric: str
    judge_agg: Agg
    human_agg: Agg

    @property
    def label(self) -> str:
        return f"{self.metric} ({_short(self.judge_agg)}/{_short(self.human_agg)})"

    @property
    def higher_is_better(self) -> bool:
        return METRICS[self.metric].higher_is_better

    def uses_tau(self) -> bool:
        return "hrs" in (self.judge_agg, self.human_agg)


def _short(a: str) -> str:
    return {"hard": "h", "soft": "s"}.get(a, a)


DEFAULT_DEFINITIONS: tuple[Definition, ...] = (
    Definition("hit_rate", "hard", "hard"),
    Definition("cohen_kappa", "hard", "hard"),
    Definition("fleiss_kappa", "hard", "hard"),
    Definition("scott_pi", "hard", "hard"),
    Definition("krippendorff_alpha", "hard", "hard"),
    Definition("mse", "hard", "hard"),
    Definition("kl_hj", "soft", "soft"),
    Definition("kl_jh", "soft", "soft"),
    Definition("ce_hj", "soft", "soft"),
    Definition("ce_jh", "soft", "soft"),
    Definition("js_divergence", "soft", "soft"),
    Definition("js_distance", "soft", "soft"),
    Definition("mse", "soft", "soft"),
    Definition("coverage", "hard", "hrs"),
    Definition("precision", "hrs", "hrs"),
    Definition("recall", "hrs", "hrs"),
    Definition("efficiency", "hrs", "hrs"),
    Definition("bce", "srs", "hrs"),
    Definition("mse", "srs", "srs"),
)


def evaluate(defn: Definition, judge_O: np.ndarray, judge_omega: np.ndarray,
             human_O: np.ndarray, human_omega: np.ndarray, tau: float = 0.5) -> float:
    """Value of a definition of performance for one judge."""
    j = aggregate(defn.judge_agg, judge_O, judge_omega, tau)
    h = aggregate(defn.human_agg, human_O, human_omega, tau)
    return METRICS[defn.metric].fn(j, h)


# -- downstream ------------------------------------------------------------------
def decisions(y: np.ndarray, k: int, tau: float) -> np.ndarray:
    """s_k^τ(y) = 1[y_k >= τ] per item."""
    return np.asarray(y)[..., k] >= tau


def decision_consistency(y_judge: np.ndarray, y_human: np.ndarray, k: int, tau: float) -> float:
    """C_k^τ: share of items where judge and humans make the same decision."""
    return float(np.mean(decisions(y_judge, k, tau) == decisions(y_human, k, tau)))


def estimation_bias(y_judge: np.ndarray, y_human: np.ndarray, k: int, tau: float) -> float:
    """B_k^τ = judge prevalence - human prevalence (negative: the judge underestimates)."""
    return float(np.mean(decisions(y_judge, k, tau)) - np.mean(decisions(y_human, k, tau)))


def prevalence(y: np.ndarray, k: int, tau: float) -> float:
    return float(np.mean(decisions(y, k, tau)))
