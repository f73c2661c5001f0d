"""What can be named on the command line, read from the registries and nothing else.

``polyjudge protocols`` (and ``backends``, ``statistics``, ``aggregators``,
``presets``, ``readers``, ``score-formats``, ``span-formats``, ``writers``) print these
listings; ``--help`` texts and click choices read
the same registries, so a plugin's entry shows up everywhere at once. Each
entry carries its options with their types and defaults, so a user finds
what ``--protocol-option KEY=VALUE`` or a judge's ``?KEY=VALUE`` accepts
without reading the source.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from polyjudge.aggregate.runs import AGGREGATORS
from polyjudge.backends.registry import BACKENDS, REASONING_EFFORTS
from polyjudge.data.formats import rule_text
from polyjudge.data.readers import READERS, InputReader
from polyjudge.engine.executor import EXECUTORS
from polyjudge.protocols.options import describe_options, option_fields
from polyjudge.protocols.registry import PROTOCOLS
from polyjudge.registry import REGISTRY_KINDS, Registry, RegistryKind, resolve

if TYPE_CHECKING:
    from polyjudge.metaeval.readers import ScoreFormat
    from polyjudge.metaeval.spans.readers import SpanFormat
    from polyjudge.metaeval.statistics import Statistic
    from polyjudge.rundir.writers import OutputWriter


@dataclass(frozen=True, slots=True)
class OptionInfo:
    """One option an entry takes: its name, value type, default (text) and meaning."""

    name: str
    type: str
    default: str
    help: str


@dataclass(frozen=True, slots=True)
class EntryInfo:
    """One registered entry: its name, one-line summary, where it comes from, and its options."""

    name: str
    summary: str
    source: str
    options: tuple[OptionInfo, ...] = ()


def _default_text(field: dataclasses.Field[Any]) -> str:
    if field.default is not dataclasses.MISSING:
        value: Any = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return "required"
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def protocol_options(cls: type[Any]) -> tuple[OptionInfo, ...]:
    """A protocol's ``--protocol-option`` keys, from its options dataclass; a default the embedded judge
    replaces (its measured best, read from the same table the run applies) is shown next to the protocol's."""
    options_type = cls.options_type
    types = {name: kind for name, kind, _ in describe_options(options_type)}
    embedded = embedded_option_defaults(str(getattr(cls, "name", "")))
    return tuple(OptionInfo(f.name, types[f.name], _default_text(f), str(f.metadata.get("help", "")).strip() + (
        f" (default with the embedded judge, the default --judge: {embedded[f.name]})" if f.name in embedded
        else "")) for f in option_fields(options_type))


def embedded_option_defaults(protocol: str) -> dict[str, str]:
    """The protocol options a run with the embedded judge (and no options or template of the user's) uses
    instead of the protocol's defaults: ``backends.models``' measured defaults, which the engine applies."""
    from polyjudge.backends.models import DEFAULT_MODEL

    best = DEFAULT_MODEL.defaults
    return dict(best.protocol_options) if protocol == best.protocol else {}


def backend_options(cls: type[Any]) -> tuple[OptionInfo, ...]:
    """A backend's judge-spec options (``openai:MODEL?KEY=VALUE``; a bare name means ``KEY=true``), then
    the capabilities its class declares (``capability:NAME``, the value as the default)."""
    options = [OptionInfo(name, "text", "unset", str(meaning))
               for name, meaning in sorted(dict(cls.spec_options).items())]
    return tuple(options + [OptionInfo(f"capability:{name}", "capability", value, meaning)
                            for name, value, meaning in cls.capabilities.declared()])


def statistic_options(stat: Statistic) -> tuple[OptionInfo, ...]:
    """What a statistic declares: levels, range, labels, whether it pools language pairs."""
    return (OptionInfo("levels", "sys|seg", ",".join(stat.levels), "levels a task may use it at"),
            OptionInfo("range", "float,float", f"{stat.range[0]:g},{stat.range[1]:g}",
                       "value range (the ranking average rescales it to [0, 1])"),
            OptionInfo("label", "text", stat.label, "column label in ranking tables"),
            OptionInfo("title", "text", stat.title, "name in reports"),
            OptionInfo("pools_lps", "bool", "true" if stat.pools_lps else "false",
                       "one task may span several language pairs"),
            OptionInfo("per_lp_column", "bool", "true" if stat.per_lp_column else "false",
                       "a column of meta-eval's per-LP table (LEVEL_NAME) and of the report"))


def protocols_with_option(key: str) -> list[str]:
    """The protocols whose options include ``key`` (``score_mode``, ``with_reference``), in listing order;
    a built-in's from its declaration, so ``--help`` imports no protocol module."""
    def takes(name: str) -> bool:
        declared = PROTOCOLS.builtins.get(name)
        if declared is not None:
            return key in declared.options
        return any(o.name == key for o in protocol_options(PROTOCOLS.get(name)))

    return [name for name in PROTOCOLS.names() if takes(name)]


