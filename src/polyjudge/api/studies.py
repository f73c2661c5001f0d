"""The studies from Python: cross-language consistency and robustness probes.

Both judge every condition through :func:`polyjudge.api.judge`; with ``out``
each condition keeps its run directory there (re-running resumes) and the
study's tables are written beside them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from polyjudge.data.records import Item
from polyjudge.rundir.clash import Target, input_target, refuse_clashes
from polyjudge.rundir.ownership import claim_study
from polyjudge.studies.consistency import (
    ConditionSummary,
    ConsistencyConfig,
    ConsistencyResult,
    FactorTables,
    run_consistency,
)
from polyjudge.studies.probes import ProbeConfig, ProbeResult, run_probe

# What each study writes into its --out folder besides its run directories (polyjudge's own files there).
CONSISTENCY_TABLES = ("consistency.tsv", "languages.tsv", "ensemble.tsv", "spearman.tsv", "panel.tsv", "factors.tsv",
                      "factor_correlations.tsv", "factor_groups.tsv", "grade_gap.tsv", "study.json")
PROBE_TABLES = ("probe.tsv", "probe.json", "agreement.tsv")


def consistency(config: ConsistencyConfig, out: str | Path | None = None, *,
                on_condition: Callable[[ConditionSummary], None] | None = None) -> ConsistencyResult:
    """Cross-language consistency of each judge and of the panel (Fu & Liu, 2025),
    with its factor tables (``result.factors``: resource class, script, family,
    Yes/No vs grade gap), on XQuAD, MGSM or any parallel JSONL set."""
    if out is not None:
        claim_study(out, "consistency study", CONSISTENCY_TABLES, "study.json")
    return run_consistency(config, out, on_condition=on_condition)


def probe(items: Sequence[Item] | str | Path, config: ProbeConfig, out: str | Path | None = None) -> ProbeResult:
    """A robustness probe of one judge on ``items`` (a list or an input file) (Hada et al., 2024)."""
    if out is not None:
        claim_study(out, "probe study", PROBE_TABLES, "probe.json")
        if isinstance(items, (str, Path)):
            refuse_clashes([Target("-o/--out", str(out), PROBE_TABLES)], input_target("INPUT", items))
    return run_probe(items, config, out)


__all__ = ["ConditionSummary", "ConsistencyConfig", "ConsistencyResult", "FactorTables", "ProbeConfig", "ProbeResult",
           "consistency", "probe"]
