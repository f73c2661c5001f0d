"""polyjudge: LLM judges for multilingual text and MT, and the statistics to trust them.

The Python API lives in :mod:`polyjudge.api` and its names are exported here
too, loaded on first use so that ``import polyjudge`` stays cheap::

    import polyjudge
    run = polyjudge.judge("items.jsonl", polyjudge.JudgeConfig(protocol="mqm"), out="runs/mqm")
"""

from __future__ import annotations

from typing import Any

from polyjudge._version import __version__ as __version__
from polyjudge.data.errors import InputError as InputError
from polyjudge.data.readers import read_items as read_items
from polyjudge.data.readers import read_parallel as read_parallel
from polyjudge.data.records import Item as Item

# This module's own names; the others are polyjudge.api's, read from its one table (``_HOMES``) when first
# asked for: ``import polyjudge`` (and so every command's start) does not import the API package.
_OWN = ("InputError", "Item", "__version__", "read_items", "read_parallel")
# Names of this package's own subpackages: importing one binds it here under its name, so an API name equal to
# one (``report``) would change meaning once the subpackage is imported; it is called as ``polyjudge.api.NAME``.
_SUBPACKAGES = ("report",)


def __getattr__(name: str) -> Any:
    """A name of :mod:`polyjudge.api` (``__all__``: this module's and the API's names), loaded on first use."""
    if name == "run":  # 0.1.0's engine entry point, kept for existing scripts
        from polyjudge.engine import run
        return run
    if name.startswith("__") and name != "__all__":
        raise AttributeError(f"module 'polyjudge' has no attribute {name!r}")
    import polyjudge.api as api

    if name == "__all__":
        return list(dict.fromkeys([*_OWN, *(n for n in api._HOMES if n not in _SUBPACKAGES)]))
    if name in api._HOMES and name not in _SUBPACKAGES:
        return getattr(api, name)
    raise AttributeError(f"module 'polyjudge' has no attribute {name!r}")


def __dir__() -> list[str]:
    import polyjudge.api as api

    return sorted(set(globals()) | (set(api._HOMES) - set(_SUBPACKAGES)))
