"""``polyjudge validate`` (judge selection without gold labels) and ``polyjudge simulate``.

The computations are :func:`polyjudge.api.validate` and :func:`polyjudge.api.simulate`.
"""

from __future__ import annotations

import json
from dataclasses import replace

import click

from polyjudge.cli.options import FINITE, OPEN_SHARE, SEED, emit, format_option, out_option, share
from polyjudge.data.errors import InputError


def _parse_floats(values: tuple[str, ...], name: str) -> tuple[float, ...] | None:
    """Repeated and comma-separated numbers; None when none was given (the API's default)."""
    out: list[float] = []
    for v in values or ():
        for part in v.split(","):
            try:
                out.append(float(part))
            except ValueError:
                raise InputError(f"--{name}: '{part}' is not a number") from None
    return tuple(out) or None


def _judge_spec(spec: str) -> tuple[str | None, str]:
    name, _, path = spec.partition("=") if "=" in spec else ("", "", spec)
    return name or None, path


@click.command("validate")
@click.option("--task", "task_path", required=True, type=click.Path(dir_okay=False),
              help="Rating task file (JSON or TOML): options and admissible response sets.")
@click.option("--human", "human_path", required=True,
              help="Human ratings: JSONL, TSV (item, protocol, answer) or a run directory.")
@click.option("--judge", "judge_specs", multiple=True, required=True,
              help="NAME=PATH of one judge's ratings (repeat). PATH is a JSONL/TSV file or run "
                   "directories joined with '+' (e.g. its forced-choice run + its response-set run).")
@click.option("--option", "option", default=None,
              help="Option whose prevalence/decisions matter (label or letter; default: the first).")
@click.option("--tau", "taus", multiple=True, help="Decision cutoff(s): positive when y_k >= tau (default 0.5).")
@click.option("--beta", "betas", multiple=True,
              help="Sensitivity(ies) beta of the human reverse forced-choice matrix (default 0,0.1,...,0.4).")
@click.option("--beta-source", default=None,
              help="Option whose forced choices may hide a larger response set (default: the last option).")
@click.option("--beta-target", default=None,
              help="Response set (letters) that forced choices of --beta-source come from with "
                   "probability beta (default: the singleton of the second-to-last option, as in the "
                   "paper's Table 2).")
@click.option("--reverse-matrix", type=click.Path(dir_okay=False), default=None,
              help="JSON |Q| x |O| human reverse forced-choice matrix; replaces the beta template.")
@click.option("--downstream", type=click.Choice(["srs", "soft"]), default="srs", show_default=True,
              help="Vectors thresholded for decisions: multi-label (srs) or forced-choice (soft).")
@click.option("--ppi-alpha", type=OPEN_SHARE, default=0.1, show_default=True)
@click.option("--ppi-fraction", type=OPEN_SHARE, default=0.2, show_default=True,
              help="Human-labelled share used for the PPI++ demonstration when judges rated no extra items.")
@click.option("--seed", type=SEED, default=0, show_default=True)
@format_option()
@out_option("Write the report to this file instead of standard output.")
def validate(task_path: str, human_path: str, judge_specs: tuple[str, ...], option: str | None,
             taus: tuple[str, ...], betas: tuple[str, ...], beta_source: str | None,
             beta_target: str | None, reverse_matrix: str | None, downstream: str, ppi_alpha: float,
             ppi_fraction: float, seed: int, fmt: str, out: str | None) -> None:
    """Compare judges with human ratings under many definitions of performance and
    report which judge each one selects and what that costs downstream
    (decision consistency and prevalence bias), after Guerdan et al."""
    from polyjudge.api import ValidateConfig
    from polyjudge.api import validate as select
    from polyjudge.api.validation import DEFAULT_BETAS, DEFAULT_TAUS

    config = ValidateConfig(task=task_path, human=human_path, judges=[_judge_spec(s) for s in judge_specs],
                            option=option, taus=_parse_floats(taus, "tau") or DEFAULT_TAUS,
                            betas=_parse_floats(betas, "beta") or DEFAULT_BETAS, beta_source=beta_source,
                            beta_target=beta_target, reverse_matrix=reverse_matrix, downstream=downstream,
                            ppi_alpha=ppi_alpha, ppi_fraction=ppi_fraction, seed=seed)
    report = select(config)
    text = (report.to_text() if fmt == "text" else report.to_tsv() if fmt == "tsv"
            else json.dumps(report.to_json(), indent=2) + "\n")
    emit(text, out)



def _parse_ints(values: tuple[str, ...], name: str) -> tuple[int, ...] | None:
    out: list[int] = []
    for v in values or ():
        for part in v.split(","):
            try:
                out.append(int(part))
            except ValueError:
                raise InputError(f"--{name}: '{part}' is not a whole number") from None
    return tuple(out) or None


