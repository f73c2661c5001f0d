"""``polyjudge consistency``: judge the same items in several languages and
measure how consistently each judge (and the panel) decides across languages.

Writes into ``--out``: ``consistency.tsv`` (per judge x criterion x subset:
accuracy/mean, Fleiss' kappa across languages, Spearman accuracy-vs-kappa),
``languages.tsv`` (per language: n, failures, accuracy, weighted F1, mean,
Cohen's kappa against the reference language), and with several judges
``ensemble.tsv`` (Delta = Ens - Min of the panel's Fleiss' kappa),
``panel.tsv`` (the panel's agreement per criterion and language) and
``spearman.tsv`` (accuracy vs kappa over judges); also ``study.json`` (everything, plus timings) and one run
directory per criterion under ``runs/``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from polyjudge.data.errors import InputError


def _languages(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def _backends(specs: tuple[str, ...], api_key_env: str, timeout: float, n_ctx: int) -> list[Any]:
    from polyjudge.backends import JudgeSpec, make_backend

    out = []
    for s in specs:
        try:
            spec = JudgeSpec.parse(s)
            out.append(make_backend(spec, api_key_env=api_key_env, timeout=timeout, n_ctx=n_ctx))
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--judge") from None
        except RuntimeError as exc:  # model not installed / not found
            raise click.ClickException(str(exc)) from None
    return out


def ratings_from_result(result: Any, task: str, criterion: str) -> list[Any]:
    """One :class:`Rating` per item and judge from an engine ``RunResult``
    (the run-aggregated score; failed judgments give ``label=None``)."""
    from polyjudge.metaeval.consistency import Rating

    out = []
    for judge in result.judges:
        for item, seg in zip(result.items, result.segments(judge)):
            ex = item.extra
            gold = {"correct": 1.0, "incorrect": 0.0}.get(ex.get("gold_label"))
            out.append(Rating(judge, task, criterion, ex.get("language") or item.tgt_lang or "",
                              str(ex.get("item_id", item.seg_id)), seg.score, gold,
                              ex.get("answer_kind")))
    return out


@click.command()
@click.option("--dataset", type=click.Choice(["xquad", "mgsm"]), required=True,
              help="Parallel data set to build the judging set from.")
@click.option("--data-dir", type=click.Path(file_okay=False), default=None,
              help="Folder with the data set's files (default ../shared/data/DATASET).")
@click.option("--languages", "-l", default="en,de,es,zh", show_default=True,
              help="Comma-separated language codes.")
@click.option("--reference", default="en", show_default=True,
              help="Language every other language is compared with (Cohen's kappa).")
@click.option("--limit", type=click.IntRange(min=2), default=None, help="First N questions only.")
@click.option("--no-wrong", is_flag=True, help="Judge gold answers only (as Fu & Liu); by default each "
              "question is also judged with another question's answer.")
@click.option("--scale", "scales", multiple=True, type=click.Choice(["binary", "grade"]),
              help="Criterion; repeat for both (default: binary).")
@click.option("--judge", "judges", multiple=True, required=True, metavar="SPEC",
              help="openai:MODEL[@URL], llamacpp[:MODEL], replay:FILE. Repeat for a panel.")
@click.option("--panel-method", type=click.Choice(["majority", "mean", "median"]), default="majority",
              show_default=True, help="How a panel combines its judges' verdicts.")
@click.option("--tie", type=click.Choice(["low", "high", "none", "first"]), default="low",
              show_default=True, help="Majority tie rule (low = the lower label wins).")
@click.option("--prompt-template", type=click.Path(dir_okay=False), default=None,
              help="Replace the pointwise Jinja2 template.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the wrong-answer pairing.")
@click.option("--concurrency", "-c", type=click.IntRange(min=1), default=16, show_default=True)
@click.option("--api-key-env", default="OPENAI_API_KEY", show_default=True)
@click.option("--timeout", type=float, default=120.0, show_default=True)
@click.option("--n-ctx", type=int, default=8192, show_default=True, help="Context size (llamacpp).")
@click.option("--out", "-O", "out", type=click.Path(file_okay=False), required=True)
@click.option("--quiet", "-q", is_flag=True)
def consistency(dataset: str, data_dir: str | None, languages: str, reference: str, limit: int | None,
                no_wrong: bool, scales: tuple[str, ...], judges: tuple[str, ...], panel_method: str,
                tie: str, prompt_template: str | None, seed: int, concurrency: int, api_key_env: str,
                timeout: float, n_ctx: int, out: str, quiet: bool) -> None:
    """Cross-language consistency study on parallel data (Fu & Liu, 2025)."""
    from polyjudge.data.parallel import TASK_OF_DATASET, load_parallel
    from polyjudge.engine import run_async
    from polyjudge.metaeval.consistency import (
        consistency_table,
        dicts_tsv,
        ensemble_report,
        languages_tsv,
        panel_agreement,
        panel_ratings,
        spearman_across_judges,
        summary_tsv,
    )
    from polyjudge.protocols import ProtocolOptions
    from polyjudge.protocols.pointwise import Pointwise

    root = Path(data_dir) if data_dir else Path("..") / "shared" / "data" / dataset
    if not root.is_dir():
        raise InputError("data folder not found (give --data-dir)", path=str(root))
    langs = _languages(languages)
    if len(langs) < 2:
        raise click.BadParameter("need at least two languages", param_hint="--languages")
    items = load_parallel(dataset, root, langs, limit=limit, wrong=not no_wrong, seed=seed)
    task = TASK_OF_DATASET[dataset]
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    echo = lambda s="": click.echo(s, err=True)  # noqa: E731

    ratings: list[Any] = []
    timings: dict[str, float] = {}
    failures: dict[str, dict[str, int]] = {}
    judge_names: list[str] = []
    for scale in scales or ("binary",):
        protocol = Pointwise(ProtocolOptions(template=prompt_template,
                                             extra={"task": task, "scale": scale}))
        backends = _backends(judges, api_key_env, timeout, n_ctx)
        run_dir = out_dir / "runs" / scale
        run_dir.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        result = asyncio.run(run_async(items, protocol, backends, concurrency=concurrency,
                                       store_path=run_dir / "store.sqlite", seed=0,
                                       progress=not quiet and sys.stderr.isatty()))
        timings[scale] = round(time.perf_counter() - t0, 3)
        result.write(run_dir)
        failures[scale] = result.failures()
        judge_names = list(result.judges)
        ratings.extend(ratings_from_result(result, task, scale))
        ok = result.status_counts().get("ok", 0)
        echo(f"{scale}: {len(items)} items x {len(result.judges)} judge(s), {ok} ok, "
             f"{len(result.judgments) - ok} failed, {timings[scale]:.1f}s")

    all_ratings = list(ratings)
    agreement: list[dict[str, Any]] = []
    if len(judge_names) > 1:
        for scale in scales or ("binary",):
            part = [r for r in ratings if r.criterion == scale]
            all_ratings += panel_ratings(part, name="ensemble", method=panel_method, tie=tie)  # type: ignore[arg-type]
            agreement += panel_agreement(part, method=panel_method, tie=tie)  # type: ignore[arg-type]
    rows = consistency_table(all_ratings, reference=reference)
    singles = [r for r in rows if r.judge != "ensemble"]
    ens = ensemble_report(rows) if len(judge_names) > 1 else []
    spear = spearman_across_judges(singles) if len(judge_names) > 1 else []

    summary = summary_tsv(rows)
    (out_dir / "consistency.tsv").write_text(summary, encoding="utf-8")
    (out_dir / "languages.tsv").write_text(languages_tsv(rows), encoding="utf-8")
    ens_cols = ["task", "criterion", "subset", "statistic", "ens", "min_judge", "min", "delta"]
    (out_dir / "ensemble.tsv").write_text(dicts_tsv(ens, ens_cols), encoding="utf-8")
    (out_dir / "spearman.tsv").write_text(
        dicts_tsv(spear, ["task", "criterion", "subset", "n_judges", "spearman"]), encoding="utf-8")
    panel_cols = ["task", "criterion", "language", "n_items", "n_judges", "no_vote",
                  "mean_agreement", "unanimous", "ties"]
    (out_dir / "panel.tsv").write_text(dicts_tsv(agreement, panel_cols), encoding="utf-8")
    study = {"dataset": dataset, "task": task, "languages": langs, "reference": reference,
             "limit": limit, "wrong_answers": not no_wrong, "seed": seed, "judges": judge_names,
             "panel": {"method": panel_method, "tie": tie, "agreement": agreement}, "n_items": len(items),
             "timings_s": timings, "failures": failures,
             "rows": [r.to_dict() for r in rows], "ensemble": ens, "spearman_across_judges": spear}
    (out_dir / "study.json").write_text(json.dumps(study, indent=1, ensure_ascii=False),
                                        encoding="utf-8")
    click.echo(summary, nl=False)
    if ens:
        click.echo()
        click.echo(dicts_tsv(ens, ens_cols), nl=False)
    echo(f"tables written to {out_dir}")