def reader_options(reader: InputReader) -> tuple[OptionInfo, ...]:
    """An input format's file extensions (what selects it without ``--input-format``)."""
    return (OptionInfo("extensions", "text", ",".join(reader.extensions) or "none",
                       "file extensions read with this format when --input-format is not given"),)


def input_formats() -> list[str]:
    """``--input-format`` choices of the commands that read items: every registered reader."""
    return READERS.names()


def score_format_options(fmt: ScoreFormat) -> tuple[OptionInfo, ...]:
    """A score format's level, how ``auto`` recognises it, and whether it reads a run's choices."""
    return (OptionInfo("level", "seg|sys", ",".join(fmt.levels), "the level of the scores it holds"),
            OptionInfo("detected", "rule", rule_text(fmt.detect, fmt.fallback),
                       "what --human-format/--metric-format auto takes for this format"),
            OptionInfo("run_choice", "bool", "true" if fmt.run_choice else "false",
                       "reads one judge's, aggregator's or run's scores (--judge, --aggregator, --run)"))


def span_format_options(fmt: SpanFormat) -> tuple[OptionInfo, ...]:
    """How ``auto`` recognises a span format."""
    return (OptionInfo("detected", "rule", rule_text(fmt.detect, fmt.fallback),
                       "what --gold-format/--pred-format auto takes for this format"),)


def writer_options(writer: OutputWriter) -> tuple[OptionInfo, ...]:
    """The files an output writer writes into its target folder."""
    return (OptionInfo("writes", "files", writer.writes, "the files written into the target folder"),)


def score_formats() -> tuple[str, ...]:
    """``--human-format``/``--metric-format`` choices: ``auto`` and every registered score format."""
    from polyjudge.metaeval.readers import score_format_names

    return score_format_names()


def segment_score_formats() -> tuple[str, ...]:
    """Choices of the commands that read segment scores only (``--human-format`` of pairwise, human-mqm)."""
    from polyjudge.metaeval.readers import segment_format_names

    return segment_format_names()


def span_formats() -> tuple[str, ...]:
    """``--gold-format``/``--pred-format`` choices: ``auto`` and every registered span format."""
    from polyjudge.metaeval.spans.readers import span_format_names

    return span_format_names()


def _no_options(_: Any) -> tuple[OptionInfo, ...]:
    return ()


@dataclass(frozen=True, slots=True)
class Listing:
    """One registry as the ``polyjudge KIND`` command lists it (found when listed: the
    meta-evaluation registries pull in scipy, which judging never needs)."""

    registry: Callable[[], Registry[Any]]
    options: Callable[[Any], tuple[OptionInfo, ...]]
    noun: str = ""  # how --help names the entries (default: the command name)


def _options(kind: RegistryKind) -> Callable[[Any], tuple[OptionInfo, ...]]:
    target = kind.options
    if target is None:
        return _no_options

    def options(obj: Any) -> tuple[OptionInfo, ...]:
        found: tuple[OptionInfo, ...] = resolve(target)(obj)
        return found

    return options


# One listing per listed kind of registry (polyjudge.registry.REGISTRY_KINDS, the one declaration).
LISTINGS: dict[str, Listing] = {kind.name: Listing(kind.load, _options(kind), kind.noun)
                                for kind in REGISTRY_KINDS if kind.listed}


def _source(obj: Any) -> str:
    """``built-in`` or ``plugin (MODULE)``: the home of the class, or of a record's function."""
    functions = (getattr(obj, "value", None), getattr(obj, "build", None), getattr(obj, "read", None),
                 getattr(obj, "render", None), getattr(obj, "detect", None))
    home = next((f for f in functions if callable(f)), obj)
    module = str(getattr(home, "__module__", "") or "")
    return "built-in" if module.startswith("polyjudge.") else f"plugin ({module})"


def entries(kind: str) -> list[EntryInfo]:
    """Every entry of the ``kind`` registry (``protocols``, ``backends``, ...), in listing order."""
    listing = LISTINGS[kind]
    registry = listing.registry()
    summaries = registry.describe()
    return [EntryInfo(name, summaries.get(name, ""), _source(obj), listing.options(obj))
            for name, obj in registry.items()]


__all__ = ["AGGREGATORS", "BACKENDS", "EXECUTORS", "EntryInfo", "LISTINGS", "Listing", "OptionInfo", "PROTOCOLS",
           "REASONING_EFFORTS", "backend_options", "embedded_option_defaults", "entries", "input_formats",
           "protocol_options", "protocols_with_option", "reader_options", "score_format_options", "score_formats",
           "segment_score_formats", "span_format_options", "span_formats", "statistic_options", "writer_options"]
