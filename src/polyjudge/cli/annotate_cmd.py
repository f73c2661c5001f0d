"""``polyjudge annotate init|serve|status|export``: human annotation campaigns (docs/how-to/annotate.md)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from polyjudge.api.annotate import SCHEME_NAMES
from polyjudge.api.registries import input_formats
from polyjudge.cli.options import SEED, emit, format_option, input_format_option, out_option
from polyjudge.cli.specs import argument, option, shared, takes

if TYPE_CHECKING:
    from polyjudge.api.annotate import AnnotateConfig, CampaignStatus

SAMPLING = ("judge-uncertainty", "ppi")
TARGETS = ("mqm-tsv", "esa-jsonl", "ratings")


@click.group("annotate")
def annotate() -> None:
    """Ask humans: MQM/ESA spans, DA scores, forced choice and response sets, in the browser.

    init makes a campaign folder, serve puts the pages and the JSON API in front of it
    (one secret link per annotator), status shows progress and agreement, export writes
    the annotations for human-mqm, meta-eval, span-f1, validate and agreement; those
    commands also read a campaign folder directly.
    """


def _print_links(links: dict[str, str]) -> None:
    for name, link in links.items():
        click.echo(f"{name}\t{link}")


@dataclass(frozen=True, slots=True, kw_only=True)
class InitFlags:
    """The argument and flags of ``polyjudge annotate init``, in ``--help`` order (AnnotateConfig's fields)."""

    campaign: str = argument("campaign", type=click.Path())
    items: str = option("--items", "items", required=True, metavar="INPUT_OR_RUN",
                        help="The items to annotate: an input file any reader reads, or a run directory.")
    scheme: str = option("--scheme", type=click.Choice(SCHEME_NAMES), required=True,
                         help="What annotators do: MQM or ESA error spans, a DA score, forced choice or a "
                              "response set.")
    annotators: str = option("--annotators", default="1", show_default=True, metavar="N|NAMES",
                             help="How many annotators (annotator-1..N) or their names, comma-separated.")
    per_item: int = option("--per-item", "per_item", type=click.IntRange(1), default=1, show_default=True,
                           help="Annotators per item (for agreement: 2 or more).")
    task: str | None = option("--task", type=click.Path(dir_okay=False), default=None,
                              help="Rating task file (.json/.toml) for forced-choice and response-set (default: "
                                   "a built-in acceptable/borderline/unacceptable task).")
    sample: int | None = option("--sample", type=click.IntRange(1), default=None,
                                help="Show only N of the items (needs --by).")
    by: str | None = option("--by", type=click.Choice(SAMPLING), default=None,
                            help="How the sample is chosen: the items the judge is least sure of, or a random "
                                 "sample for PPI++.")
    run: str | None = option("--run", type=click.Path(file_okay=False), default=None,
                             help="The judge's run directory over these items (for --by; default: --items when "
                                  "it is a run).")
    input_format: str | None = shared(input_format_option(tuple(input_formats()),
                                                          "The format of --items (default: detected)."))
    lp: str | None = option("--lp", default=None, metavar="SRC-TGT",
                            help="The language pair of items without their own.")
    seed: int = option("--seed", type=SEED, default=0, show_default=True,
                       help="Seed of the ppi sample, the attention checks and the pre-annotated share.")
    guidelines: str | None = option("--guidelines", type=click.Path(dir_okay=False), default=None, metavar="FILE",
                                    help="Annotation guidelines (Markdown), shown in the page.")
    attention_checks: float = option("--attention-checks", "attention_checks", type=click.FloatRange(0, 0.5),
                                     default=0.0, show_default=True, metavar="RATE",
                                     help="Add this share of each queue as attention checks: items with an "
                                          "injected error, or repeats (status gives each annotator's pass rate; "
                                          "exports leave them out).")
    prefill: str | None = option("--prefill", type=click.Path(file_okay=False), default=None, metavar="RUN",
                                 help="A span protocol's run over the items: its spans are shown as suggestions "
                                      "to keep, edit or delete (ESA^AI).")
    prefill_share: float = option("--prefill-share", "prefill_share", type=click.FloatRange(0, 1, min_open=True),
                                  default=1.0, show_default=True,
                                  help="Share of the items shown with the suggestions (the rest without, for "
                                       "status to compare).")

    def config(self) -> AnnotateConfig:
        from polyjudge.api.annotate import AnnotateConfig

        return AnnotateConfig(folder=self.campaign, items=self.items, scheme=self.scheme,
                              annotators=self.annotators, per_item=self.per_item, task=self.task,
                              sample=self.sample, by=self.by, run=self.run, input_format=self.input_format,
                              lp=self.lp, seed=self.seed, guidelines=self.guidelines,
                              attention_checks=self.attention_checks, prefill=self.prefill,
                              prefill_share=self.prefill_share)


@annotate.command("init")
@takes(InitFlags)
def init(flags: InitFlags) -> None:
    """Make the campaign folder CAMPAIGN (new or empty) and print one link per annotator."""
    from polyjudge.api.annotate import DEFAULT_PORT, annotator_links, init_campaign

    tokens = init_campaign(flags.config())
    click.echo(f"campaign {flags.campaign}: {len(tokens)} annotator(s); links once served "
               f"(polyjudge annotate serve {flags.campaign}):", err=True)
    _print_links(annotator_links(flags.campaign, port=DEFAULT_PORT))


@annotate.command("serve")
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (anything but 127.0.0.1 lets other machines reach the pages).")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="Port to listen on (0: a free one, printed in the links).")
def serve(campaign: str, host: str, port: int) -> None:
    """Serve CAMPAIGN's pages and JSON API until Ctrl-C; print one link per annotator."""
    from polyjudge.api.annotate import serve_campaign

    def ready(links: dict[str, str]) -> None:
        _print_links(links)
        click.echo("serving; Ctrl-C stops (every saved annotation is already on disk)", err=True)
        sys.stdout.flush()  # a script reading the links from a pipe gets them now, not at exit

    serve_campaign(campaign, host=host, port=port, ready=ready)
    click.echo("stopped", err=True)


def _number(x: float | None) -> str:
    return "n/a" if x is None or x != x else f"{x:.3f}"  # NaN: too few labels for PPI++ (validation/ppi.py)


def _status_text(st: CampaignStatus) -> str:
    lines = [f"campaign {st.name} ({st.scheme}), {st.items} item(s)"]
    lines += [f"  {p.annotator}: {p.done}/{p.total} done, {p.versions} version(s) saved" for p in st.progress]
    lines.append(f"Krippendorff's alpha ({st.alpha_level}): "
                 + (f"{st.alpha:.3f} over {st.alpha_items} item(s)" if st.alpha is not None
                    else "not yet (no item has two annotations)"))
    lines += [f"span F1 {p.first} vs {p.second}: {p.f1:.3f} on {p.items} item(s)" for p in st.span_f1]
    lines += [f"{j.who} vs the judge: Pearson {_number(j.pearson)}, Kendall tau {_number(j.kendall)} "
              f"on {j.items} item(s)" for j in st.judge]
    ppi = st.ppi
    if ppi is not None:
        lines.append(f"PPI++ mean human score: {_number(ppi.estimate)} [{_number(ppi.lower)}, {_number(ppi.upper)}] "
                     f"({ppi.confidence:.0%}; {ppi.n_labelled} labelled, {ppi.n_judged} judged); "
                     f"humans alone: {_number(ppi.human_only)} [{_number(ppi.human_only_lower)}, "
                     f"{_number(ppi.human_only_upper)}]")
    elif st.ppi_note:
        lines.append(f"PPI++: {st.ppi_note}")
    return "\n".join(lines + _quality_text(st)) + "\n"


def _percent(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0%}"


def _seconds(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1f} s"


def _quality_text(st: CampaignStatus) -> list[str]:
    """The lines on attention checks, active time and pre-annotation."""
    lines = [f"attention checks {c.annotator}: {c.passed} passed, {c.failed} failed, {c.pending} pending "
             f"(pass rate {_percent(c.rate)})" for c in st.checks]
    lines += [f"active time {t.who}: {_seconds(t.mean_s)} mean, {_seconds(t.median_s)} median per item over "
              f"{t.items} item(s); {_seconds(t.per_span_s)} per span" for t in st.time]
    lines += [f"{p.group} AI suggestions: {p.annotations} annotation(s), {_seconds(p.mean_s)} per item, "
              f"{_seconds(p.per_span_s)} per span, span F1 between annotators {_number(p.span_f1)}; spans kept "
              f"{p.kept}, edited {p.edited}, deleted {p.deleted}, added {p.added}" for p in st.prefill]
    return lines


def _repr(x: float | None) -> str:
    return "" if x is None else repr(x)


def _status_tsv(st: CampaignStatus) -> str:
    rows = [("measure", "who", "value")]
    for p in st.progress:
        rows += [("done", p.annotator, str(p.done)), ("total", p.annotator, str(p.total)),
                 ("versions", p.annotator, str(p.versions))]
    rows.append(("alpha", st.alpha_level, _repr(st.alpha)))
    rows += [("span_f1", f"{pair.first}|{pair.second}", repr(pair.f1)) for pair in st.span_f1]
    for j in st.judge:
        rows += [("judge_pearson", j.who, _repr(j.pearson)), ("judge_kendall", j.who, _repr(j.kendall))]
    if st.ppi is not None:
        rows += [(f"ppi_{k}", "", repr(v)) for k, v in st.ppi.to_json().items()]
    for c in st.checks:
        rows += [("checks_passed", c.annotator, str(c.passed)), ("checks_failed", c.annotator, str(c.failed)),
                 ("checks_pending", c.annotator, str(c.pending)), ("checks_pass_rate", c.annotator, _repr(c.rate))]
    for t in st.time:
        rows += [("time_items", t.who, str(t.items)), ("time_mean_s", t.who, _repr(t.mean_s)),
                 ("time_median_s", t.who, _repr(t.median_s)), ("time_per_span_s", t.who, _repr(t.per_span_s))]
    for pre in st.prefill:
        rows += [(f"prefill_{k}", pre.group, _repr(getattr(pre, k)) if k in ("mean_s", "per_span_s", "span_f1")
                  else str(getattr(pre, k))) for k in ("annotations", "mean_s", "per_span_s", "span_f1", "kept",
                                                     "edited", "deleted", "added")]
    return "".join("\t".join(r) + "\n" for r in rows)


@annotate.command("status")
@click.argument("campaign", type=click.Path(file_okay=False))
@format_option()
@out_option("Write the status to this file instead of standard output.")
def status(campaign: str, fmt: str, out: str | None) -> None:
    """Progress per annotator, agreement so far and, for a ppi sample, the PPI++ estimate."""
    from polyjudge.api.annotate import campaign_status, status_json

    st = campaign_status(campaign)
    text = status_json(st) if fmt == "json" else _status_tsv(st) if fmt == "tsv" else _status_text(st)
    emit(text, out)


@annotate.command("export")
@click.argument("campaign", type=click.Path(file_okay=False))
@click.option("--to", "to", type=click.Choice(TARGETS), required=True,
              help="mqm-tsv (WMT MQM TSV), esa-jsonl (WMT ESA JSONL) or ratings (validate/agreement tables).")
@out_option("The file to write.", required=True)
def export(campaign: str, to: str, out: str) -> None:
    """Write CAMPAIGN's annotations (newest versions) in a format polyjudge's readers read back equal.

    One annotator's identical spans count once. mqm-tsv has no quoting or escape: a text holding
    <v>, </v>, a tab or a line end is refused (exit 2, naming the item); esa-jsonl holds any text.
    """
    from pathlib import Path

    from polyjudge.api.annotate import export_campaign
    from polyjudge.api.runs import input_target
    from polyjudge.data.errors import InputError

    if Path(out).absolute().parent.resolve() == Path(campaign).resolve():
        raise InputError("is inside the campaign folder; write the export elsewhere", path=out, field="-o/--out")
    emit(export_campaign(campaign, to), out, inputs=input_target("CAMPAIGN", Path(campaign) / "campaign.sqlite"))
