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

from typing import TYPE_CHECKING

from polyjudge.registry import lazy_members

if TYPE_CHECKING:  # every name of _HOMES, re-exported for type checkers (tests/architecture/test_registries.py)
    from polyjudge.api.annotate import AnnotateConfig as AnnotateConfig
    from polyjudge.api.annotate import campaign_status as campaign_status
    from polyjudge.api.annotate import export_campaign as export_campaign
    from polyjudge.api.annotate import init_campaign as init_campaign
    from polyjudge.api.annotate import serve_campaign as serve_campaign
    from polyjudge.api.cache import cache_stats as cache_stats
    from polyjudge.api.cache import clear_cache as clear_cache
    from polyjudge.api.cache import prune_cache as prune_cache
    from polyjudge.api.calibration import AgreementConfig as AgreementConfig
    from polyjudge.api.calibration import AgreementResult as AgreementResult
    from polyjudge.api.calibration import agreement as agreement
    from polyjudge.api.compare import CompareFormatsConfig as CompareFormatsConfig
    from polyjudge.api.compare import CompareFormatsResult as CompareFormatsResult
    from polyjudge.api.compare import FormatRow as FormatRow
    from polyjudge.api.compare import compare_formats as compare_formats
    from polyjudge.api.cost import CostReport as CostReport
    from polyjudge.api.cost import run_costs as run_costs
    from polyjudge.api.drift import DriftConfig as DriftConfig
    from polyjudge.api.drift import DriftPlan as DriftPlan
    from polyjudge.api.drift import DriftResult as DriftResult
    from polyjudge.api.drift import check_drift as check_drift
    from polyjudge.api.drift import plan_drift as plan_drift
    from polyjudge.api.drift import run_drift as run_drift
    from polyjudge.api.drift import save_anchor_set as save_anchor_set
    from polyjudge.api.error_free import ErrorFreeConfig as ErrorFreeConfig
    from polyjudge.api.error_free import ErrorFreeEvalResult as ErrorFreeEvalResult
    from polyjudge.api.error_free import error_free_eval as error_free_eval
    from polyjudge.api.exporting import ExportConfig as ExportConfig
    from polyjudge.api.exporting import ExportResult as ExportResult
    from polyjudge.api.exporting import export as export
    from polyjudge.api.inputs import TestSetInfo as TestSetInfo
    from polyjudge.api.inputs import origin_testset as origin_testset
    from polyjudge.api.inputs import read_input as read_input
    from polyjudge.api.metaeval import MetaEvalConfig as MetaEvalConfig
    from polyjudge.api.metaeval import MetaEvalResult as MetaEvalResult
    from polyjudge.api.metaeval import meta_eval as meta_eval
    from polyjudge.api.metric import CorpusScore as CorpusScore
    from polyjudge.api.metric import Judge as Judge
    from polyjudge.api.metric import Prediction as Prediction
    from polyjudge.api.metric import PredictionInterrupted as PredictionInterrupted
    from polyjudge.api.metric import judge_keywords as judge_keywords
    from polyjudge.api.metric import load as load
    from polyjudge.api.pairwise_study import PairwiseConfig as PairwiseConfig
    from polyjudge.api.pairwise_study import PairwiseResult as PairwiseResult
    from polyjudge.api.pairwise_study import pairwise as pairwise
    from polyjudge.api.position import position_bias as position_bias
    from polyjudge.api.reporting import ReportConfig as ReportConfig
    from polyjudge.api.reporting import report as report
    from polyjudge.api.reranking import RerankConfig as RerankConfig
    from polyjudge.api.reranking import RerankEstimate as RerankEstimate
    from polyjudge.api.reranking import RerankResult as RerankResult
    from polyjudge.api.reranking import rerank as rerank
    from polyjudge.api.reranking import rerank_estimate as rerank_estimate
    from polyjudge.api.settings import Setting as Setting
    from polyjudge.api.settings import TableKey as TableKey
    from polyjudge.api.settings import judging_settings as judging_settings
    from polyjudge.api.settle import judge as judge
    from polyjudge.api.setups import JudgePreset as JudgePreset
    from polyjudge.api.setups import judge_presets as judge_presets
    from polyjudge.api.spans import SpanF1Config as SpanF1Config
    from polyjudge.api.spans import SpanF1Result as SpanF1Result
    from polyjudge.api.spans import SpanRanking as SpanRanking
    from polyjudge.api.spans import span_f1 as span_f1
    from polyjudge.api.spans import span_f1_ranking as span_f1_ranking
    from polyjudge.api.studies import ConditionSummary as ConditionSummary
    from polyjudge.api.studies import ConsistencyConfig as ConsistencyConfig
    from polyjudge.api.studies import ConsistencyResult as ConsistencyResult
    from polyjudge.api.studies import FactorTables as FactorTables
    from polyjudge.api.studies import ProbeConfig as ProbeConfig
    from polyjudge.api.studies import ProbeResult as ProbeResult
    from polyjudge.api.studies import consistency as consistency
    from polyjudge.api.studies import probe as probe
    from polyjudge.api.study import Study as Study
    from polyjudge.api.study import StudyJudging as StudyJudging
    from polyjudge.api.study import StudyMetaEval as StudyMetaEval
    from polyjudge.api.study import StudyPlan as StudyPlan
    from polyjudge.api.study import StudyReport as StudyReport
    from polyjudge.api.study import StudyResult as StudyResult
    from polyjudge.api.study import read_study_file as read_study_file
    from polyjudge.api.study_file import load_study as load_study
    from polyjudge.api.study_file import parse_study as parse_study
    from polyjudge.api.study_file import plan_study as plan_study
    from polyjudge.api.study_file import run_study as run_study
    from polyjudge.api.systems import CompareSystemsConfig as CompareSystemsConfig
    from polyjudge.api.systems import CompareSystemsResult as CompareSystemsResult
    from polyjudge.api.systems import compare_systems as compare_systems
    from polyjudge.api.validation import AmbiguityLevels as AmbiguityLevels
    from polyjudge.api.validation import BudgetGrid as BudgetGrid
    from polyjudge.api.validation import SimulationResult as SimulationResult
    from polyjudge.api.validation import ValidateConfig as ValidateConfig
    from polyjudge.api.validation import simulate as simulate
    from polyjudge.api.validation import validate as validate
    from polyjudge.api.validation import validate_pairs as validate_pairs
    from polyjudge.api.validation import write_simulation_report as write_simulation_report
    from polyjudge.backends.registry import JudgeSpec as JudgeSpec
    from polyjudge.backends.spec import JudgesSpec as JudgesSpec
    from polyjudge.backends.spec import PanelSpec as PanelSpec
    from polyjudge.backends.spec import describe_judge as describe_judge
    from polyjudge.backends.spec import parse_judge as parse_judge
    from polyjudge.cache.spec import CacheSpec as CacheSpec
    from polyjudge.data.errors import InputError as InputError
    from polyjudge.data.records import Item as Item
    from polyjudge.data.spec import DataSpec as DataSpec
    from polyjudge.data.spec import InputSpec as InputSpec
    from polyjudge.engine.batches import BatchOptions as BatchOptions
    from polyjudge.engine.batches import BatchRecord as BatchRecord
    from polyjudge.engine.batches import batch_status as batch_status
    from polyjudge.engine.batches import cancel_batches as cancel_batches
    from polyjudge.engine.core import Estimate as Estimate
    from polyjudge.engine.errors import BudgetExceeded as BudgetExceeded
    from polyjudge.engine.pricing import ModelPrice as ModelPrice
    from polyjudge.engine.result import RunResult as RunResult
    from polyjudge.engine.session import JudgeConfig as JudgeConfig
    from polyjudge.engine.session import build_protocol as build_protocol
    from polyjudge.engine.session import estimate as estimate
    from polyjudge.engine.spec import BudgetSpec as BudgetSpec
    from polyjudge.engine.spec import ExecutionSpec as ExecutionSpec
    from polyjudge.engine.spec import GenerationSpec as GenerationSpec
    from polyjudge.engine.spec import JudgingSpec as JudgingSpec
    from polyjudge.protocols.registry import get_protocol as get_protocol
    from polyjudge.protocols.spec import ProtocolSpec as ProtocolSpec
    from polyjudge.rundir.directory import RunDir as RunDir
    from polyjudge.rundir.spec import OutputSpec as OutputSpec
    from polyjudge.validation.selection import SelectionReport as SelectionReport
    from polyjudge.validation.simulate import SimConfig as SimConfig
    from polyjudge.validation.simulate import default_grid as default_grid

