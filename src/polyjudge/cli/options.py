"""The CLI conventions, in one place, so a flag means the same thing in every command.

* ``-o/--out PATH``: where output goes (a run directory, a folder of tables or a file).
* ``--format text|tsv|json``: the format of the printed (or ``--out``) results.
* ``--input-format``: the format of the main input file.
* ``-p/--protocol``, ``--judge SPEC`` (repeatable), ``--protocol-option KEY=VALUE``
  (repeatable): what judges and how; protocols, backends and aggregators are
  listed in ``--help`` from their registries.
* Spellings of 0.1.0 (``-O``, ``--option``/``-o KEY=VALUE`` of ``judge``,
  ``-o/--output`` of ``report``, ``--format`` as an input format, ...) keep
  working for one release and print a deprecation warning.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from polyjudge.api.runs import (  # light: the engine loads when a command builds its spec, not for --help
    DEFAULT_JUDGE,
    Target,
    file_target,
    input_target,
    limits,
    refuse_clashes,
)
from polyjudge.data.errors import InputError
from polyjudge.registry import Registry, UnknownNameError

if TYPE_CHECKING:
    from polyjudge.api import CacheSpec, InputSpec, JudgeSpec, JudgesSpec, JudgingSpec, ProtocolSpec

F = TypeVar("F", bound=Callable[..., Any])
OUTPUT_FORMATS = ("text", "tsv", "json")


def warn(message: str) -> None:
    click.echo(f"polyjudge: warning: {message}", err=True)


def emit(text: str, out: str | None, inputs: Sequence[Target] = ()) -> None:
    """Results to ``-o/--out FILE`` (saying where) or, without it, to standard output.

    The file is checked against the command's inputs first (:func:`guard_outputs`)."""
    from pathlib import Path

    from polyjudge.api.runs import atomic_write, check_out_path

    if out is None:
        click.echo(text, nl=False)
        return
    if Path(out).is_dir():
        raise InputError("is a directory; give a file", path=out, field="-o/--out")
    guard_outputs({"out": file_target("-o/--out", out)}, inputs)
    target = Path(out)
    check_out_path(target.parent, "-o/--out")
    if target.is_symlink():
        raise InputError("is a symlink; polyjudge does not write through symlinks", path=out, field="-o/--out")
    atomic_write(target, [text])
    click.echo(f"wrote {out}", err=True)


def guard_outputs(outputs: Mapping[str, Sequence[Target]], inputs: Sequence[Target] = ()) -> None:
    """Refuse (exit 2, naming both) an output that is one of the command's inputs or another output.

    ``outputs`` maps the click parameter names of the outputs to their targets; every other
    path-typed parameter of the running command is an input (run directories through their
    files), and ``inputs`` adds paths click does not type (e.g. ``--metric NAME=PATH``)."""
    ctx = click.get_current_context(silent=True)
    found: list[Target] = list(inputs)
    if ctx is not None:
        for param in ctx.command.params:
            if param.name in outputs or not isinstance(param.type, click.Path):
                continue
            value = ctx.params.get(param.name or "")
            flag = "/".join(param.opts) if isinstance(param, click.Option) else param.human_readable_name
            for v in value if isinstance(value, (tuple, list)) else [value]:
                found += input_target(flag, v)
    refuse_clashes([t for ts in outputs.values() for t in ts], found)


def number_list(text: str | None, flag: str) -> tuple[float, ...]:
    """A comma-separated list of numbers given to ``flag`` (``--bins 33.3,66.7``); none when not given."""
    if text is None:
        return ()
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise click.BadParameter(f"expected comma-separated numbers, got {text!r}", param_hint=flag) from None


# --------------------------------------------------------------------------- numeric flags

class FiniteFloat(click.FloatRange):
    """A float flag in a range that also refuses nan and inf (click's FloatRange lets nan through)."""

    name = "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


def positive(high: float | None = None) -> FiniteFloat:
    """A finite number above 0 (up to ``high``): timeouts, budgets, rates."""
    return FiniteFloat(min=0.0, min_open=True, max=high)


def share() -> FiniteFloat:
    """A finite number from 0 to 1 (rates, fractions, thresholds)."""
    return FiniteFloat(0.0, 1.0)


