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

from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from polyjudge.api.registries import input_formats
from polyjudge.cli.options import (
    SEED,
    RegistryHelpCommand,
    format_option,
    input_format_option,
    judge_options,
    number_list,
    out_option,
    share,
    study_judging,
)
from polyjudge.cli.specs import argument, group, option, shared, takes

if TYPE_CHECKING:
    from polyjudge.api import JudgingSpec, ProbeConfig

INPUT_FORMATS = tuple(input_formats())  # the registered readers (plugins' included)


def _temperatures(text: str) -> tuple[float, ...]:
    out = number_list(text, "--temperatures")
    if not out:
        raise click.BadParameter("no temperature given", param_hint="--temperatures")
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeFlags:
    """The argument and flags of ``polyjudge probe``, in ``--help`` order (the judge's last)."""

    input_path: str = argument("input_path", metavar="INPUT", type=click.Path(dir_okay=False))
    probe_kind: str = option("--kind", "probe_kind", type=click.Choice(["sensitivity", "repeat", "temperature"]),
                             required=True, help="Which probe to run.")
    out: str | None = shared(out_option("Folder for the table and one run directory per condition (required).",
                                        legacy_decls=("-O",)))
    fmt: str = shared(format_option(legacy_input=("jsonl", "csv"), legacy_default="tsv"))
    input_format: str | None = shared(input_format_option(INPUT_FORMATS))
    src_lang: str | None = option("--src-lang", default=None, help="Source language code for items that lack one.")
    tgt_lang: str | None = option("--tgt-lang", default=None, help="Target language code for items that lack one.")
    limit: int | None = option("--limit", type=click.IntRange(min=1), default=None, help="First N items only.")
    fraction: float = option("--fraction", type=share(), default=0.1, show_default=True,
                             help="sensitivity: share of the candidate's words to shuffle.")
    probe_seed: int = option("--probe-seed", type=SEED, default=0, show_default=True,
                             help="sensitivity: shuffle seed.")
    repeats: int = option("--repeats", type=click.IntRange(min=2), default=5, show_default=True,
                          help="repeat: number of runs at temperature 0.")
    temperatures: str = option("--temperatures", default="0,0.5,1.0", show_default=True,
                               help="temperature: comma-separated temperatures.")
    human: str | None = option(
        "--human", default=None, metavar="RATINGS", type=click.Path(dir_okay=False),
        help="temperature: human ratings (the `agreement` table: item_id, language, task, metric, rater, "
             "kind, rating); adds agreement with the humans per temperature. Items match by item_id, "
             "else seg_id.")
    human_format: str | None = option("--human-format", type=click.Choice(["jsonl", "tsv", "csv"]), default=None,
                                      help="Format of --human (default: from the extension).")
    metric: str | None = option("--metric", default=None, help="temperature: the human metric the judge rates.")
    bins: str | None = option(
        "--bins", default=None, metavar="EDGES",
        help="temperature: comma-separated edges putting continuous judge scores into the human classes.")
    bin_labels: str | None = option("--bin-labels", default=None, metavar="LABELS",
                                    help="The class of each bin (default 0,1,...).")
    judge: JudgingSpec = group(judge_options, study_judging)

    def config(self) -> ProbeConfig:
        """The probe's settings; the temperature list is read only when the probe uses it."""
        from polyjudge.api import ProbeConfig

        config = ProbeConfig(kind=self.probe_kind, judge=self.judge, fraction=self.fraction,
                             probe_seed=self.probe_seed, repeats=self.repeats, input_format=self.input_format,
                             src_lang=self.src_lang, tgt_lang=self.tgt_lang, limit=self.limit, human=self.human,
                             human_format=self.human_format, metric=self.metric,
                             bins=number_list(self.bins, "--bins"),
                             bin_labels=number_list(self.bin_labels, "--bin-labels"))
        if self.probe_kind == "temperature":
            config = config.replace(temperatures=_temperatures(self.temperatures))
        return config


@click.command(cls=RegistryHelpCommand)
@takes(ProbeFlags)
def probe(flags: ProbeFlags) -> None:
    """Probe a judge's robustness on INPUT and print its table (one judge).

    --format tsv (default) prints probe.tsv, text aligns it, json prints probe.json.
    """
    from polyjudge.api import probe as run_probe

    if flags.out is None:
        raise click.UsageError("Missing option '-o' / '--out'.")
    result = run_probe(flags.input_path, flags.config(), flags.out)
    fmt = flags.fmt
    text = result.to_json() if fmt == "json" else result.to_text() if fmt == "text" else result.to_tsv()
    click.echo(text, nl=fmt == "json")
