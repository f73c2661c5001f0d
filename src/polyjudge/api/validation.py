"""Judge validation without gold labels (Guerdan et al.) and its synthetic experiment, from Python.

:func:`validate` compares judges with human ratings under many definitions of
performance and reports which judge each definition selects and what that
costs downstream. Humans who were forced to choose one option may have seen
several as admissible; the reverse forced-choice matrix models that, either
given outright or built from a sensitivity ``beta`` (a forced choice of
``beta_source`` hides the response set ``beta_target`` with probability beta).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from polyjudge.data import textio
from polyjudge.data.errors import InputError
from polyjudge.data.readers import json_type, parse_json
from polyjudge.data.shapes import normalise_fields
from polyjudge.validation.experiments import (
    DEFAULT_AMBIGUITY,
    DEFAULT_BUDGET_ITEMS,
    DEFAULT_BUDGET_RATINGS,
    BudgetResult,
    PrevalenceResult,
)
from polyjudge.validation.selection import SelectionReport, selection_json, selections_text
from polyjudge.validation.simulate import SimConfig, SimResult

if TYPE_CHECKING:
    from polyjudge.data.rating_task import RatingTask
    from polyjudge.report.html import Report
    from polyjudge.validation.ratings import RatingCounts
    from polyjudge.validation.selection import SelectionSpec
    from polyjudge.validation.simulation_results import SimulationResults

DOWNSTREAM = ("srs", "soft")
DEFAULT_BETAS = (0.0, 0.1, 0.2, 0.3, 0.4)
DEFAULT_TAUS = (0.5,)
JudgeSource = str | Path | tuple[str | None, str | Path]


@dataclass(frozen=True, slots=True)
class ValidateConfig:
    """The rating task, the ratings, and the settings of the comparison.

    ``judges``: each a ratings source (a JSONL/TSV file, or run directories
    joined with ``+``) or a ``(name, source)`` pair; an unnamed source is named
    after its file. ``option`` is the option whose prevalence and decisions
    matter (label or letter; default the first). ``reverse_matrix`` (a JSON file
    or a ``|Q| x |O|`` array) replaces the beta template.
    """

    def __post_init__(self) -> None:
        normalise_fields(self)  # Python shapes; TypeError names a field

    task: str | Path
    human: str | Path
    judges: Sequence[JudgeSource]
    option: str | None = None
    taus: tuple[float, ...] = DEFAULT_TAUS
    betas: tuple[float, ...] = DEFAULT_BETAS
    beta_source: str | None = None  # default: the last option
    beta_target: str | None = None  # letters; default: the singleton of the second-to-last option
    reverse_matrix: str | Path | np.ndarray | None = None
    downstream: str = "srs"  # vectors thresholded for decisions: multi-label (srs) or forced-choice (soft)
    ppi_alpha: float = 0.1
    ppi_fraction: float = 0.2  # human-labelled share for the PPI++ demonstration
    seed: int = 0
    # language pairs to compare, each on its own, of those the ratings name (default: each); a pair they
    # do not hold is an InputError naming those they hold
    lps: tuple[str, ...] = ()


def _judge_source(source: JudgeSource) -> tuple[str | None, str]:
    if isinstance(source, tuple):
        name, path = source
        return name or None, str(path)
    return None, str(source)


def _read_matrix(source: str | Path | np.ndarray) -> np.ndarray:
    """The reverse forced-choice matrix: an array, or a JSON file holding a list of rows of numbers."""
    if isinstance(source, np.ndarray):
        return np.asarray(source, dtype=float)
    path = str(source)
    if not Path(source).is_file():
        raise InputError("reverse matrix file not found", path=path)
    rows = parse_json(textio.read_text(source), path=path)
    if (not isinstance(rows, list) or not rows or not all(isinstance(r, list) and r for r in rows)
            or len({len(r) for r in rows}) != 1
            or not all(isinstance(x, int | float) and not isinstance(x, bool) for r in rows for x in r)):
        raise InputError(f"the reverse matrix must be a JSON list of |Q| rows of |O| numbers each "
                         f"(e.g. [[1, 0], [0, 1]]), got {json_type(rows)}", path=path)
    try:
        return np.asarray(rows, dtype=float)
    except OverflowError:
        raise InputError("the reverse matrix holds a number too large", path=path) from None


def validate(config: ValidateConfig) -> SelectionReport:
    """Which judge every definition of performance selects, per beta and cutoff tau,
    with decision consistency, prevalence bias and a PPI++ demonstration.

    One comparison: ratings without language pairs, or of one pair (or one selected with ``lps``); for
    ratings of several pairs, :func:`validate_pairs` gives one report per pair."""
    reports = validate_pairs(config)
    if len(reports) > 1:
        raise InputError(f"the ratings hold {len(reports)} language pairs ({', '.join(str(r.lp) for r in reports)}): "
                         "select one with lps, or call validate_pairs for a report per pair", field="lp")
    return reports[0]


def validate_pairs(config: ValidateConfig) -> list[SelectionReport]:
    """:func:`validate` for each language pair of the ratings on its own (one report, ``lp`` None, when
    they name none), in ``config.lps`` order (default: every pair, sorted)."""
    from polyjudge.api.annotate import campaign_or_file
    from polyjudge.validation.ratings import read_ratings
    from polyjudge.validation.selection import select_judges
    from polyjudge.validation.task import load_task

    if config.downstream not in DOWNSTREAM:
        raise InputError(f"unknown downstream {config.downstream!r} (srs, soft)", field="downstream")
    task = load_task(config.task)
    human = read_ratings(campaign_or_file(config.human, kind="ratings"), task, name="human")  # a campaign too
    judges = [read_ratings(path, task, name=name) for name, path in map(_judge_source, config.judges)]
    spec = _selection_spec(config, task)
    pair_of = _pair_of([human, *judges])
    present = sorted({pair_of[item] for item in human.items if item in pair_of})  # the humans' items' pairs
    if not present:
        if len(config.lps) > 1:
            raise InputError(f"{len(config.lps)} language pairs given, but the ratings name none (an lp or "
                             "src_lang and tgt_lang column, or a run's items)", field="lp")
        # ratings that name no pair are one comparison, labelled by the one pair given (as meta-eval)
        return [replace(select_judges(task, human, judges, spec), lp=config.lps[0] if config.lps else None)]
    missing = [lp for lp in dict.fromkeys(config.lps) if lp not in present]
    if missing:
        raise InputError(f"language pair {', '.join(textio.short(m) for m in missing)} is not in the ratings "
                         f"(they hold {', '.join(present)})", field="lp")
    reports = []
    for lp in list(dict.fromkeys(config.lps)) or present:
        report = select_judges(task, human.only(lp, pair_of), [j.only(lp, pair_of) for j in judges], spec)
        reports.append(replace(report, lp=lp))
    return reports


def _pair_of(sources: Sequence[RatingCounts]) -> dict[str, str]:
    """Every item's language pair, from whichever source names it; two pairs for one item are an InputError."""
    out: dict[str, str] = {}
    for src in sources:
        for item, lp in src.lps.items():
            if out.setdefault(item, lp) != lp:
                raise InputError(f"item {textio.short(item)} is of language pair {out[item]} in one ratings "
                                 f"source and {lp} in {textio.short(src.name)}", field="lp")
    return out


