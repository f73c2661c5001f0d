"""Character-level error-span precision, recall and F1 (WMT25 task 2) from Python.

Gold and predictions can each be a task-2 TSV, a WMT MQM TSV, a JSONL of spans
or a polyjudge run directory; several runs of one item are merged by character
voting before scoring.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from polyjudge.data.errors import InputError, check_choices
from polyjudge.data.shapes import normalise_fields
from polyjudge.data.spans import SpanSegment
from polyjudge.metaeval import spans as span_scores
from polyjudge.metaeval.spans import SpanProtocols, SpanVariant, VariantRanking, vote_merger
from polyjudge.metaeval.spans.readers import SPAN_FORMATS  # the one list, beside the span readers
from polyjudge.metaeval.spans.variants import AVERAGES, MATCHES, MATCHINGS  # the tables --match etc. choose from
from polyjudge.studies.tables import aligned, data_frame

MISSING_POLICIES = ("skip", "empty", "error")
RATER_CHOICES = ("first", "all")
LP_COLUMNS = ("lp", "precision", "recall", "f1", "tp", "gold_chars", "pred_chars", "segments",
              "missing_predictions")


@dataclass(frozen=True, slots=True)
class SpanF1Config:
    """What to compare and how.

    ``set_id``: score only task-2 rows of this set (``None`` or ``"*"``: every set).
    ``missing``: gold segments without a prediction (e.g. failed judgments) are
    scored as "no errors" (``empty``, the default: the official WMT25 scorer's
    rule), left out (``skip``), or an error; they are counted either way.
    ``raters``: files with several raters per segment (WMT MQM, ESA JSONL): the ``first``, ``all`` pooled, or one
    rater's name (their segments alone; a name the file does not hold is an InputError listing its raters).
    ``vote_threshold``: share of a run directory's runs that must mark a character.
    ``match``, ``matching``, ``average``: the span-F1 variant
    (:mod:`polyjudge.metaeval.spans.variants`: ``exact``, ``overlap``, ``wmt23``, ``mpp``; ``optimal``,
    ``greedy``, ``many``; ``micro``, ``macro``); the default is the official WMT25 scorer.
    """

    def __post_init__(self) -> None:
        normalise_fields(self)  # Python shapes; TypeError names a field

    gold: str | Path
    pred: str | Path
    gold_format: str = "auto"
    pred_format: str = "auto"
    # the language pair to score, of those the gold names (default: each, on its own); the pair of
    # segments that name none
    lp: str | None = None
    judge: str | None = None  # the judge to score when a run has several
    set_id: str | None = "official"
    missing: str = "empty"
    raters: str = "first"
    vote_threshold: float = 0.5
    match: str = "wmt25"
    matching: str | None = None  # the match's own default: many for wmt25, optimal for the others
    average: str = "micro"

    @property
    def variant(self) -> SpanVariant:
        """The span-F1 variant (an InputError for a combination that does not exist)."""
        return SpanVariant(self.match, self.matching, self.average)

    def check(self) -> None:
        _ = self.variant
        check_choices(("gold-format", self.gold_format, SPAN_FORMATS), ("pred-format", self.pred_format, SPAN_FORMATS),
                      ("missing", self.missing, MISSING_POLICIES))
        check_raters(self.raters)


def check_raters(raters: object) -> None:
    """``raters`` is ``first``, ``all`` or a rater's name (a non-empty string); else an InputError."""
    if not isinstance(raters, str) or not raters.strip():
        raise InputError(f"raters must be {', '.join(RATER_CHOICES)} or a rater's name (got {raters!r})",
                         field="raters")


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


