"""polyjudge: LLM judges for multilingual text and MT, and the statistics to trust them.

The public API is deliberately small; everything else is reachable through the
sub-packages (``polyjudge.metaeval``, ``polyjudge.validation``, ...).
"""

from polyjudge._version import __version__
from polyjudge.data.errors import InputError
from polyjudge.data.readers import read_items, read_parallel
from polyjudge.data.records import Item

__all__ = ["InputError", "Item", "__version__", "get_protocol", "read_items", "read_parallel", "run"]


def __getattr__(name: str):  # lazy: importing polyjudge must not load the engine
    if name == "run":
        from polyjudge.engine import run
        return run
    if name == "get_protocol":
        from polyjudge.protocols import get_protocol
        return get_protocol
    raise AttributeError(name)
