"""Rank span metrics under every span-F1 variant, and show where the ranking changes.

Span-level meta-evaluation ranks metrics (judges, annotators) by their span F1
against the gold; the ranking depends on the variant (Perrella et al., 2026).
:func:`rank_span_metrics` scores each metric under each
:class:`~polyjudge.metaeval.spans.variants.SpanVariant` (F1 averaged over
language pairs, as ``span_f1`` reports it) and ranks them: rank 1 is the
highest F1, equal F1s share the better rank. The first variant is the
reference the others are compared with (the official WMT25 scorer by default):
:meth:`VariantRanking.changes` says, per variant, which metrics moved and the
Kendall tau-b between the two orders of F1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from polyjudge.data.errors import InputError
from polyjudge.data.spans import SpanSegment
from polyjudge.metaeval.spans.scoring import span_f1
from polyjudge.metaeval.spans.variants import SpanVariant

__all__ = ["VariantRanking", "rank_span_metrics", "ranks_of", "read_variant_ranking"]


def ranks_of(scores: Mapping[str, float]) -> dict[str, int]:
    """Rank 1 for the highest score; equal scores share the better rank (1, 2, 2, 4)."""
    return {name: 1 + sum(1 for other in scores.values() if other > value) for name, value in scores.items()}


def _kendall_tau_b(a: Sequence[float], b: Sequence[float]) -> float:
    """Kendall's tau-b of two score lists (NaN when either is constant)."""
    import warnings

    from scipy.stats import kendalltau  # here: reading rankings needs no scipy

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant list: NaN, said by the value
        return float(kendalltau(a, b).statistic)


@dataclass(frozen=True, slots=True)
class VariantRanking:
    """F1 (``f1[variant name][metric]``) and ranks of each metric under each variant, in the order given."""

    variants: tuple[SpanVariant, ...]
    metrics: tuple[str, ...]
    f1: dict[str, dict[str, float]]

    @property
    def reference(self) -> SpanVariant:
        return self.variants[0]

    def ranks(self, variant: SpanVariant) -> dict[str, int]:
        return ranks_of(self.f1[variant.name])

    @property
    def official(self) -> SpanVariant:
        """The official WMT25 scorer (wmt25, micro) when it is among the variants, else the reference."""
        return next((v for v in self.variants if v.official), self.reference)

    def changes(self, reference: SpanVariant | None = None) -> list[dict[str, Any]]:
        """Per variant but the reference (default: the first): the metrics whose rank differs from the
        reference's and Kendall tau-b between the two orders of F1."""
        reference = reference or self.reference
        ref = self.ranks(reference)
        ref_f1 = [self.f1[reference.name][m] for m in self.metrics]
        out = []
        for v in (v for v in self.variants if v != reference):
            mine = self.ranks(v)
            moved = [m for m in self.metrics if mine[m] != ref[m]]
            tau = _kendall_tau_b(ref_f1, [self.f1[v.name][m] for m in self.metrics])
            out.append({"variant": v.name, "moved": moved, "kendall_tau": tau,
                        "winner": [m for m in self.metrics if mine[m] == 1]})
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"reference": self.reference.name, "metrics": list(self.metrics),
                "variants": [{**v.as_dict(), "name": v.name, "f1": self.f1[v.name], "ranks": self.ranks(v)}
                             for v in self.variants],
                "changes": self.changes()}

    def rank_rows(self) -> list[dict[str, Any]]:
        """One row per variant: its name, each metric's rank, how many moved from the reference, tau-b."""
        moved = {c["variant"]: c for c in self.changes()}
        rows = []
        for v in self.variants:
            c = moved.get(v.name)
            rows.append({"variant": v.name, **self.ranks(v), "moved": len(c["moved"]) if c else 0,
                         "kendall_tau": c["kendall_tau"] if c else 1.0})
        return rows


def read_variant_ranking(obj: Any, path: str) -> VariantRanking:
    """The JSON :meth:`VariantRanking.as_dict` wrote (``polyjudge span-f1 --rank ... --format json``) read
    back; a file of another shape is an InputError naming ``path`` and the field."""
    from polyjudge.metaeval.spans.variants import parse_variant

    if not (isinstance(obj, dict) and isinstance(obj.get("variants"), list) and isinstance(obj.get("metrics"), list)):
        raise InputError("not a span-metric ranking (span-f1 --rank --format json): no 'metrics' and 'variants'",
                         path=path, field="variants")
    metrics = tuple(str(m) for m in obj["metrics"])
    variants, f1 = [], {}
    for k, v in enumerate(obj["variants"]):
        where = f"variants[{k}]"
        if not isinstance(v, dict) or not isinstance(v.get("f1"), dict):
            raise InputError("a variant is an object with 'f1' per metric", path=path, field=where)
        try:
            variant = parse_variant(f"{v.get('match')}/{v.get('matching')}/{v.get('average')}")
        except InputError as exc:
            raise InputError(exc.reason, path=path, field=where) from None
        scores = v["f1"]
        bad = [m for m in metrics if not isinstance(scores.get(m), int | float) or isinstance(scores.get(m), bool)]
        if bad:
            raise InputError(f"no F1 of {', '.join(bad)}", path=path, field=f"{where}.f1")
        variants.append(variant)
        f1[variant.name] = {m: float(scores[m]) for m in metrics}
    if len(metrics) < 2 or not variants:
        raise InputError("a span-metric ranking needs two metrics and a variant", path=path, field="metrics")
    return VariantRanking(tuple(variants), metrics, f1)


def rank_span_metrics(gold: Sequence[SpanSegment], predictions: Mapping[str, Sequence[SpanSegment]],
                      variants: Sequence[SpanVariant], *, set_ids: Sequence[str] | None = ("official",),
                      missing: str = "empty") -> VariantRanking:
    """Score every metric's predicted spans against ``gold`` under every variant (the first: the reference).

    A metric none of whose predictions meets a gold segment is an InputError naming it.
    """
    if len(predictions) < 2:
        raise InputError("ranking span metrics needs at least two sets of predictions", field="rank")
    if not variants:
        raise InputError("no span variant to rank under", field="variants")
    f1: dict[str, dict[str, float]] = {v.name: {} for v in variants}
    for name, pred in predictions.items():
        for v in variants:
            result = span_f1(gold, pred, set_ids=set_ids, missing=missing, variant=v)
            if not result.per_lp:
                raise InputError(f"no prediction of {name!r} matches a gold segment", field="rank")
            f1[v.name][name] = result.avg_f1
    return VariantRanking(tuple(variants), tuple(predictions), f1)