SEED = click.IntRange(0, limits.MAX_SEED)
CONCURRENCY = click.IntRange(1, limits.MAX_CONCURRENCY)
TIMEOUT = positive(limits.MAX_TIMEOUT_S)
RUNS = click.IntRange(1, limits.MAX_RUNS)
SAMPLES = click.IntRange(1, limits.MAX_SAMPLES_PER_REQUEST)
N_CTX = click.IntRange(1, limits.MAX_N_CTX)
RAY_RESOURCES = FiniteFloat(0.0, limits.MAX_RAY_RESOURCES)
FINITE = FiniteFloat()
OPEN_SHARE = FiniteFloat(0.0, 1.0, min_open=True, max_open=True)


# --------------------------------------------------------------------------- registry choices

if TYPE_CHECKING:
    _NameParam = click.ParamType[str, Any]
    _JudgeParam = click.ParamType[JudgeSpec, Any]
else:  # click's ParamType takes type arguments only from 8.4 on; pyproject allows 8.1 (.ci/run, lowest versions)
    _NameParam = click.ParamType
    _JudgeParam = click.ParamType


class RegistryChoice(_NameParam):
    """A name from a registry: valid names come from the registry (plugins included),
    and an unknown one fails with the registry's own message (exit 2)."""

    def __init__(self, registry: Registry[Any]) -> None:
        self.registry = registry
        self.name = registry.kind

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return self.registry.kind.upper()

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value is None or value in self.registry:
            return value
        try:
            self.registry.get(str(value))
        except UnknownNameError as exc:
            raise InputError(str(exc), field=param.name if param is not None else None) from None
        return value


def registry_help() -> str:
    """The ``--help`` epilog that lists registered protocols, backends and aggregators."""
    from polyjudge.api.registries import AGGREGATORS, BACKENDS, PROTOCOLS

    blocks = []
    for title, reg in (("Protocols (-p)", PROTOCOLS), ("Backends (--judge BACKEND:...)", BACKENDS),
                       ("Aggregators (--aggregate)", AGGREGATORS)):
        blocks.append("\b\n" + title + ":\n" + "\n".join(_listing(reg.describe())))
    return "\n\n".join(blocks)


def _listing(summaries: Mapping[str, str], width: int = 100) -> list[str]:
    """``  name  summary`` lines, long summaries wrapped at word boundaries under their start
    (never cut: a cut spec such as ``[,BASE_URL.`` reads as the real syntax)."""
    import textwrap

    pad = max((len(n) for n in summaries), default=0)
    lines: list[str] = []
    for name, summary in summaries.items():
        lead = f"  {name.ljust(pad)}  "
        lines += textwrap.wrap(summary, width=width, initial_indent=lead, subsequent_indent=" " * len(lead),
                               break_long_words=False, break_on_hyphens=False) or [lead.rstrip()]
    return lines


