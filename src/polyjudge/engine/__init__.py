"""The judging engine: planning, concurrency, retries, the SQLite store, outputs.

Names load on first use, so importing one engine module (a command's flag bounds, a spec
group) does not load the whole engine.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from polyjudge.engine.core import Estimate, run, run_async, signature
    from polyjudge.engine.result import Judgment, RunResult
    from polyjudge.engine.runner import RetryPolicy
    from polyjudge.engine.spec import RunSpec

_HOMES = {"Estimate": "core", "run": "core", "run_async": "core", "signature": "core", "Judgment": "result",
          "RunResult": "result", "RetryPolicy": "runner", "RunSpec": "spec"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'polyjudge.engine' has no attribute {name!r}")
    return getattr(import_module(f"polyjudge.engine.{home}"), name)


__all__ = ["Estimate", "Judgment", "RetryPolicy", "RunResult", "RunSpec", "run", "run_async", "signature"]
