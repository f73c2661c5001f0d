"""Typed protocol options: one frozen dataclass per protocol.

Users give protocol-specific options as loose ``KEY=VALUE`` pairs (``-o`` on
the command line, ``ProtocolOptions.extra`` in Python). Each protocol declares
a frozen dataclass of the options it understands; :func:`parse_options` checks
the pairs against it, so a typo or a value of the wrong type is an
:class:`~polyjudge.data.errors.InputError` naming the key instead of being
silently ignored. The same dataclass drives ``--help`` (:func:`describe_options`)
and the option parts of the run signature (:func:`options_signature`), so an
option cannot be added without showing up in both.

Field metadata (build it with :func:`option`):

``help``
    one line for ``--help``;
``signature``
    the key under which the (resolved) value enters the run signature;
``format``
    a ``value -> str`` function for that signature part (default: ``str``,
    floats with ``:g``).

Fields declared with ``init=False`` are not options: an options class may fill
them in ``__post_init__`` with values resolved from the options (e.g. the MQM
weights from ``weights`` and ``classic``) and mark them for the signature.
"""

from __future__ import annotations

import dataclasses
import json
import os
import types
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from polyjudge.data.errors import InputError

T = TypeVar("T")


@dataclasses.dataclass(frozen=True, slots=True)
class NoOptions:
    """Options of a protocol that has none of its own."""


def option(help: str, *, signature: str | None = None,
           format: Callable[[Any], str] | None = None) -> dict[str, Any]:
    """Metadata of one option field: ``field(default=..., metadata=option("..."))``."""
    meta: dict[str, Any] = {"help": help}
    if signature is not None:
        meta["signature"] = signature
    if format is not None:
        meta["format"] = format
    return meta


def option_fields(options_type: type[Any]) -> list[dataclasses.Field[Any]]:
    """The fields a user may set (``init=False`` fields are derived, not options)."""
    if not dataclasses.is_dataclass(options_type):
        raise TypeError(f"protocol options must be a dataclass, got {options_type!r}")
    return [f for f in dataclasses.fields(options_type) if f.init]


# -- checking values -----------------------------------------------------------

class _Mismatch(Exception):
    """A value does not fit a type (turned into an InputError naming the key)."""


_TRUE = ("true", "yes", "on")
_FALSE = ("false", "no", "off")


def _coerce(value: Any, hint: Any) -> Any:
    """``value`` as ``hint`` when it plainly is one; raise _Mismatch otherwise."""
    if hint is Any or hint is object:
        return value
    origin = get_origin(hint)
    if origin is Union or origin is types.UnionType:
        for member in get_args(hint):
            try:
                return _coerce(value, member)
            except _Mismatch:
                continue
        raise _Mismatch
    if hint is type(None):
        if value is None:
            return None
        raise _Mismatch
    if origin is Literal:
        if value in get_args(hint):
            return value
        raise _Mismatch
    if hint is bool:
        return _to_bool(value)
    if hint is int:
        return _to_int(value)
    if hint is float:
        return _to_float(value)
    if hint is str:
        if isinstance(value, str):
            return value
        if isinstance(value, os.PathLike):
            return os.fspath(value)
        raise _Mismatch
    if origin in (tuple, list):
        args = get_args(hint)
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            raise TypeError(f"option type {hint} is not supported (use tuple[X, ...])")
        if not isinstance(value, list | tuple):
            raise _Mismatch
        item = args[0] if args else Any
        items = [_coerce(v, item) for v in value]
        return tuple(items) if origin is tuple else items
    if origin in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise _Mismatch
        key_type, value_type = get_args(hint) or (Any, Any)
        return {_coerce(k, key_type): _coerce(v, value_type) for k, v in value.items()}
    if isinstance(hint, type):
        if isinstance(value, hint):
            return value
        raise _Mismatch
    raise TypeError(f"option type {hint!r} is not supported")


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise _Mismatch


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise _Mismatch
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            raise _Mismatch from None
    raise _Mismatch


