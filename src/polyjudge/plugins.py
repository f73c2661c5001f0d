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

from polyjudge.aggregate.runs import Aggregator
from polyjudge.backends.batch import BatchClient, BatchLine, BatchLineFormat
from polyjudge.backends.registry import BackendSettings, Capabilities, JudgeSpec, RegisteredBackend
from polyjudge.data.chat import GenerateRequest, GenerateResult, Message, TokenLogprob, Usage
from polyjudge.data.errors import InputError
from polyjudge.data.formats import SourceProbe
from polyjudge.data.readers import InputReader, ItemDefaults
from polyjudge.data.records import DocumentContext, Item
from polyjudge.data.spans import Span, SpanSegment
from polyjudge.metaeval.readers import RunChoice, ScoreFormat, ScoreTable
from polyjudge.metaeval.spans.readers import SpanFormat, SpanRequest
from polyjudge.metaeval.statistics import Scores, Statistic
from polyjudge.metaeval.tasks import Task
from polyjudge.protocols.base import JudgeProtocol, ParseFailure, ProtocolOptions
from polyjudge.protocols.options import NoOptions, option
from polyjudge.registry import REGISTRY_KINDS, UnknownNameError, lazy_members
from polyjudge.rundir import RunDir
from polyjudge.rundir.writers import OutputWriter, RunFiles, lines_body

# Each kind of registry's decorator (polyjudge.registry.REGISTRY_KINDS, the one declaration), loaded on first use.
DECORATORS: dict[str, str] = {kind.register.split(":")[1]: kind.register.split(":")[0] for kind in REGISTRY_KINDS}
__getattr__, __dir__ = lazy_members(__name__, DECORATORS)

__all__ = [  # noqa: PLE0604 (the decorators are DECORATORS' names)
    "Aggregator", "BackendSettings", "BatchClient", "Capabilities", "BatchLine", "BatchLineFormat", "DocumentContext",
    "GenerateRequest", "GenerateResult", "InputError", "InputReader", "Item", "ItemDefaults", "JudgeProtocol",
    "JudgeSpec", "Message", "NoOptions", "OutputWriter", "ParseFailure", "ProtocolOptions", "RegisteredBackend",
    "RunChoice", "RunDir", "RunFiles", "ScoreFormat", "ScoreTable", "Scores", "SourceProbe", "Span", "SpanFormat",
    "SpanRequest", "SpanSegment", "Statistic", "Task", "TokenLogprob", "UnknownNameError", "Usage", "lines_body",
    "option", *DECORATORS,
]
