"""``polyjudge rerank``: choose one translation per source with a judge (QE reranking or MBR).

CANDIDATES holds several candidates per source (JSONL with a ``candidates`` list per
line, or JSONL/TSV with one ``src``/``tgt`` row per candidate). The choice is
:func:`polyjudge.api.rerank`; ``--dry-run`` prices it with
:func:`polyjudge.api.rerank_estimate` and sends nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from polyjudge.cli.options import (
    FiniteFloat,
    JudgeSpecType,
    RegistryHelpCommand,
    format_option,
    judge_options,
    number_list,
    out_option,
    study_judging,
)
from polyjudge.cli.specs import argument, group, option, shared, takes

if TYPE_CHECKING:
    from polyjudge.api import JudgingSpec, RerankConfig, RerankResult


@dataclass(frozen=True, slots=True, kw_only=True)
class RerankFlags:
    """The argument and flags of ``polyjudge rerank``, in ``--help`` order (the judge's last)."""

    candidates: str = argument("candidates", metavar="CANDIDATES", type=click.Path(dir_okay=False))
    out: str | None = shared(out_option("Folder for the run directory (OUT/run), chosen.jsonl, scores.jsonl "
                                        "(every score and the MBR matrix) and rerank.json; not needed with "
                                        "--dry-run."))
    fmt: str = shared(format_option())
    method: str = option("--method", type=click.Choice(["qe", "mbr"]), default="qe", show_default=True,
                         help="qe: the best-scored candidate (reference-free protocol); mbr: the candidate that "
                              "agrees most with the others under a reference-based protocol (N(N-1) requests "
                              "per source).")
    utility: str = option("--utility", type=click.Choice(["judge", "chrf"]), default="judge", show_default=True,
                          help="The MBR utility: the judge, or chrF (local, free).")
    prune: bool = option("--prune", is_flag=True,
                         help="MBR: drop candidates that cannot win (confidence-based pruning, as mbrs does).")
    prune_schedule: str = option("--prune-schedule", default="8,16,32,64,128,256", show_default=True,
                                 help="Pseudo-references used at each pruning step (all of them at the last).")
    prune_alpha: float = option("--prune-alpha", type=FiniteFloat(0.0, 1.0, min_open=True, max_open=True),
                                default=0.99, show_default=True,
                                help="Keep a candidate that wins more than 1-alpha of the bootstrap resamples.")
    prune_bootstrap: int = option("--prune-bootstrap", type=click.IntRange(min=1), default=500, show_default=True,
                                  help="Bootstrap resamples per pruning step (seeded by --seed).")
    held_out: object = option("--held-out", type=JudgeSpecType(), default=None, metavar="JUDGE",
                              help="A second judge that scores the chosen translations and the baselines; it "
                                   "takes no part in the choice (the guard against self-reward).")
    references: str | None = option("--references", type=click.Path(dir_okay=False), default=None,
                                    help="One reference per source (line): the chosen translations' chrF against "
                                         "them is reported as a held-out check.")
    src_lang: str | None = option("--src-lang", default=None, help="Source language code for sources that lack one.")
    tgt_lang: str | None = option("--tgt-lang", default=None, help="Target language code for sources that lack one.")
    dry_run: bool = option("--dry-run", is_flag=True,
                           help="Print the requests per source and an upper bound of the cost; send nothing.")
    judge: JudgingSpec = group(judge_options, study_judging)

    def config(self) -> RerankConfig:
        from polyjudge.api import RerankConfig, describe_judge

        schedule = tuple(int(x) for x in number_list(self.prune_schedule, "--prune-schedule"))
        held = describe_judge(self.held_out, mask=False) if self.held_out is not None else None  # type: ignore[arg-type]
        return RerankConfig(judge=self.judge, method=self.method, utility=self.utility, prune=self.prune,
                            prune_schedule=schedule, prune_alpha=self.prune_alpha,
                            prune_bootstrap=self.prune_bootstrap, held_out=held, references=self.references,
                            src_lang=self.src_lang, tgt_lang=self.tgt_lang)


def _tsv(result: RerankResult) -> str:
    rows = ["seg_id\tchosen\tscore\ttranslation"]
    for c in result.choices:
        score = "" if c.score is None else f"{c.score:.6g}"
        rows.append(f"{c.source.seg_id or c.index + 1}\t{'' if c.chosen is None else c.chosen + 1}\t{score}\t"
                    f"{c.translation or ''}")
    return "\n".join(rows)


@click.command(cls=RegistryHelpCommand)
@takes(RerankFlags)
def rerank(flags: RerankFlags) -> None:
    """Choose one translation per source of CANDIDATES: QE reranking or MBR with a judge.

    --format text (default) prints the requests and the gain over each source's first
    candidate under the choosing judge and under the held-out checks (--held-out,
    --references); tsv prints the chosen translations; json prints rerank.json.
    """
    from polyjudge.api import rerank as run_rerank
    from polyjudge.api import rerank_estimate

    if flags.dry_run:
        est = rerank_estimate(flags.candidates, config=flags.config(), out=flags.out)
        click.echo(json.dumps(est.to_dict()) if flags.fmt == "json" else est.describe())
        return
    if flags.out is None:
        raise click.UsageError("Missing option '-o' / '--out'.")
    result = run_rerank(flags.candidates, config=flags.config(), out=flags.out)
    text = result.to_json() if flags.fmt == "json" else result.to_text() if flags.fmt == "text" else _tsv(result)
    click.echo(text, nl=flags.fmt != "text")