@dataclass
class SpanF1Result:
    """The scores per language pair (``scores``) and the segments they were computed from."""

    config: SpanF1Config
    scores: span_scores.SpanF1Result
    gold: list[SpanSegment]
    pred: list[SpanSegment]

    @property
    def avg_f1(self) -> float:
        return self.scores.avg_f1

    def as_dict(self) -> dict[str, Any]:
        """Per LP ``precision``, ``recall``, ``f1`` and counts, then the macro averages."""
        return self.scores.as_dict()

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2, ensure_ascii=False)

    @property
    def columns(self) -> tuple[str, ...]:
        """The TSV columns: the official scorer's (character counts) or a variant's (numerators, denominators)."""
        first = next(iter(self.scores.per_lp.values()), None)
        if first is None or self.scores.variant.official:
            return LP_COLUMNS
        return ("lp", *first.as_dict(), "missing_predictions")

    def lp_rows(self) -> list[dict[str, Any]]:
        s = self.scores
        return [{"lp": lp, **score.as_dict(), "missing_predictions": s.missing_predictions.get(lp, 0)}
                for lp, score in sorted(s.per_lp.items())]

    def to_tsv(self) -> str:
        """One line per language pair, then ``avg`` (macro averages of P, R and F1)."""
        s = self.scores
        cols = self.columns
        lines = ["\t".join(cols)]
        lines += ["\t".join(_fmt(r[c]) for c in cols) for r in self.lp_rows()]
        avg = {"lp": "avg", "precision": s.avg_precision, "recall": s.avg_recall, "f1": s.avg_f1}
        lines.append("\t".join(_fmt(avg[c]) if c in avg else "" for c in cols))
        return "\n".join(lines) + "\n"

    def to_text(self) -> str:
        s = self.scores
        text = aligned(self.to_tsv())
        if not s.variant.official:
            text += f"span-F1 variant: {s.variant.name}\n"
        if s.total_missing:
            how = {"empty": "scored as predicting no errors", "skip": "left out"}.get(s.missing, s.missing)
            text += f"gold segments without a prediction: {s.total_missing} ({how})\n"
        if s.unmatched_predictions:
            text += f"predictions without a gold segment: {s.unmatched_predictions}\n"
        if s.lps_without_predictions:
            text += f"language pairs without predictions: {', '.join(s.lps_without_predictions)}\n"
        text += "".join(f"warning: {w}\n" for w in s.warnings)
        return text

    def to_pandas(self) -> Any:
        """One row per language pair."""
        return data_frame(self.lp_rows(), self.columns)

    def write_predictions_tsv(self, path: str | Path) -> None:
        """The predictions as a task-2 TSV, hypotheses and identifiers taken from the gold."""
        by_key = {(g.system, g.doc_id, g.seg_id): g for g in self.gold}
        rows = []
        for p in self.pred:
            g = by_key.get((p.system, p.doc_id, p.seg_id))
            rows.append(replace(g, spans=p.spans) if g is not None else p)
        span_scores.write_task2_tsv(path, rows)


def _produces_spans(name: str) -> bool | None:
    from polyjudge.protocols import PROTOCOLS, UnknownNameError

    try:
        return PROTOCOLS.get(name).produces_spans
    except UnknownNameError:
        return None


def _span_protocol_names() -> list[str]:
    from polyjudge.protocols import PROTOCOLS

    return [n for n, p in PROTOCOLS.items() if p.produces_spans]


# span F1 knows no protocol; it asks these which runs can hold spans
SPAN_PROTOCOLS = SpanProtocols(_produces_spans, _span_protocol_names)


def _run_pairs(path: str | Path, segments: list[SpanSegment]) -> list[SpanSegment]:
    """A run directory's segments with the language pair of their items (segments.tsv), where they have none."""
    from polyjudge.rundir import JUDGMENTS, RunDir

    given = Path(path)
    folder = given.parent if given.is_file() and given.name == JUDGMENTS else given
    if not folder.is_dir() or not RunDir.is_run_dir(folder) or all(s.lp for s in segments):
        return segments
    pairs = {(r.system, r.doc_id, r.seg_id): f"{r.src_lang}-{r.tgt_lang}"
             for r in RunDir.open(folder).segment_rows if r.src_lang and r.tgt_lang}
    return [s if s.lp else replace(s, lp=pairs.get((s.system, s.doc_id, s.seg_id))) for s in segments]


def select_lp(lp: str | None, gold: list[SpanSegment],
              pred: list[SpanSegment]) -> tuple[list[SpanSegment], list[SpanSegment]]:
    """The segments of language pair ``lp``: when the gold names pairs, ``lp`` selects one of them (a
    pair it does not hold is an InputError naming those it does); segments naming none are labelled
    ``lp``. Without ``lp`` every pair is scored on its own, as the segments name them."""
    if lp is None:
        return gold, pred
    present = sorted({g.lp for g in gold if g.lp})
    if present and lp not in present:
        raise InputError(f"language pair {lp!r} is not in the gold spans (they hold {', '.join(present)})",
                         field="lp")
    gold = [g if g.lp else replace(g, lp=lp) for g in gold]
    pred = [p if p.lp else replace(p, lp=lp) for p in pred]
    return [g for g in gold if g.lp == lp], [p for p in pred if p.lp == lp]


