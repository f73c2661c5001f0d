"""``polyjudge drift RUN|ANCHOR``: has the judge changed since it gave the stored answers?"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from polyjudge.cli.options import emit, format_option, out_option
from polyjudge.cli.specs import argument, option, shared, takes

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
        lines += [f"{s:<11} {d['n']:<8.0f} {_num(d['stored']):<8} {_num(d['fresh']):<8} {_num(d['shift'])}"
                  for s, d in result.system_shifts.items()]
    if result.flipped:
        lines.append("pairwise orderings of the run that the shifts would reverse: "
                     + ", ".join(f"{a} > {b}" for a, b in result.flipped))
    elif result.system_shifts:
        lines.append("no pairwise ordering of the run would reverse")
    return "\n".join(lines) + "\n"


TSV_HEADER = ("what", "test", "n", "stored", "fresh", "difference", "effect", "p", "p_holm", "drift")


def render_tsv(result: DriftResult) -> str:
    """One row per test (the verdict's ``drift`` on each: yes when that test found it)."""
    rows = ["\t".join(TSV_HEADER)]
    for t in result.verdict.tests:
        rows.append("\t".join([t.what, t.test, str(t.n), f"{t.stored:.6g}", f"{t.fresh:.6g}",
                               f"{t.fresh - t.stored:.6g}", _num(t.effect, 6), f"{t.p:.6g}", f"{t.p_holm:.6g}",
                               "yes" if t.what in result.verdict.reasons else "no"]))
    return "\n".join(rows) + "\n"


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
    click.echo(f"anchor set '{save}' saved to {path}: {plan.requests} request(s) with their stored answers; "
               f"checking it sends them again ({plan.cost_words()})", err=True)
    return plan


@dataclass(frozen=True, slots=True)
class DriftFlags:
    """The flags of ``polyjudge drift``, one field each."""

    target: str | None = argument("target", required=False)
    anchor: str | None = option(
        "--anchor", metavar="RUN", type=click.Path(file_okay=False), default=None,
        help="Save a fixed sample of RUN's requests and stored answers as an anchor set (with --save).")
    save: str | None = option("--save", metavar="NAME", default=None,
                              help="The anchor set's name (kept beside the shared cache).")
    sample: int = option("--sample", type=click.IntRange(1, 100_000), default=50, show_default=True,
                         help="Items whose stored answers are asked again (every judge's answer to each).")
    alpha: float = option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05,
                          show_default=True,
                          help="Level of the check: its share of false alarms on an unchanged judge.")
    seed: int = option("--seed", type=int, default=0, show_default=True,
                       help="Seed of the sample and of the permutation tests.")
    concurrency: int = option("--concurrency", type=click.IntRange(1, 64), default=4, show_default=True,
                              help="Requests in flight at once.")
    dry_run: bool = option("--dry-run", is_flag=True, help="Print the sample's cost estimate and send nothing.")
    max_cost: float | None = option(
        "--max-cost", type=click.FloatRange(0, min_open=True), metavar="USD", default=None,
        help="Never spend more on the check: each request's worst case is reserved before it is sent, and "
             "requests that would pass the cap are left unsent (exit 4).")
    prices: str | None = option("--prices", type=click.Path(dir_okay=False), metavar="FILE", default=None,
                                help="JSON price table over the built-in one, as for polyjudge judge.")
    cache_path: str | None = option(
        "--cache", "cache_path", type=click.Path(file_okay=False), metavar="PATH", default=None,
        help="The shared cache folder whose anchors/ folder holds the anchor sets (default: POLYJUDGE_ANCHORS, "
             "else POLYJUDGE_CACHE, else the user cache folder). The check itself never reads the cache.")
    fmt: str = shared(format_option(), "text")
    out: str | None = shared(out_option("Write the verdict to this file instead of standard output."), None)


@click.command("drift")
@takes(DriftFlags)
def drift(flags: DriftFlags) -> None:
    """Ask the judge of TARGET again and say whether its answers changed.

    TARGET is a run directory (a random --sample of its stored requests is sent again) or the name of an
    anchor set saved with --anchor RUN --save NAME. Fresh answers bypass the shared cache and are never
    stored in the run; the cost is printed before anything is sent and nothing is sent past --max-cost.
    Scores, parse and refusal rates, span counts and token log-probabilities are compared pair by pair.
    Exits 5 when drift is found, 4 when the cap left requests unsent.
    """
    from polyjudge.api.drift import DriftConfig, run_drift
    from polyjudge.data.errors import InputError

    if (flags.anchor is None) == (flags.target is None):
        raise InputError("give a run directory or anchor name, or --anchor RUN --save NAME", field="anchor")
    if flags.anchor is not None and not flags.save:
        raise InputError("--anchor needs --save NAME", field="save")
    config = DriftConfig(flags.anchor or flags.target or "", sample=flags.sample, max_cost=flags.max_cost,
                         alpha=flags.alpha, seed=flags.seed, prices=flags.prices, concurrency=flags.concurrency,
                         cache=flags.cache_path)
    plan = _plan(config, flags.anchor, flags.save)
    if flags.anchor is not None:
        return
    click.echo(plan.summary(), err=True)
    if flags.dry_run:
        return
    result = run_drift(plan)
    text = {"json": lambda: json.dumps(result.to_json(), indent=2) + "\n", "tsv": lambda: render_tsv(result)}
    emit(text.get(flags.fmt, lambda: render(result))(), flags.out)
    _exit(result)


__all__ = ["DriftFlags", "drift", "render", "render_tsv"]