def _selection_spec(config: ValidateConfig, task: RatingTask) -> SelectionSpec:
    """The comparison's settings: the option, the cutoffs and the human reverse forced-choice matrices."""
    from polyjudge.validation.rating_model import beta_template, check_reverse_forced_choice
    from polyjudge.validation.selection import SelectionSpec

    k = 0 if config.option is None else (task.options.index(config.option) if config.option in task.options
                                         else task.option_of_letter(config.option))
    reverse_fc: Callable[[float | None], np.ndarray]
    if config.reverse_matrix is not None:
        where = None if isinstance(config.reverse_matrix, np.ndarray) else str(config.reverse_matrix)
        try:
            fixed = check_reverse_forced_choice(_read_matrix(config.reverse_matrix), task)
        except InputError as exc:
            raise InputError(exc.reason, path=exc.path or where, line=exc.line, field=exc.field) from None
        betas: list[float | None] = [None]

        def reverse_fc(beta: float | None) -> np.ndarray:
            return fixed
    else:
        src = task.n_options - 1 if config.beta_source is None else (
            task.options.index(config.beta_source) if config.beta_source in task.options
            else task.option_of_letter(config.beta_source))
        if config.beta_target is None:
            target = task.singleton_index[max(src - 1, 0)]
            if target is None:
                raise InputError("default --beta-target needs singleton sets; give --beta-target")
        else:
            target = task.set_of_letters(config.beta_target)
        betas = [None] if task.fully_specified else list(config.betas or DEFAULT_BETAS)
        chosen_target = target

        def reverse_fc(beta: float | None) -> np.ndarray:
            return beta_template(task, beta or 0.0, source=src, target=chosen_target)

    taus = list(config.taus or DEFAULT_TAUS)
    return SelectionSpec(reverse_fc=reverse_fc, betas=betas, taus=taus, k=k, downstream_agg=config.downstream,
                         ppi_alpha=config.ppi_alpha, ppi_labelled_fraction=config.ppi_fraction, seed=config.seed)