@click.command("simulate")
@click.option("--options", "n_options", type=int, default=3, show_default=True, help="|O|")
@click.option("--sets", "n_sets", type=int, default=None, help="|Q| (default: all non-empty subsets)")
@click.option("--items", "n_items", type=int, default=100, show_default=True)
@click.option("--judges", "n_judges", type=int, default=50, show_default=True)
@click.option("--gamma-human", type=FINITE, default=1.0, show_default=True, help="Human selection-effect strength γ.")
@click.option("--gamma-judge", type=FINITE, default=1.0, show_default=True, help="Judge selection-effect strength γ.")
@click.option("--error-rate", type=share(), default=0.0, show_default=True, help="Rater error ε.")
@click.option("--skew", type=FINITE, default=0.0, show_default=True, help="Error skew η.")
@click.option("--ratings", "human_ratings", type=int, default=3, show_default=True, help="Human ratings per item.")
@click.option("--judge-samples", type=int, default=10, show_default=True,
              help="Judge samples per item (0 = population).")
@click.option("--tau", "taus", multiple=True,
              help="Decision cutoff(s): positive when y_k >= tau (default 0.3,0.5,0.7; results are means over them).")
@click.option("--seeds", type=int, default=5, show_default=True, help="Repetitions (seeds 0..n-1).")
@click.option("--grid", is_flag=True, help="Run the 20-configuration default grid instead.")
@click.option("--budget", "budget", is_flag=True,
              help="Also: regret against the rating budget (--budget-items x --budget-ratings), on the first "
                   "underspecified configuration.")
@click.option("--budget-items", multiple=True, help="Corpus sizes of the budget grid (default 50,100,200).")
@click.option("--budget-ratings", multiple=True, help="Human ratings per item of the budget grid (default 1,3,5,10).")
@click.option("--prevalence", "prevalence", is_flag=True,
              help="Also: prevalence of each option under forced-choice vs response-set elicitation vs the truth, "
                   "on the first underspecified configuration.")
@click.option("--ambiguity", "ambiguity", multiple=True,
              help="Ambiguity levels for --prevalence: share of stable response-set mass on multi-option sets "
                   "(default 0,0.2,0.4,0.6,0.8).")
@click.option("--report", "report_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the tables and figures as one self-contained HTML report.")
@click.option("--plots-dir", type=click.Path(file_okay=False), default=None,
              help="Also write every plot of --report as a standalone SVG file here.")
@format_option()
@out_option("Write the results to this file instead of standard output.")
def simulate(n_options: int, n_sets: int | None, n_items: int, n_judges: int, gamma_human: float,
             gamma_judge: float, error_rate: float, skew: float, human_ratings: int, judge_samples: int,
             taus: tuple[str, ...], seeds: int, grid: bool, budget: bool, budget_items: tuple[str, ...],
             budget_ratings: tuple[str, ...], prevalence: bool, ambiguity: tuple[str, ...],
             report_path: str | None, plots_dir: str | None, fmt: str, out: str | None) -> None:
    """Synthetic judge-selection experiment (Guerdan et al. §6): which agreement
    metric picks which judge, the downstream regret of that choice, and how well
    each metric's judge ranking agrees with the decision-consistency ranking;
    optionally regret against the rating budget and prevalence by elicitation."""
    from polyjudge.api import SimConfig, default_grid
    from polyjudge.api import simulate as run_simulation
    from polyjudge.api.validation import AmbiguityLevels, BudgetGrid, write_simulation_report

    tau_values = _parse_floats(taus, "tau")
    if plots_dir is not None and report_path is None:
        raise InputError("--plots-dir needs --report")
    if grid:
        configs = default_grid()
    else:
        configs = [SimConfig(n_options=n_options, n_sets=n_sets, n_items=n_items, n_judges=n_judges,
                             gamma_human=gamma_human, gamma_judge=gamma_judge, error_rate=error_rate,
                             skew=skew, human_ratings=human_ratings, judge_samples=judge_samples or None)]
    if tau_values:
        configs = [replace(c, taus=tau_values) for c in configs]
    grid_spec = BudgetGrid(_parse_ints(budget_items, "budget-items") or BudgetGrid().items,
                           _parse_ints(budget_ratings, "budget-ratings") or BudgetGrid().ratings) if budget else None
    levels = AmbiguityLevels(_parse_floats(ambiguity, "ambiguity") or AmbiguityLevels().levels) if prevalence else None
    result = run_simulation(configs, seeds=seeds, budget=grid_spec, prevalence=levels)
    text = (result.to_json() + "\n" if fmt == "json" else result.to_text() if fmt == "text" else result.to_tsv())
    emit(text, out)
    if report_path is not None:
        rep = write_simulation_report(result, report_path, plots_dir=plots_dir)
        click.echo(f"wrote {report_path} ({len(rep.sections)} section(s), {len(rep.figures)} figure(s))", err=True)
