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
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from polyjudge.api.judging_values import judging_spec, parse_protocol_options
from polyjudge.api.runs import (  # light: the engine loads when a command builds its spec, not for --help
    Target,
    file_target,
    input_target,
    limits,
    refuse_clashes,
)
from polyjudge.cli.specs import FiniteFloat  # declared there: the flags of declared study keys use it too
from polyjudge.data.errors import InputError
from polyjudge.registry import Registry, UnknownNameError

if TYPE_CHECKING:
    from polyjudge.api import JudgeSpec, JudgingSpec
    from polyjudge.api.settings import Setting

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
                       ("Aggregators (--aggregator)", AGGREGATORS)):
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
    "lp": "Language pair to score, one the gold names (default: each pair on its own); the pair of inputs "
          "that name none.",
    "judge": "Judge (model) to score when a run has several.",
    "set_id": "Score only rows of this set_id (task-2 TSVs); '*' scores every set.",
    "missing": "Gold segments without a prediction (e.g. failed judgments): score as 'no errors' (the official "
               "WMT25 scorer's rule), leave out, or stop with an error; counted as missing_predictions either way.",
    "raters": "Files with several raters per segment (WMT MQM, ESA JSONL): the first rater's spans, all pooled, "
              "or one rater's (a NAME the file holds).",
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
        "raters": (("--raters",), {"default": "first", "metavar": "first|all|NAME", "show_default": True}),
        "vote_threshold": (("--vote-threshold",), {"type": FiniteFloat(0.0, 1.0, min_open=True), "default": 0.5,
                                                   "show_default": True}),
    }
    decls, attrs = declarations[name]
    return option(*decls, help=_SPAN_SCORING_HELP[name], **attrs)


def input_options(fn: F) -> F:
    """How the main input is read: ``--columns``, ``--lp``, ``--systems``, ``--exclude-systems``, ``--ref``,
    ``--language-names``, each the flag of a declared ``[[judging]]`` key (``polyjudge.data.study_keys``;
    :func:`judging_spec` turns them into its ``InputSpec``)."""
    from polyjudge.cli.specs import key_option

    names = ("columns", "lp", "systems", "exclude_systems", "ref", "language_names")
    decorated: Callable[..., Any] = fn
    for name in reversed(names):
        decorated = key_option("judging", name)(decorated)
    return cast(F, decorated)


Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def _click_type(setting: Setting) -> Any:
    """The click type of a declared setting (its bounds and choices as declared)."""
    kind = setting.kind
    if kind == "int":
        return click.IntRange(None if setting.low is None else int(setting.low),
                              None if setting.high is None else int(setting.high))
    if kind == "float":
        high = None if setting.high is None or setting.high >= _UNBOUNDED else setting.high
        return FiniteFloat(setting.low, high, min_open=setting.low_open)
    if kind == "choice":
        if isinstance(setting.choices, str):
            import polyjudge.api.registries as registries

            found = getattr(registries, setting.choices)
            return RegistryChoice(found) if isinstance(found, Registry) else click.Choice(list(found))
        return click.Choice(list(setting.choices or ()))
    if kind in ("file", "folder"):
        return click.Path(dir_okay=False) if kind == "file" else click.Path(file_okay=False)
    if kind == "judge":
        return JudgeSpecType()
    return None


_UNBOUNDED = 1.7976931348623157e308


def setting_option(setting: Setting) -> Decorator:
    """The click option of a declared setting (``polyjudge.data.settings``): its flag, type, default and help."""
    long = setting.long_flag + (f"/{setting.off_flag}" if setting.off_flag else "")
    decls = [long, *setting.also, *([setting.short] if setting.short else []), setting.dest]
    attrs: dict[str, Any] = {"help": setting.help}
    if setting.kind == "flag":
        attrs |= {"is_flag": True, "default": setting.command_default}
    else:
        kind = _click_type(setting)
        if kind is not None:
            attrs["type"] = kind
        if setting.many:
            attrs["multiple"] = True
        else:
            attrs["default"] = setting.command_default
    for name in ("metavar", "show_default"):
        if getattr(setting, name):
            attrs[name] = getattr(setting, name)
    if "{protocols}" in setting.help:
        attrs |= {"cls": ProtocolListHelpOption, "key": setting.name}
    declare = click.option(*decls, **attrs)
    if not setting.old_flags:
        return declare

    def with_old_spellings(fn: Callable[..., Any]) -> Callable[..., Any]:
        for old in setting.old_flags:
            fn = legacy(old, dest=setting.dest, use=setting.long_flag, multiple=setting.many,
                        is_flag=setting.kind == "flag", type=_click_type(setting))(fn)
        return declare(fn)

    return with_old_spellings


def setting_options(names: Sequence[str] | None = None) -> list[Decorator]:
    """The click options of the declared judging settings (``names``: those only, in declaration order)."""
    from polyjudge.api.settings import command_line

    return [setting_option(s) for s in command_line() if names is None or s.name in names]


def cache_option_list() -> list[Decorator]:
    """``--cache PATH`` and ``--no-cache``: the machine's shared response cache (every command that can send)."""
    from polyjudge.api.settings import of_group

    return setting_options([s.name for s in of_group("cache") if s.name != "record"])


def cache_options(fn: F) -> F:
    """The shared response cache's flags on a command (:func:`judging_spec` reads them)."""
    decorated: Callable[..., Any] = fn
    for opt in reversed(cache_option_list()):
        decorated = opt(decorated)
    return cast(F, decorated)


def judge_options(fn: F) -> F:
    """The options of every command that judges, one per declared setting (``polyjudge.data.settings``);
    :func:`judging_spec` turns them into its spec."""
    opts = setting_options()
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
