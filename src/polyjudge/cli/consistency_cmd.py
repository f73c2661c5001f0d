"""``polyjudge consistency``: judge the same items in several languages and
measure how consistently each judge (and the panel) decides across languages.

Writes into ``-o/--out``: ``consistency.tsv`` (per judge x criterion x subset:
accuracy/mean, Fleiss' kappa across languages, Spearman accuracy-vs-kappa),
``languages.tsv`` (per language: n, failures, accuracy, weighted F1, mean,
Cohen's kappa against the reference language), and with several judges
``ensemble.tsv`` (Delta = Ens - Min of the panel's Fleiss' kappa),
``panel.tsv`` (the panel's agreement per criterion and language) and
``spearman.tsv`` (accuracy vs kappa over judges); the factor tables
``factors.tsv`` (each language's kappa against the reference with its resource
class, script and family), ``factor_correlations.tsv`` (Spearman of resource
class vs kappa), ``factor_groups.tsv`` (mean kappa per class, script, family)
and ``grade_gap.tsv`` (Yes/No minus grade kappa); also ``study.json``
(everything, plus timings) and one run directory per criterion under ``runs/``.
The study itself is :func:`polyjudge.api.consistency`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from polyjudge.api.registries import EXECUTORS
from polyjudge.cli.options import (
    CONCURRENCY,
    N_CTX,
    SEED,
    TIMEOUT,
    JudgeSpecType,
    format_option,
    out_option,
    share,
)
from polyjudge.cli.specs import option, shared, takes

if TYPE_CHECKING:
    from polyjudge.api import ConsistencyConfig, JudgeSpec, JudgingSpec
    from polyjudge.api.studies import ConditionSummary


def _languages(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(",") if x.strip())


def _progress_line(s: ConditionSummary) -> None:
    click.echo(f"{s.criterion}: {s.n_items} items x {s.n_judges} judge(s), {s.ok} ok, {s.failed} failed, "
               f"{s.seconds:.1f}s", err=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsistencyFlags:
    """The flags of ``polyjudge consistency``, in ``--help`` order."""

    dataset: str | None = option("--dataset", type=click.Choice(["xquad", "mgsm", "jsonl"]), default=None,
                                 help="Parallel data set to build the judging set from (jsonl: --data-file; the "
                                      "default when --data-file is given).")
    data_dir: str | None = option("--data-dir", type=click.Path(file_okay=False), default=None,
                                  help="Folder with the data set's files (default ../shared/data/DATASET).")
    data_file: str | None = option(
        "--data-file", type=click.Path(dir_okay=False), default=None, metavar="FILE",
        help="A parallel set as JSONL: one line per item and language with id, lang, question, answer "
             "and optionally context.")
    task: str | None = option("--task", default=None,
                              help="Pointwise task (qa, math, ...); default: qa for XQuAD, math for "
                                   "MGSM, for JSONL qa when items have a context, else math.")
    languages: str | None = option("--languages", "-l", default=None,
                                   help="Comma-separated language codes (default: en,de,es,zh; for --data-file "
                                        "every language in the file).")
    reference: str = option("--reference", default="en", show_default=True,
                            help="Language every other language is compared with (Cohen's kappa).")
    limit: int | None = option("--limit", type=click.IntRange(min=2), default=None, help="First N questions only.")
    no_wrong: bool = option("--no-wrong", is_flag=True, help="Judge gold answers only (as Fu & Liu); by default "
                            "each question is also judged with another question's answer.")
    scales: tuple[str, ...] = option("--scale", "scales", multiple=True, type=click.Choice(["binary", "grade"]),
                                     help="Criterion; repeat for both (default: binary).")
    judges: tuple[JudgeSpec, ...] = option(
        "--judge", "judges", multiple=True, required=True, metavar="SPEC", type=JudgeSpecType(),
        help="A judge: BACKEND[:MODEL][@URL], e.g. openai:gpt-4.1-mini, "
             "openai:MODEL@http://127.0.0.1:8000/v1, llamacpp, replay:FILE. Repeat for a panel.")
    panel_method: str = option("--panel-method", type=click.Choice(["majority", "mean", "median"]),
                               default="majority", show_default=True,
                               help="How a panel combines its judges' verdicts.")
    tie: str = option("--tie", type=click.Choice(["low", "high", "none", "first"]), default="low",
                      show_default=True, help="Majority tie rule (low = the lower label wins).")
    prompt_template: str | None = option("--prompt-template", type=click.Path(dir_okay=False), default=None,
                                         help="Replace the pointwise protocol's Jinja2 prompt template.")
    seed: int = option("--seed", type=SEED, default=0, show_default=True, help="Seed of the wrong-answer pairing.")
    concurrency: int = option("--concurrency", "-c", type=CONCURRENCY, default=16, show_default=True,
                              help="Requests in flight at once.")
    api_key_env: str = option("--api-key-env", default="OPENAI_API_KEY", show_default=True,
                              help="Environment variable holding the API key (never written anywhere).")
    timeout: float = option("--timeout", type=TIMEOUT, default=120.0, show_default=True, help="Seconds per request.")
    n_ctx: int = option("--n-ctx", type=N_CTX, default=8192, show_default=True, help="Context size (llamacpp).")
    max_failure_rate: float = option("--max-failure-rate", type=share(), default=0.1, show_default=True,
                                     help="Exit 3 when a larger share of judgments failed (no answer, "
                                          "refused, unparseable, truncated).")
    restart: bool = option("--restart", is_flag=True,
                           help="Start the run directories over instead of resuming them.")
    executor: str = option("--executor", type=click.Choice(list(EXECUTORS)), default="local", show_default=True,
                           help="Who sends the requests: this process, or a pool of Ray actors "
                                "(pip install 'polyjudge[ray]').")
    ray_address: str | None = option("--ray-address", default=None, metavar="ADDR",
                                     help="Ray cluster address (see `judge --help`).")
    ray_actors: int | None = option("--ray-actors", type=CONCURRENCY, default=None, metavar="N",
                                    help="Actors in the pool.")
    out: str | None = shared(out_option("Folder for the tables and one run directory per criterion (required).",
                                        legacy_decls=("-O",)))
    fmt: str = shared(format_option())
    show_factors: bool = option(
        "--factors", "show_factors", is_flag=True,
        help="Also print the factor tables (resource class, script, family; Yes/No vs grade gap).")
    quiet: bool = option("--quiet", "-q", is_flag=True, help="No progress bar.")

    def judge(self) -> JudgingSpec:
        """The pointwise judging every condition shares."""
        from polyjudge.api import BudgetSpec, ExecutionSpec, JudgesSpec, JudgingSpec, OutputSpec, ProtocolSpec

        return JudgingSpec(
            judges=JudgesSpec(judges=self.judges, api_key_env=self.api_key_env, timeout=self.timeout, n_ctx=self.n_ctx),
            protocol=ProtocolSpec(name="pointwise", prompt_template=self.prompt_template),
            budget=BudgetSpec(max_failure_rate=self.max_failure_rate),
            execution=ExecutionSpec(concurrency=self.concurrency, executor=self.executor, ray_address=self.ray_address,
                                    ray_actors=self.ray_actors, progress=not self.quiet and sys.stderr.isatty()),
            output=OutputSpec(restart=self.restart))

    def config(self, judge: JudgingSpec) -> ConsistencyConfig:
        """The study's settings: --data-file alone means the jsonl data set; every language of it by default."""
        from polyjudge.api import ConsistencyConfig

        dataset = self.dataset
        if dataset is None:
            if self.data_file is None:
                raise click.UsageError("Missing option '--dataset' (or '--data-file').")
            dataset = "jsonl"
        if self.languages is not None:
            langs = _languages(self.languages)
        else:
            langs = () if dataset == "jsonl" else ("en", "de", "es", "zh")
        return ConsistencyConfig(dataset=dataset, data_dir=self.data_dir, data_file=self.data_file, task=self.task,
                                 languages=langs, reference=self.reference, limit=self.limit, wrong=not self.no_wrong,
                                 scales=self.scales, panel_method=self.panel_method, tie=self.tie, seed=self.seed,
                                 judge=judge)


@click.command()
@takes(ConsistencyFlags)
def consistency(flags: ConsistencyFlags) -> None:
    """Cross-language consistency study on parallel data (Fu & Liu, 2025).

    Prints the summary table (and with several judges the Ens - Min table;
    with --factors the factor tables: each language's kappa against the
    reference with its resource class, script and family, Spearman of class
    vs kappa, mean kappa per group, Yes/No minus grade gap); --format text
    aligns them, --format json prints study.json (which always has them).
    """
    from polyjudge.api import consistency as run_study

    out, fmt = flags.out, flags.fmt
    if out is None:
        raise click.UsageError("Missing option '-o' / '--out'.")
    result = run_study(flags.config(flags.judge()), out, on_condition=_progress_line)
    text = result.to_json() if fmt == "json" else result.to_text() if fmt == "text" else result.to_tsv()
    if flags.show_factors and fmt != "json":
        factors = result.factors.to_text() if fmt == "text" else result.factors.to_tsv()
        text += "\n" + factors
    click.echo(text, nl=fmt == "json")
    click.echo(f"tables written to {out}", err=True)
