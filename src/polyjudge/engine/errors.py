"""Runs that end early or outside their limits.

Each is raised by :func:`polyjudge.engine.session.judge` *after* the run
directory has been written from the store, so nothing completed is lost; the
partial result rides along (``exc.result``). The CLI maps them to exit codes:
:class:`RunInterrupted` 130, :class:`EndpointFailed` and
:class:`FailureRateExceeded` 3, :class:`BudgetExceeded` 4 (each class's
``exit_code``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from polyjudge.engine.result import RunResult


class RunStopped(Exception):
    """A run that did not finish within its limits; its outputs are written to ``out``."""

    exit_code: int = 3

    def __init__(self, message: str, result: RunResult, out: Path | None) -> None:
        super().__init__(message)
        self.result, self.out = result, out


class RunInterrupted(RunStopped):
    """Ctrl-C or SIGTERM: sending stopped, completed judgments are kept (re-run to resume)."""

    def __init__(self, result: RunResult, out: Path | None, signum: int | None) -> None:
        done, total = result.answered_count(), len(result.judgments)
        if out is not None:
            msg = (f"interrupted: {done} of {total} judgments done and kept in {out}; "
                   "re-run the same command to resume")
        else:
            msg = f"interrupted: {done} of {total} judgments done (no run directory, so nothing is kept)"
        super().__init__(msg, result, out)
        self.signum = signum

    exit_code = 130


class EndpointFailed(RunStopped):
    """The endpoint rejected the requests (401/403/404, unknown model) or kept failing;
    the run stopped sending early."""


class FailureRateExceeded(RunStopped):
    """More judgments failed than the configured share allows: requests with no answer after
    retries, answers the provider withheld, answers that could not be parsed and answers cut at the
    token limit all count (a run of unreadable answers computed nothing, whatever its requests did).
    ``kinds`` holds the count of each (``request``, ``refused``, ``parse``, ``truncated``)."""

    def __init__(self, result: RunResult, out: Path | None, kinds: dict[str, int], total: int,
                 limit: float) -> None:
        failed = sum(kinds.values())
        where = f"; the run is written to {out}" if out is not None else ""
        super().__init__(f"{failed} of {total} judgments failed ({failed / total:.1%}: {describe_kinds(kinds)}), "
                         f"more than the allowed share {limit:g} (--max-failure-rate){where}", result, out)
        self.failed, self.total, self.limit, self.kinds = failed, total, limit, dict(kinds)


def describe_kinds(kinds: dict[str, int]) -> str:
    """``request 0, refused 0, parse 120, truncated 0``: every kind of failure with its count."""
    return ", ".join(f"{kind} {n}" for kind, n in kinds.items())


class BudgetExceeded(RunStopped):
    """The spending cap (``--max-cost``) left no room for the next request: sending stopped, the
    requests in flight were finished. Re-running with a higher cap resumes."""

    exit_code = 4

    def __init__(self, result: RunResult, out: Path | None, spent: float, cap: float) -> None:
        done, total = result.answered_count(), len(result.judgments)
        kept = f"; kept in {out}, re-run with a higher --max-cost to resume" if out is not None else ""
        super().__init__(f"spending cap reached: ${spent:.4f} spent, ${max(0.0, cap - spent):.4f} left of the "
                         f"${cap:.4f} cap (--max-cost); {done} of {total} judgments done{kept}", result, out)
        self.spent, self.cap = spent, cap

    @property
    def left(self) -> float:
        return max(0.0, self.cap - self.spent)


__all__ = ["BudgetExceeded", "EndpointFailed", "FailureRateExceeded", "RunInterrupted", "RunStopped", "describe_kinds"]
