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
from typing import TYPE_CHECKING

import click

from polyjudge.cli.options import CONCURRENCY, N_CTX, SEED, TIMEOUT, format_option, out_option, share

if TYPE_CHECKING:
    from polyjudge.api.studies import ConditionSummary


def _languages(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(",") if x.strip())


def _progress_line(s: ConditionSummary) -> None:
    click.echo(f"{s.criterion}: {s.n_items} items x {s.n_judges} judge(s), {s.ok} ok, {s.failed} failed, "
               f"{s.seconds:.1f}s", err=True)


@click.command()
@click.option("--dataset", type=click.Choice(["xquad", "mgsm", "jsonl"]), default=None,
              help="Parallel data set to build the judging set from (jsonl: --data-file; the default "
                   "when --data-file is given).")
@click.option("--data-dir", type=click.Path(file_okay=False), default=None,
              help="Folder with the data set's files (default ../shared/data/DATASET).")
@click.option("--data-file", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="A parallel set as JSONL: one line per item and language with id, lang, question, answer "
                   "and optionally context.")
@click.option("--task", default=None, help="Pointwise task (qa, math, ...); default: qa for XQuAD, math for "
              "MGSM, for JSONL qa when items have a context, else math.")
@click.option("--languages", "-l", default=None,
              help="Comma-separated language codes (default: en,de,es,zh; for --data-file every language "
                   "in the file).")
@click.option("--reference", default="en", show_default=True,
              help="Language every other language is compared with (Cohen's kappa).")
@click.option("--limit", type=click.IntRange(min=2), default=None, help="First N questions only.")
@click.option("--no-wrong", is_flag=True, help="Judge gold answers only (as Fu & Liu); by default each "
              "question is also judged with another question's answer.")
@click.option("--scale", "scales", multiple=True, type=click.Choice(["binary", "grade"]),
              help="Criterion; repeat for both (default: binary).")
@click.option("--judge", "judges", multiple=True, required=True, metavar="SPEC",
              help="A judge: BACKEND[:MODEL][@URL], e.g. openai:gpt-4.1-mini, "
                   "openai:MODEL@http://127.0.0.1:8000/v1, llamacpp, replay:FILE. Repeat for a panel.")
@click.option("--panel-method", type=click.Choice(["majority", "mean", "median"]), default="majority",
              show_default=True, help="How a panel combines its judges' verdicts.")
@click.option("--tie", type=click.Choice(["low", "high", "none", "first"]), default="low",
              show_default=True, help="Majority tie rule (low = the lower label wins).")
@click.option("--prompt-template", type=click.Path(dir_okay=False), default=None,
              help="Replace the pointwise protocol's Jinja2 prompt template.")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of the wrong-answer pairing.")
@click.option("--concurrency", "-c", type=CONCURRENCY, default=16, show_default=True,
              help="Requests in flight at once.")
@click.option("--api-key-env", default="OPENAI_API_KEY", show_default=True,
              help="Environment variable holding the API key (never written anywhere).")
@click.option("--timeout", type=TIMEOUT, default=120.0, show_default=True, help="Seconds per request.")
@click.option("--n-ctx", type=N_CTX, default=8192, show_default=True, help="Context size (llamacpp).")
@click.option("--max-failure-rate", type=share(), default=0.1, show_default=True,
              help="Exit 3 when a larger share of requests failed after retries.")
@click.option("--restart", is_flag=True, help="Start the run directories over instead of resuming them.")
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="Who sends the requests: this process, or a pool of Ray actors (pip install 'polyjudge[ray]').")
@click.option("--ray-address", default=None, metavar="ADDR", help="Ray cluster address (see `judge --help`).")
@click.option("--ray-actors", type=CONCURRENCY, default=None, metavar="N", help="Actors in the pool.")
@out_option("Folder for the tables and one run directory per criterion (required).", legacy_decls=("-O",))
@format_option(default="tsv")
@click.option("--factors", "show_factors", is_flag=True,
              help="Also print the factor tables (resource class, script, family; Yes/No vs grade gap).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def consistency(dataset: str | None, data_dir: str | None, data_file: str | None, task: str | None,
                languages: str | None, reference: str, limit: int | None,
                no_wrong: bool, scales: tuple[str, ...], judges: tuple[str, ...], panel_method: str,
                tie: str, prompt_template: str | None, seed: int, concurrency: int, api_key_env: str,
                timeout: float, n_ctx: int, max_failure_rate: float, restart: bool, executor: str,
                ray_address: str | None, ray_actors: int | None, out: str | None, fmt: str, show_factors: bool,
                quiet: bool) -> None:
    """Cross-language consistency study on parallel data (Fu & Liu, 2025).

    Prints the summary table (and with several judges the Ens - Min table;
    with --factors the factor tables: each language's kappa against the
    reference with its resource class, script and family, Spearman of class
    vs kappa, mean kappa per group, Yes/No minus grade gap); --format text
    aligns them, --format json prints study.json (which always has them).
    """
    from polyjudge.api import ConsistencyConfig, JudgeConfig
    from polyjudge.api import consistency as run_study

    if out is None:
        raise click.UsageError("Missing option '-o' / '--out'.")
    judge = JudgeConfig(protocol="pointwise", judges=judges, prompt_template=prompt_template,
                        concurrency=concurrency, api_key_env=api_key_env, timeout=timeout, n_ctx=n_ctx,
                        max_failure_rate=max_failure_rate, restart=restart, executor=executor,
                        ray_address=ray_address, ray_actors=ray_actors,
                        progress=not quiet and sys.stderr.isatty())
    if dataset is None:
        if data_file is None:
            raise click.UsageError("Missing option '--dataset' (or '--data-file').")
        dataset = "jsonl"
    if languages is not None:
        langs = _languages(languages)
    else:
        langs = () if dataset == "jsonl" else ("en", "de", "es", "zh")
    config = ConsistencyConfig(dataset=dataset, data_dir=data_dir, data_file=data_file, task=task, languages=langs,
                               reference=reference, limit=limit, wrong=not no_wrong, scales=scales,
                               panel_method=panel_method, tie=tie, seed=seed, judge=judge)
    result = run_study(config, out, on_condition=_progress_line)
    text = result.to_json() if fmt == "json" else result.to_text() if fmt == "text" else result.to_tsv()
    if show_factors and fmt != "json":
        factors = result.factors.to_text() if fmt == "text" else result.factors.to_tsv()
        text += "\n" + factors
    click.echo(text, nl=fmt == "json")
    click.echo(f"tables written to {out}", err=True)
