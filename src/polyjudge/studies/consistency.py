"""The cross-language consistency study (Fu & Liu, 2025) as a typed config, one call and a typed result.

The same questions, in several languages, are judged with the pointwise
protocol, once per criterion (``binary`` verdicts, 1-5 ``grade``); every
judge's (and the panel's) decisions are then compared across languages.
Each criterion is one run directory (``OUT/runs/CRITERION``), so re-running
the study is served from the runs' stores. The tables the study writes are
described in :meth:`ConsistencyResult.write`.

The data is XQuAD or MGSM from their shared folders, or any parallel set as
JSONL (``dataset="jsonl"``, ``data_file``: one line per item and language with
``id``, ``lang``, ``question``, ``answer`` and optionally ``context``).

Besides the paper's main tables, the result holds its factor analyses
(:class:`FactorTables`): each language's kappa against the reference next to
its resource class, script and family, Spearman's rho of resource class vs
kappa, mean kappa per script, family and class, and the Yes/No minus grade gap.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from polyjudge.aggregate.panel import Method, TieRule
from polyjudge.data.errors import InputError
from polyjudge.data.shapes import normalise_fields
from polyjudge.engine.result import RunResult
from polyjudge.engine.session import as_spec, judge
from polyjudge.engine.spec import JudgingSpec
from polyjudge.metaeval.ratings.consistency import (
    ConsistencyRow,
    FactorCorrelation,
    FactorGroup,
    GradeGapRow,
    LanguageFactorRow,
    Rating,
)
from polyjudge.protocols.spec import ProtocolSpec
from polyjudge.studies.tables import aligned, data_frame

if TYPE_CHECKING:
    from polyjudge.metaeval.kappas import ConsistencyKappas

DATASETS = ("xquad", "mgsm", "jsonl")
SCALES = ("binary", "grade")
PANEL_METHODS = ("majority", "mean", "median")
TIE_RULES = ("low", "high", "none", "first")

ENSEMBLE_COLUMNS = ("task", "criterion", "subset", "statistic", "ens", "min_judge", "min", "delta")
SPEARMAN_COLUMNS = ("task", "criterion", "subset", "n_judges", "spearman")
PANEL_COLUMNS = ("task", "criterion", "language", "n_items", "n_judges", "no_vote", "mean_agreement",
                 "unanimous", "ties")
SUMMARY_COLUMNS = ("judge", "task", "criterion", "subset", "n_items", "n_complete", "accuracy", "mean",
                   "fleiss_kappa", "spearman_acc_kappa", "languages")
LANGUAGE_COLUMNS = ("judge", "task", "criterion", "subset", "language", "n", "failed", "accuracy",
                    "weighted_f1", "mean", "cohen_vs_ref")


@dataclass(frozen=True, slots=True)
class ConsistencyConfig:
    """What the study judges and how its panel decides.

    ``judge`` says who judges and with which engine settings; its protocol is
    always ``pointwise`` (the study sets the task and criterion options), and
    several judges make a panel. ``seed`` pairs questions with wrong answers;
    the judges' sampling seed is ``judge.generation.seed``.
    """

    def __post_init__(self) -> None:
        object.__setattr__(self, "judge", as_spec(self.judge))  # the flat JudgeConfig shorthand is taken too
        normalise_fields(self)  # Python shapes; TypeError names a field

    dataset: str
    data_dir: str | Path | None = None  # default ../shared/data/DATASET
    # xquad/mgsm: the languages to judge; jsonl: () means every language in the file
    languages: tuple[str, ...] = ("en", "de", "es", "zh")
    reference: str = "en"  # the language every other one is compared with (Cohen's kappa)
    limit: int | None = None  # first N questions only
    wrong: bool = True  # also judge each question with another question's answer
    scales: tuple[str, ...] = ("binary",)
    panel_method: str = "majority"
    tie: str = "low"
    seed: int = 0
    judge: JudgingSpec = field(default_factory=lambda: JudgingSpec(protocol=ProtocolSpec(name="pointwise")))
    data_file: str | Path | None = None  # dataset "jsonl": the parallel JSONL file
    task: str | None = None  # pointwise task; default xquad: qa, mgsm: math, jsonl: qa with contexts else math

    def replace(self, **changes: Any) -> ConsistencyConfig:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    def check(self) -> None:
        """Raise InputError for a value the study cannot run with."""
        if self.dataset not in DATASETS:
            raise InputError(f"unknown dataset {self.dataset!r} (choose from {', '.join(DATASETS)})",
                             field="dataset")
        if self.dataset == "jsonl":
            if self.data_file is None:
                raise InputError("dataset jsonl needs a data file (--data-file)", field="data-file")
            if len(self.languages) == 1:
                raise InputError("need at least two languages", field="languages")
        elif self.data_file is not None:
            raise InputError(f"a data file is read for dataset jsonl, not {self.dataset}", field="data-file")
        elif len(self.languages) < 2:
            raise InputError("need at least two languages", field="languages")
        if self.task is not None:
            from polyjudge.protocols.pointwise import normalise_task
            normalise_task(self.task)
        bad = [s for s in self.scales if s not in SCALES]
        if bad:
            raise InputError(f"unknown criterion {bad[0]!r} (choose from {', '.join(SCALES)})", field="scale")
        if self.panel_method not in PANEL_METHODS:
            raise InputError(f"unknown panel method {self.panel_method!r}", field="panel-method")
        if self.tie not in TIE_RULES:
            raise InputError(f"unknown tie rule {self.tie!r}", field="tie")
        if self.limit is not None and self.limit < 2:
            raise InputError("limit must be at least 2", field="limit")
        if not self.judge.judges.judges:
            raise InputError("no judge given", field="judge")

    @property
    def criteria(self) -> tuple[str, ...]:
        return self.scales or ("binary",)

    @property
    def root(self) -> Path:
        return Path(self.data_dir) if self.data_dir else Path("..") / "shared" / "data" / self.dataset


@dataclass(frozen=True, slots=True)
class ConditionSummary:
    """How one criterion's judging went (reported as each finishes)."""

    criterion: str
    n_items: int
    n_judges: int
    ok: int
    failed: int
    seconds: float
    failures: dict[str, int]


