"""The judging engine: planning, concurrency, retries, the SQLite store, outputs."""

from polyjudge.engine.core import Estimate, run, run_async, signature
from polyjudge.engine.result import Judgment, RunResult
from polyjudge.engine.runner import RetryPolicy
from polyjudge.engine.spec import RunSpec

__all__ = ["Estimate", "Judgment", "RetryPolicy", "RunResult", "RunSpec", "run", "run_async", "signature"]
