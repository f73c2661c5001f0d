"""polyjudge.metaeval.spans: character-level error-span precision, recall and F1 (WMT25 task 2).

A sub-package of meta-evaluation that imports none of its siblings: its users
(``polyjudge span-f1``, span protocols' evaluations) need neither the WMT ranking
statistics nor rating agreement:

* :mod:`~polyjudge.metaeval.spans.scoring`: the scorer (``span_f1``, ``score_lp``,
  a plain-loop ``char_f1_reference`` the vectorised one is tested against);
* :mod:`~polyjudge.metaeval.spans.readers`: spans from JSONL, WMT MQM TSV and run
  directories (several runs merged by character voting), ``read_spans`` for any;
* :mod:`~polyjudge.metaeval.spans.variants`: every span-F1 variant of span-mt-metrics-eval
  (match, matching, averaging: one table each, one frozen ``SpanVariant``);
* :mod:`~polyjudge.metaeval.spans.ranking`: span metrics ranked under each variant, and
  where the ranking changes.

It knows no judging protocol: whoever asks for a run directory to be refused
when its protocol writes no spans passes a :class:`SpanProtocols`.
"""

from polyjudge.data.spans import (
    Span,
    SpanSegment,
    check_span,
    normalise_severity,
    read_task2_tsv,
    spans_from_annotation,
    write_task2_tsv,
)
from polyjudge.metaeval.spans.ranking import VariantRanking, rank_span_metrics
from polyjudge.metaeval.spans.readers import (
    SpanMerger,
    SpanProtocols,
    lp_from_filename,
    read_run_predictions,
    read_span_jsonl,
    read_spans,
    segments_from_mqm,
    vote_merger,
)
from polyjudge.metaeval.spans.scoring import (
    SpanF1Result,
    SpanScore,
    char_counts,
    char_f1_reference,
    nothing_to_score,
    score_lp,
    span_f1,
)
from polyjudge.metaeval.spans.variants import (
    AVERAGES,
    MATCHES,
    MATCHINGS,
    SpanVariant,
    VariantScore,
    all_variants,
    parse_variant,
)

__all__ = ["AVERAGES", "MATCHES", "MATCHINGS", "Span", "SpanF1Result", "SpanMerger", "SpanProtocols", "SpanScore",
           "SpanSegment", "SpanVariant", "VariantRanking", "VariantScore", "all_variants", "char_counts",
           "char_f1_reference", "check_span", "lp_from_filename", "normalise_severity", "nothing_to_score",
           "parse_variant", "rank_span_metrics", "read_run_predictions", "read_span_jsonl", "read_spans",
           "read_task2_tsv", "score_lp", "segments_from_mqm", "span_f1", "spans_from_annotation",
           "vote_merger", "write_task2_tsv"]
