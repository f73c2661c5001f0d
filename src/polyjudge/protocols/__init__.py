"""Judging protocols, looked up by name in one registry.

Each protocol lives in its own module, registers itself with
``@register_protocol()`` and is imported only when first looked up, so adding
one never touches the engine. Its options are a typed dataclass
(``options_type``), checked when the protocol is built. The names below load on
first use: listing the protocols (``--help``) reads only their declarations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from polyjudge.registry import lazy_members

if TYPE_CHECKING:
    from polyjudge.protocols.base import JudgeProtocol, ParseFailure, ProtocolOptions, parse_protocol_options
    from polyjudge.protocols.options import NoOptions, option
    from polyjudge.protocols.registry import PROTOCOLS, available_protocols, get_protocol, register_protocol
    from polyjudge.registry import UnknownNameError

_HOMES = {
    **dict.fromkeys(("JudgeProtocol", "ParseFailure", "ProtocolOptions", "parse_protocol_options"), "base"),
    **dict.fromkeys(("NoOptions", "option"), "options"),
    **dict.fromkeys(("PROTOCOLS", "available_protocols", "get_protocol", "register_protocol"), "registry"),
}

__getattr__, __dir__ = lazy_members(__name__, {"UnknownNameError": "polyjudge.registry",
                                               **{name: f"{__name__}.{home}" for name, home in _HOMES.items()}})

__all__ = ["PROTOCOLS", "JudgeProtocol", "NoOptions", "ParseFailure", "ProtocolOptions", "UnknownNameError",
           "available_protocols", "get_protocol", "option", "parse_protocol_options", "register_protocol"]
