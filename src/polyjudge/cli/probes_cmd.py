"""``polyjudge probe``: robustness probes of a judge (Hada et al., 2024).

* ``--kind sensitivity``: judge every item as is and with a fraction of the
  candidate's words shuffled; count how often the score drops.
* ``--kind repeat``: N runs at temperature 0; share of items where all runs agree.
* ``--kind temperature``: judge at several temperatures; mean, sd and failures each.

Each condition keeps its own run directory under ``--out`` (so re-running
resumes from the store) and the table goes to ``--out/probe.tsv`` and stdout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from polyjudge.cli.judge_cmd import judge_options, run_judging


def _temperatures(text: str) -> list[float]:
    try:
        out = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated numbers, got {text!r}",
                                 param_hint="--temperatures") from None
    if not out:
        raise click.BadParameter("no temperature given", param_hint="--temperatures")
    return out


def _scores(result: Any) -> list[float | None]:
    return result.segment_scores(result.judges[0])


@click.command()
@click.argument("input_path", metavar="INPUT", type=click.Path(dir_okay=False))
@click.option("--kind", "probe_kind", type=click.Choice(["sensitivity", "repeat", "temperature"]),
              required=True, help="Which probe to run.")
@click.option("--out", "-O", "out", type=click.Path(file_okay=False), required=True,
              help="Folder for the table and one run directory per condition.")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv", "tsv"]), default=None)
@click.option("--src-lang", default=None)
@click.option("--tgt-lang", default=None)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="First N items only.")
@click.option("--fraction", type=click.FloatRange(0.0, 1.0), default=0.1, show_default=True,
              help="sensitivity: share of the candidate's words to shuffle.")
@click.option("--probe-seed", type=int, default=0, show_default=True, help="sensitivity: shuffle seed.")
@click.option("--repeats", type=click.IntRange(min=2), default=5, show_default=True,
              help="repeat: number of runs at temperature 0.")
@click.option("--temperatures", default="0,0.5,1.0", show_default=True,
              help="temperature: comma-separated temperatures.")
@judge_options
def probe(input_path: str, probe_kind: str, out: str, fmt: str | None, src_lang: str | None,
          tgt_lang: str | None, limit: int | None, fraction: float, probe_seed: int, repeats: int,
          temperatures: str, **kw: Any) -> None:
    """Probe a judge's robustness on INPUT and write a table (one judge; the first --judge)."""
    from polyjudge.data.readers import read_items
    from polyjudge.metaeval.probes import perturb_items, records_tsv, repeat_table, sensitivity_table, temperature_table

    if len(kw["judges"]) > 1:
        raise click.UsageError("probe takes one judge; run it once per judge")
    items = read_items(input_path, fmt=fmt, src_lang=src_lang, tgt_lang=tgt_lang)
    if limit is not None:
        items = items[:limit]
    groups = [it.tgt_lang or "" for it in items]
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    failures: dict[str, Any] = {}
    if probe_kind == "sensitivity":
        base = run_judging(items, kw, out_dir / "original")
        pert = run_judging(perturb_items(items, fraction, probe_seed), kw, out_dir / "perturbed")
        failures = {"original": base.failures(), "perturbed": pert.failures()}
        rows: list[Any] = sensitivity_table(_scores(base), _scores(pert), groups)
    elif probe_kind == "repeat":
        res = run_judging(items, kw | {"runs": repeats, "temperature": 0.0}, out_dir / "repeat")
        failures = {"repeat": res.failures()}
        rows = repeat_table(res.run_matrix(res.judges[0]), groups)
    else:
        scores = {}
        for t in _temperatures(temperatures):
            res = run_judging(items, kw | {"temperature": t}, out_dir / f"T{t:g}")
            scores[t] = _scores(res)
            failures[f"T{t:g}"] = res.failures()
        rows = temperature_table(scores, groups)
    table = records_tsv(rows)
    (out_dir / "probe.tsv").write_text(table, encoding="utf-8")
    doc = {"kind": probe_kind, "input": input_path, "n_items": len(items), "fraction": fraction,
           "probe_seed": probe_seed, "repeats": repeats, "failures": failures,
           "rows": [r.__dict__ for r in rows]}
    (out_dir / "probe.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False, default=str),
                                        encoding="utf-8")
    click.echo(table, nl=False)