# --------------------------------------------------------------------------- simulation

SIMULATION_COLUMNS = ("config", "n_options", "n_sets", "n_items", "n_judges", "human_ratings", "error_rate",
                      "skew", "seeds", "gamma_human", "gamma_judge", "definition", "consistency", "regret",
                      "abs_bias", "bias_excess", "kendall_consistency", "spearman_consistency", "kendall_bias",
                      "spearman_bias")


@dataclass
class SimulationBlock:
    """One configuration: its results per seed and their mean selection outcome per definition."""

    config: SimConfig
    results: list[SimResult]
    summary: dict[str, dict[str, float]]

    @property
    def gamma_human(self) -> float:
        return float(np.mean([r.gamma_human_effect for r in self.results]))

    @property
    def gamma_judge(self) -> float:
        return float(np.mean([r.gamma_judge_effect for r in self.results]))

    def by_regret(self) -> list[tuple[str, dict[str, float]]]:
        return sorted(self.summary.items(), key=lambda kv: kv[1]["regret"])

    def rank_correlation(self) -> dict[str, dict[str, float]]:
        """Per definition: each rank correlation's mean (``kendall_consistency``, ...) and
        standard deviation (``..._sd``) over seeds; seeds where it is undefined are left out."""
        from polyjudge.validation.simulate import RANK_KEYS

        out: dict[str, dict[str, float]] = {}
        for label in self.summary:
            row: dict[str, float] = {}
            for key in RANK_KEYS:
                v = np.array([r.rank_correlation[label][key] for r in self.results if label in r.rank_correlation],
                             dtype=float)
                v = v[np.isfinite(v)]
                row[key] = float(v.mean()) if v.size else float("nan")
                row[f"{key}_sd"] = float(v.std(ddof=1)) if v.size > 1 else 0.0 if v.size else float("nan")
            out[label] = row
        return out


def _describe(cfg: SimConfig) -> str:
    return (f"|O|={cfg.n_options} |Q|={cfg.n_sets or 2 ** cfg.n_options - 1} items={cfg.n_items} "
            f"judges={cfg.n_judges} ratings/item={cfg.human_ratings}")