def _to_float(value: Any) -> float:
    if isinstance(value, bool):
        raise _Mismatch
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            raise _Mismatch from None
    raise _Mismatch


def type_text(hint: Any) -> str:
    """A type as shown to users (``None`` left out: an unset option is simply absent)."""
    origin = get_origin(hint)
    if origin is Union or origin is types.UnionType:
        members = [type_text(m) for m in get_args(hint) if m is not type(None)]
        return " | ".join(members) if members else "none"
    if origin is Literal:
        return "|".join(str(a) for a in get_args(hint))
    if origin in (tuple, list):
        args = get_args(hint)
        return f"list[{type_text(args[0]) if args else 'any'}]"
    if origin in (dict, Mapping):
        args = get_args(hint)
        return f"dict[{type_text(args[0])}, {type_text(args[1])}]" if args else "dict"
    if hint is Any:
        return "any"
    return getattr(hint, "__name__", str(hint))


def _value_text(value: Any, limit: int | None = None) -> str:
    """A value as JSON where possible (as a user would type it after ``-o KEY=``)."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except TypeError:
        text = repr(value)
    return text if limit is None or len(text) <= limit else text[:limit - 3] + "..."


# -- the three uses: parsing, --help, signature ----------------------------------

def parse_options(options_type: type[T], extra: Mapping[str, Any], *, owner: str = "this protocol") -> T:
    """Check the loose ``extra`` pairs against ``options_type`` and build it.

    Unknown keys and values of the wrong type raise InputError (``field`` is the
    key); obvious conversions are made (an integer for a float option,
    ``"true"``/``"false"`` for a bool, a path object for a string). Errors found
    by the options class itself (its ``__post_init__``) pass through unchanged.
    """
    fields = option_fields(options_type)
    known = {f.name: f for f in fields}
    unknown = [k for k in extra if k not in known]
    if unknown:
        names = ", ".join(f"'{k}'" for k in unknown)
        valid = (f"valid options: {', '.join(known)}" if known
                 else "it takes no protocol options")
        raise InputError(f"unknown option {names} for {owner}; {valid}", field=unknown[0])
    hints = get_type_hints(options_type)
    values: dict[str, Any] = {}
    for key, raw in extra.items():
        hint = hints[key]
        try:
            values[key] = _coerce(raw, hint)
        except _Mismatch:
            raise InputError(f"option '{key}' of {owner} must be {type_text(hint)}, "
                             f"got {_value_text(raw, 60)}", field=key) from None
    return options_type(**values)


def describe_options(options_type: type[Any]) -> list[tuple[str, str, str]]:
    """``(name, type, "help (default: ...)")`` per option, in declaration order."""
    hints = get_type_hints(options_type)
    out = []
    for f in option_fields(options_type):
        if f.default is not dataclasses.MISSING:
            default: Any = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = dataclasses.MISSING
        doc = str(f.metadata.get("help", "")).strip()
        if default is dataclasses.MISSING:
            shown = "required"
        elif default is None:
            shown = "unset by default"
        elif isinstance(default, str):
            shown = f"default: {default}"
        else:
            shown = f"default: {_value_text(default)}"
        out.append((f.name, type_text(hints[f.name]), f"{doc} ({shown})" if doc else f"({shown})"))
    return out


def _signature_text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def options_signature(settings: object) -> dict[str, str]:
    """The ``key:value`` signature parts of the fields marked with ``signature``, in field order."""
    if not dataclasses.is_dataclass(settings):
        return {}
    out: dict[str, str] = {}
    for f in dataclasses.fields(settings):
        key = f.metadata.get("signature")
        if key is None:
            continue
        fmt: Callable[[Any], str] = f.metadata.get("format", _signature_text)
        out[str(key)] = fmt(getattr(settings, f.name))
    return out


__all__ = ["NoOptions", "describe_options", "option", "option_fields", "options_signature",
           "parse_options", "type_text"]
