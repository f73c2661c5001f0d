"""The protocol registry: every judging protocol, built-in or plugin, by name.

A protocol class registers itself with ``@register_protocol()`` (its name is
the class attribute ``name``). Built-in modules are imported when first needed
(a lookup imports the modules that can hold the name, a listing every module of
the package, in name order); third-party packages add
protocols through the ``polyjudge.protocols`` entry-point group.
"""

from __future__ import annotations

from polyjudge.protocols.base import JudgeProtocol, ProtocolOptions
from polyjudge.registry import Registry

# Every module of polyjudge.protocols is imported on first use: a new protocol is a new module.
PROTOCOLS: Registry[type[JudgeProtocol]] = Registry(
    "protocol", package="polyjudge.protocols", entry_point_group="polyjudge.protocols")
register_protocol = PROTOCOLS.register


def available_protocols() -> list[str]:
    """Registered protocol names, built-ins first in a fixed order, then plugins."""
    return PROTOCOLS.names()


def get_protocol(name: str, options: ProtocolOptions | None = None) -> JudgeProtocol:
    """A protocol instance; an unknown name raises UnknownNameError (a KeyError) listing the valid ones."""
    return PROTOCOLS.get(name)(options)


__all__ = ["PROTOCOLS", "available_protocols", "get_protocol", "register_protocol"]
