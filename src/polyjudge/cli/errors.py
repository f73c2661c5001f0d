"""One place that turns known errors into messages and exit codes.

Exit codes (README, "Exit codes"):

* 0: the command finished (a run within its ``--max-failure-rate``);
* 1: an unexpected internal error, or the system failed us (disk full, no
  permission, a damaged store): one line, no traceback for the latter;
* 2: bad input or usage: ``polyjudge: error: FILE:LINE, field 'F': why``
  (also a run directory in use by another process, or holding another run);
* 3: a run stopped short: more failed judgments (no answer, refused, unparseable,
  truncated) than ``--max-failure-rate``, or
  the endpoint rejected the requests or kept failing;
* 4: the run stopped at its ``--max-cost`` spending cap (re-run with a higher cap to resume);
* 130: interrupted (Ctrl-C, SIGTERM); completed judgments are kept;
* 141: standard output was closed by its reader (``| head -1``): quiet, as a
  command killed by SIGPIPE would end, with everything computed already kept.

Every line printed here is passed through :func:`polyjudge.data.secrets.redact`.
"""

from __future__ import annotations

import gc
import logging
import os
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import click

from polyjudge.data.errors import InputError

# polyjudge.api.runs (the engine, scipy) is imported only when an error is reported: ``--help`` stays light.

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2
EXIT_RUN_FAILED = 3
EXIT_BUDGET = 4
EXIT_INTERRUPTED = 130
EXIT_OUTPUT_CLOSED = 141  # 128 + SIGPIPE, the shell's code of a command whose reader went away

# The cyclic garbage collector's thresholds while a command runs (young, middle, old generation). Python's
# default (700, 10, 10) scans the young objects every 700 net allocations, and a run allocates about 80 per
# request while hundreds of requests are in flight: their objects were scanned again and again, and promoted
# into generations whose scans cost milliseconds, about a tenth of a first run's CPU at 256 in flight.
# Objects without cycles are freed as they always are; the cyclic garbage held between two collections is
# bounded by the young threshold (a few MB). The caller's own thresholds are restored when the command ends.
COMMAND_GC_THRESHOLDS = (50_000, 20, 20)


class OutputClosed(Exception):
    """Standard output was closed by its reader (``polyjudge ... | head -1``): not an error of ours."""


class CommandExit(Exception):
    """A command's documented exit code other than 0 after its output is written (``drift``: 5, drift found);
    click's own ``Exit`` is swallowed by ``standalone_mode=False``, so commands raise this instead."""

    def __init__(self, exit_code: int) -> None:
        super().__init__(f"exit {exit_code}")
        self.exit_code = exit_code


def error_line(message: str) -> None:
    """``polyjudge: error: MESSAGE`` on stderr, one line, secrets removed."""
    click.echo(f"polyjudge: error: {_one_line(message)}", err=True)


def _one_line(text: str) -> str:
    from polyjudge.api.runs import redact

    return " ".join((redact(text) or "").split("\n"))


class _WarningLines(logging.Handler):
    """Library warnings (``logging.getLogger("polyjudge")``) as ``polyjudge: warning: ...`` lines."""

    def emit(self, record: logging.LogRecord) -> None:
        click.echo(f"polyjudge: warning: {_one_line(record.getMessage())}", err=True)


def _route_warnings() -> None:
    logger = logging.getLogger("polyjudge")
    if not any(isinstance(h, _WarningLines) for h in logger.handlers):
        logger.addHandler(_WarningLines(logging.WARNING))


def _os_message(exc: OSError) -> str:
    if exc.strerror and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc) or type(exc).__name__


def run_cli(group: click.Group, argv: list[str] | None) -> int:
    """The command's exit code. ``argv`` None is the process's own command line (the console script,
    ``python -m``): an interrupted run then ends the process as soon as its line is printed
    (:func:`_end_interrupted`), so neither a native thread nor a second Ctrl-C can hold or kill it."""
    try:
        code, error = _run_cli(group, argv)
    except KeyboardInterrupt:  # a second Ctrl-C while the first one's line was being printed
        code, error = EXIT_INTERRUPTED, None
    if error is not None and argv is None and code == EXIT_INTERRUPTED:
        from polyjudge.api.runs import RunInterrupted

        if isinstance(error, RunInterrupted):
            _end_interrupted()
    return code


def _end_interrupted() -> None:
    """End an interrupted command's process now, with its exit code. Its files are written and every answer
    is committed to the store; what is left would only wait: the interpreter's exit joins an embedded model's
    native thread, which finishes an answer nobody stores (up to its whole generation), and while it does a
    second Ctrl-C met the default handler the interpreter restores on exit and killed the process by SIGINT
    instead of exiting with 130."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(EXIT_INTERRUPTED)


def _run_cli(group: click.Group, argv: list[str] | None) -> tuple[int, BaseException | None]:
    """The command's exit code and the exception that ended it (None when it ended normally)."""
    _route_warnings()
    try:
        with _command_gc():
            group.main(args=argv, prog_name="polyjudge", standalone_mode=False)
        sys.stdout.flush()  # a reader gone before the last buffered lines: seen here, not at exit
    except Exception as exc:
        if not _output_closed(exc):
            return _known_error(exc), exc
        _silence_stdout()
        return EXIT_OUTPUT_CLOSED, exc
    except BaseException as exc:
        return _known_error(exc), exc
    return EXIT_OK, None


@contextmanager
def _command_gc() -> Iterator[None]:
    """The command's garbage collection as a batch job's (:data:`COMMAND_GC_THRESHOLDS`), the caller's after."""
    before = gc.get_threshold()
    gc.set_threshold(*COMMAND_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _output_closed(exc: BaseException) -> bool:
    """True for a closed standard output (a broken pipe on writing results), whoever raised it."""
    return isinstance(exc, (OutputClosed, BrokenPipeError))


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail loudly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _known_error(error: BaseException) -> int:
    """The exit code of an exception the CLI knows (its line printed); anything else is re-raised."""
    from polyjudge.api.runs import RunInterrupted, RunStopped

    try:
        raise error
    except InputError as exc:
        error_line(str(exc.with_flags(lambda name: "--" + name.replace("_", "-"))))
        return EXIT_BAD_INPUT
    except RunInterrupted as exc:
        click.echo(_one_line(str(exc)), err=True)
        return EXIT_INTERRUPTED
    except RunStopped as exc:  # 3 (failures, unreachable endpoint) or 4 (spending cap): the exception says
        error_line(str(exc))
        return exc.exit_code
    except (click.exceptions.Exit, CommandExit) as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return EXIT_BAD_INPUT if exc.exit_code == 2 else exc.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("polyjudge: interrupted", err=True)  # a run in progress says more (RunInterrupted)
        return EXIT_INTERRUPTED
    except UnicodeDecodeError as exc:  # a reader that bypassed polyjudge.data.textio
        error_line(f"input is not valid UTF-8 ({exc.reason} at byte {exc.start})")
        return EXIT_BAD_INPUT
    except sqlite3.Error as exc:
        error_line(f"the run's store database failed: {exc}")
        return EXIT_INTERNAL
    except OSError as exc:  # disk full, no permission, a path that vanished
        error_line(_os_message(exc))
        return EXIT_INTERNAL