def span_f1(config: SpanF1Config) -> SpanF1Result:
    """Score the predicted spans against the gold ones, per language pair.

    Nothing to score (an empty gold file, no prediction at all, e.g. every
    judgment failed, or none matching a gold segment) is an InputError saying
    which, never a result of NaNs.
    """
    config.check()
    merge = vote_merger(config.vote_threshold)
    gold, gold_warn = span_scores.read_spans(config.gold, fmt=config.gold_format, raters=config.raters,
                                             judge=config.judge, merge=merge, protocols=SPAN_PROTOCOLS)
    if not gold:
        raise InputError("no gold segments in the file: nothing to score against", path=str(config.gold))
    pred, pred_warn = span_scores.read_spans(config.pred, fmt=config.pred_format, raters=config.raters,
                                             judge=config.judge, merge=merge, protocols=SPAN_PROTOCOLS)
    gold, pred = select_lp(config.lp, _run_pairs(config.gold, gold), _run_pairs(config.pred, pred))
    if not pred:
        failed = "".join(f"; {w}" for w in pred_warn)
        raise InputError(f"no predicted spans to score{failed}", path=str(config.pred))
    set_ids = None if config.set_id in (None, "*") else (str(config.set_id),)
    scores = span_scores.span_f1(gold, pred, set_ids=set_ids, missing=config.missing, variant=config.variant)
    scores.warnings.extend(gold_warn + pred_warn)
    kept = [g for g in gold if set_ids is None or g.set_id is None or g.set_id in set_ids]
    if not kept:
        found = sorted({g.set_id or "" for g in gold})
        raise InputError(f"no gold segment has set_id {config.set_id!r} (found: {', '.join(found)}); "
                         "choose one with --set-id, or '*' for every set", path=str(config.gold), field="set_id")
    reason = span_scores.nothing_to_score(scores, len(kept), len(pred))
    if reason is not None:
        raise InputError(reason, path=str(config.pred))
    return SpanF1Result(config, scores, list(gold), list(pred))


def span_variants(names: str | Sequence[str] = "all") -> list[SpanVariant]:
    """Variants by name (``match[/matching[/average]]``, a comma-separated string or a list); ``all``: every one,
    the official scorer first."""
    items = [n.strip() for n in names.split(",")] if isinstance(names, str) else [str(n).strip() for n in names]
    if items == ["all"]:
        return span_scores.all_variants()
    variants = [span_scores.parse_variant(n) for n in items if n]
    if not variants:
        raise InputError("no span variant named", field="variants")
    return list(dict.fromkeys(variants))


@dataclass
class SpanRanking:
    """Span metrics ranked under each variant (``ranking``), and where the ranking changes."""

    config: SpanF1Config
    ranking: VariantRanking

    def as_dict(self) -> dict[str, Any]:
        return self.ranking.as_dict()

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2, ensure_ascii=False, allow_nan=True)

    def to_tsv(self) -> str:
        """One line per variant: each metric's rank, how many metrics moved from the first variant, tau-b."""
        cols = ["variant", *self.ranking.metrics, "moved", "kendall_tau"]
        lines = ["\t".join(cols)]
        lines += ["\t".join(_fmt(r[c]) for c in cols) for r in self.ranking.rank_rows()]
        return "\n".join(lines) + "\n"

    def to_text(self) -> str:
        text = aligned(self.to_tsv())
        ref = self.ranking.reference.name
        for c in self.ranking.changes():
            if c["moved"]:
                text += f"{c['variant']}: {', '.join(c['moved'])} ranked otherwise than under {ref}\n"
        return text


def _label(path: str | Path) -> str:
    from polyjudge.rundir import JUDGMENTS

    p = Path(path)
    return p.parent.name if p.name == JUDGMENTS else (p.stem if p.is_file() else p.name)


def span_f1_ranking(config: SpanF1Config, others: Mapping[str, str | Path] | Sequence[str | Path],
                    variants: str | Sequence[str] = "all", *, name: str | None = None) -> SpanRanking:
    """Rank ``config.pred`` (labelled ``name``, default its file or folder name) and ``others`` (labelled by
    the mapping's keys, or their names) by span F1 against ``config.gold`` under each variant; each is read
    and checked as :func:`span_f1` reads it. Two predictions with one label are an InputError."""
    chosen = span_variants(variants)
    pairs = [(name or _label(config.pred), config.pred)]
    pairs += list(others.items()) if isinstance(others, Mapping) else [(_label(o), o) for o in others]
    labels = [label for label, _ in pairs]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise InputError(f"two predictions are labelled {', '.join(twice)}: name them NAME=PATH", field="rank")
    read = {label: span_f1(replace(config, pred=path)) for label, path in pairs}
    set_ids = None if config.set_id in (None, "*") else (str(config.set_id),)
    gold = next(iter(read.values())).gold
    ranking = span_scores.rank_span_metrics(gold, {k: r.pred for k, r in read.items()}, chosen, set_ids=set_ids,
                                            missing=config.missing)
    return SpanRanking(config, ranking)


__all__ = ["AVERAGES", "MATCHES", "MATCHINGS", "RATER_CHOICES", "SpanF1Config", "SpanF1Result", "SpanRanking",
           "check_raters", "span_f1", "span_f1_ranking", "span_variants", "vote_merger"]
