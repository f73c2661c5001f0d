"""The protocol registry: every judging protocol, built-in or plugin, by name.

A protocol class registers itself with ``@register_protocol()`` (its name is
the class attribute ``name``). Built-in modules are imported when first needed
(a lookup imports the modules that can hold the name, a listing every module of
the package, in name order); third-party packages add
protocols through the ``polyjudge.protocols`` entry-point group.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from polyjudge.registry import Builtin, Registry

if TYPE_CHECKING:  # the protocols' base class loads with the first protocol, not with the listing
    from polyjudge.protocols.base import JudgeProtocol, ProtocolOptions

# The built-ins as ``--help`` lists them (name, class, summary, option names), so listing them imports
# no protocol module (and none of jinja2, numpy or the span and few-shot machinery behind them);
# tests/architecture/test_startup.py fails when an entry differs from what its module registers.
BUILTIN_PROTOCOLS: dict[str, Builtin] = {
    "da": Builtin("polyjudge.protocols.da:DirectAssessment",
        'GEMBA-DA: one 0-100 quality score per segment, as a bare number or {"score": N}.',
        ("score_mode",)),
    "forced-choice": Builtin("polyjudge.protocols.elicitation:ForcedChoice",
        "The judge picks the one option of a rating task that fits (Guerdan et al.).",
        ("task",)),
    "response-set": Builtin("polyjudge.protocols.elicitation:ResponseSet",
        "The judge picks every option of a rating task that could apply (Guerdan et al.).",
        ("task",)),
    "error-free": Builtin("polyjudge.protocols.errorfree:ErrorFree",
        "Error-free detection (WMT26): 1 when a translation has no error, else 0; no reference",
        ("score_mode",)),
    "gemba-esa": Builtin("polyjudge.protocols.esa:GembaESA",
        "GEMBA-ESA: error spans with severities, then a 0-100 score (spans scored by span-f1).",
        ("on_unlocated", "vote_threshold", "score_mode", "with_reference", "ref_name",
         "fewshot_pool", "fewshot_k", "fewshot_seed", "fewshot_buckets")),
    "contrastive-esa": Builtin("polyjudge.protocols.esa_contrastive:ContrastiveESA",
        "Contrastive ESA: a source's translations side by side, error spans and a score each.",
        ("on_unlocated", "vote_threshold")),
    "mqm": Builtin("polyjudge.protocols.mqm:GembaMQM",
        "GEMBA-MQM V2: MQM errors by severity as JSON, 10 runs merged by RRWA.",
        ("weights", "classic", "max_errors_per_severity", "echo_fields", "with_reference",
         "ref_name", "fewshot_pool", "fewshot_k", "fewshot_seed", "fewshot_buckets")),
    "pairwise": Builtin("polyjudge.protocols.pairwise:PairwiseJudge",
        "Pairwise: which of two translations (A or B) of one source is better, or a tie.",
        ("allow_tie", "with_reference")),
    "pointwise": Builtin("polyjudge.protocols.pointwise:Pointwise",
        "One candidate, any language: correct/incorrect or a 1-5 grade (Fu & Liu, 2025).",
        ("task", "scale", "language", "score_mode")),
    "rubric": Builtin("polyjudge.protocols.rubric:Rubric",
        "Named metrics with scale and polarity, one JSON answer per call (Hada et al., 2024).",
        ("metrics", "metric", "detail", "task", "few_shot", "language", "score_mode")),
    "tsa": Builtin("polyjudge.protocols.tsa:TaggedSpanAnnotation",
        "TSA: the translation copied with numbered inline error tags (Yeom et al., WMT 2025).",
        ("weights", "on_unlocated", "min_similarity", "vote_threshold", "precision_emphasis",
         "with_reference", "ref_name", "fewshot_pool", "fewshot_k", "fewshot_seed", "fewshot_buckets")),
    "gemba-spans": Builtin("polyjudge.protocols.tsa:GembaSpans",
        "TSA ablation: each error quoted from the translation and located by search.",
        ("weights", "on_unlocated", "min_similarity", "vote_threshold", "precision_emphasis",
         "with_reference", "ref_name", "fewshot_pool", "fewshot_k", "fewshot_seed", "fewshot_buckets")),
    "direct-index": Builtin("polyjudge.protocols.tsa:DirectIndex",
        "TSA ablation: each error given as start/end character offsets.",
        ("weights", "on_unlocated", "min_similarity", "vote_threshold", "precision_emphasis",
         "with_reference", "ref_name", "fewshot_pool", "fewshot_k", "fewshot_seed", "fewshot_buckets")),
}

# Every module of polyjudge.protocols is imported on first use: a new protocol is a new module (and an
# entry above).
PROTOCOLS: Registry[type[JudgeProtocol]] = Registry(
    "protocol", package="polyjudge.protocols", entry_point_group="polyjudge.protocols",
    builtins=BUILTIN_PROTOCOLS)
register_protocol = PROTOCOLS.register


def available_protocols() -> list[str]:
    """Registered protocol names, built-ins first in a fixed order, then plugins."""
    return PROTOCOLS.names()


def document_protocols() -> list[str]:
    """The protocols that judge whole documents (``--unit document``; their ``document_units``), by name."""
    return sorted(name for name, cls in PROTOCOLS.items() if cls.document_units)


def get_protocol(name: str, options: ProtocolOptions | None = None) -> JudgeProtocol:
    """A protocol instance; an unknown name raises UnknownNameError (a KeyError) listing the valid ones."""
    return PROTOCOLS.get(name)(options)


__all__ = ["BUILTIN_PROTOCOLS", "PROTOCOLS", "available_protocols", "document_protocols", "get_protocol",
           "register_protocol"]
