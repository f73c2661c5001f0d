"""``polyjudge probe``: robustness probes of a judge (Hada et al., 2024).

* ``--kind sensitivity``: judge every item as is and with a fraction of the
  candidate's words (grapheme clusters in scripts without spaces) shuffled;
  count how often the score drops.
* ``--kind repeat``: N runs at temperature 0; share of items where all runs agree.
* ``--kind temperature``: judge at several temperatures; mean, sd and failures
  each, and with ``--human RATINGS`` the agreement with the humans per temperature.

Each condition keeps its own run directory under ``-o/--out`` (so re-running
resumes) and the table goes to ``OUT/probe.tsv`` and stdout. The probe itself
is :func:`polyjudge.api.probe`.
"""

from __future__ import annotations

from typing import Any

import click

from polyjudge.api.registries import input_formats
from polyjudge.cli.options import (
    SEED,
    RegistryHelpCommand,
    format_option,
    input_format_option,
    judge_config,
    judge_options,
    number_list,
    out_option,
    share,
)

INPUT_FORMATS = tuple(input_formats())  # the registered readers (plugins' included)


def _temperatures(text: str) -> tuple[float, ...]:
    out = number_list(text, "--temperatures")
    if not out:
        raise click.BadParameter("no temperature given", param_hint="--temperatures")
    return out


@click.command(cls=RegistryHelpCommand)
@click.argument("input_path", metavar="INPUT", type=click.Path(dir_okay=False))
@click.option("--kind", "probe_kind", type=click.Choice(["sensitivity", "repeat", "temperature"]),
              required=True, help="Which probe to run.")
@out_option("Folder for the table and one run directory per condition (required).", legacy_decls=("-O",))
@format_option(default="tsv", legacy_input=("jsonl", "csv"))
@input_format_option(INPUT_FORMATS)
@click.option("--src-lang", default=None, help="Source language code for items that lack one.")
@click.option("--tgt-lang", default=None, help="Target language code for items that lack one.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="First N items only.")
@click.option("--fraction", type=share(), default=0.1, show_default=True,
              help="sensitivity: share of the candidate's words to shuffle.")
@click.option("--probe-seed", type=SEED, default=0, show_default=True, help="sensitivity: shuffle seed.")
@click.option("--repeats", type=click.IntRange(min=2), default=5, show_default=True,
              help="repeat: number of runs at temperature 0.")
@click.option("--temperatures", default="0,0.5,1.0", show_default=True,
              help="temperature: comma-separated temperatures.")
@click.option("--human", default=None, metavar="RATINGS", type=click.Path(dir_okay=False),
              help="temperature: human ratings (the `agreement` table: item_id, language, task, metric, rater, "
                   "kind, rating); adds agreement with the humans per temperature. Items match by item_id, "
                   "else seg_id.")
@click.option("--human-format", type=click.Choice(["jsonl", "tsv", "csv"]), default=None,
              help="Format of --human (default: from the extension).")
@click.option("--metric", default=None, help="temperature: the human metric the judge rates.")
@click.option("--bins", default=None, metavar="EDGES",
              help="temperature: comma-separated edges putting continuous judge scores into the human classes.")
@click.option("--bin-labels", default=None, metavar="LABELS", help="The class of each bin (default 0,1,...).")
@judge_options
def probe(input_path: str, probe_kind: str, out: str | None, fmt: str, input_format: str | None,
          src_lang: str | None, tgt_lang: str | None, limit: int | None, fraction: float, probe_seed: int,
          repeats: int, temperatures: str, human: str | None, human_format: str | None, metric: str | None,
          bins: str | None, bin_labels: str | None, **kw: Any) -> None:
    """Probe a judge's robustness on INPUT and print its table (one judge).

    --format tsv (default) prints probe.tsv, text aligns it, json prints probe.json.
    """
    from polyjudge.api import ProbeConfig
    from polyjudge.api import probe as run_probe

    if out is None:
        raise click.UsageError("Missing option '-o' / '--out'.")
    config = ProbeConfig(kind=probe_kind, judge=judge_config(kw), fraction=fraction, probe_seed=probe_seed,
                         repeats=repeats, input_format=input_format, src_lang=src_lang, tgt_lang=tgt_lang,
                         limit=limit, human=human, human_format=human_format, metric=metric,
                         bins=number_list(bins, "--bins"), bin_labels=number_list(bin_labels, "--bin-labels"))
    if probe_kind == "temperature":  # the list is read only when it is used
        config = config.replace(temperatures=_temperatures(temperatures))
    result = run_probe(input_path, config, out)
    text = result.to_json() if fmt == "json" else result.to_text() if fmt == "text" else result.to_tsv()
    click.echo(text, nl=fmt == "json")
