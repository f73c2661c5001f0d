"""A command's flags as one frozen dataclass, so a command takes one typed value.

Why: a click command receives every flag as a keyword parameter, so a command
with twenty flags was a function of twenty parameters (past the house limit
of ten, and easy to misspell without notice). Here each flag is declared once,
as a field of a frozen dataclass that carries its click declaration:

* :func:`option` / :func:`argument`: a field parsed by ``click.option`` /
  ``click.argument`` with exactly these arguments (its dataclass default is
  click's default);
* :func:`shared`: a field parsed by one of the shared flags of
  :mod:`polyjudge.cli.options` (``-o/--out``, ``--format``, ``--input-format``),
  so the same flag keeps meaning the same thing in every command;
* :func:`group`: a field built from a whole group of flags (``judge_options``
  -> a ``JudgingSpec`` through ``study_judging``).

:func:`takes` declares the fields' flags in field order (which is the order of
``--help``) and calls the command with one instance. A flag without a field, or
a field without a flag, is a programming error raised as ``TypeError``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    S = TypeVar("S", bound=DataclassInstance)
else:
    S = TypeVar("S")

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]
_KEY = "polyjudge.cli.specs"  # where a field's parsing is kept in its metadata
_SPEC_ATTR = "polyjudge_flags"  # the flags dataclass of a command declared with :func:`takes`


@dataclasses.dataclass(frozen=True, slots=True)
class Parsing:
    """How one field comes from the command line.

    ``declare`` adds the click parameter(s) (and may wrap the call, as the shared flags
    do to handle their 0.1.0 spellings); ``build``, for a group, takes the group's values
    out of the parsed keywords and returns the field's value; a plain field takes the
    keyword of its own name."""

    declare: Decorator
    build: Callable[[dict[str, Any]], Any] | None = None


def _field(parsing: Parsing, default: Any = dataclasses.MISSING) -> Any:
    return dataclasses.field(default=default, metadata={_KEY: parsing})


def _click_default(attrs: dict[str, Any]) -> Any:
    """What click passes when the flag is not given (a required flag has no default)."""
    if attrs.get("required"):
        return dataclasses.MISSING
    if "default" in attrs:
        return attrs["default"]
    return () if attrs.get("multiple") or attrs.get("nargs") == -1 else False if attrs.get("is_flag") else None


def _chain(first: Decorator, more: Sequence[Decorator]) -> Decorator:
    def declare(fn: Callable[..., Any]) -> Callable[..., Any]:
        for deco in reversed(more):
            fn = deco(fn)
        return first(fn)
    return declare


def option(*decls: str, spellings: Sequence[Decorator] = (), **attrs: Any) -> Any:
    """A field parsed by ``click.option(*decls, **attrs)``; ``spellings`` adds hidden
    0.1.0 spellings (``cli.options.legacy``) that fill the same field."""
    return _field(Parsing(_chain(click.option(*decls, **attrs), spellings)), _click_default(attrs))


class FiniteFloat(click.FloatRange):
    """A float flag in a range that also refuses nan and inf (click's FloatRange lets nan through)."""

    name = "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


def _key_type(key: Any) -> Any:
    """The click type of a declared study key (``polyjudge.data.study_keys.TableKey``)."""
    from pathlib import Path

    if key.kind == "int":
        return click.IntRange(key.low, key.high)
    if key.kind == "float":
        return FiniteFloat(key.low, key.high)
    if key.kind == "choice":
        return click.Choice(key.choice_source())
    if key.kind in ("file", "folder", "path"):
        return click.Path(exists=key.exists, file_okay=key.kind != "folder", dir_okay=key.kind != "file",
                          path_type=Path)
    return None


def _key_declaration(table: str, name: str) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The ``click.option`` arguments of the declared study key ``name`` of ``table``."""
    from polyjudge.api.settings import table_key

    key = table_key(table, name)
    attrs: dict[str, Any] = {"help": key.help}
    if key.kind == "flag":
        attrs["is_flag"] = True
    kind = _key_type(key)
    if kind is not None:
        attrs["type"] = kind
    if key.many:
        attrs["multiple"] = True
    elif key.default is not None and key.kind != "flag":
        attrs["default"] = key.default
    if key.metavar:
        attrs["metavar"] = key.metavar
    if key.show_default:
        attrs["show_default"] = True
    return (*key.flags, key.name), attrs


def key_option(table: str, name: str) -> Decorator:
    """The click option of the declared study key ``name`` of ``table`` (``polyjudge.data.study_keys``)."""
    decls, attrs = _key_declaration(table, name)
    return click.option(*decls, **attrs)


def declared(table: str, name: str) -> Any:
    """A field parsed by the flag of the declared study key ``name`` of ``table`` (``polyjudge.data.study_keys``:
    its spellings, type, default and help), so the flag and the study key are one declaration."""
    decls, attrs = _key_declaration(table, name)
    return option(*decls, **attrs)


def argument(*decls: str, **attrs: Any) -> Any:
    """A field parsed by ``click.argument(*decls, **attrs)``."""
    return _field(Parsing(click.argument(*decls, **attrs)), _click_default(attrs))


def shared(declare: Decorator, default: Any = dataclasses.MISSING) -> Any:
    """A field parsed by a shared flag of :mod:`polyjudge.cli.options` (``out_option(...)``,
    ``format_option(...)``, ``input_format_option(...)``), whose keyword is the field's name."""
    return _field(Parsing(declare), default)


def group(declare: Decorator, build: Callable[[dict[str, Any]], Any]) -> Any:
    """A field built by ``build`` from the flags ``declare`` adds (``build`` removes the
    keywords it used, e.g. ``study_judging`` after ``judge_options``)."""
    return _field(Parsing(declare, build))


def parsing_of(spec: type[Any]) -> list[tuple[str, Parsing]]:
    """(field name, parsing) of every field of ``spec``, in order; a field without one is an error."""
    if not (dataclasses.is_dataclass(spec) and spec.__dataclass_params__.frozen):  # type: ignore[attr-defined]
        raise TypeError(f"{spec.__name__} is not a frozen dataclass")
    out = []
    for f in dataclasses.fields(spec):
        parsing = f.metadata.get(_KEY)
        if not isinstance(parsing, Parsing):
            raise TypeError(f"{spec.__name__}.{f.name} declares no flag (use cli.specs.option, shared or group)")
        out.append((f.name, parsing))
    return out


def build_spec(spec: type[S], parsed: dict[str, Any]) -> S:
    """One ``spec`` from click's keywords; a keyword no field takes is an error."""
    rest = dict(parsed)
    values = {name: p.build(rest) if p.build is not None else rest.pop(name) for name, p in parsing_of(spec)}
    if rest:
        raise TypeError(f"{spec.__name__} has no field for the flag value(s) {', '.join(sorted(rest))}")
    return spec(**values)


def takes(spec: type[S]) -> Callable[[Callable[[S], None]], Callable[..., None]]:
    """Declare ``spec``'s flags on the command below (in field order) and call it with one ``spec``.

    Put it right above the ``def``, under ``@click.command``."""
    fields = parsing_of(spec)

    def deco(command: Callable[[S], None]) -> Callable[..., None]:
        @functools.wraps(command)
        def call(**parsed: Any) -> None:
            command(build_spec(spec, parsed))

        call.__dict__[_SPEC_ATTR] = spec  # kept by the wrappers of the shared flags (functools.wraps)

        declared: Callable[..., Any] = call
        for _, parsing in reversed(fields):
            declared = parsing.declare(declared)
        return declared

    return deco


def flags_of(command: click.Command) -> type[Any] | None:
    """The flags dataclass of a command declared with :func:`takes` (None for another command)."""
    spec = getattr(command.callback, _SPEC_ATTR, None)
    return spec if isinstance(spec, type) else None


# --------------------------------------------------------------------------- study files

# What a study file's tables take: the long options of these commands (dashes as underscores), but for
# the parameters (click dests) below, which the study decides itself (where outputs go, what is printed).
STUDY_LEAVES_OUT: dict[str, frozenset[str]] = {
    "judge": frozenset({"out", "fmt", "dry_run", "print_spec"}),
    "meta-eval": frozenset({"out", "fmt", "human", "mtme_dir"}),
    "report": frozenset({"out"}),
}


def study_key(param: click.Parameter) -> str | None:
    """A parameter's key in a study file: its first long option without the dashes, ``-`` as ``_``
    (``--no-cache`` -> ``no_cache``); None for an argument or an option without a long name."""
    if not isinstance(param, click.Option):
        return None
    long = next((o for o in param.opts if o.startswith("--")), None)
    return None if long is None else long[2:].replace("-", "_")


def study_keys(command: click.Command, leave_out: frozenset[str]) -> dict[str, click.Option]:
    """The study keys of ``command``'s visible options (hidden 0.1.0 spellings and ``leave_out`` dests aside)."""
    keys: dict[str, click.Option] = {}
    for param in command.params:
        key = study_key(param)
        if key is not None and isinstance(param, click.Option) and not param.hidden and param.expose_value \
                and param.name not in leave_out:
            keys[key] = param
    return keys


def toml_value(value: Any) -> str:
    """``value`` (text, number, bool, path or a list of them) as a TOML value."""
    import json
    import os

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(os.fspath(value), ensure_ascii=False)  # a JSON string is a TOML basic string


__all__ = ["STUDY_LEAVES_OUT", "FiniteFloat", "Parsing", "argument", "build_spec", "declared", "flags_of", "group",
           "key_option", "option", "parsing_of", "shared", "study_key", "study_keys", "takes", "toml_value"]
