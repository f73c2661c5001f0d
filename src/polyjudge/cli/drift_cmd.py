"""``polyjudge drift RUN|ANCHOR``: has the judge changed since it gave the stored answers?"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

import click

from polyjudge.cli.options import emit, format_option, out_option

if TYPE_CHECKING:
    from polyjudge.api.drift import DriftPlan, DriftResult


def _num(x: float | None, digits: int = 3) -> str:
    if x is None:
        return "-"
    return str(x) if not math.isfinite(x) else f"{x:.{digits}f}"


def render(result: DriftResult) -> str:
    """The verdict, every test, what the servers said and what the run would change, as text."""
    v = result.verdict
    word = "DRIFT" if result.drift else "no drift found"
    cost = "price unknown" if result.cost_usd is None else f"${result.cost_usd:.4f}"
    lines = [f"{word}: p = {v.p:.4g} (smallest Holm-adjusted, alpha {v.alpha:g})"
             + (f"; found in {', '.join(v.reasons)}" if v.reasons else ""),
             f"sent {result.sent} of {result.plan.requests} request(s) ({result.failed} failed, {result.not_sent} "
             f"left unsent by the cap); cost {cost}", "",
             "test        pairs  stored   fresh    effect   p        p_holm   method"]
    for t in v.tests:
        lines.append(f"{t.what:<11} {t.n:<6} {_num(t.stored):<8} {_num(t.fresh):<8} {_num(t.effect):<8} "
                     f"{t.p:<8.4g} {t.p_holm:<8.4g} {t.test}")
    for c in result.served_changes:
        said = "model changed" if c["model_changed"] else "system_fingerprint changed"
        lines.append(f"served: {c['judge']}: {said}: stored {_pairs(c['stored'])}, now {_pairs(c['fresh'])}")
    if result.system_shifts:
        lines += ["", "system      sampled  stored   fresh    shift"]
        lines += [f"{s:<11} {d['n']:<8.0f} {_num(d['stored'])} {_num(d['fresh'])} {_num(d['shift'])}"
                  for s, d in result.system_shifts.items()]
    if result.flipped:
        lines.append("pairwise orderings of the run that the shifts would reverse: "
                     + ", ".join(f"{a} > {b}" for a, b in result.flipped))
    elif result.system_shifts:
        lines.append("no pairwise ordering of the run would reverse")
    return "\n".join(lines) + "\n"


def _pairs(rows: list[list[Any]]) -> str:
    return ", ".join(m if f is None else f"{m} ({f})" for m, f in rows)


def _exit(result: DriftResult) -> None:
    from polyjudge.api.drift import CAP_EXIT, DRIFT_EXIT
    from polyjudge.cli.errors import CommandExit

    if result.drift:
        raise CommandExit(DRIFT_EXIT)
    if result.not_sent:
        raise CommandExit(CAP_EXIT)


def _plan(config: Any, anchor: str | None, save: str | None) -> DriftPlan:
    from polyjudge.api.drift import plan_drift, save_anchor_set

    if anchor is None:
        return plan_drift(config)
    plan, path = save_anchor_set(config, save or "")
    click.echo(f"anchor set '{save}' saved to {path}: {plan.requests} request(s) with their stored answers", err=True)
    return plan


def _decorate(fn: Any) -> Any:
    for option in reversed([
        click.argument("target", required=False),
        click.option("--anchor", metavar="RUN", type=click.Path(file_okay=False),
                     help="Save a fixed sample of RUN's requests and stored answers as an anchor set (with --save)."),
        click.option("--save", metavar="NAME", help="The anchor set's name (kept beside the shared cache)."),
        click.option("--sample", type=click.IntRange(1, 100_000), default=50, show_default=True,
                     help="Items whose stored answers are asked again (every judge's answer to each)."),
        click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05,
                     show_default=True, help="Level of the check: its share of false alarms on an unchanged judge."),
        click.option("--seed", type=int, default=0, show_default=True,
                     help="Seed of the sample and of the permutation tests."),
        click.option("--concurrency", type=click.IntRange(1, 64), default=4, show_default=True,
                     help="Requests in flight at once."),
        click.option("--dry-run", is_flag=True, help="Print the sample's cost estimate and send nothing."),
        click.option("--max-cost", type=click.FloatRange(0, min_open=True), metavar="USD",
                     help="Never spend more on the check: each request's worst case is reserved before it is sent, "
                          "and requests that would pass the cap are left unsent (exit 4)."),
        click.option("--prices", type=click.Path(dir_okay=False), metavar="FILE",
                     help="JSON price table over the built-in one, as for polyjudge judge."),
        click.option("--cache", "cache_path", type=click.Path(file_okay=False), metavar="PATH",
                     help="The shared cache folder whose anchors/ folder holds the anchor sets (default: "
                          "POLYJUDGE_ANCHORS, else POLYJUDGE_CACHE, else the user cache folder). The check "
                          "itself never reads the cache."),
        format_option(choices=("text", "json")),
        out_option("Write the verdict to this file instead of standard output."),
    ]):
        fn = option(fn)
    return fn


@click.command("drift")
@_decorate
def drift(target: str | None, anchor: str | None, save: str | None, sample: int, alpha: float, seed: int,
          concurrency: int, dry_run: bool, max_cost: float | None, prices: str | None, cache_path: str | None,
          fmt: str, out: str | None) -> None:
    """Ask the judge of TARGET again and say whether its answers changed.

    TARGET is a run directory (a random --sample of its stored requests is sent again) or the name of an
    anchor set saved with --anchor RUN --save NAME. Fresh answers bypass the shared cache and are never
    stored in the run; the cost is printed before anything is sent and nothing is sent past --max-cost.
    Scores, parse and refusal rates, span counts and token log-probabilities are compared pair by pair.
    Exits 5 when drift is found, 4 when the cap left requests unsent.
    """
    from polyjudge.api.drift import DriftConfig, run_drift
    from polyjudge.data.errors import InputError

    if (anchor is None) == (target is None):
        raise InputError("give a run directory or anchor name, or --anchor RUN --save NAME", field="anchor")
    if anchor is not None and not save:
        raise InputError("--anchor needs --save NAME", field="save")
    config = DriftConfig(anchor or target or "", sample=sample, max_cost=max_cost, alpha=alpha, seed=seed,
                         prices=prices, concurrency=concurrency, cache=cache_path)
    plan = _plan(config, anchor, save)
    click.echo(plan.summary(), err=True)
    if dry_run or anchor is not None:
        return
    result = run_drift(plan)
    emit(json.dumps(result.to_json(), indent=2) + "\n" if fmt == "json" else render(result), out)
    _exit(result)


__all__ = ["drift", "render"]
