"""Judging protocols, looked up by name.

Each protocol lives in its own module and is imported only when used, so
adding one never touches the engine.
"""

from __future__ import annotations

import importlib

from polyjudge.protocols.base import JudgeProtocol, ParseFailure, ProtocolOptions

# name -> "module:ClassName"
_PROTOCOLS: dict[str, str] = {
    "da": "polyjudge.protocols.da:DirectAssessment",
    "mqm": "polyjudge.protocols.mqm:GembaMQM",
    "tsa": "polyjudge.protocols.tsa:TaggedSpanAnnotation",
    "gemba-spans": "polyjudge.protocols.tsa:GembaSpans",
    "direct-index": "polyjudge.protocols.tsa:DirectIndex",
    "pointwise": "polyjudge.protocols.pointwise:Pointwise",
    "rubric": "polyjudge.protocols.rubric:Rubric",
    "forced-choice": "polyjudge.protocols.elicitation:ForcedChoice",
    "response-set": "polyjudge.protocols.elicitation:ResponseSet",
}


def available_protocols() -> list[str]:
    out = []
    for name, target in _PROTOCOLS.items():
        if importlib.util.find_spec(target.split(":")[0]) is not None:
            out.append(name)
    return out


def get_protocol(name: str, options: ProtocolOptions | None = None) -> JudgeProtocol:
    if name not in _PROTOCOLS:
        raise KeyError(f"unknown protocol '{name}'; available: {', '.join(available_protocols())}")
    module, cls = _PROTOCOLS[name].split(":")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            raise KeyError(f"protocol '{name}' is not available in this version") from None
        raise
    return getattr(mod, cls)(options)


__all__ = ["JudgeProtocol", "ParseFailure", "ProtocolOptions", "available_protocols", "get_protocol"]