@dataclass
class SimulationResult:
    """The selection experiment per configuration (regrets and rank correlations), and
    optionally regret against the rating budget and prevalence by elicitation."""

    blocks: list[SimulationBlock]
    seeds: int
    seconds: float
    budget: BudgetResult | None = None
    prevalence: PrevalenceResult | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "polyjudge-simulation", "seconds": self.seconds, "seeds": self.seeds,
                               "seed_values": list(range(self.seeds)), "runs": [
            {"config": b.config.__dict__ | {"taus": list(b.config.taus)}, "label": _describe(b.config),
             "gamma_human": b.gamma_human, "gamma_judge": b.gamma_judge, "selection": b.summary,
             "rank_correlation": b.rank_correlation()} for b in self.blocks]}
        if self.budget is not None:
            out["budget"] = self.budget.to_dict()
        if self.prevalence is not None:
            out["prevalence"] = self.prevalence.to_dict()
        return out

    def to_json(self) -> str:
        """The document ``polyjudge simulate --format json`` writes (without its final newline)."""
        return json.dumps(self.to_dict(), indent=2)

    def results(self) -> SimulationResults:
        """The typed rows the report renders, exactly as :func:`read_simulation` reads them back from
        :meth:`to_json` (built from the same document, NaN and numpy numbers included)."""
        from polyjudge.validation.simulation_results import simulation_results

        return simulation_results(json.loads(json.dumps(self.to_dict(), default=float)), "the simulation")

    def to_text(self) -> str:
        lines = []
        for b in self.blocks:
            cfg = b.config
            ranks = b.rank_correlation()
            lines.append(f"{_describe(cfg)} Γh={b.gamma_human:.2f} Γj={b.gamma_judge:.2f} ε={cfg.error_rate} "
                         f"η={cfg.skew} seeds={self.seeds}")
            lines.append(f"  {'definition':28s} {'C':>6s} {'regret':>7s} {'|B|':>6s} {'excess':>7s} "
                         f"{'τ_b(C)':>7s} {'ρ(C)':>6s} {'τ_b(|B|)':>8s} {'ρ(|B|)':>7s}")
            for label, s in b.by_regret():
                rc = ranks[label]
                lines.append(f"  {label:28s} {s['consistency']:6.3f} {s['regret']:7.3f} {s['abs_bias']:6.3f} "
                             f"{s['bias_excess']:7.3f} {rc['kendall_consistency']:7.3f} "
                             f"{rc['spearman_consistency']:6.3f} {rc['kendall_bias']:8.3f} "
                             f"{rc['spearman_bias']:7.3f}")
        lines.append("τ_b / ρ: Kendall / Spearman correlation between the judge ranking by the metric and by "
                     "decision consistency C (or by |bias|), mean over seeds")
        for extra in (self.budget, self.prevalence):
            if extra is not None:
                lines.append("\n" + extra.to_text().rstrip("\n"))
        lines.append(f"{len(self.blocks)} configuration(s) x {self.seeds} seed(s) in {self.seconds:.2f} s")
        return "\n".join(lines) + "\n"

    def rows(self) -> list[dict[str, Any]]:
        """One row per configuration and definition (best regret first within a configuration)."""
        out = []
        for i, b in enumerate(self.blocks):
            cfg = b.config
            ranks = b.rank_correlation()
            for label, s in b.by_regret():
                out.append({"config": i, "n_options": cfg.n_options, "n_sets": cfg.n_sets or 2 ** cfg.n_options - 1,
                            "n_items": cfg.n_items, "n_judges": cfg.n_judges, "human_ratings": cfg.human_ratings,
                            "error_rate": cfg.error_rate, "skew": cfg.skew, "seeds": self.seeds,
                            "gamma_human": b.gamma_human, "gamma_judge": b.gamma_judge, "definition": label,
                            **{m: s[m] for m in ("consistency", "regret", "abs_bias", "bias_excess")},
                            **{m: ranks[label][m] for m in SIMULATION_COLUMNS[-4:]}})
        return out

    def to_tsv(self) -> str:
        """The selection table; with the budget or prevalence analyses, their tables follow,
        each after an empty line and a ``# name`` line."""
        text = _tsv(self.rows(), SIMULATION_COLUMNS)
        if self.budget is not None:
            text += "\n# regret_by_budget\n" + _tsv(self.budget.rows(), BudgetResult.COLUMNS)
        if self.prevalence is not None:
            text += "\n# prevalence_by_elicitation\n" + _tsv(self.prevalence.table(), PrevalenceResult.COLUMNS)
        return text

    def to_pandas(self) -> Any:
        from polyjudge.studies.tables import data_frame
        return data_frame(self.rows(), SIMULATION_COLUMNS)


