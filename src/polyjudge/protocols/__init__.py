"""Judging protocols, looked up by name in one registry.

Each protocol lives in its own module, registers itself with
``@register_protocol()`` and is imported only when first looked up, so adding
one never touches the engine. Its options are a typed dataclass
(``options_type``), checked when the protocol is built.
"""

from __future__ import annotations

from polyjudge.protocols.base import JudgeProtocol, ParseFailure, ProtocolOptions, parse_protocol_options
from polyjudge.protocols.options import NoOptions, option
from polyjudge.protocols.registry import PROTOCOLS, available_protocols, get_protocol, register_protocol
from polyjudge.registry import UnknownNameError

__all__ = ["PROTOCOLS", "JudgeProtocol", "NoOptions", "ParseFailure", "ProtocolOptions", "UnknownNameError",
           "available_protocols", "get_protocol", "option", "parse_protocol_options", "register_protocol"]