@dataclass
class FactorTables:
    """Fu & Liu's factor analyses (section 5.1, and the Yes/No vs grade gap of 4.2)."""

    languages: list[LanguageFactorRow]  # per language: kappa vs reference, class, script, family
    correlations: list[FactorCorrelation]  # Spearman of resource class vs kappa
    groups: list[FactorGroup]  # mean kappa per class, script and family
    gap: list[GradeGapRow]  # kappa(Yes/No) - kappa(grade), overall and per language

    def tables(self) -> dict[str, str]:
        """File name -> TSV (a table with no rows is an empty string)."""
        from polyjudge.metaeval.ratings.consistency import records_tsv
        return {"factors.tsv": records_tsv(self.languages), "factor_correlations.tsv": records_tsv(self.correlations),
                "factor_groups.tsv": records_tsv(self.groups), "grade_gap.tsv": records_tsv(self.gap)}

    def to_tsv(self) -> str:
        return "\n".join(t for t in self.tables().values() if t)

    def to_text(self) -> str:
        titles = {"factors.tsv": "per-language kappa against the reference, with its factors",
                  "factor_correlations.tsv": "Spearman: resource class vs kappa",
                  "factor_groups.tsv": "mean kappa per factor value",
                  "grade_gap.tsv": "Yes/No minus grade kappa (Delta)"}
        return "\n".join(f"{titles[name]}:\n{aligned(t)}" for name, t in self.tables().items() if t)

    def to_dict(self) -> dict[str, Any]:
        from polyjudge.metaeval.ratings.consistency import _nan_to_none
        return {"languages": [_nan_to_none(asdict(r)) for r in self.languages],
                "correlations": [_nan_to_none(asdict(r)) for r in self.correlations],
                "groups": [_nan_to_none(asdict(r)) for r in self.groups],
                "grade_gap": [_nan_to_none(asdict(r)) for r in self.gap]}


