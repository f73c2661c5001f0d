"""The judging engine: planning, concurrency, retries, the SQLite store, outputs.

Names load on first use, so importing one engine module (a command's flag bounds, a spec
group) does not load the whole engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from polyjudge.registry import lazy_members

if TYPE_CHECKING:
    from polyjudge.engine.core import Estimate, run, run_async, signature
    from polyjudge.engine.result import Judgment, RunResult
    from polyjudge.engine.runner import RetryPolicy
    from polyjudge.engine.spec import RunSpec

_HOMES = {"Estimate": "core", "run": "core", "run_async": "core", "signature": "core", "Judgment": "result",
          "RunResult": "result", "RetryPolicy": "runner", "RunSpec": "spec"}


__getattr__, __dir__ = lazy_members(__name__, {name: f"{__name__}.{home}" for name, home in _HOMES.items()})


__all__ = ["Estimate", "Judgment", "RetryPolicy", "RunResult", "RunSpec", "run", "run_async", "signature"]
