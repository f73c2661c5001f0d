"""Every span-F1 variant of span-level MT meta-evaluation (Perrella et al., 2026).

The WMT25 official scorer (:mod:`~polyjudge.metaeval.spans.scoring`) is one way
to score error spans; the span-level meta-evaluation paper shows that the
ranking of span metrics depends on three choices, each one table here:

* :data:`MATCHES`, what a matched pair is worth: ``exact`` (the same start and
  end), ``overlap`` (any shared character, binary credit), ``wmt23`` (shared
  characters counted), ``mpp`` (partial credit: each span is credited with the
  share of its characters matched, precision over predicted spans, recall over
  gold spans), and ``wmt25``, the official scorer (severity-aware characters
  with half credit for a wrong severity; the default);
* :data:`MATCHINGS`, which pairs may match: ``optimal`` (one-to-one, the
  assignment that maximises the measure), ``greedy`` (one-to-one, pairs taken in
  descending order of ``2 * overlap / (len_pred + len_gold)``), ``many`` (no
  pairing: every span is compared with all the coverage of the other side);
* :data:`AVERAGES`: ``micro`` (numerators and denominators summed over the
  segments of a language pair) or ``macro`` (the mean of per-segment P, R, F1).

Conventions, as span-mt-metrics-eval's: an empty denominator makes that
precision or recall 1 (so a segment with no gold and no predicted span scores
1, 1, 1), F1 is 0 when precision and recall are both 0. The spans scored are
those the official scorer counts: located, non-empty, of a known severity other
than ``undecided``; severities matter only where the library's many-to-many
partial credit keeps one coverage layer per severity label.

:class:`SpanVariant` is the frozen choice of the three;
:func:`polyjudge.metaeval.spans.scoring.score_segments` scores the segments of
one language pair under it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from polyjudge.data.errors import InputError
from polyjudge.data.spans import SEVERITY_ROW, Span

__all__ = ["AVERAGES", "DEFAULT_MATCH", "MATCHES", "MATCHINGS", "Interval", "Parts", "SpanMatch", "SpanVariant",
           "VariantScore", "aggregate", "all_variants", "parse_variant", "segment_parts", "variant_rows"]

Interval = tuple[int, int, str]  # start, end (exclusive), severity label
Pairs = list[tuple[int, int]]  # (prediction index, gold index)
_TOL = 1e-12


@dataclass(frozen=True, slots=True)
class Parts:
    """One segment's (or a sum of segments') precision and recall fractions, before dividing."""

    p_num: float = 0.0
    p_den: float = 0.0
    r_num: float = 0.0
    r_den: float = 0.0

    def __add__(self, other: Parts) -> Parts:
        return Parts(self.p_num + other.p_num, self.p_den + other.p_den, self.r_num + other.r_num,
                     self.r_den + other.r_den)

    def prf(self) -> tuple[float, float, float]:
        """Precision, recall and F1 (an empty side scores 1; F1 is 0 when both are 0)."""
        p = self.p_num / self.p_den if self.p_den > 0 else 1.0
        r = self.r_num / self.r_den if self.r_den > 0 else 1.0
        return p, r, (2 * p * r / (p + r) if p + r > 0 else 0.0)


def _counts(tp: float, n_pred: float, n_gold: float) -> Parts:
    return Parts(tp, n_pred, tp, n_gold)


def _overlap(a: Interval, b: Interval) -> int:
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


# ------------------------------------------------------------------ one-to-one matchings
def greedy_pairs(pred: Sequence[Interval], gold: Sequence[Interval]) -> Pairs:
    """Pairs taken by descending ``2 * overlap / (len_pred + len_gold)`` (ties: prediction, then gold order)."""
    cands = [(2 * _overlap(p, g) / ((p[1] - p[0]) + (g[1] - g[0])), i, j)
             for i, p in enumerate(pred) for j, g in enumerate(gold) if _overlap(p, g) > 0]
    cands.sort(key=lambda c: -c[0])  # stable: equal scores keep their (i, j) order
    used_p: set[int] = set()
    used_g: set[int] = set()
    out: Pairs = []
    for _, i, j in cands:
        if i not in used_p and j not in used_g:
            used_p.add(i)
            used_g.add(j)
            out.append((i, j))
    return out


def assignment_pairs(pred: Sequence[Interval], gold: Sequence[Interval],
                     worth: Callable[[Interval, Interval], float]) -> Pairs:
    """The one-to-one pairing with the largest summed ``worth`` (pairs worth nothing dropped).

    Exact for the measures whose true positives are that sum (exact, overlap,
    wmt23): every maximal pairing gives the same scores.
    """
    if not pred or not gold:
        return []
    from scipy.optimize import linear_sum_assignment  # here: scoring without it needs no scipy

    w = np.array([[worth(p, g) for g in gold] for p in pred], dtype=np.float64)
    rows, cols = linear_sum_assignment(w, maximize=True)
    return [(int(i), int(j)) for i, j in zip(rows, cols, strict=True) if w[i, j] > 0]


def _mpp_key(pc: float, rc: float, n_pred: int, n_gold: int, k: int) -> tuple[float, ...]:
    p, r, f = Parts(pc, n_pred, rc, n_gold).prf()
    return (f, p + r, p, r, float(k))


def _better(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    for x, y in zip(a, b, strict=True):
        if x > y + _TOL:
            return True
        if x < y - _TOL:
            return False
    return False


def _assignment_bound(weights: np.ndarray, rows: int, free: list[int]) -> float:
    """The largest sum of ``weights[rows:, free]`` a one-to-one pairing reaches (0 when either side is empty)."""
    if rows >= weights.shape[0] or not free:
        return 0.0
    from scipy.optimize import linear_sum_assignment

    sub = weights[rows:][:, free]
    r, c = linear_sum_assignment(sub, maximize=True)
    return float(sub[r, c].sum())


def mpp_optimal_pairs(pred: Sequence[Interval], gold: Sequence[Interval]) -> Pairs:
    """The one-to-one pairing with the best segment MPP F1 (then P + R, P, R, more pairs).

    F1 of summed partial credits is not a sum over pairs, so no assignment
    solver applies; a depth-first search over the overlapping pairs finds it,
    starting from the greedy and the assignment pairings and cut where even the
    best remaining precision and recall credits (each the best one-to-one
    assignment of the remaining predictions to the unused gold spans) cannot
    reach the best pairing found.
    """
    options = [sorted(((j, _overlap(p, g) / (p[1] - p[0]), _overlap(p, g) / (g[1] - g[0]))
                       for j, g in enumerate(gold) if _overlap(p, g) > 0), key=lambda o: -(o[1] + o[2]))
               for p in pred]
    if not any(options):
        return []
    credit = {(i, j): (cp, cr) for i, opts in enumerate(options) for j, cp, cr in opts}
    n_pred, n_gold = len(pred), len(gold)

    def key_of(pairs: Pairs) -> tuple[float, ...]:
        return _mpp_key(sum(credit[x][0] for x in pairs), sum(credit[x][1] for x in pairs), n_pred, n_gold,
                        len(pairs))

    best: list[Any] = [_mpp_key(0.0, 0.0, n_pred, n_gold, 0), []]
    for start in (greedy_pairs(pred, gold), assignment_pairs(pred, gold, lambda p, g: (
            _overlap(p, g) / (p[1] - p[0]) + _overlap(p, g) / (g[1] - g[0])))):
        if _better(key_of(start), best[0]):
            best[0], best[1] = key_of(start), list(start)
    wp = np.zeros((n_pred, n_gold))
    wr = np.zeros((n_pred, n_gold))
    for (i, j), (cp, cr) in credit.items():
        wp[i, j], wr[i, j] = cp, cr
    chosen: Pairs = []

    def cut(i: int, free: list[int], pc: float, rc: float) -> bool:
        """Whether no continuation can reach the best F1: first with each remaining prediction's and free gold
        span's best credit (cheap), then with the best one-to-one assignments of the precision and the recall
        credits, each on its own."""
        if i == n_pred or not free:
            return bool(i < n_pred and Parts(pc, n_pred, rc, n_gold).prf()[2] < best[0][0] - _TOL)
        rest_p, rest_r = wp[i:][:, free], wr[i:][:, free]
        cheap_p = min(float(rest_p.max(axis=1).sum()), float(rest_p.max(axis=0).sum()))
        cheap_r = min(float(rest_r.max(axis=1).sum()), float(rest_r.max(axis=0).sum()))
        if Parts(pc + cheap_p, n_pred, rc + cheap_r, n_gold).prf()[2] < best[0][0] - _TOL:
            return True
        reach = Parts(pc + _assignment_bound(wp, i, free), n_pred, rc + _assignment_bound(wr, i, free), n_gold)
        return bool(reach.prf()[2] < best[0][0] - _TOL)

    def walk(i: int, used: int, pc: float, rc: float) -> None:
        if cut(i, [j for j in range(n_gold) if not used >> j & 1], pc, rc):
            return
        if i == n_pred:
            key = _mpp_key(pc, rc, n_pred, n_gold, len(chosen))
            if _better(key, best[0]):
                best[0], best[1] = key, list(chosen)
            return
        for j, cp, cr in options[i]:
            if not used >> j & 1:
                chosen.append((i, j))
                walk(i + 1, used | 1 << j, pc + cp, rc + cr)
                chosen.pop()
        walk(i + 1, used, pc, rc)

    walk(0, 0, 0.0, 0.0)
    return sorted(best[1])


# ------------------------------------------------------------------ one-to-one scores of a pairing
def _exact_worth(p: Interval, g: Interval) -> float:
    return 1.0 if (p[0], p[1]) == (g[0], g[1]) else 0.0


def _overlap_worth(p: Interval, g: Interval) -> float:
    return 1.0 if _overlap(p, g) > 0 else 0.0


def _chars_worth(p: Interval, g: Interval) -> float:
    return float(_overlap(p, g))


def _paired_exact(pred: Sequence[Interval], gold: Sequence[Interval], pairs: Pairs) -> Parts:
    return _counts(sum(_exact_worth(pred[i], gold[j]) for i, j in pairs), len(pred), len(gold))


def _paired_overlap(pred: Sequence[Interval], gold: Sequence[Interval], pairs: Pairs) -> Parts:
    return _counts(float(sum(1 for i, j in pairs if _overlap(pred[i], gold[j]) > 0)), len(pred), len(gold))


def _paired_chars(pred: Sequence[Interval], gold: Sequence[Interval], pairs: Pairs) -> Parts:
    tp = float(sum(_overlap(pred[i], gold[j]) for i, j in pairs))
    return _counts(tp, float(sum(p[1] - p[0] for p in pred)), float(sum(g[1] - g[0] for g in gold)))


def _paired_mpp(pred: Sequence[Interval], gold: Sequence[Interval], pairs: Pairs) -> Parts:
    pc = sum(_overlap(pred[i], gold[j]) / (pred[i][1] - pred[i][0]) for i, j in pairs)
    rc = sum(_overlap(pred[i], gold[j]) / (gold[j][1] - gold[j][0]) for i, j in pairs)
    return Parts(pc, float(len(pred)), rc, float(len(gold)))


# ------------------------------------------------------------------ many-to-many (coverage) scores
def _coverage(spans: Sequence[Interval], layers: dict[str, int], width: int) -> np.ndarray:
    cov = np.zeros((max(len(layers), 1), width), dtype=np.float64)
    for s, e, sev in spans:
        cov[layers.get(sev, 0), s:e] += 1.0
    return cov


def _many_exact(pred: Sequence[Interval], gold: Sequence[Interval]) -> Parts:
    from collections import Counter

    cp = Counter((s, e) for s, e, _ in pred)
    cg = Counter((s, e) for s, e, _ in gold)
    return _counts(float(sum(min(n, cg[k]) for k, n in cp.items())), len(pred), len(gold))


def _many_overlap(pred: Sequence[Interval], gold: Sequence[Interval]) -> Parts:
    hit_p = sum(1 for p in pred if any(_overlap(p, g) > 0 for g in gold))
    hit_g = sum(1 for g in gold if any(_overlap(p, g) > 0 for p in pred))
    return Parts(float(hit_p), float(len(pred)), float(hit_g), float(len(gold)))


def _many_chars(pred: Sequence[Interval], gold: Sequence[Interval]) -> Parts:
    width = max([0, *(e for _, e, _ in pred), *(e for _, e, _ in gold)])
    cp = _coverage(pred, {}, width).sum(axis=0)
    cg = _coverage(gold, {}, width).sum(axis=0)
    return _counts(float(np.minimum(cp, cg).sum()), float(cp.sum()), float(cg.sum()))


def _matched_share(mine: np.ndarray, theirs: np.ndarray) -> np.ndarray:
    """Per severity layer and character, the share of ``mine``'s coverage that is matched.

    Same-severity coverage matches first; what is left on both sides matches
    across severities, spread over each side's layers in proportion to what
    each has left.
    """
    same = np.minimum(mine, theirs)
    left_mine = mine - same
    left_theirs = theirs - same
    tot_mine = left_mine.sum(axis=0)
    cross = np.minimum(tot_mine, left_theirs.sum(axis=0))
    scale = np.divide(cross, tot_mine, out=np.zeros_like(cross), where=tot_mine > 0)
    matched = same + left_mine * scale
    share: np.ndarray = np.divide(matched, mine, out=np.zeros_like(matched), where=mine > 0)
    return share


def _many_mpp(pred: Sequence[Interval], gold: Sequence[Interval]) -> Parts:
    layers: dict[str, int] = {}
    for *_, sev in (*pred, *gold):
        layers.setdefault(sev, len(layers))
    width = max([0, *(e for _, e, _ in pred), *(e for _, e, _ in gold)])
    cp, cg = _coverage(pred, layers, width), _coverage(gold, layers, width)
    share_p, share_g = _matched_share(cp, cg), _matched_share(cg, cp)

    def credit(spans: Sequence[Interval], share: np.ndarray) -> float:
        return float(sum(share[layers[sev], s:e].sum() / (e - s) for s, e, sev in spans))

    return Parts(credit(pred, share_p), float(len(pred)), credit(gold, share_g), float(len(gold)))


# ------------------------------------------------------------------ the tables
@dataclass(frozen=True, slots=True)
class SpanMatch:
    """One way to credit matched spans: its name, span-mt-metrics-eval's name for it, a summary, and how it
    scores a one-to-one pairing (``paired``, with the pair worth an optimal pairing maximises, ``worth``;
    ``None`` for MPP's own search) and many-to-many coverage (``many``)."""

    name: str
    library: str
    summary: str
    paired: Callable[[Sequence[Interval], Sequence[Interval], Pairs], Parts] | None
    worth: Callable[[Interval, Interval], float] | None
    many: Callable[[Sequence[Interval], Sequence[Interval]], Parts] | None


@dataclass(frozen=True, slots=True)
class SpanMatching:
    """One rule for which spans may be paired."""

    name: str
    library: str
    summary: str


@dataclass(frozen=True, slots=True)
class SpanAverage:
    """One way to aggregate the segments of a language pair."""

    name: str
    summary: str


def _table(*entries: Any) -> dict[str, Any]:
    return {e.name: e for e in entries}


MATCHES: dict[str, SpanMatch] = _table(
    SpanMatch("wmt25", "", "the official WMT25 task-2 scorer: characters by severity, half credit for a wrong one",
              None, None, None),
    SpanMatch("exact", "EM", "a pair counts when start and end are equal", _paired_exact, _exact_worth, _many_exact),
    SpanMatch("overlap", "MP", "a pair counts when it shares a character (binary partial overlap)",
              _paired_overlap, _overlap_worth, _many_overlap),
    SpanMatch("wmt23", "WMT25", "shared characters counted (character counts, as in WMT23)",
              _paired_chars, _chars_worth, _many_chars),
    SpanMatch("mpp", "MPP", "partial credit: the share of each span's characters matched", _paired_mpp, None,
              _many_mpp),
)
MATCHINGS: dict[str, SpanMatching] = _table(
    SpanMatching("optimal", "one_to_one/optimal", "one-to-one, the pairing that maximises the measure"),
    SpanMatching("greedy", "one_to_one/greedy", "one-to-one, pairs taken by descending overlap ratio"),
    SpanMatching("many", "many_to_many", "many-to-many: each span against all the other side's coverage"),
)
AVERAGES: dict[str, SpanAverage] = _table(
    SpanAverage("micro", "sums over the segments of a language pair, then P, R, F1"),
    SpanAverage("macro", "the mean of per-segment P, R, F1"),
)
DEFAULT_MATCH = "wmt25"


@dataclass(frozen=True, slots=True)
class SpanVariant:
    """The span-F1 variant: ``match`` (:data:`MATCHES`), ``matching`` (:data:`MATCHINGS`; ``None``: ``many``
    for ``wmt25``, ``optimal`` for the others, the library's default) and ``average`` (:data:`AVERAGES`).
    The default is the official WMT25 scorer."""

    match: str = DEFAULT_MATCH
    matching: str | None = None
    average: str = "micro"

    def __post_init__(self) -> None:
        for field, value, table in (("match", self.match, MATCHES), ("average", self.average, AVERAGES)):
            if value not in table:
                raise InputError(f"unknown span {field} {value!r} (choose from {', '.join(table)})", field=field)
        if self.matching is not None and self.matching not in MATCHINGS:
            raise InputError(f"unknown span matching {self.matching!r} (choose from {', '.join(MATCHINGS)})",
                             field="matching")
        if self.match == DEFAULT_MATCH and self.matching not in (None, "many"):
            raise InputError("the wmt25 scorer compares characters, it pairs no spans: --matching many or none",
                             field="matching")

    @property
    def how(self) -> str:
        """The matching in effect."""
        if self.matching is not None:
            return self.matching
        return "many" if self.match == DEFAULT_MATCH else "optimal"

    @property
    def official(self) -> bool:
        """The WMT25 scorer as the task scored it (micro)."""
        return self.match == DEFAULT_MATCH and self.average == "micro"

    @property
    def name(self) -> str:
        return f"{self.match}/{self.how}/{self.average}"

    def as_dict(self) -> dict[str, str]:
        return {"match": self.match, "matching": self.how, "average": self.average}


def all_variants() -> list[SpanVariant]:
    """Every variant: the official scorer (micro, macro), then each other match under each matching and average."""
    out = [SpanVariant(DEFAULT_MATCH, "many", avg) for avg in AVERAGES]
    out += [SpanVariant(m, how, avg) for m in MATCHES if m != DEFAULT_MATCH for how in MATCHINGS for avg in AVERAGES]
    return out


def parse_variant(text: str) -> SpanVariant:
    """``match[/matching[/average]]`` (e.g. ``mpp/greedy/macro``) as a :class:`SpanVariant`."""
    parts = [p.strip() for p in text.split("/")]
    if not 1 <= len(parts) <= 3 or not all(parts):
        raise InputError(f"span variant {text!r} is not match[/matching[/average]]", field="variants")
    return SpanVariant(parts[0], parts[1] if len(parts) > 1 else None, parts[2] if len(parts) > 2 else "micro")


# ------------------------------------------------------------------ scoring
def intervals(spans: Sequence[Span]) -> list[Interval]:
    """The spans a variant scores: located, non-empty, of a known severity other than ``undecided``."""
    out: list[Interval] = []
    for sp in spans:
        if sp.severity not in SEVERITY_ROW:
            raise InputError(f"unknown severity {sp.severity!r}", field="severity")
        if sp.start is None or sp.end is None or sp.end <= sp.start or SEVERITY_ROW[sp.severity] is None:
            continue
        out.append((sp.start, sp.end, sp.severity))
    return out


def segment_parts(match: SpanMatch, how: str, pred: Sequence[Interval], gold: Sequence[Interval]) -> Parts:
    """One segment's :class:`Parts` under ``match`` and matching ``how``."""
    if how == "many":
        assert match.many is not None
        return match.many(pred, gold)
    assert match.paired is not None
    if how == "greedy":
        pairs = greedy_pairs(pred, gold)
    elif match.worth is None:
        pairs = mpp_optimal_pairs(pred, gold)
    else:
        pairs = assignment_pairs(pred, gold, match.worth)
    return match.paired(pred, gold, pairs)


@dataclass(frozen=True, slots=True)
class VariantScore:
    """P, R, F1 of one language pair under a variant, with the summed numerators and denominators."""

    precision: float
    recall: float
    f1: float
    parts: Parts
    segments: int

    def as_dict(self) -> dict[str, float | int]:
        p = self.parts
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1,
                "precision_num": p.p_num, "precision_den": p.p_den, "recall_num": p.r_num,
                "recall_den": p.r_den, "segments": self.segments}


def variant_rows(variant: SpanVariant, gold: Sequence[Sequence[Span]],
                 pred: Sequence[Sequence[Span]]) -> Iterator[Parts]:
    """Per segment, the :class:`Parts` of a variant other than ``wmt25`` (whose rule lives with its scorer,
    :func:`polyjudge.metaeval.spans.scoring.official_parts`)."""
    if variant.match == DEFAULT_MATCH:
        raise ValueError("the wmt25 scorer's segments come from scoring.official_parts")
    match = MATCHES[variant.match]
    for g, p in zip(gold, pred, strict=True):
        yield segment_parts(match, variant.how, intervals(p), intervals(g))


def aggregate(variant: SpanVariant, rows: Sequence[Parts]) -> VariantScore:
    """P, R, F1 of a language pair from its segments' :class:`Parts`, micro or macro as ``variant`` says."""
    total = sum(rows, Parts())
    if variant.average == "micro":
        p, r, f = total.prf()
    else:
        per = np.array([x.prf() for x in rows], dtype=np.float64).reshape(-1, 3)
        p, r, f = (float(v) for v in per.mean(axis=0)) if len(rows) else (1.0, 1.0, 1.0)
    return VariantScore(p, r, f, total, len(rows))
