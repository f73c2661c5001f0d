"""``polyjudge span-f1``: WMT25 task-2 character-level span precision/recall/F1.

Gold and predictions can each be a WMT25 task-2 TSV, a WMT MQM TSV (``<v>``
markup), a JSONL of spans (ours or WMT24 ESA records) or a polyjudge run
directory (its ``judgments.jsonl``; several runs per item are merged by
character voting). Prints one JSON object: per language pair ``precision``,
``recall``, ``f1`` (plus counts) and the macro averages ``avg_precision``,
``avg_recall``, ``avg_f1``. ``--write-tsv`` converts the predictions to the
task-2 TSV layout (hypothesis and identifiers taken from the gold).

Example (a TSA run on TED en-de against the human spans)::

    polyjudge span-f1 --gold ../shared/data/wmt-mqm/ted/ende/mqm_ted_ende.tsv --pred runs/tsa
"""

from __future__ import annotations

import json
from dataclasses import replace

import click

FORMATS = click.Choice(["auto", "task2", "mqm", "jsonl", "run"])


@click.command("span-f1")
@click.option("--gold", "-g", required=True, type=click.Path(exists=True),
              help="Gold spans: task-2 TSV, WMT MQM TSV, JSONL or run directory.")
@click.option("--pred", "-p", required=True, type=click.Path(exists=True),
              help="Predicted spans: run directory, task-2 TSV, JSONL or WMT MQM TSV.")
@click.option("--gold-format", type=FORMATS, default="auto", show_default=True)
@click.option("--pred-format", type=FORMATS, default="auto", show_default=True)
@click.option("--lp", default=None, help="Language pair (e.g. en-de) for inputs that do not name one.")
@click.option("--judge", default=None, help="Judge (model) to score when the run has several.")
@click.option("--set-id", "set_id", default="official", show_default=True,
              help="Score only rows of this set_id (task-2 TSVs); '*' scores every set.")
@click.option("--missing", type=click.Choice(["skip", "empty", "error"]), default="skip",
              show_default=True,
              help="Gold segments without a prediction (e.g. failed judgments): leave out and "
                   "count, score as 'no errors', or stop with an error.")
@click.option("--raters", type=click.Choice(["first", "all"]), default="first", show_default=True,
              help="WMT MQM gold with several raters per segment: first rater, or pool all.")
@click.option("--vote-threshold", type=float, default=0.5, show_default=True,
              help="Share of runs that must mark a character when merging runs.")
@click.option("--write-tsv", type=click.Path(dir_okay=False), default=None,
              help="Also write the predictions as a task-2 TSV.")
def span_f1(gold: str, pred: str, gold_format: str, pred_format: str, lp: str | None,
            judge: str | None, set_id: str, missing: str, raters: str, vote_threshold: float,
            write_tsv: str | None) -> None:
    """Character-level span P/R/F1 as scored in WMT25 task 2."""
    from polyjudge.metaeval.spans import read_spans, write_task2_tsv
    from polyjudge.metaeval.spans import span_f1 as score
    from polyjudge.protocols.tsa import vote_spans

    def merge(annotations):
        anns = [a for a in annotations if isinstance(a, dict) and isinstance(a.get("spans"), list)]
        if not anns:
            return None
        length = max([int(s["end"]) for a in anns for s in a["spans"] if s.get("end") is not None],
                     default=0)
        spans, _ = vote_spans([a["spans"] for a in anns], length, vote_threshold)
        return {"spans": spans}

    gold_segs, gold_warn = read_spans(gold, fmt=gold_format, lp=lp, raters=raters, judge=judge,
                                      merge=merge)
    pred_segs, pred_warn = read_spans(pred, fmt=pred_format, lp=lp, raters=raters, judge=judge,
                                      merge=merge)
    result = score(gold_segs, pred_segs, set_ids=None if set_id == "*" else (set_id,),
                   missing=missing)
    result.warnings.extend(gold_warn + pred_warn)
    if write_tsv:
        by_key = {(g.system, g.doc_id, g.seg_id): g for g in gold_segs}
        rows = []
        for p in pred_segs:
            g = by_key.get((p.system, p.doc_id, p.seg_id))
            if g is not None:
                p = replace(g, spans=p.spans)
            rows.append(p)
        write_task2_tsv(write_tsv, rows)
    click.echo(json.dumps(result.as_dict(), indent=2, ensure_ascii=False))