def _tsv(rows: list[dict[str, Any]], columns: Sequence[str]) -> str:
    def cell(v: Any) -> str:
        return f"{v:.6g}" if isinstance(v, float) else str(v)
    lines = ["\t".join(columns)]
    lines += ["\t".join(cell(r[c]) for c in columns) for r in rows]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class BudgetGrid:
    """Regret against the rating budget: corpus sizes x human ratings per item."""

    items: tuple[int, ...] = DEFAULT_BUDGET_ITEMS
    ratings: tuple[int, ...] = DEFAULT_BUDGET_RATINGS


@dataclass(frozen=True, slots=True)
class AmbiguityLevels:
    """Prevalence by elicitation: the share of stable response-set mass on multi-option sets."""

    levels: tuple[float, ...] = DEFAULT_AMBIGUITY


def simulate(configs: SimConfig | Sequence[SimConfig] | None = None, *, seeds: int = 5,
             budget: BudgetGrid | None = None, prevalence: AmbiguityLevels | None = None) -> SimulationResult:
    """Run the synthetic selection experiment (Guerdan et al. §6) for each configuration
    (default: one :class:`SimConfig`) with seeds ``0..seeds-1``; ``default_grid()`` gives
    the paper-style grid. With ``budget``, also regret against the rating budget, and with
    ``prevalence``, prevalence under forced-choice vs response-set elicitation; both use
    the task, selection effects, rater error, items, ratings and cutoffs of the first
    underspecified configuration (|Q| > |O|; the first one when all are fully specified)."""
    from polyjudge.validation.experiments import PrevalenceSetup, prevalence_bias, regret_by_budget
    from polyjudge.validation.simulate import simulate as run_one
    from polyjudge.validation.simulate import summarise

    todo = [SimConfig()] if configs is None else [configs] if isinstance(configs, SimConfig) else list(configs)
    if seeds < 1:
        raise InputError(f"seeds must be at least 1, got {seeds}", field="seeds")
    if not todo:
        raise InputError("no simulation configuration given")
    t0 = time.perf_counter()
    base = next((c for c in todo if (c.n_sets or 2 ** c.n_options - 1) > c.n_options), todo[0])
    setup = PrevalenceSetup(n_options=base.n_options, n_sets=base.n_sets, n_items=base.n_items,
                            gamma=base.gamma_human, f_noise=base.f_noise, error_rate=base.error_rate,
                            skew=base.skew, ratings=base.human_ratings)
    prevalence_result = None if prevalence is None else prevalence_bias(  # first: it fails fast on bad levels
        setup, ambiguity=tuple(prevalence.levels), taus=base.taus, seeds=seeds)
    if budget is not None and (not budget.items or not budget.ratings or min(budget.items) < 2
                               or min(budget.ratings) < 1):
        raise InputError("the budget grid needs item counts >= 2 and ratings per item >= 1", field="budget")
    blocks = []
    for cfg in todo:
        results = [run_one(cfg, seed=s) for s in range(seeds)]
        blocks.append(SimulationBlock(cfg, results, summarise(results)))
    budget_result = None if budget is None else regret_by_budget(base, items=tuple(budget.items),
                                                                  ratings=tuple(budget.ratings), seeds=seeds)
    return SimulationResult(blocks, seeds, time.perf_counter() - t0, budget_result, prevalence_result)


def write_simulation_report(result: SimulationResult, out: str | Path, *, plots_dir: str | Path | None = None,
                            title: str | None = None) -> Report:
    """The simulation's tables and figures as one self-contained HTML report (and each
    figure as an SVG file in ``plots_dir``)."""
    from polyjudge.report.html import write_report

    if Path(out).is_dir():
        raise InputError("is a directory; give the HTML file to write", path=str(out), field="report")
    return write_report([], out, plots_dir=plots_dir, title=title or "polyjudge simulate: Guerdan et al. analyses",
                        studies={"simulation.json": result.results()})


__all__ = ["DEFAULT_BETAS", "DEFAULT_TAUS", "AmbiguityLevels", "BudgetGrid", "SimulationBlock", "SimulationResult",
           "ValidateConfig", "selection_json", "selections_text", "simulate", "validate", "validate_pairs",
           "write_simulation_report"]