def factor_tables(rows: Sequence[ConsistencyRow]) -> FactorTables:
    """The factor tables of a study's rows (the panel's too)."""
    from polyjudge.metaeval.ratings.consistency import factor_correlations, factor_groups, grade_gap, language_factors
    langs = language_factors(rows)
    return FactorTables(langs, factor_correlations(langs), factor_groups(langs), grade_gap(rows))


@dataclass
class ConsistencyResult:
    """Every table of the study; :meth:`write` produces the files the CLI writes."""

    config: ConsistencyConfig
    task: str
    languages: list[str]
    n_items: int
    judges: list[str]
    rows: list[ConsistencyRow]
    ensemble: list[dict[str, Any]]
    spearman: list[dict[str, Any]]
    panel: list[dict[str, Any]]
    conditions: list[ConditionSummary]
    factors: FactorTables = field(default_factory=lambda: FactorTables([], [], [], []))

    def summary_tsv(self) -> str:
        from polyjudge.metaeval.ratings.consistency import summary_tsv
        return summary_tsv(self.rows)

    def languages_tsv(self) -> str:
        from polyjudge.metaeval.ratings.consistency import languages_tsv
        return languages_tsv(self.rows)

    def ensemble_tsv(self) -> str:
        from polyjudge.metaeval.ratings.consistency import dicts_tsv
        return dicts_tsv(self.ensemble, ENSEMBLE_COLUMNS)

    def spearman_tsv(self) -> str:
        from polyjudge.metaeval.ratings.consistency import dicts_tsv
        return dicts_tsv(self.spearman, SPEARMAN_COLUMNS)

    def panel_tsv(self) -> str:
        from polyjudge.metaeval.ratings.consistency import dicts_tsv
        return dicts_tsv(self.panel, PANEL_COLUMNS)

    def to_dict(self) -> dict[str, Any]:
        """The ``study.json`` document (everything, plus timings and failures)."""
        c = self.config
        return {"dataset": c.dataset, "task": self.task, "languages": self.languages, "reference": c.reference,
                "limit": c.limit, "wrong_answers": c.wrong, "seed": c.seed, "judges": self.judges,
                "panel": {"method": c.panel_method, "tie": c.tie, "agreement": self.panel},
                "n_items": self.n_items, "timings_s": {s.criterion: s.seconds for s in self.conditions},
                "failures": {s.criterion: s.failures for s in self.conditions},
                "rows": [r.to_dict() for r in self.rows], "ensemble": self.ensemble,
                "spearman_across_judges": self.spearman, "factors": self.factors.to_dict(),
                **({"data_file": str(c.data_file)} if c.data_file is not None else {})}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, ensure_ascii=False)

    def kappas(self) -> ConsistencyKappas:
        """The agreement tables the report shows (κ with the reference language, Fleiss κ, factor tables),
        the same rows :func:`polyjudge.metaeval.kappas.read_consistency` reads from study.json."""
        from polyjudge.metaeval.kappas import consistency_kappas

        return consistency_kappas(self.rows, self.config.reference, self.factors.to_dict())

    def to_tsv(self) -> str:
        """What the CLI prints: the summary table, then (with a panel) the Ens - Min table."""
        text = self.summary_tsv()
        if self.ensemble:
            text += "\n" + self.ensemble_tsv()
        return text

    def to_text(self) -> str:
        text = aligned(self.summary_tsv())
        if self.ensemble:
            text += "\n" + aligned(self.ensemble_tsv())
        return text

    def write(self, out_dir: str | Path) -> None:
        """``consistency.tsv`` (judge x criterion x subset), ``languages.tsv`` (per language),
        ``ensemble.tsv`` (Delta = Ens - Min), ``spearman.tsv`` (accuracy vs kappa over
        judges), ``panel.tsv`` (the panel's agreement), the factor tables
        ``factors.tsv``, ``factor_correlations.tsv``, ``factor_groups.tsv`` and
        ``grade_gap.tsv`` (see :class:`FactorTables`), and ``study.json``."""
        d = Path(out_dir)
        d.mkdir(parents=True, exist_ok=True)
        (d / "consistency.tsv").write_text(self.summary_tsv(), encoding="utf-8")
        (d / "languages.tsv").write_text(self.languages_tsv(), encoding="utf-8")
        (d / "ensemble.tsv").write_text(self.ensemble_tsv(), encoding="utf-8")
        (d / "spearman.tsv").write_text(self.spearman_tsv(), encoding="utf-8")
        (d / "panel.tsv").write_text(self.panel_tsv(), encoding="utf-8")
        for name, text in self.factors.tables().items():
            (d / name).write_text(text, encoding="utf-8")
        (d / "study.json").write_text(self.to_json(), encoding="utf-8")

    def to_pandas(self, table: str = "consistency") -> Any:
        """One table as a DataFrame: ``consistency`` (default), ``languages``, ``ensemble``,
        ``spearman``, ``panel``, or a factor table: ``factors``, ``factor_correlations``,
        ``factor_groups``, ``grade_gap``."""
        factor_tables: dict[str, list[Any]] = {
            "factors": self.factors.languages, "factor_correlations": self.factors.correlations,
            "factor_groups": self.factors.groups, "grade_gap": self.factors.gap}
        if table in factor_tables:
            kinds: dict[str, Any] = {"factors": LanguageFactorRow, "factor_correlations": FactorCorrelation,
                                     "factor_groups": FactorGroup, "grade_gap": GradeGapRow}
            return data_frame([asdict(r) for r in factor_tables[table]], [f.name for f in fields(kinds[table])])
        if table == "consistency":
            recs = [{**{k: getattr(r, k) for k in SUMMARY_COLUMNS if k != "languages"},
                     "languages": ",".join(r.languages)} for r in self.rows]
            return data_frame(recs, SUMMARY_COLUMNS)
        if table == "languages":
            recs = [{"judge": r.judge, "task": r.task, "criterion": r.criterion, "subset": r.subset,
                     "language": lang, "n": s.n, "failed": s.failed, "accuracy": s.accuracy,
                     "weighted_f1": s.weighted_f1, "mean": s.mean, "cohen_vs_ref": s.cohen_vs_ref}
                    for r in self.rows for lang, s in r.per_language.items()]
            return data_frame(recs, LANGUAGE_COLUMNS)
        tables: dict[str, tuple[list[dict[str, Any]], Sequence[str]]] = {
            "ensemble": (self.ensemble, ENSEMBLE_COLUMNS), "spearman": (self.spearman, SPEARMAN_COLUMNS),
            "panel": (self.panel, PANEL_COLUMNS)}
        if table not in tables:
            raise InputError(f"unknown table {table!r} (consistency, languages, {', '.join(tables)}, "
                             f"{', '.join(factor_tables)})",
                             field="table")
        recs, cols = tables[table]
        return data_frame(recs, cols)


