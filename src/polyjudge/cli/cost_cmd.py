"""``polyjudge cost RUN_DIR...``: what runs spent, per judge and model (from their manifests)."""

from __future__ import annotations

import json

import click

from polyjudge.api.cost import PRICE_UNKNOWN, CostReport, JudgeSpend
from polyjudge.cli.options import emit, format_option, out_option

_HEADER = ["run", "backend", "model", "prompt_tokens", "completion_tokens", "cost_usd", "price_source"]


def _cells(r: JudgeSpend) -> list[str]:
    return [r.run, r.backend, r.model, str(r.prompt_tokens), str(r.completion_tokens),
            f"{r.cost_usd:.6f}" if r.price_known else PRICE_UNKNOWN, r.price_source]


def render(report: CostReport, fmt: str) -> str:
    """The report as text (a table per run and per model), TSV (one row per run and judge) or JSON."""
    if fmt == "json":
        return json.dumps(report.to_dict(), indent=2) + "\n"
    if fmt == "tsv":
        return "".join("\t".join(x) + "\n" for x in [_HEADER, *map(_cells, report.rows)])
    if not report.rows:
        return "no spending recorded in these run directories\n"
    table = [_HEADER[:6], *[_cells(r)[:6] for r in report.rows], *[_cells(r)[:6] for r in report.totals]]
    widths = [max(len(x[i]) for x in table) for i in range(6)]
    lines = ["  ".join(x[i].ljust(widths[i]) for i in range(6)).rstrip() for x in table]
    total_in = sum(r.prompt_tokens for r in report.rows)
    total_out = sum(r.completion_tokens for r in report.rows)
    lines.append(f"{len(report.rows)} judge run(s): {total_in:,} prompt and {total_out:,} completion tokens, "
                 f"${report.cost_usd:,.4f}"
                 + (f" ({PRICE_UNKNOWN}: {', '.join(report.unpriced)}, not counted)" if report.unpriced else ""))
    return "\n".join(lines) + "\n"


@click.command("cost")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(file_okay=False))
@format_option()
@out_option("Write the table to this file instead of standard output.")
def cost(run_dirs: tuple[str, ...], fmt: str, out: str | None) -> None:
    """What RUN_DIR... spent: tokens and USD per judge and model, at the prices each run was charged."""
    from polyjudge.api.cost import run_costs

    emit(render(run_costs(run_dirs), fmt), out)
