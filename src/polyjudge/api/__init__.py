"""The Python API: typed configs in, typed results out.

The command line is a thin layer over these functions (parse, call, print),
so everything the CLI does can be done from Python::

    from polyjudge.api import JudgeConfig, judge
    run = judge("items.jsonl", JudgeConfig(protocol="mqm", judges=("openai:gpt-4.1-mini",)), out="runs/mqm")

    from polyjudge.api import MetaEvalConfig, ReportConfig, meta_eval, report
    res = meta_eval(MetaEvalConfig(human="mqm.tsv", metrics={"judge": "runs/mqm"}, task=None))
    res.to_pandas()                       # one row per language pair and metric
    report(["runs/mqm"], ReportConfig(out="report.html", metaeval=res))

Every function raises :class:`polyjudge.data.errors.InputError` for bad input;
tabular results have ``to_pandas()`` (needs ``pip install 'polyjudge[pandas]'``).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers see; __all__ below makes these the public names
    from polyjudge.api.calibration import AgreementConfig, AgreementResult, agreement
    from polyjudge.api.compare import CompareFormatsConfig, CompareFormatsResult, FormatRow, compare_formats
    from polyjudge.api.inputs import InputSpec, TestSetInfo, origin_testset, read_input
    from polyjudge.api.metaeval import MetaEvalConfig, MetaEvalResult, meta_eval
    from polyjudge.api.pairwise_study import PairwiseConfig, PairwiseResult, pairwise
    from polyjudge.api.reporting import ReportConfig, report
    from polyjudge.api.spans import SpanF1Config, SpanF1Result, span_f1
    from polyjudge.api.studies import (
        ConditionSummary,
        ConsistencyConfig,
        ConsistencyResult,
        FactorTables,
        ProbeConfig,
        ProbeResult,
        consistency,
        probe,
    )
    from polyjudge.api.validation import (
        AmbiguityLevels,
        BudgetGrid,
        SimulationResult,
        ValidateConfig,
        simulate,
        validate,
        write_simulation_report,
    )
    from polyjudge.backends.registry import JudgeSpec
    from polyjudge.backends.spec import JudgesSpec, parse_judge
    from polyjudge.cache.spec import CacheSpec
    from polyjudge.data.errors import InputError
    from polyjudge.data.spec import DataSpec
    from polyjudge.engine.batches import BatchOptions, BatchRecord, batch_status, cancel_batches
    from polyjudge.engine.core import Estimate
    from polyjudge.engine.errors import BudgetExceeded
    from polyjudge.engine.pricing import ModelPrice
    from polyjudge.engine.result import RunResult
    from polyjudge.engine.session import JudgeConfig, build_protocol, estimate, judge
    from polyjudge.engine.spec import BudgetSpec, ExecutionSpec, GenerationSpec, JudgingSpec
    from polyjudge.protocols.spec import ProtocolSpec
    from polyjudge.rundir.spec import OutputSpec
    from polyjudge.validation.selection import SelectionReport
    from polyjudge.validation.simulate import SimConfig, default_grid

# Where each public name lives. Names load on first use, so `polyjudge judge` does not pay for
# scipy, the studies and the report at start-up (about 0.75 s of CPU per command).
_HOMES: dict[str, str] = {
    "CompareSystemsConfig": "polyjudge.api.systems",
    "CompareSystemsResult": "polyjudge.api.systems",
    "compare_systems": "polyjudge.api.systems",
    "ExportConfig": "polyjudge.api.export",
    "ExportResult": "polyjudge.api.export",
    "export": "polyjudge.api.export",
    "CostReport": "polyjudge.api.cost",
    "run_costs": "polyjudge.api.cost",
    "cache_stats": "polyjudge.api.cache",
    "prune_cache": "polyjudge.api.cache",
    "clear_cache": "polyjudge.api.cache",
    "AgreementConfig": "polyjudge.api.calibration",
    "AgreementResult": "polyjudge.api.calibration",
    "agreement": "polyjudge.api.calibration",
    "CompareFormatsConfig": "polyjudge.api.compare",
    "CompareFormatsResult": "polyjudge.api.compare",
    "FormatRow": "polyjudge.api.compare",
    "compare_formats": "polyjudge.api.compare",
    "InputSpec": "polyjudge.data.spec",
    "TestSetInfo": "polyjudge.api.inputs",
    "read_input": "polyjudge.api.inputs",
    "origin_testset": "polyjudge.api.inputs",
    "MetaEvalConfig": "polyjudge.api.metaeval",
    "MetaEvalResult": "polyjudge.api.metaeval",
    "meta_eval": "polyjudge.api.metaeval",
    "PairwiseConfig": "polyjudge.api.pairwise_study",
    "PairwiseResult": "polyjudge.api.pairwise_study",
    "pairwise": "polyjudge.api.pairwise_study",
    "ReportConfig": "polyjudge.api.reporting",
    "report": "polyjudge.api.reporting",
    "SpanF1Config": "polyjudge.api.spans",
    "SpanF1Result": "polyjudge.api.spans",
    "span_f1": "polyjudge.api.spans",
    "ConditionSummary": "polyjudge.api.studies",
    "ConsistencyConfig": "polyjudge.api.studies",
    "ConsistencyResult": "polyjudge.api.studies",
    "FactorTables": "polyjudge.api.studies",
    "ProbeConfig": "polyjudge.api.studies",
    "ProbeResult": "polyjudge.api.studies",
    "consistency": "polyjudge.api.studies",
    "probe": "polyjudge.api.studies",
    "AmbiguityLevels": "polyjudge.api.validation",
    "BudgetGrid": "polyjudge.api.validation",
    "SimulationResult": "polyjudge.api.validation",
    "ValidateConfig": "polyjudge.api.validation",
    "simulate": "polyjudge.api.validation",
    "validate": "polyjudge.api.validation",
    "write_simulation_report": "polyjudge.api.validation",
    "InputError": "polyjudge.data.errors",
    "BatchOptions": "polyjudge.engine.batches",
    "BatchRecord": "polyjudge.engine.batches",
    "batch_status": "polyjudge.engine.batches",
    "cancel_batches": "polyjudge.engine.batches",
    "Estimate": "polyjudge.engine.core",
    "BudgetExceeded": "polyjudge.engine.errors",
    "ModelPrice": "polyjudge.engine.pricing",
    "RunResult": "polyjudge.engine.result",
    "JudgeConfig": "polyjudge.engine.session",
    "build_protocol": "polyjudge.engine.session",
    "estimate": "polyjudge.engine.session",
    "judge": "polyjudge.engine.session",
    "SelectionReport": "polyjudge.validation.selection",
    # A judging's specification, one group per concern (each with the package it configures).
    "JudgingSpec": "polyjudge.engine.spec",
    "GenerationSpec": "polyjudge.engine.spec",
    "BudgetSpec": "polyjudge.engine.spec",
    "ExecutionSpec": "polyjudge.engine.spec",
    "JudgesSpec": "polyjudge.backends.spec",
    "parse_judge": "polyjudge.backends.spec",
    "JudgeSpec": "polyjudge.backends.registry",
    "CacheSpec": "polyjudge.cache.spec",
    "DataSpec": "polyjudge.data.spec",
    "ProtocolSpec": "polyjudge.protocols.spec",
    "OutputSpec": "polyjudge.rundir.spec",
    "SimConfig": "polyjudge.validation.simulate",
    "default_grid": "polyjudge.validation.simulate",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'polyjudge.api' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value  # later lookups are plain module attributes
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))


__all__ = [
    "AgreementConfig", "AgreementResult", "AmbiguityLevels", "BatchOptions", "BatchRecord", "BudgetExceeded",
    "BudgetGrid", "CompareFormatsConfig", "CompareFormatsResult", "CompareSystemsConfig", "CompareSystemsResult",
    "ConditionSummary", "ConsistencyConfig", "ConsistencyResult", "CostReport", "Estimate", "ExportConfig",
    "ExportResult", "FactorTables", "FormatRow", "InputError", "InputSpec", "JudgeConfig", "MetaEvalConfig",
    "MetaEvalResult", "ModelPrice", "PairwiseConfig", "PairwiseResult", "ProbeConfig", "ProbeResult", "ReportConfig",
    "RunResult", "SelectionReport", "SimConfig", "SimulationResult", "SpanF1Config", "SpanF1Result", "TestSetInfo",
    "ValidateConfig", "agreement", "batch_status", "build_protocol", "cache_stats", "cancel_batches", "clear_cache",
    "compare_formats", "compare_systems", "consistency", "default_grid", "estimate", "export", "judge", "meta_eval",
    "origin_testset", "pairwise", "probe", "prune_cache", "read_input", "report", "run_costs", "simulate", "span_f1",
    "validate", "write_simulation_report",
    "BudgetSpec", "CacheSpec", "DataSpec", "ExecutionSpec", "GenerationSpec", "JudgeSpec", "JudgesSpec", "JudgingSpec",
    "OutputSpec", "ProtocolSpec", "parse_judge",
]
