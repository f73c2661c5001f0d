"""``polyjudge batch status|cancel RUN_DIR``: the Batch API batches of a run directory."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import click

from polyjudge.api import BatchRecord, batch_status, cancel_batches
from polyjudge.cli.options import TIMEOUT, emit, format_option, out_option


def _when(stamp: float | None) -> str:
    return "" if stamp is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp))


def render(records: Sequence[BatchRecord], fmt: str) -> str:
    """The batches as text, TSV or JSON."""
    if fmt == "json":
        return json.dumps([r.to_dict() for r in records], indent=2) + "\n"
    header = ["judge", "batch_id", "status", "total", "completed", "failed", "created", "expires", "collected"]
    rows = [[r.judge, r.batch_id or f"({r.submission})", r.status, str(r.total), str(r.completed), str(r.failed),
             _when(r.created), _when(r.expires_at), "yes" if r.collected else "no"] for r in records]
    if fmt == "tsv":
        return "".join("\t".join(x) + "\n" for x in [header, *rows])
    if not records:
        return "no batches in this run directory\n"
    widths = [max(len(x[i]) for x in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(x[i].ljust(widths[i]) for i in range(len(header))).rstrip() for x in [header, *rows]]
    notes = [f"{r.batch_id or r.submission}: {r.note}" for r in records if r.note]
    open_lines = sum(r.total for r in records if r.open)
    lines.append(f"{len(records)} batch(es); {sum(1 for r in records if r.open)} open, holding {open_lines} "
                 "request line(s)")
    return "\n".join(lines + notes) + "\n"


def _connection(fn: Any) -> Any:
    fn = click.option("--api-key-env", default=None,
                      help="Environment variable holding the API key (default: the one the run used).")(fn)
    fn = click.option("--base-url", default=None,
                      help="Endpoint of the Batch API (default: the one the run used; give it when that URL held "
                           "a password, which the run directory keeps masked).")(fn)
    return click.option("--timeout", type=TIMEOUT, default=30.0, show_default=True, help="Seconds per call.")(fn)


@click.group()
def batch() -> None:
    """Batches a run sent through a Batch API (--batch): status and cancel."""


@batch.command()
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option("--offline", is_flag=True, help="Show what the run directory knows; do not ask the provider.")
@_connection
@format_option()
@out_option("Write the table to this file instead of standard output.")
def status(run_dir: str, offline: bool, api_key_env: str | None, base_url: str | None, timeout: float, fmt: str,
           out: str | None) -> None:
    """Each batch of RUN_DIR with its request counts (open ones as the provider reports them now)."""
    records = batch_status(run_dir, refresh=not offline, api_key_env=api_key_env, base_url=base_url,
                           timeout=timeout)
    emit(render(records, fmt), out)


@batch.command()
@click.argument("run_dir", type=click.Path(file_okay=False))
@_connection
@format_option()
def cancel(run_dir: str, api_key_env: str | None, base_url: str | None, timeout: float, fmt: str) -> None:
    """Cancel every open batch of RUN_DIR; its unanswered lines are sent again when the run is resumed."""
    records = cancel_batches(run_dir, api_key_env=api_key_env, base_url=base_url, timeout=timeout)
    if not records:
        click.echo("no open batches to cancel", err=True)
    click.echo(render(records, fmt), nl=False)