# The API's public names, one per line, and where each lives: the one list (``__all__``, the lazy
# ``__getattr__`` and the TYPE_CHECKING block above follow it, and ``polyjudge`` itself exports these names
# the same way). Names load on first use, so `polyjudge judge` does not pay for scipy, the studies and the
# report at start-up (about 0.75 s of CPU per command). No name is also a submodule's (``export`` lives in
# exporting.py, ``report`` in reporting.py): importing a submodule binds it on the package under its name.
_HOMES: dict[str, str] = {
    # The judge as a metric object (notebooks: lists, DataFrames and datasets in, scores out).
    "Judge": "polyjudge.api.metric",
    "load": "polyjudge.api.metric",
    "Prediction": "polyjudge.api.metric",
    "CorpusScore": "polyjudge.api.metric",
    "PredictionInterrupted": "polyjudge.api.metric",
    "judge_keywords": "polyjudge.api.metric",
    "JudgePreset": "polyjudge.api.setups",
    "judge_presets": "polyjudge.api.setups",
    "Item": "polyjudge.data.records",
    "AnnotateConfig": "polyjudge.api.annotate",
    "init_campaign": "polyjudge.api.annotate",
    "campaign_status": "polyjudge.api.annotate",
    "export_campaign": "polyjudge.api.annotate",
    "serve_campaign": "polyjudge.api.annotate",
    "CompareSystemsConfig": "polyjudge.api.systems",
    "CompareSystemsResult": "polyjudge.api.systems",
    "compare_systems": "polyjudge.api.systems",
    "ExportConfig": "polyjudge.api.exporting",
    "ExportResult": "polyjudge.api.exporting",
    "export": "polyjudge.api.exporting",
    "CostReport": "polyjudge.api.cost",
    "DriftConfig": "polyjudge.api.drift",
    "DriftPlan": "polyjudge.api.drift",
    "DriftResult": "polyjudge.api.drift",
    "check_drift": "polyjudge.api.drift",
    "plan_drift": "polyjudge.api.drift",
    "run_drift": "polyjudge.api.drift",
    "save_anchor_set": "polyjudge.api.drift",
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
    "position_bias": "polyjudge.api.position",
    "PairwiseConfig": "polyjudge.api.pairwise_study",
    "PairwiseResult": "polyjudge.api.pairwise_study",
    "pairwise": "polyjudge.api.pairwise_study",
    "Study": "polyjudge.api.study",
    "StudyJudging": "polyjudge.api.study",
    "StudyMetaEval": "polyjudge.api.study",
    "StudyPlan": "polyjudge.api.study",
    "StudyReport": "polyjudge.api.study",
    "StudyResult": "polyjudge.api.study",
    "load_study": "polyjudge.api.study_file",
    "parse_study": "polyjudge.api.study_file",
    "plan_study": "polyjudge.api.study_file",
    "run_study": "polyjudge.api.study_file",
    "ReportConfig": "polyjudge.api.reporting",
    "report": "polyjudge.api.reporting",
    "ErrorFreeConfig": "polyjudge.api.error_free",
    "ErrorFreeEvalResult": "polyjudge.api.error_free",
    "error_free_eval": "polyjudge.api.error_free",
    "RerankConfig": "polyjudge.api.reranking",
    "RerankEstimate": "polyjudge.api.reranking",
    "RerankResult": "polyjudge.api.reranking",
    "rerank": "polyjudge.api.reranking",
    "rerank_estimate": "polyjudge.api.reranking",
    "SpanF1Config": "polyjudge.api.spans",
    "SpanF1Result": "polyjudge.api.spans",
    "span_f1": "polyjudge.api.spans",
    "SpanRanking": "polyjudge.api.spans",
    "span_f1_ranking": "polyjudge.api.spans",
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
    "validate_pairs": "polyjudge.api.validation",
    "write_simulation_report": "polyjudge.api.validation",
    "InputError": "polyjudge.data.errors",
    "RunDir": "polyjudge.rundir.directory",
    "get_protocol": "polyjudge.protocols.registry",
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
    "judge": "polyjudge.api.settle",  # the engine's judge, in rounds with until_settled
    "SelectionReport": "polyjudge.validation.selection",
    # A judging's specification, one group per concern (each with the package it configures).
    "JudgingSpec": "polyjudge.engine.spec",
    "GenerationSpec": "polyjudge.engine.spec",
    "BudgetSpec": "polyjudge.engine.spec",
    "ExecutionSpec": "polyjudge.engine.spec",
    "PanelSpec": "polyjudge.backends.spec",
    "JudgesSpec": "polyjudge.backends.spec",  # deprecated: PanelSpec's name of 0.2
    "parse_judge": "polyjudge.backends.spec",
    "describe_judge": "polyjudge.backends.spec",
    "JudgeSpec": "polyjudge.backends.registry",
    "CacheSpec": "polyjudge.cache.spec",
    "DataSpec": "polyjudge.data.spec",  # deprecated: a second name of InputSpec
    "ProtocolSpec": "polyjudge.protocols.spec",
    "OutputSpec": "polyjudge.rundir.spec",
    # Every judging setting, declared once (flags, study keys, JudgeConfig's fields follow from them).
    "Setting": "polyjudge.api.settings",
    "judging_settings": "polyjudge.api.settings",
    "TableKey": "polyjudge.api.settings",
    "read_study_file": "polyjudge.api.study",
    "SimConfig": "polyjudge.validation.simulate",
    "default_grid": "polyjudge.validation.simulate",
}


__getattr__, __dir__ = lazy_members(__name__, _HOMES)


__all__ = list(_HOMES)  # noqa: PLE0605 (one table: _HOMES)
