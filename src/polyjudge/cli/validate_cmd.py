"""``polyjudge validate`` (judge selection without gold labels) and ``polyjudge simulate``."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
import numpy as np

from polyjudge.data.errors import InputError


def _parse_floats(values: tuple[str, ...], default: list[float], name: str) -> list[float]:
    out: list[float] = []
    for v in values or ():
        for part in v.split(","):
            try:
                out.append(float(part))
            except ValueError:
                raise InputError(f"--{name}: '{part}' is not a number") from None
    return out or default


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
@click.option("--ppi-alpha", type=float, default=0.1, show_default=True)
@click.option("--ppi-fraction", type=float, default=0.2, show_default=True,
              help="Human-labelled share used for the PPI++ demonstration when judges rated no extra items.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--format", "fmt", type=click.Choice(["text", "tsv", "json"]), default="text", show_default=True)
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write the report here.")
def validate(task_path: str, human_path: str, judge_specs: tuple[str, ...], option: str | None,
             taus: tuple[str, ...], betas: tuple[str, ...], beta_source: str | None,
             beta_target: str | None, reverse_matrix: str | None, downstream: str, ppi_alpha: float,
             ppi_fraction: float, seed: int, fmt: str, out: str | None) -> None:
    """Compare judges with human ratings under many definitions of performance and
    report which judge each one selects and what that costs downstream
    (decision consistency and prevalence bias), after Guerdan et al."""
    from polyjudge.validation.rating_model import beta_template, check_reverse_forced_choice
    from polyjudge.validation.ratings import read_ratings
    from polyjudge.validation.selection import select_judges
    from polyjudge.validation.task import load_task

    task = load_task(task_path)
    human = read_ratings(human_path, task, name="human")
    judges = []
    for spec in judge_specs:
        name, _, path = spec.partition("=") if "=" in spec else ("", "", spec)
        judges.append(read_ratings(path, task, name=name or None))
    k = 0 if option is None else (task.options.index(option) if option in task.options
                                  else task.option_of_letter(option))
    tau_list = _parse_floats(taus, [0.5], "tau")
    if reverse_matrix:
        try:
            m = json.loads(Path(reverse_matrix).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise InputError(f"cannot read reverse matrix: {exc}", path=reverse_matrix) from None
        fixed = check_reverse_forced_choice(np.asarray(m, dtype=float), task)
        beta_list: list[float | None] = [None]

        def reverse_fc(beta: float | None) -> np.ndarray:
            return fixed
    else:
        src = task.n_options - 1 if beta_source is None else (
            task.options.index(beta_source) if beta_source in task.options else task.option_of_letter(beta_source))
        if beta_target is None:
            tgt_set = task.singleton_index[max(src - 1, 0)]
            if tgt_set is None:
                raise InputError("default --beta-target needs singleton sets; give --beta-target")
        else:
            tgt_set = task.set_of_letters(beta_target)
        beta_list = [None] if task.fully_specified else list(
            _parse_floats(betas, [0.0, 0.1, 0.2, 0.3, 0.4], "beta"))

        def reverse_fc(beta: float | None) -> np.ndarray:
            return beta_template(task, beta or 0.0, source=src, target=tgt_set)

    report = select_judges(task, human, judges, reverse_fc=reverse_fc, betas=beta_list, taus=tau_list,
                           k=k, downstream_agg=downstream, ppi_alpha=ppi_alpha,
                           ppi_labelled_fraction=ppi_fraction, seed=seed)
    text = (report.to_text() if fmt == "text" else report.to_tsv() if fmt == "tsv"
            else json.dumps(report.to_json(), indent=2) + "\n")
    if out:
        Path(out).write_text(text, encoding="utf-8")
        click.echo(f"wrote {out}", err=True)
    else:
        click.echo(text, nl=False)


@click.command("simulate")
@click.option("--options", "n_options", type=int, default=3, show_default=True, help="|O|")
@click.option("--sets", "n_sets", type=int, default=None, help="|Q| (default: all non-empty subsets)")
@click.option("--items", "n_items", type=int, default=100, show_default=True)
@click.option("--judges", "n_judges", type=int, default=50, show_default=True)
@click.option("--gamma-human", type=float, default=1.0, show_default=True, help="Human selection-effect strength γ.")
@click.option("--gamma-judge", type=float, default=1.0, show_default=True, help="Judge selection-effect strength γ.")
@click.option("--error-rate", type=float, default=0.0, show_default=True, help="Rater error ε.")
@click.option("--skew", type=float, default=0.0, show_default=True, help="Error skew η.")
@click.option("--ratings", "human_ratings", type=int, default=3, show_default=True, help="Human ratings per item.")
@click.option("--judge-samples", type=int, default=10, show_default=True, help="Judge samples per item (0 = population).")
@click.option("--seeds", type=int, default=5, show_default=True, help="Repetitions (seeds 0..n-1).")
@click.option("--grid", is_flag=True, help="Run the 20-configuration default grid instead.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def simulate(n_options: int, n_sets: int | None, n_items: int, n_judges: int, gamma_human: float,
             gamma_judge: float, error_rate: float, skew: float, human_ratings: int, judge_samples: int,
             seeds: int, grid: bool, fmt: str) -> None:
    """Synthetic judge-selection experiment (Guerdan et al. §6): which agreement
    metric picks which judge, and the downstream regret of that choice."""
    from polyjudge.validation.simulate import SimConfig, default_grid, summarise
    from polyjudge.validation.simulate import simulate as run_sim

    if grid:
        configs = default_grid()
    else:
        configs = [SimConfig(n_options=n_options, n_sets=n_sets, n_items=n_items, n_judges=n_judges,
                             gamma_human=gamma_human, gamma_judge=gamma_judge, error_rate=error_rate,
                             skew=skew, human_ratings=human_ratings,
                             judge_samples=judge_samples or None)]
    t0 = time.perf_counter()
    blocks = []
    for cfg in configs:
        results = [run_sim(cfg, seed=s) for s in range(seeds)]
        blocks.append((cfg, results, summarise(results)))
    elapsed = time.perf_counter() - t0
    if fmt == "json":
        click.echo(json.dumps({"seconds": elapsed, "runs": [
            {"config": r[0].__dict__ | {"taus": list(r[0].taus)},
             "gamma_human": float(np.mean([x.gamma_human_effect for x in r[1]])),
             "gamma_judge": float(np.mean([x.gamma_judge_effect for x in r[1]])),
             "selection": r[2]} for r in blocks]}, indent=2))
        return
    for cfg, results, summ in blocks:
        gh = np.mean([r.gamma_human_effect for r in results])
        gj = np.mean([r.gamma_judge_effect for r in results])
        click.echo(f"|O|={cfg.n_options} |Q|={cfg.n_sets or 2 ** cfg.n_options - 1} items={cfg.n_items} "
                   f"judges={cfg.n_judges} ratings/item={cfg.human_ratings} Γh={gh:.2f} Γj={gj:.2f} "
                   f"ε={cfg.error_rate} η={cfg.skew} seeds={seeds}")
        click.echo(f"  {'definition':28s} {'C':>6s} {'regret':>7s} {'|B|':>6s} {'excess':>7s}")
        for label, s in sorted(summ.items(), key=lambda kv: kv[1]["regret"]):
            click.echo(f"  {label:28s} {s['consistency']:6.3f} {s['regret']:7.3f} {s['abs_bias']:6.3f} "
                       f"{s['bias_excess']:7.3f}")
    click.echo(f"{len(configs)} configuration(s) x {seeds} seed(s) in {elapsed:.2f} s")