class RegistryHelpCommand(click.Command):
    """A command whose ``--help`` ends with the registries' listings (built when shown)."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self.epilog = registry_help()
        super().format_epilog(ctx, formatter)


class ProtocolListHelpOption(click.Option):
    """An option whose help names the protocols that take the protocol option ``key``.

    The names come from the registry when the help is shown (never typed by hand), so a
    protocol (a plugin's too) that gains the option is named without editing the help.
    """

    def __init__(self, *args: Any, key: str, **attrs: Any) -> None:
        super().__init__(*args, **attrs)
        self.protocol_key = key
        self.help_template = self.help or ""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        from polyjudge.api.registries import protocols_with_option

        self.help = self.help_template.replace("{protocols}", ", ".join(protocols_with_option(self.protocol_key)))
        return super().get_help_record(ctx)


# --------------------------------------------------------------------------- deprecated spellings

def legacy(*decls: str, dest: str, use: str, multiple: bool = False, is_flag: bool = False,
           type: Any = None) -> Callable[[F], F]:
    """A hidden 0.1.0 spelling of an option: still accepted, with a deprecation warning;
    its value fills ``dest`` when the new spelling was not given."""

    def deco(fn: F) -> F:
        key = f"legacy__{dest}__{decls[0].lstrip('-').replace('-', '_')}"

        def remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
            if value is None or value == () or value is False:
                return value
            warn(f"{'/'.join(decls)} is deprecated and will be removed in the next release; use {use}")
            ctx.meta[key] = value
            return value

        attrs: dict[str, Any] = {"hidden": True, "expose_value": False, "callback": remember}
        if is_flag:
            attrs["is_flag"] = True
        else:
            attrs["multiple"] = multiple
            if type is not None:
                attrs["type"] = type

        @functools.wraps(fn)
        def wrapper(*args: Any, **params: Any) -> Any:
            _fill_legacy(click.get_current_context(), params, key, dest, multiple)
            return fn(*args, **params)

        return click.option(*decls, key, **attrs)(wrapper)  # type: ignore[return-value]

    return deco


def _fill_legacy(ctx: click.Context, params: dict[str, Any], key: str, dest: str, multiple: bool) -> None:
    """``params[dest]`` filled from a 0.1.0 spelling's value (kept in ``ctx.meta[key]``), when given."""
    if key in ctx.meta:
        old = ctx.meta[key]
        cur = params.get(dest)
        if multiple:
            params[dest] = tuple(cur or ()) + tuple(old)
        elif cur is None or cur is False or cur == ():
            params[dest] = old


def with_legacy_spellings(ctx: click.Context) -> dict[str, Any]:
    """The command's parameters as its function received them: ``ctx.params`` with the values of the
    0.1.0 spellings (:func:`legacy`) filled in (``--print-spec`` prints what the command would judge)."""
    params = dict(ctx.params)
    for key, value in ctx.meta.items():
        if key.startswith("legacy__"):
            _fill_legacy(ctx, params, key, key.split("__")[1], isinstance(value, tuple))
    return params


# --------------------------------------------------------------------------- shared options

def out_option(help: str, *, required: bool = False, default: str | None = None,
               legacy_decls: Sequence[str] = ()) -> Callable[[F], F]:
    """``-o/--out PATH`` (plus hidden 0.1.0 spellings such as ``-O``)."""

    def single(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> str | None:
        # -o meant --option KEY=VALUE in 0.1.0's judge: a second -o must not silently win.
        if len(value) > 1:
            raise click.UsageError(f"-o/--out given {len(value)} times ({', '.join(map(repr, value))}); "
                                   "protocol options are --protocol-option KEY=VALUE")
        if value and value[0] == "":
            raise InputError("is empty (an unset shell variable?); give a path", field="-o/--out")
        return value[0] if value else default

    def deco(command: F) -> F:
        fn = command
        if required and default is None:
            # Checked after the deprecated spellings had their say (click would check before).
            @functools.wraps(command)
            def check(*args: Any, **params: Any) -> Any:
                if params.get("out") is None:
                    raise click.UsageError("Missing option '-o' / '--out'.")
                return command(*args, **params)

            fn = check  # type: ignore[assignment]
        for d in legacy_decls:
            fn = legacy(d, dest="out", use="-o/--out")(fn)
        suffix = f"  [default: {default}]" if default is not None else "  [required]" if required else ""
        return click.option("--out", "-o", "out", multiple=True, callback=single, metavar="PATH",
                            help=help + suffix)(fn)

    return deco


class _QuietChoice(click.Choice):  # type: ignore[type-arg]
    """A choice whose deprecated values are accepted but not advertised in ``--help``."""

    def __init__(self, choices: Sequence[str], shown: Sequence[str]) -> None:
        super().__init__(list(choices))
        self.shown = list(shown)

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "[" + "|".join(self.shown) + "]"


def format_option(default: str = "text", choices: Sequence[str] = OUTPUT_FORMATS,
                  legacy_input: Sequence[str] = (), legacy_default: str | None = None) -> Callable[[F], F]:
    """``--format text|tsv|json``: the output format.

    ``legacy_input`` lists the input formats 0.1.0 accepted under ``--format`` in this
    command: such a value still works, as ``--input-format``, with a deprecation warning, and the output
    then takes ``legacy_default`` (0.1.0's default output format of the command) when given.
    """

    def deco(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **params: Any) -> Any:
            if params.get("fmt") in legacy_input:
                warn(f"--format {params['fmt']} (an input format) is deprecated; use --input-format {params['fmt']}")
                params["input_format"] = params.get("input_format") or params["fmt"]
                params["fmt"] = legacy_default or default
            return fn(*args, **params)

        return click.option("--format", "fmt", type=_QuietChoice([*choices, *legacy_input], shown=choices),
                            default=default,
                            show_default=True, help=f"Output format: {', '.join(choices)}.")(
            wrapper)  # type: ignore[return-value]

    return deco


def input_format_option(choices: Sequence[str],
                        help: str = "Input format (default: from the file).") -> Callable[[F], F]:
    """``--input-format``: the format of the main input (0.1.0 called it ``--format`` in some
    commands; commands that had that spelling add ``legacy("--format", dest="input_format", ...)``
    only where ``--format`` is not their output format)."""
    return click.option("--input-format", "input_format", type=click.Choice(list(choices)), default=None,
                        help=help)


# --------------------------------------------------------------------------- span scoring

# The flags of the commands that score predicted error spans against gold ones (span-f1,
# compare-formats): declared here once, so each means the same and says so the same way in both.
_SPAN_SCORING_HELP = {
    "gold": "Gold spans: task-2 TSV, WMT MQM TSV, JSONL or run directory.",
    "lp": "Language pair (e.g. en-de) for inputs that do not name one.",
    "judge": "Judge (model) to score when a run has several.",
    "set_id": "Score only rows of this set_id (task-2 TSVs); '*' scores every set.",
    "missing": "Gold segments without a prediction (e.g. failed judgments): score as 'no errors' (the official "
               "WMT25 scorer's rule), leave out, or stop with an error; counted as missing_predictions either way.",
    "raters": "WMT MQM gold with several raters per segment: first rater, or pool all.",
    "vote_threshold": "Share of runs that must mark a character when a run directory's runs are merged.",
}


def span_scoring_option(name: str) -> Any:
    """The flags-dataclass field of the span-scoring flag ``name`` (``gold``, ``gold_format``,
    ``pred_format``, ``lp``, ``judge``, ``set_id``, ``missing``, ``raters``, ``vote_threshold``)."""
    from polyjudge.api.formats import SPAN_FORMATS
    from polyjudge.cli.specs import option

    if name in ("gold_format", "pred_format"):
        return option("--" + name.replace("_", "-"), type=click.Choice(SPAN_FORMATS), default="auto",
                      show_default=True, help="Span format of the file the flag names (--gold-format: --gold, "
                                              "--pred-format: --pred); auto: from the file.")
    declarations: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
        "gold": (("--gold", "-g"), {"required": True, "type": click.Path(exists=True)}),
        "lp": (("--lp",), {"default": None, "metavar": "SRC-TGT"}),
        "judge": (("--judge",), {"default": None}),
        "set_id": (("--set-id", "set_id"), {"default": "official", "show_default": True}),
        "missing": (("--missing",), {"type": click.Choice(["empty", "skip", "error"]), "default": "empty",
                                     "show_default": True}),
        "raters": (("--raters",), {"type": click.Choice(["first", "all"]), "default": "first",
                                   "show_default": True}),
        "vote_threshold": (("--vote-threshold",), {"type": FiniteFloat(0.0, 1.0, min_open=True), "default": 0.5,
                                                   "show_default": True}),
    }
    decls, attrs = declarations[name]
    return option(*decls, help=_SPAN_SCORING_HELP[name], **attrs)


def _name_list(values: Sequence[str]) -> tuple[str, ...]:
    """``--systems A,B --systems C`` as (A, B, C)."""
    return tuple(dict.fromkeys(n.strip() for v in values for n in v.split(",") if n.strip()))


def input_options(fn: F) -> F:
    """How the main input is read: ``--columns``, ``--lp``, ``--systems``, ``--exclude-systems``, ``--ref``
    (:func:`judging_spec` turns them into its ``InputSpec``)."""
    opts = [
        click.option("--columns", "columns", multiple=True, metavar="FIELD=COLUMN,...",
                     help="Which column holds which field in a CSV/TSV/JSONL/parquet/hf input, e.g. "
                          "--columns tgt=mt,ref=reference; lp=COLUMN holds a language pair (en-de) split into "
                          "source and target language. Fields: src, tgt, ref, src_lang, tgt_lang, doc_id, seg_id, "
                          "system, lp."),
        click.option("--lp", default=None, metavar="SRC-TGT",
                     help="Language pair (e.g. en-de): the one read from an mt-metrics-eval test set, and the "
                          "languages of items that do not name theirs."),
        click.option("--systems", "systems", multiple=True, metavar="NAME,...",
                     help="Judge only these systems (of a test set: human references such as refA included)."),
        click.option("--exclude-systems", "exclude_systems", multiple=True, metavar="NAME,...",
                     help="Leave these systems out."),
        click.option("--ref", "ref", default=None, metavar="NAME",
                     help="The test set's reference to use (refA, refB, ...; default: its standard one)."),
    ]
    decorated: Callable[..., Any] = fn
    for opt in reversed(opts):
        decorated = opt(decorated)
    return cast(F, decorated)


def parse_protocol_options(pairs: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs; values are JSON when they parse as JSON, else strings."""
    out: dict[str, Any] = {}
    for opt in pairs:
        key, sep, value = opt.partition("=")
        if not sep or not key.strip():
            raise InputError(f"expected KEY=VALUE, got '{opt}'", field="protocol-option")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def _who_judges_options() -> list[Decorator]:
    """Protocol, judges and protocol options."""
    from polyjudge.api.registries import BACKENDS, PROTOCOLS

    return [
        click.option("--protocol", "-p", type=RegistryChoice(PROTOCOLS), default="da", show_default=True,
                     help="Judging protocol (listed below)."),
        click.option("--judge", "judges", multiple=True, metavar="SPEC", type=JudgeSpecType(),
                     help="A judge: BACKEND[:MODEL][?OPTIONS][@URL[,URL...]], e.g. openai:gpt-4.1-mini, "
                          "openai:MODEL@http://127.0.0.1:8000/v1, openai:MODEL?per_server=4@URL1,URL2, "
                          "llamacpp, replay:FILE; OPTIONS are KEY=VALUE pairs joined by & (see the README). "
                          "Repeat for a panel. "
                          f"Default: {DEFAULT_JUDGE} (or --backend/--model)."),
        click.option("--backend", type=RegistryChoice(BACKENDS), default=None,
                     help="Backend of a single judge (with --model/--base-url); --judge is the general form."),
        click.option("--model", "-m", default=None,
                     help="Model of the single judge: API model name, GGUF path, or recording (replay)."),
        click.option("--base-url", default=None, help="Endpoint of the single judge, e.g. http://127.0.0.1:8000/v1."),
        click.option("--api-key-env", default="OPENAI_API_KEY", show_default=True,
                     help="Environment variable holding the API key (never written anywhere)."),
        click.option("--protocol-option", "protocol_options", multiple=True, metavar="KEY=VALUE",
                     help="Protocol option (value parsed as JSON when possible); see `polyjudge protocols`. "
                          "Repeatable."),
        click.option("--score-mode", type=click.Choice(["sample", "expected"]), default=None,
                     cls=ProtocolListHelpOption, key="score_mode",
                     help="sample: the score each answer writes; expected: one answer's probability-weighted "
                          "score over the valid score tokens ({protocols}; the judge "
                          "must return log-probabilities). Same as --protocol-option score_mode=..."),
        click.option("--with-reference", "with_reference", is_flag=True,
                     cls=ProtocolListHelpOption, key="with_reference",
                     help="Show each item's reference translation to the judge ({protocols}; every item needs "
                          "'ref'). Recorded in the signature and the mt-metrics-eval "
                          "name (-refA). Same as --protocol-option with_reference=true."),
    ]


def _runs_options() -> list[Decorator]:
    """Runs, sampling, aggregation, concurrency, prompt and recording."""
    from polyjudge.api.registries import AGGREGATORS

    return [
        click.option("--runs", type=RUNS, default=None, help="Runs per item (protocol default)."),
        click.option("--temperature", "-T", type=FiniteFloat(0.0, limits.MAX_TEMPERATURE), default=None,
                     help="Sampling temperature (protocol default)."),
        click.option("--aggregate", "--aggregator", "aggregator", type=RegistryChoice(AGGREGATORS), default=None,
                     help="How runs are merged into the segment score (listed below; every one is kept in "
                          "aggregates.tsv)."),
        click.option("--min-runs", type=RUNS, default=1, show_default=True,
                     help="Leave a segment unscored with fewer successful runs than this."),
        click.option("--concurrency", "-c", type=CONCURRENCY, default=16, show_default=True,
                     help="Requests in flight at once."),
        click.option("--seed", type=SEED, default=0, show_default=True, help="Run r uses seed + r."),
        click.option("--prompt-template", type=click.Path(dir_okay=False), default=None,
                     help="Replace the protocol's Jinja2 prompt template."),
        click.option("--no-context", is_flag=True, help="Judge segments without document context."),
        click.option("--record", type=click.Path(dir_okay=False), default=None,
                     help="Append every request/answer to this JSONL (for the replay backend)."),
        click.option("--prices", type=click.Path(dir_okay=False), default=None,
                     help="JSON price table (USD per million tokens) over the built-in one: {model: [input, output]} "
                          "or {model: {input, cached_input, output, batch_discount}}."),
    ]


def _sending_options() -> list[Decorator]:
    """How requests are sent and paid for: batches, caps, rates, timeouts."""
    from polyjudge.api.registries import REASONING_EFFORTS

    return [
        click.option("--samples-per-request", type=SAMPLES, default=1, show_default=True, metavar="N",
                     help="Ask API judges for N runs in one request (n choices, each stored as its own run); a "
                          "server that rejects or ignores n gets one request per run (said once)."),
        click.option("--batch", is_flag=True,
                     help="Send through the judges' Batch API (openai): about half the price, answered within 24 h. "
                          "Re-running re-attaches to the run's batches; see `polyjudge batch status|cancel`."),
        click.option("--batch-fallback", type=click.Choice(["batch", "live"]), default="batch", show_default=True,
                     help="Where failed or expired batch lines are retried: a new batch, or live requests."),
        click.option("--batch-export", type=click.Path(dir_okay=False), default=None, metavar="FILE",
                     help="Write the requests as a batch input JSONL (OpenAI, vLLM run_batch) instead of sending."),
        click.option("--batch-import", type=click.Path(dir_okay=False), default=None, metavar="FILE",
                     help="Load a batch output JSONL (OpenAI, vLLM run_batch) into the run; sends nothing."),
        click.option("--max-cost", type=positive(), default=None, metavar="USD",
                     help="Never let the run (all its sessions) cost more: sending stops before a request could "
                          "pass the cap (exit 4); re-run with a higher cap to resume."),
        click.option("--rpm", type=positive(), default=None, metavar="N",
                     help="At most N requests per minute per judge."),
        click.option("--tpm", type=positive(), default=None, metavar="N",
                     help="At most N tokens per minute per judge (prompt plus completion limit, as providers count)."),
        click.option("--timeout", type=TIMEOUT, default=120.0, show_default=True, help="Seconds per request."),
        click.option("--reasoning-effort", type=click.Choice(list(REASONING_EFFORTS)), default=None,
                     help="Reasoning budget of reasoning models (openai reasoning_effort, anthropic effort); "
                          "default: the model's own."),
        click.option("--per-server-concurrency", type=CONCURRENCY, default=None, metavar="N",
                     help="Requests in flight on each server of a judge that names several "
                          "(openai:MODEL@URL1,URL2); a judge's own per_server=N option wins."),
        click.option("--n-ctx", type=N_CTX, default=8192, show_default=True,
                     help="Context size (llamacpp); prompts that do not fit are warned about."),
        click.option("--max-failure-rate", type=share(), default=0.1, show_default=True,
                     help="Exit 3 (after writing the run) when more than this share of judgments failed: no "
                          "answer after retries, refused, unparseable or truncated (each kind is counted)."),
        click.option("--restart", is_flag=True,
                     help="Delete the run already in the run directory (outputs and store) and start over; "
                          "without it a directory holding another protocol or configuration is refused."),
    ]


def _executor_options() -> list[Decorator]:
    """Who sends (this process or Ray actors), and progress."""
    from polyjudge.api.registries import EXECUTORS

    return [
        click.option("--executor", type=click.Choice(list(EXECUTORS)), default="local", show_default=True,
                     help="Who sends the requests: this process, or a pool of Ray actors "
                          "(pip install 'polyjudge[ray]')."),
        click.option("--ray-address", default=None, metavar="ADDR",
                     help="Ray cluster: auto, HOST:6379 or ray://HOST:10001 (default: RAY_ADDRESS, else a "
                          "one-machine cluster)."),
        click.option("--ray-actors", type=CONCURRENCY, default=None, metavar="N",
                     help="Actors in the pool (default: one per node); --concurrency is split between them."),
        click.option("--ray-cpus-per-actor", type=RAY_RESOURCES, default=1.0, show_default=True,
                     help="CPUs reserved by each Ray actor."),
        click.option("--ray-gpus-per-actor", type=RAY_RESOURCES, default=0.0, show_default=True,
                     help="GPUs reserved by each Ray actor."),
        click.option("--ray-connect-timeout", type=click.FloatRange(min=0.0, min_open=True), default=30.0,
                     show_default=True, metavar="SECONDS",
                     help="Give up (exit 2) when the cluster named by --ray-address or RAY_ADDRESS does not "
                          "answer within this time."),
        click.option("--ray-logs", is_flag=True,
                     help="Show Ray's own log lines on the terminal (default: they go to ray.log in the run "
                          "directory; POLYJUDGE_RAY_LOGS=1 does the same)."),
        click.option("--quiet", "-q", is_flag=True, help="No progress bar."),
    ]


def cache_option_list() -> list[Decorator]:
    """``--cache PATH`` and ``--no-cache``: the machine's shared response cache (every command that can send)."""
    return [
        click.option("--cache", "cache", type=click.Path(file_okay=False), default=None, metavar="PATH",
                     help="Folder of the response cache every run shares: answers found there are not sent "
                          "again (and cost nothing); every answer received is kept there (default: "
                          "POLYJUDGE_CACHE, else the user cache folder; see `polyjudge cache stats`)."),
        click.option("--no-cache", "no_cache", is_flag=True,
                     help="Neither read nor fill the shared response cache: send what the run directory lacks."),
    ]


def cache_options(fn: F) -> F:
    """The shared response cache's flags on a command (:func:`judging_spec` reads them)."""
    decorated: Callable[..., Any] = fn
    for opt in reversed(cache_option_list()):
        decorated = opt(decorated)
    return cast(F, decorated)


def judge_options(fn: F) -> F:
    """The options of every command that judges; :func:`judging_spec` turns them into its spec."""
    opts = [*_who_judges_options(), *_runs_options(), *_sending_options(), *cache_option_list(),
            *_executor_options()]
    decorated: Callable[..., Any] = fn
    for opt in reversed(opts):
        decorated = opt(decorated)
    return legacy("--option", dest="protocol_options", use="--protocol-option", multiple=True)(cast(F, decorated))


class JudgeSpecType(_JudgeParam):
    """``--judge SPEC`` parsed once, into a :class:`~polyjudge.backends.JudgeSpec` (a bad spec exits 2
    naming the judge, as the API says it)."""

    name = "SPEC"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> JudgeSpec:
        from polyjudge.api import parse_judge

        return parse_judge(value)


def _single_judge(params: Mapping[str, Any]) -> tuple[JudgeSpec, ...] | None:
    """The judge of ``--backend/--model/--base-url`` (None when none is given)."""
    from polyjudge.api import JudgeSpec

    backend, model, base_url = params.get("backend"), params.get("model"), params.get("base_url")
    if not (backend or model or base_url):
        return None
    return (JudgeSpec(backend or DEFAULT_JUDGE, model or None, base_url or None),)


def _judges_group(params: Mapping[str, Any]) -> JudgesSpec:
    from polyjudge.api import JudgesSpec

    given, single = tuple(params.get("judges") or ()), _single_judge(params)
    if given and single:
        raise InputError("give either --judge or --backend/--model/--base-url, not both", field="judge")
    judges = given or single
    return JudgesSpec(**({"judges": judges} if judges else {}), api_key_env=params["api_key_env"],
                      timeout=params["timeout"], n_ctx=params["n_ctx"],
                      reasoning_effort=params.get("reasoning_effort"),
                      per_server_concurrency=params.get("per_server_concurrency"))


def _protocol_group(params: Mapping[str, Any]) -> ProtocolSpec:
    """--protocol, --protocol-option and their shorthands (--score-mode, --with-reference), --prompt-template
    and --no-context; a shorthand contradicting a --protocol-option is refused."""
    from polyjudge.api import ProtocolSpec

    protocol_options = parse_protocol_options(params.get("protocol_options") or ())
    score_mode = params.get("score_mode")
    if score_mode is not None:
        if protocol_options.get("score_mode", score_mode) != score_mode:
            raise InputError(f"--score-mode {score_mode} contradicts --protocol-option "
                             f"score_mode={protocol_options['score_mode']}", field="score-mode")
        protocol_options["score_mode"] = score_mode
    if params.get("with_reference"):
        if protocol_options.get("with_reference", True) not in (True, "true", "yes", "on", 1):
            raise InputError("--with-reference contradicts --protocol-option with_reference="
                             f"{protocol_options['with_reference']}", field="with-reference")
        protocol_options["with_reference"] = True
    return ProtocolSpec(name=params["protocol"], options=protocol_options, prompt_template=params["prompt_template"],
                        use_context=not params["no_context"])


def _data_group(params: Mapping[str, Any], protocol: ProtocolSpec) -> InputSpec:
    """The input's flags (those the command has; ``input_path`` None: the command reads its own)."""
    from polyjudge.api import InputSpec

    return InputSpec(path=params.get("input_path"), fmt=params.get("input_format"), src_lang=params.get("src_lang"),
                     tgt_lang=params.get("tgt_lang"), lp=params.get("lp"), columns=params.get("columns") or None,
                     systems=_name_list(params.get("systems") or ()),
                     exclude_systems=_name_list(params.get("exclude_systems") or ()), ref=params.get("ref"),
                     with_reference=protocol.with_reference, limit=params.get("limit"))


def _cache_group(params: Mapping[str, Any]) -> CacheSpec:
    from polyjudge.api import CacheSpec

    path, off = params.get("cache"), params.get("no_cache", False)
    if off and path:
        raise InputError("give either --cache PATH or --no-cache, not both", field="cache")
    return CacheSpec(use=not off, path=path, record=params["record"])


def judging_spec(params: Mapping[str, Any], *, progress: bool = True) -> JudgingSpec:
    """The one :class:`~polyjudge.api.JudgingSpec` of a judging command's parameters (click's ``dest``
    names -> values, defaults filled in as click fills them): the ``judge`` command's, a study's
    ``[[judging]]`` table's, and the judge flags of every command that judges. Keys of the command's
    own (``fmt``, ``dry_run``) are not read; the input's flags are read when the command has them."""
    import sys

    from polyjudge.api import BudgetSpec, ExecutionSpec, GenerationSpec, JudgingSpec, OutputSpec
    from polyjudge.api.runs import BatchOptions

    p = params
    protocol = _protocol_group(p)
    return JudgingSpec(
        data=_data_group(p, protocol), judges=_judges_group(p), protocol=protocol,
        generation=GenerationSpec(runs=p["runs"], temperature=p["temperature"], aggregator=p["aggregator"],
                                  min_runs=p["min_runs"], seed=p["seed"], samples_per_request=p["samples_per_request"]),
        budget=BudgetSpec(max_cost=p["max_cost"], rpm=p["rpm"], tpm=p["tpm"], prices=p["prices"],
                          max_failure_rate=p["max_failure_rate"]),
        execution=ExecutionSpec(
            concurrency=p["concurrency"], progress=progress and not p["quiet"] and sys.stderr.isatty(),
            executor=p["executor"], ray_address=p["ray_address"], ray_actors=p["ray_actors"],
            ray_cpus_per_actor=p["ray_cpus_per_actor"], ray_gpus_per_actor=p["ray_gpus_per_actor"],
            ray_connect_timeout_s=p["ray_connect_timeout"], ray_logs=p["ray_logs"], batch=p["batch"],
            batch_options=BatchOptions(fallback=p["batch_fallback"]), batch_export=p["batch_export"],
            batch_import=p["batch_import"]),
        cache=_cache_group(p), output=OutputSpec(out=p.get("out"), restart=p["restart"]))


def takes_judging(flags: type[Any], *, progress: bool = True) -> Callable[[Callable[[Any], None]], Callable[..., None]]:
    """Call the command below with one frozen ``flags``: its ``spec`` field the :func:`judging_spec` of the
    command's parameters, each other field the parameter of its name. Put it right above the ``def``."""
    import dataclasses

    own = [f.name for f in dataclasses.fields(flags) if f.name != "spec"]

    def deco(command: Callable[[Any], None]) -> Callable[..., None]:
        @functools.wraps(command)
        def call(**params: Any) -> None:
            command(flags(spec=judging_spec(params, progress=progress), **{name: params[name] for name in own}))

        return call

    return deco


def judge_option_names() -> tuple[str, ...]:
    """The ``dest`` names of :func:`judge_options`' parameters, read from the click parameters themselves."""
    def probe() -> None:
        """Carries the parameters only."""

    declared = judge_options(probe)
    return tuple(str(param.name) for param in getattr(declared, "__click_params__", ()))


def study_judging(params: dict[str, Any], *, progress: bool = True) -> JudgingSpec:
    """The judging of a study command (``probe``, ``pairwise``): the one :func:`judging_spec` of its judge
    flags, then consumed from ``params``. The study reads its own items and gives each condition its run
    directory, so of the data and output groups only the languages and ``--restart`` are kept."""
    from polyjudge.api import InputSpec, OutputSpec

    spec = judging_spec(params, progress=progress)
    for name in judge_option_names():
        params.pop(name, None)
    return spec.replace(data=InputSpec(src_lang=spec.data.src_lang, tgt_lang=spec.data.tgt_lang),
                        output=OutputSpec(restart=spec.output.restart))


__all__ = ["CONCURRENCY", "FINITE", "N_CTX", "OPEN_SHARE", "OUTPUT_FORMATS", "RAY_RESOURCES", "RUNS", "SAMPLES",
           "SEED", "TIMEOUT", "FiniteFloat", "JudgeSpecType", "RegistryChoice", "RegistryHelpCommand", "cache_options",
           "emit", "format_option", "guard_outputs", "input_format_option", "input_options",
           "judge_option_names", "judge_options", "judging_spec", "legacy", "number_list", "out_option",
           "parse_protocol_options", "positive", "registry_help", "share", "study_judging", "takes_judging", "warn",
           "with_legacy_spellings"]
