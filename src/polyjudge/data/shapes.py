"""Configs built in Python take Python's natural shapes, or say at construction which field is wrong.

A config dataclass calls :func:`normalise_fields` from ``__post_init__``: a field declared as a
tuple takes any sequence (a list, a generator is read once) and keeps a tuple; a field declared as
a mapping takes any mapping, a sequence of ``(key, value)`` pairs, or (with a ``namer`` for the
field) a sequence of values named by it; a text or path field takes ``str`` or a path. Anything
else is a ``TypeError`` naming the config and the field, so a wrong shape fails where it is written,
not later inside a run.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

Namer = Callable[[Any], tuple[Any, Any]]


def _kind(annotation: object) -> str | None:
    text = str(annotation).replace("typing.", "").replace("collections.abc.", "")
    if text.startswith("tuple["):
        return "sequence"
    if text.startswith(("Mapping[", "dict[")):
        return "mapping"
    if text.replace(" ", "") in ("str|Path", "str|Path|None", "Path|str", "Path|None|str"):
        return "path"
    return None


def _sequence(owner: str, name: str, value: Any) -> tuple[Any, ...]:
    if isinstance(value, tuple):
        return value
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise TypeError(f"{owner}.{name} takes a sequence (a tuple or a list), got {type(value).__name__} "
                        f"{value!r:.60}")
    return tuple(value)


def _mapping(owner: str, name: str, value: Any, namer: Namer | None) -> Any:
    if isinstance(value, Mapping):
        return value
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise TypeError(f"{owner}.{name} takes a mapping (or a sequence of (name, value) pairs), got "
                        f"{type(value).__name__} {value!r:.60}")
    out: dict[Any, Any] = {}
    for entry in value:
        if isinstance(entry, tuple) and len(entry) == 2:
            key, item = entry
        elif namer is not None:
            key, item = namer(os.fspath(entry) if isinstance(entry, os.PathLike) else entry)
        else:
            raise TypeError(f"{owner}.{name} takes a mapping or (name, value) pairs, got {entry!r:.60} in a sequence")
        if key in out:
            raise TypeError(f"{owner}.{name}: the name {key!r} is given twice; give a mapping that names each")
        out[key] = item
    return out


def normalise_fields(config: Any, namers: Mapping[str, Namer] | None = None) -> None:
    """Bring every tuple, mapping and path field of the (frozen) dataclass ``config`` to its declared
    shape in place, or raise ``TypeError`` naming the field; ``namers`` name the values of a mapping
    field given as a plain sequence (``metrics=("runs/da",)``)."""
    owner = type(config).__name__
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        kind = _kind(f.type)
        if value is None or kind is None:
            continue
        if kind == "sequence":
            new = _sequence(owner, f.name, value)
        elif kind == "mapping":
            new = _mapping(owner, f.name, value, (namers or {}).get(f.name))
        elif isinstance(value, str | os.PathLike):
            continue
        else:
            raise TypeError(f"{owner}.{f.name} takes a path (str or pathlib.Path), got {type(value).__name__} "
                            f"{value!r:.60}")
        if new is not value:
            object.__setattr__(config, f.name, new)


def check_range(name: str, value: float | None, low: float, high: float, *, low_open: bool = False,
                whole: bool = False) -> None:
    """``value`` (None: not set) is finite and in [low, high] (or (low, high]), and a whole number with
    ``whole``; else an InputError naming the setting ``name`` (a front end shows its own name for it)."""
    import math
    import sys

    from polyjudge.data.errors import InputError

    if value is None:
        return
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) \
        and (value > low if low_open else value >= low) and value <= high
    if not ok:
        bound = f"above {low:g}" if low_open else f"between {low:g} and {high:g}"
        if low_open and high < sys.float_info.max:
            bound += f" and at most {high:g}"
        raise InputError(f"must be a finite number {bound}, got {value!r}", field=name, setting=True)
    if whole and not isinstance(value, int):
        raise InputError(f"must be a whole number, got {value!r}", field=name, setting=True)


__all__ = ["check_range", "normalise_fields"]
