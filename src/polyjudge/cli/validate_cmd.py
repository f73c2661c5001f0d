"""``polyjudge validate`` (judge selection without gold labels) and ``polyjudge simulate``.

The computations are :func:`polyjudge.api.validate` and :func:`polyjudge.api.simulate`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import click

from polyjudge.api.runs import file_target, input_target
from polyjudge.cli.options import FINITE, OPEN_SHARE, SEED, emit, format_option, guard_outputs, out_option, share
from polyjudge.cli.specs import option, shared, takes
from polyjudge.data.errors import InputError

if TYPE_CHECKING:
    from polyjudge.api import SimConfig, ValidateConfig


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


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidateFlags:
    """The flags of ``polyjudge validate``, in ``--help`` order."""

    task_path: str = option("--task", "task_path", required=True, type=click.Path(dir_okay=False),
                            help="Rating task file (JSON or TOML): options and admissible response sets.")
    human_path: str = option("--human", "human_path", required=True,
                             help="Human ratings: JSONL, TSV (item, protocol, answer), a run directory or an "
                                  "annotation campaign.")
    judge_specs: tuple[str, ...] = option(
        "--judge", "judge_specs", multiple=True, required=True,
        help="NAME=PATH of one judge's ratings (repeat). PATH is a JSONL/TSV file or run "
             "directories joined with '+' (e.g. its forced-choice run + its response-set run).")
    focus: str | None = option("--option", "focus", default=None,
                               help="Option whose prevalence/decisions matter (label or letter; default: the first).")
    taus: tuple[str, ...] = option("--tau", "taus", multiple=True,
                                   help="Decision cutoff(s): positive when y_k >= tau (default 0.5).")
    betas: tuple[str, ...] = option(
        "--beta", "betas", multiple=True,
        help="Sensitivity(ies) beta of the human reverse forced-choice matrix (default 0,0.1,...,0.4).")
    beta_source: str | None = option(
        "--beta-source", default=None,
        help="Option whose forced choices may hide a larger response set (default: the last option).")
    beta_target: str | None = option(
        "--beta-target", default=None,
        help="Response set (letters) that forced choices of --beta-source come from with "
             "probability beta (default: the singleton of the second-to-last option, as in the "
             "paper's Table 2).")
    reverse_matrix: str | None = option(
        "--reverse-matrix", type=click.Path(dir_okay=False), default=None,
        help="JSON |Q| x |O| human reverse forced-choice matrix; replaces the beta template.")
    downstream: str = option("--downstream", type=click.Choice(["srs", "soft"]), default="srs", show_default=True,
                             help="Vectors thresholded for decisions: multi-label (srs) or forced-choice (soft).")
    ppi_alpha: float = option("--ppi-alpha", type=OPEN_SHARE, default=0.1, show_default=True,
                              help="Level of the PPI++ confidence intervals (coverage 1 - alpha).")
    ppi_fraction: float = option(
        "--ppi-fraction", type=OPEN_SHARE, default=0.2, show_default=True,
        help="Human-labelled share used for the PPI++ demonstration when judges rated no extra items.")
    seed: int = option("--seed", type=SEED, default=0, show_default=True, help="Seed of the random draws.")
    lps: tuple[str, ...] = option(
        "--lp", "lps", multiple=True, metavar="SRC-TGT",
        help="Language pair(s) to compare, repeatable, of those the ratings name (an lp or src_lang/tgt_lang "
             "column, a run's items; default: each of them, one table per pair); one they do not hold exits 2.")
    fmt: str = shared(format_option())
    out: str | None = shared(out_option("Write the report to this file instead of standard output."))

    def config(self) -> ValidateConfig:
        """The API's settings (number lists parsed; none given means the API's default)."""
        from polyjudge.api import ValidateConfig
        from polyjudge.api.validation import DEFAULT_BETAS, DEFAULT_TAUS

        return ValidateConfig(task=self.task_path, human=self.human_path,
                              judges=[_judge_spec(s) for s in self.judge_specs], option=self.focus,
                              taus=_parse_floats(self.taus, "tau") or DEFAULT_TAUS,
                              betas=_parse_floats(self.betas, "beta") or DEFAULT_BETAS,
                              beta_source=self.beta_source, beta_target=self.beta_target,
                              reverse_matrix=self.reverse_matrix, downstream=self.downstream,
                              ppi_alpha=self.ppi_alpha, ppi_fraction=self.ppi_fraction, seed=self.seed,
                              lps=self.lps)


@click.command("validate")
@takes(ValidateFlags)
def validate(flags: ValidateFlags) -> None:
    """Compare judges with human ratings under many definitions of performance and
    report which judge each one selects and what that costs downstream
    (decision consistency and prevalence bias), after Guerdan et al.
    Ratings that name language pairs are compared per pair, each table named by its pair."""
    from polyjudge.api.validation import selections_text, validate_pairs

    inputs = [*input_target("--human", flags.human_path), *input_target("--task", flags.task_path)]
    inputs += [t for name, paths in map(_judge_spec, flags.judge_specs) for path in paths.split("+")
               for t in input_target(f"--judge {name or path}", path)]
    guard_outputs({"out": file_target("-o/--out", flags.out)}, inputs)  # before the work, not after
    emit(selections_text(validate_pairs(flags.config()), flags.fmt), flags.out, inputs)


def _parse_ints(values: tuple[str, ...], name: str) -> tuple[int, ...] | None:
    out: list[int] = []
    for v in values or ():
        for part in v.split(","):
            try:
                out.append(int(part))
            except ValueError:
                raise InputError(f"--{name}: '{part}' is not a whole number") from None
    return tuple(out) or None


@dataclass(frozen=True, slots=True, kw_only=True)
class SimulateFlags:
    """The flags of ``polyjudge simulate``, in ``--help`` order."""

    n_options: int = option("--options", "n_options", type=int, default=3, show_default=True, help="|O|")
    n_sets: int | None = option("--sets", "n_sets", type=int, default=None,
                                help="|Q| (default: all non-empty subsets)")
    n_items: int = option("--items", "n_items", type=int, default=100, show_default=True,
                          help="Simulated items per experiment.")
    n_judges: int = option("--judges", "n_judges", type=int, default=50, show_default=True,
                           help="Simulated candidate judges.")
    gamma_human: float = option("--gamma-human", type=FINITE, default=1.0, show_default=True,
                                help="Human selection-effect strength γ.")
    gamma_judge: float = option("--gamma-judge", type=FINITE, default=1.0, show_default=True,
                                help="Judge selection-effect strength γ.")
    error_rate: float = option("--error-rate", type=share(), default=0.0, show_default=True, help="Rater error ε.")
    skew: float = option("--skew", type=FINITE, default=0.0, show_default=True, help="Error skew η.")
    human_ratings: int = option("--ratings", "human_ratings", type=int, default=3, show_default=True,
                                help="Human ratings per item.")
    judge_samples: int = option("--judge-samples", type=int, default=10, show_default=True,
                                help="Judge samples per item (0 = population).")
    taus: tuple[str, ...] = option(
        "--tau", "taus", multiple=True,
        help="Decision cutoff(s): positive when y_k >= tau (default 0.3,0.5,0.7; results are means over them).")
    seeds: int = option("--seeds", type=int, default=5, show_default=True, help="Repetitions (seeds 0..n-1).")
    grid: bool = option("--grid", is_flag=True, help="Run the 20-configuration default grid instead.")
    budget: bool = option("--budget", "budget", is_flag=True,
                          help="Also: regret against the rating budget (--budget-items x --budget-ratings), on the "
                               "first underspecified configuration.")
    budget_items: tuple[str, ...] = option("--budget-items", multiple=True,
                                           help="Corpus sizes of the budget grid (default 50,100,200).")
    budget_ratings: tuple[str, ...] = option("--budget-ratings", multiple=True,
                                             help="Human ratings per item of the budget grid (default 1,3,5,10).")
    prevalence: bool = option(
        "--prevalence", "prevalence", is_flag=True,
        help="Also: prevalence of each option under forced-choice vs response-set elicitation vs the truth, "
             "on the first underspecified configuration.")
    ambiguity: tuple[str, ...] = option(
        "--ambiguity", "ambiguity", multiple=True,
        help="Ambiguity levels for --prevalence: share of stable response-set mass on multi-option sets "
             "(default 0,0.2,0.4,0.6,0.8).")
    report_path: str | None = option("--report", "report_path", type=click.Path(dir_okay=False), default=None,
                                     help="Also write the tables and figures as one self-contained HTML report.")
    plots_dir: str | None = option("--plots-dir", type=click.Path(file_okay=False), default=None,
                                   help="Also write every plot of --report as a standalone SVG file here.")
    fmt: str = shared(format_option())
    out: str | None = shared(out_option("Write the results to this file instead of standard output."))


def _configs(flags: SimulateFlags) -> list[SimConfig]:
    """The simulated configurations: the default grid or the one the flags describe, at the cutoffs given."""
    from polyjudge.api import SimConfig, default_grid

    tau_values = _parse_floats(flags.taus, "tau")
    if flags.plots_dir is not None and flags.report_path is None:
        raise InputError("--plots-dir needs --report")
    if flags.grid:
        configs = default_grid()
    else:
        configs = [SimConfig(n_options=flags.n_options, n_sets=flags.n_sets, n_items=flags.n_items,
                             n_judges=flags.n_judges, gamma_human=flags.gamma_human, gamma_judge=flags.gamma_judge,
                             error_rate=flags.error_rate, skew=flags.skew, human_ratings=flags.human_ratings,
                             judge_samples=flags.judge_samples or None)]
    return [replace(c, taus=tau_values) for c in configs] if tau_values else configs


@click.command("simulate")
@takes(SimulateFlags)
def simulate(flags: SimulateFlags) -> None:
    """Synthetic judge-selection experiment (Guerdan et al. §6): which agreement
    metric picks which judge, the downstream regret of that choice, and how well
    each metric's judge ranking agrees with the decision-consistency ranking;
    optionally regret against the rating budget and prevalence by elicitation."""
    from polyjudge.api import simulate as run_simulation
    from polyjudge.api.validation import AmbiguityLevels, BudgetGrid, write_simulation_report

    configs = _configs(flags)
    grid_spec = BudgetGrid(_parse_ints(flags.budget_items, "budget-items") or BudgetGrid().items,
                           _parse_ints(flags.budget_ratings, "budget-ratings") or BudgetGrid().ratings
                           ) if flags.budget else None
    levels = (AmbiguityLevels(_parse_floats(flags.ambiguity, "ambiguity") or AmbiguityLevels().levels)
              if flags.prevalence else None)
    result = run_simulation(configs, seeds=flags.seeds, budget=grid_spec, prevalence=levels)
    fmt = flags.fmt
    text = (result.to_json() + "\n" if fmt == "json" else result.to_text() if fmt == "text" else result.to_tsv())
    emit(text, flags.out)
    if flags.report_path is not None:
        rep = write_simulation_report(result, flags.report_path, plots_dir=flags.plots_dir)
        click.echo(f"wrote {flags.report_path} ({len(rep.sections)} section(s), {len(rep.figures)} figure(s))",
                   err=True)
