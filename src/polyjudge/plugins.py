"""The one import a polyjudge plugin needs: the registering decorators and what they register.

A plugin package registers its entries with these decorators in one module
and names that module in an entry-point group of its distribution::

    [polyjudge.protocols]     my-protocol = my_pkg.judging:MyProtocol
    [polyjudge.backends]      my-backend  = my_pkg.judging:MyBackend
    [polyjudge.aggregators]   my-agg      = my_pkg.judging:my_aggregator
    [polyjudge.statistics]    my-stat     = my_pkg.stats:my_statistic
    [polyjudge.presets]       my-preset   = my_pkg.stats:my_preset
    [polyjudge.readers]       my-format   = my_pkg.inputs:read_my_format
    [polyjudge.score_formats] my-scores   = my_pkg.formats:read_my_scores
    [polyjudge.span_formats]  my-spans    = my_pkg.formats:read_my_spans
    [polyjudge.writers]       my-writer   = my_pkg.outputs:render_my_files
    [polyjudge.batch_clients] my-backend  = my_pkg.batches:MyBatchClient
    [polyjudge.batch_formats] my-lines    = my_pkg.batches:MyLineFormat

An entry point may load an object its module's decorator registered, or a
plain one (a protocol class, an aggregator function), registered under the
entry point's name. Nothing in polyjudge is edited: the entry then shows in
``--help``, in ``polyjudge protocols`` (``backends``, ``statistics``,
``readers``, ``score-formats``, ``span-formats``, ``writers``, ...),
and, for a statistic, as a column of ``meta-eval``'s per-language-pair table
and of the report. These names are kept stable across releases; anything
imported from deeper modules may move.
"""

from __future__ import annotations

from polyjudge.aggregate.runs import Aggregator, register_aggregator
from polyjudge.backends.base import GenerateRequest, GenerateResult, Message, TokenLogprob, Usage
from polyjudge.backends.batch import (
    BatchClient,
    BatchLine,
    BatchLineFormat,
    register_batch_client,
    register_batch_format,
)
from polyjudge.backends.registry import BackendSettings, JudgeSpec, RegisteredBackend, register_backend
from polyjudge.data.errors import InputError
from polyjudge.data.formats import SourceProbe
from polyjudge.data.readers import InputReader, ItemDefaults, register_reader
from polyjudge.data.records import DocumentContext, Item
from polyjudge.data.spans import Span, SpanSegment
from polyjudge.metaeval.readers import RunChoice, ScoreFormat, ScoreTable, register_score_format
from polyjudge.metaeval.spans.readers import SpanFormat, SpanRequest, register_span_format
from polyjudge.metaeval.statistics import Scores, Statistic, register_statistic
from polyjudge.metaeval.tasks import Task, register_preset
from polyjudge.protocols.base import JudgeProtocol, ParseFailure, ProtocolOptions
from polyjudge.protocols.options import NoOptions, option
from polyjudge.protocols.registry import register_protocol
from polyjudge.registry import UnknownNameError
from polyjudge.rundir import RunDir
from polyjudge.rundir.writers import OutputWriter, RunFiles, lines_body, register_writer

__all__ = [
    "Aggregator", "BackendSettings", "BatchClient", "BatchLine", "BatchLineFormat", "DocumentContext",
    "GenerateRequest", "GenerateResult", "InputError", "InputReader", "Item", "ItemDefaults", "JudgeProtocol",
    "JudgeSpec", "Message", "NoOptions", "OutputWriter", "ParseFailure", "ProtocolOptions", "RegisteredBackend",
    "RunChoice", "RunDir", "RunFiles", "ScoreFormat", "ScoreTable", "Scores", "SourceProbe", "Span", "SpanFormat",
    "SpanRequest", "SpanSegment", "Statistic", "Task", "TokenLogprob", "UnknownNameError", "Usage", "lines_body",
    "option", "register_aggregator", "register_backend", "register_batch_client", "register_batch_format",
    "register_preset", "register_protocol", "register_reader", "register_score_format", "register_span_format",
    "register_statistic", "register_writer",
]