def ratings_from_result(result: RunResult, task: str, criterion: str) -> list[Rating]:
    """One :class:`Rating` per item and judge: the run-aggregated score
    (a failed judgment gives ``label=None``, counted and left out later)."""
    out = []
    for judge_name in result.judges:
        for item, seg in zip(result.items, result.segments(judge_name)):
            ex = item.extra
            gold = {"correct": 1.0, "incorrect": 0.0}.get(str(ex.get("gold_label")))
            out.append(Rating(judge_name, task, criterion, ex.get("language") or item.tgt_lang or "",
                              str(ex.get("item_id", item.seg_id)), seg.score, gold, ex.get("answer_kind")))
    return out


def condition_judge_config(config: ConsistencyConfig, task: str, criterion: str) -> JudgingSpec:
    """The judge config of one criterion: pointwise, with the study's task and criterion."""
    spec = config.judge
    options: Mapping[str, Any] = {**spec.protocol.options, "task": task, "scale": criterion}
    return spec.replace(protocol=dataclasses.replace(spec.protocol, name="pointwise", options=options))


def run_consistency(config: ConsistencyConfig, out: str | Path | None = None, *,
                    on_condition: Callable[[ConditionSummary], None] | None = None) -> ConsistencyResult:
    """Run the study; with ``out``, keep one run directory per criterion under
    ``out/runs`` (re-running resumes) and write the tables into ``out``.

    ``on_condition`` is called after each criterion is judged (for progress lines).
    """
    from polyjudge.data.parallel import TASK_OF_DATASET, jsonl_task, load_jsonl_parallel, load_parallel
    from polyjudge.metaeval.ratings.consistency import (
        consistency_table,
        ensemble_report,
        panel_agreement,
        panel_ratings,
        spearman_across_judges,
    )
    from polyjudge.protocols.pointwise import normalise_task

    config.check()
    if config.dataset == "jsonl" and config.data_file is not None:
        items = load_jsonl_parallel(config.data_file, list(config.languages) or None, limit=config.limit,
                                    wrong=config.wrong, seed=config.seed)
        langs = list(dict.fromkeys(str(it.extra["language"]) for it in items))
        task = normalise_task(config.task) if config.task else jsonl_task(items)
    else:
        root = config.root
        if not root.is_dir():
            raise InputError("data folder not found (give --data-dir)", path=str(root))
        langs = list(config.languages)
        items = load_parallel(config.dataset, root, langs, limit=config.limit, wrong=config.wrong, seed=config.seed)
        task = normalise_task(config.task) if config.task else TASK_OF_DATASET[config.dataset]
    if config.reference not in langs:
        raise InputError(f"the reference language {config.reference!r} is not among the languages "
                         f"({', '.join(langs)})", field="reference")
    out_dir = Path(out) if out is not None else None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)

    ratings: list[Rating] = []
    conditions: list[ConditionSummary] = []
    judge_names: list[str] = []
    for criterion in config.criteria:
        run_dir = out_dir / "runs" / criterion if out_dir is not None else None
        t0 = time.perf_counter()
        result = judge(items, condition_judge_config(config, task, criterion), out=run_dir)
        ok = result.status_counts().get("ok", 0)
        summary = ConditionSummary(criterion, len(items), len(result.judges), ok, len(result.judgments) - ok,
                                   round(time.perf_counter() - t0, 3), result.failures())
        conditions.append(summary)
        if on_condition is not None:
            on_condition(summary)
        judge_names = list(result.judges)
        ratings.extend(ratings_from_result(result, task, criterion))

    method, tie = cast(Method, config.panel_method), cast(TieRule, config.tie)
    panel = len(judge_names) > 1
    all_ratings = list(ratings)
    agreement: list[dict[str, Any]] = []
    if panel:
        for criterion in config.criteria:
            part = [r for r in ratings if r.criterion == criterion]
            all_ratings += panel_ratings(part, name="ensemble", method=method, tie=tie)
            agreement += panel_agreement(part, method=method, tie=tie)
    rows = consistency_table(all_ratings, reference=config.reference)
    singles = [r for r in rows if r.judge != "ensemble"]
    res = ConsistencyResult(
        config=config, task=task, languages=langs, n_items=len(items), judges=judge_names, rows=rows,
        ensemble=ensemble_report(rows) if panel else [], spearman=spearman_across_judges(singles) if panel else [],
        panel=agreement, conditions=conditions, factors=factor_tables(rows))
    if out_dir is not None:
        res.write(out_dir)
    return res


__all__ = ["ConditionSummary", "ConsistencyConfig", "ConsistencyResult", "FactorTables", "condition_judge_config",
           "factor_tables",
           "ratings_from_result", "run_consistency"]
