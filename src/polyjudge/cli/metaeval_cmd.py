"""``polyjudge meta-eval``: how well do metrics / judges agree with human scores?"""

from __future__ import annotations

from pathlib import Path

import click

from polyjudge.data.errors import InputError

FORMATS = ("auto", "run", "mtme", "mqm", "tsv", "jsonl")


def _metric_spec(spec: str) -> tuple[str, Path]:
    if "=" in spec and not Path(spec).exists():
        name, path = spec.split("=", 1)
        return name.strip(), Path(path)
    p = Path(spec)
    name = p.name if p.is_dir() else p.name.split(".")[0]
    return name, p


@click.command("meta-eval")
@click.option("--mtme", "mtme_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Directory laid out like mt-metrics-eval (human-scores/, metric-scores/LP/).")
@click.option("--lp", "lps", multiple=True,
              help="Language pair(s) to evaluate (with --mtme: every one given; otherwise the label).")
@click.option("--human", "human",
              help="Human scores: a file or run directory; with --mtme the human score NAME "
                   "(default: mqm if present, else the only one).")
@click.option("--human-format", type=click.Choice(FORMATS), default="auto", show_default=True)
@click.option("--metric", "metric_specs", multiple=True, metavar="[NAME=]PATH",
              help="Metric scores or polyjudge run directory; repeat for several.")
@click.option("--metric-format", type=click.Choice(FORMATS), default="auto", show_default=True)
@click.option("--human-lower-better", is_flag=True,
              help="Negate human scores (e.g. raw MQM error points).")
@click.option("--lower-better", "lower_better", multiple=True, metavar="NAME",
              help="Negate this metric's scores (e.g. an error count); repeatable.")
@click.option("--exclude-system", "exclude", multiple=True, metavar="SYSTEM",
              help="Leave a system out (e.g. the reference used by reference-based metrics).")
@click.option("--include-refs", is_flag=True,
              help="With --mtme, keep human reference systems used by the metrics (default: drop "
                   "systems named like a reference, ref*).")
@click.option("--task", type=click.Choice(["wmt24", "wmt23", "none"]), default="wmt24",
              show_default=True, help="Ranking table preset.")
@click.option("--level", type=click.Choice(["seg"]), default="seg", show_default=True,
              help="Level of the score files read (system scores are derived unless "
                   "mt-metrics-eval .sys.score files exist).")
@click.option("-k", "--k", "--permutations", "k", type=click.IntRange(min=0), default=1000,
              show_default=True, help="Permutation draws per significance test (0 = none).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--alpha", type=click.FloatRange(0, 1), default=0.05, show_default=True,
              help="p-value threshold for significance clusters.")
@click.option("--missing-metric", type=click.Choice(["error", "drop"]), default="error",
              show_default=True,
              help="A metric lacks a score where humans have one: stop, or skip those cells.")
@click.option("--format", "fmt", type=click.Choice(["text", "tsv", "json"]), default="text",
              show_default=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write here instead of standard output.")
def meta_eval(mtme_dir, lps, human, human_format, metric_specs, metric_format, human_lower_better,
              lower_better, exclude, include_refs, task, level, k, seed, alpha, missing_metric,
              fmt, out) -> None:
    """Meta-evaluate metrics against human scores, WMT style.

    \b
    polyjudge meta-eval --mtme DIR --lp en-de --lp zh-en --task wmt24
    polyjudge meta-eval --human mqm.tsv --metric chrF=chrf.tsv --metric runs/judge1
    """
    from polyjudge.metaeval import readers
    from polyjudge.metaeval.tasks import LanguagePair, evaluate, format_result

    pairs: list[LanguagePair] = []
    if mtme_dir is not None:
        if not lps:
            raise InputError("--mtme needs at least one --lp", field="lp")
        for lp in lps:
            pairs.append(_mtme_pair(mtme_dir, lp, human, level, exclude, include_refs,
                                    human_lower_better, lower_better, missing_metric,
                                    [_metric_spec(s) for s in metric_specs], metric_format))
    else:
        if not human:
            raise InputError("give --human (scores file or run directory) or --mtme DIR", field="human")
        if not metric_specs:
            raise InputError("give at least one --metric", field="metric")
        if len(lps) > 1:
            raise InputError("several --lp need --mtme (one file set per language pair)", field="lp")
        h = readers.read_scores(human, human_format)
        if human_lower_better:
            h = h.negated()
        metrics = {}
        for name, path in (_metric_spec(s) for s in metric_specs):
            if name in metrics:
                raise InputError(f"metric name '{name}' given twice; use NAME=PATH", field="metric")
            m = readers.read_scores(path, metric_format)
            metrics[name] = m.negated() if name in lower_better else m
        pairs.append(LanguagePair(lps[0] if lps else "lp", h, metrics, exclude_systems=exclude,
                                  missing_metric=missing_metric))
    try:
        res = evaluate(pairs, None if task == "none" else task, k=k, seed=seed, alpha=alpha)
    except ValueError as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(str(exc)) from None
    text = format_result(res, fmt)
    if out is None:
        click.echo(text, nl=False)
    else:
        out.write_text(text, encoding="utf-8")
        click.echo(f"wrote {out}", err=True)


def _mtme_pair(root, lp, human_name, level, exclude, include_refs, human_lower_better,
               lower_better, missing_metric, extra, metric_format):
    from polyjudge.metaeval import readers
    from polyjudge.metaeval.tasks import LanguagePair

    found = readers.scan_mtme(root, lp)
    names = [n for n, lv in found.human.items() if level in lv]
    if human_name is None:
        human_name = "mqm" if "mqm" in names else (names[0] if len(names) == 1 else None)
        if human_name is None:
            raise InputError(f"{lp}: several human scores ({', '.join(names)}); pick one with --human",
                             path=str(root), field="human")
    if human_name not in found.human or level not in found.human[human_name]:
        raise InputError(f"{lp}: no human scores '{human_name}' at level {level} "
                         f"(found: {', '.join(names) or 'none'})", path=str(root), field="human")
    h = readers.read_mtme_matrix(found.human[human_name][level])
    hsys = None
    if "sys" in found.human[human_name]:
        hs = readers.read_mtme_score_file(found.human[human_name]["sys"])
        hsys = {s: (v[0] if v and v[0] is not None else float("nan")) for s, v in hs.items()}
    if human_lower_better:
        h = h.negated()
        if hsys:
            hsys = {s: -v for s, v in hsys.items()}
    metrics, msys, refs_used = {}, {}, set()
    for full, files in found.metrics.items():
        if level not in files:
            continue
        base, refs = readers.metric_refs(full)
        refs_used |= refs
        m = readers.read_mtme_matrix(files[level])
        neg = base in lower_better or full in lower_better
        metrics[full] = m.negated() if neg else m
        if "sys" in files:
            ss = readers.read_mtme_score_file(files["sys"])
            msys[full] = {s: ((-1 if neg else 1) * v[0] if v and v[0] is not None else float("nan"))
                          for s, v in ss.items()}
    for name, path in extra:
        m = readers.read_scores(path, metric_format)
        metrics[name] = m.negated() if name in lower_better else m
    drop = set(exclude)
    if not include_refs:
        drop |= {s for s in h.systems if s in refs_used or s.startswith("ref")}
    return LanguagePair(lp, h, metrics, human_sys=hsys, metric_sys=msys, exclude_systems=sorted(drop),
                        missing_metric=missing_metric)
