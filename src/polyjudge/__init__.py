"""polyjudge: LLM judges for multilingual text and MT, and the statistics to trust them.

The Python API lives in :mod:`polyjudge.api` and its main names are exported
here, loaded on first use so that ``import polyjudge`` stays cheap::

    import polyjudge
    run = polyjudge.judge("items.jsonl", polyjudge.JudgeConfig(protocol="mqm"), out="runs/mqm")
"""

from __future__ import annotations

from typing import Any

from polyjudge._version import __version__
from polyjudge.data.errors import InputError
from polyjudge.data.readers import read_items, read_parallel
from polyjudge.data.records import Item

# Names of polyjudge.api, imported lazily (the API imports the engine and backends).
_API = ("JudgeConfig", "judge", "estimate", "RunResult", "Estimate", "meta_eval", "MetaEvalConfig", "span_f1",
        "SpanF1Config", "consistency", "ConsistencyConfig", "probe", "ProbeConfig", "validate",
        "ValidateConfig", "report", "ReportConfig", "RunDir", "get_protocol")

__all__ = ["InputError", "Item", "__version__", "read_items", "read_parallel", *_API]


def __getattr__(name: str) -> Any:
    if name == "RunDir":
        from polyjudge.rundir import RunDir
        return RunDir
    if name == "run":  # 0.1.0's engine entry point, kept for existing scripts
        from polyjudge.engine import run
        return run
    if name == "get_protocol":
        from polyjudge.protocols import get_protocol
        return get_protocol
    if name in _API:
        import polyjudge.api as api
        return getattr(api, name)
    raise AttributeError(f"module 'polyjudge' has no attribute {name!r}")
