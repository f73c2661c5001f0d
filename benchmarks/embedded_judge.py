"""How good is the embedded judge? Variants measured against human MQM on TED.

Judges a fixed, seeded sample of ``../shared/data/wmt-mqm/ted`` (zh-en and
en-de; N segments x every non-reference system) with the default embedded
model through ``polyjudge.api.judge`` and prints, per variant and language
pair, on exactly the cells the variant scored:

* segment-level tie-calibrated accuracy (acc-t) and system-level SPA and
  Pearson against the rater-averaged human MQM scores, with chrF and BLEU
  (sacrebleu, against the reference translation) on the same cells;
* for the span formats, character-level span F1 against the TED rater
  (TED has one rater per system and segment, so no second-rater ceiling can be
  measured here; the trivial "mark nothing" and "mark everything" F1 on the
  same cells are printed instead), and the parse-failure rate;
* seconds of model time per judged segment (sum of request latencies /
  judged items; identical translations share one request).

Run directories go under ``--out`` (default ``/tmp/polyjudge-embedded-bench``)
so a second invocation reuses every answer already computed.

    python benchmarks/embedded_judge.py [--segments 4] [--span-segments 2] [--variants da,da-small,...]
        [--threads 2] [--lps zhen,ende] [--seed 0] [--out DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import random
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from polyjudge.api import JudgeConfig, build_protocol, judge  # noqa: E402
from polyjudge.data.errors import InputError  # noqa: E402
from polyjudge.data.records import Item  # noqa: E402
from polyjudge.data.wmt_mqm import MQMAnnotation, read_wmt_mqm, wmt_mqm_items  # noqa: E402
from polyjudge.engine.result import RunResult  # noqa: E402
from polyjudge.metaeval.spans import Span, SpanSegment, segments_from_mqm, span_f1  # noqa: E402
from polyjudge.metaeval.statistics import Scores, acc_t, pearson, spa  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TED = ROOT.parent / "shared" / "data" / "wmt-mqm" / "ted"
TEMPLATES = ROOT / "src" / "polyjudge" / "templates"
# Language pair -> (source, target, reference system). zh-en's "ref" (ref.A) is the worst-rated
# "system" of the file (MQM 5.52); refB is the reference mt-metrics-eval uses for it.
LPS = {"zhen": ("zh", "en", "refB"), "ende": ("en", "de", "ref")}
REF_SYSTEMS = frozenset({"ref", "refA", "refB", "ref-A", "ref-B"})


@dataclass(frozen=True)
class Variant:
    """One row of the table: how the embedded judge is asked."""

    name: str
    protocol: str
    template: str | None = None  # relative to src/polyjudge/templates
    with_ref: bool = False  # items carry the reference translation
    options: dict[str, Any] = field(default_factory=dict)  # protocol options
    runs: int = 1
    temperature: float | None = None
    spans: bool = False  # judged on the span sample and scored by span F1
    single_run: bool = False  # also report run 1 alone (from the same run directory)


VARIANTS = {v.name: v for v in (
    Variant("da", "da"),
    Variant("da+ref", "da", with_ref=True),
    Variant("da-small", "da", "da/small.j2"),
    Variant("da-small+ref", "da", "da/small.j2", with_ref=True),
    Variant("da+ref:T0.5x3", "da", with_ref=True, runs=3, temperature=0.5, single_run=True),
    Variant("da-small+ref:T0.5x3", "da", "da/small.j2", with_ref=True, runs=3, temperature=0.5,
            single_run=True),
    Variant("da:expected", "da", options={"score_mode": "expected"}),
    Variant("da+ref:expected", "da", with_ref=True, options={"score_mode": "expected"}),
    Variant("da-small+ref:expected", "da", "da/small.j2", with_ref=True, options={"score_mode": "expected"}),
    Variant("mqm:1run", "mqm", runs=1, temperature=0.0),
    Variant("mqm-small+ref", "mqm", "mqm/small.j2", with_ref=True, runs=1, temperature=0.0,
            options={"with_reference": True, "max_errors_per_severity": 3}),
    Variant("mqm-small+ref:T0.4x3", "mqm", "mqm/small.j2", with_ref=True, runs=3, temperature=0.4,
            options={"with_reference": True, "max_errors_per_severity": 3}, single_run=True),
    Variant("tsa", "tsa", spans=True),
    Variant("gemba-spans", "gemba-spans", spans=True),
    Variant("gemba-esa", "gemba-esa", spans=True),
    Variant("gemba-esa+ref", "gemba-esa", with_ref=True, options={"with_reference": True}, spans=True),
    Variant("gemba-esa:expected", "gemba-esa", options={"score_mode": "expected"}, spans=True),
    Variant("esa-small", "gemba-esa", "esa/small.j2", spans=True),
    Variant("esa-small+ref", "gemba-esa", "esa/small.j2", with_ref=True, options={"with_reference": True},
            spans=True),
)}
# In order of what matters most (a run stopped early still has the first rows).
DEFAULT_VARIANTS = ("da", "da:expected", "da+ref:expected", "gemba-esa", "mqm-small+ref", "da+ref",
                    "gemba-esa:expected", "da+ref:T0.5x3", "tsa", "da-small+ref", "esa-small", "gemba-spans")


# --------------------------------------------------------------------------- data
@dataclass
class Sample:
    """The judged cells of one language pair, human scores and baselines on them."""

    lp: str
    items: list[Item]  # with the reference attached
    systems: list[str]
    segs: list[str]
    human: np.ndarray  # systems x segs, higher = better
    chrf: np.ndarray
    bleu: np.ndarray
    gold: list[SpanSegment]


def _human_scores(lp: str) -> dict[tuple[str, str], float | None]:
    path = TED / lp / f"mqm_ted_{lp}.avg_seg_scores.tsv"
    out: dict[tuple[str, str], float | None] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        system, score, seg = re.split(r"\s+", line.strip())
        out[(system, seg)] = None if score == "None" else float(score)
    return out


def choose_segments(lp: str, n: int, seed: int) -> tuple[list[str], list[str]]:
    """Non-reference systems, and ``n`` seeded segments every one of them has a human score for."""
    human = _human_scores(lp)
    systems = sorted({s for s, _ in human} - REF_SYSTEMS)
    segs = sorted({g for _, g in human}, key=int)
    ok = [g for g in segs if all(human.get((s, g)) is not None for s in systems)]
    chosen = random.Random(f"{lp}:{seed}").sample(ok, n)
    return systems, sorted(chosen, key=int)


def load_sample(lp: str, n: int, seed: int, annotations: list[MQMAnnotation]) -> Sample:
    import sacrebleu  # benchmark-only baseline

    src_lang, tgt_lang, ref_system = LPS[lp]
    systems, segs = choose_segments(lp, n, seed)
    wanted = set(segs)
    refs = {a.seg_id: a.target for a in annotations if a.system == ref_system}
    items = [dataclasses.replace(it, ref=refs[it.seg_id or ""])
             for it in wmt_mqm_items(annotations, src_lang, tgt_lang)
             if it.seg_id in wanted and it.system in systems]
    items.sort(key=lambda it: (int(it.seg_id or 0), it.system or ""))
    human_map = _human_scores(lp)
    cell = {(it.system, it.seg_id): it for it in items}
    shape = (len(systems), len(segs))
    human, chrf, bleu = np.full(shape, np.nan), np.full(shape, np.nan), np.full(shape, np.nan)
    for i, s in enumerate(systems):
        for j, g in enumerate(segs):
            it = cell[(s, g)]
            human[i, j] = human_map[(s, g)] or 0.0
            chrf[i, j] = sacrebleu.sentence_chrf(it.tgt, [it.ref or ""]).score
            bleu[i, j] = sacrebleu.sentence_bleu(it.tgt, [it.ref or ""]).score
    gold = [g for g in segments_from_mqm([a for a in annotations if a.seg_id in wanted and a.system in systems],
                                         lp=lp, raters="first")]
    return Sample(lp, items, systems, segs, human, chrf, bleu, gold)


# --------------------------------------------------------------------------- statistics
def _scores(m: np.ndarray) -> Scores:
    with np.errstate(all="ignore"):
        sys_ = np.array([np.nanmean(r) if np.isfinite(r).any() else np.nan for r in m])
    return Scores(m, sys_)


def meta(human: np.ndarray, metric: np.ndarray) -> dict[str, float]:
    """acc-t, SPA and system Pearson of ``metric`` on the cells it scored (human masked alike)."""
    mask = np.isfinite(metric)
    h = np.where(mask, human, np.nan)
    out = {"acc_t": float("nan"), "spa": float("nan"), "sys_pearson": float("nan")}
    if mask.sum() < 2:
        return out
    H, M = _scores(h), _scores(metric)
    out["acc_t"] = acc_t("seg", [H], [M])
    out["spa"] = spa("sys", [H], [M])
    keep = np.isfinite(H.sys) & np.isfinite(M.sys)
    if keep.sum() > 2:
        out["sys_pearson"] = pearson("sys", [Scores(H.seg[keep], H.sys[keep])], [Scores(M.seg[keep], M.sys[keep])])
    return out


def matrix(sample: Sample, items: Sequence[Item], values: Sequence[float | None]) -> np.ndarray:
    m = np.full((len(sample.systems), len(sample.segs)), np.nan)
    row = {s: i for i, s in enumerate(sample.systems)}
    col = {g: j for j, g in enumerate(sample.segs)}
    for it, v in zip(items, values, strict=True):
        if v is not None and math.isfinite(v):
            m[row[it.system or ""], col[it.seg_id or ""]] = v
    return m


def span_scores(sample: Sample, result: RunResult) -> dict[str, float]:
    """Span F1 of the run (failed judgments count as empty predictions) and trivial baselines."""
    preds = []
    for it, seg in zip(result.items, result.segments(result.judges[0]), strict=True):
        ann = seg.merged
        if not isinstance(ann, dict):
            continue
        spans = tuple(Span(s["start"], s["end"], s["severity"]) for s in ann.get("spans", [])
                      if s.get("start") is not None)
        preds.append(SpanSegment(it.system, it.doc_id, it.seg_id, spans))
    judged = {(it.system, it.seg_id) for it in result.items}
    gold = [g for g in sample.gold if (g.system, g.seg_id) in judged]
    res = span_f1(gold, preds, missing="empty")
    nothing = span_f1(gold, [SpanSegment(g.system, g.doc_id, g.seg_id, ()) for g in gold])
    everything = span_f1(gold, [SpanSegment(g.system, g.doc_id, g.seg_id,
                                            (Span(0, g.hyp_length or 0, "major"),)) for g in gold])
    return {"f1": res.avg_f1, "precision": res.avg_precision, "recall": res.avg_recall,
            "f1_nothing": nothing.avg_f1, "f1_everything": everything.avg_f1,
            "pred_spans": sum(len(p.spans) for p in preds)}


# --------------------------------------------------------------------------- running
def variant_available(v: Variant) -> str | None:
    """None when the variant can run here, else why not (an option another change adds)."""
    try:
        build_protocol(config_for(v, "llamacpp"))
    except InputError as exc:
        return f"not available: {exc}"
    return None


def config_for(v: Variant, spec: str) -> JudgeConfig:
    return JudgeConfig(protocol=v.protocol, judges=(spec,), protocol_options=dict(v.options),
                       prompt_template=str(TEMPLATES / v.template) if v.template else None,
                       use_context=False, runs=v.runs, temperature=v.temperature, seed=0, concurrency=2,
                       max_failure_rate=None, n_ctx=4096)


def run_variant(v: Variant, sample: Sample, spec: str, out: Path) -> tuple[RunResult, float]:
    items = sample.items if v.with_ref else [dataclasses.replace(it, ref=None) for it in sample.items]
    start = time.perf_counter()
    result = judge(items, config_for(v, spec), out=out / v.name.replace(":", "_") / sample.lp)
    return result, time.perf_counter() - start


def summarise(v: Variant, sample: Sample, result: RunResult, wall: float) -> list[dict[str, Any]]:
    jd = result.judgments
    failed = [j for j in jd if j.status != "ok"]
    latency = sum(float(j.latency_s or 0.0) for j in jd if j.status != "pending")
    base: dict[str, Any] = {"variant": v.name, "lp": sample.lp, "items": len(result.items),
                            "judgments": len(jd), "fail_rate": len(failed) / max(1, len(jd)),
                            "failures": dict(sorted({(j.error or j.status)[:60]: 0 for j in failed}.items())),
                            "s_per_seg": latency / max(1, len(result.items)), "wall_s": wall}
    for j in failed:
        base["failures"][(j.error or j.status)[:60]] += 1
    judge_name = result.judges[0]
    rows = []
    scores = matrix(sample, result.items, result.segment_scores(judge_name))
    row = dict(base, **meta(sample.human, scores))
    for name, m in (("chrf", sample.chrf), ("bleu", sample.bleu)):
        sub = meta(sample.human, np.where(np.isfinite(scores), m, np.nan))
        row.update({f"{k}_{name}": val for k, val in sub.items()})
    if v.spans:
        row.update(span_scores(sample, result))
    rows.append(row)
    if v.single_run and result.runs > 1:
        run1 = result.run_matrix(judge_name)[:, 0]
        m1 = matrix(sample, result.items, [float(x) for x in run1])
        rows.append(dict(base, variant=f"{v.name}[run1]", **meta(sample.human, m1),
                         s_per_seg=base["s_per_seg"] / result.runs))
    return rows


def fmt(x: Any, nd: int = 3) -> str:
    if isinstance(x, float):
        return "-" if math.isnan(x) else f"{x:.{nd}f}"
    return str(x)


def print_table(rows: list[dict[str, Any]]) -> None:
    cols = [("variant", "variant"), ("lp", "lp"), ("items", "items"), ("fail_rate", "fail"),
            ("acc_t", "acc-t"), ("acc_t_chrf", "chrF"), ("acc_t_bleu", "BLEU"),
            ("spa", "SPA"), ("spa_chrf", "chrF"), ("spa_bleu", "BLEU"), ("sys_pearson", "sysr"),
            ("f1", "spanF1"), ("f1_nothing", "F1∅"), ("f1_everything", "F1all"), ("s_per_seg", "s/seg")]
    table = [[h for _, h in cols]] + [[fmt(r.get(k, float("nan")), 2 if k == "s_per_seg" else 3)
                                       for k, _ in cols] for r in rows]
    widths = [max(len(r[c]) for r in table) for c in range(len(cols))]
    for r in table:
        print("  ".join(c.ljust(w) if k < 2 else c.rjust(w) for k, (c, w) in enumerate(zip(r, widths))))


def averaged(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per variant, numbers averaged over the language pairs."""
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(r["variant"], []).append(r)
    out = []
    for name, rs in by.items():
        avg: dict[str, Any] = {"variant": name, "lp": "avg", "items": sum(r["items"] for r in rs)}
        for k in rs[0]:
            if isinstance(rs[0][k], float):
                avg[k] = float(np.mean([r[k] for r in rs if k in r]))
        out.append(avg)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--segments", type=int, default=4, help="segments per language pair (score variants)")
    ap.add_argument("--span-segments", type=int, default=2, help="segments per language pair (span variants)")
    ap.add_argument("--variants", default=",".join(DEFAULT_VARIANTS))
    ap.add_argument("--lps", default="zhen,ende")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: every core)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="/tmp/polyjudge-embedded-bench")
    ap.add_argument("--json", default=None, help="also write every row to this JSON file")
    args = ap.parse_args(argv)
    if not TED.is_dir():
        print(f"no TED data at {TED}", file=sys.stderr)
        return 2
    spec = "llamacpp" if args.threads is None else f"llamacpp:default?threads={args.threads}"
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        print(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}", file=sys.stderr)
        return 2
    rows: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    samples: dict[tuple[str, int], Sample] = {}
    for lp in args.lps.split(","):
        anns = read_wmt_mqm(TED / lp / f"mqm_ted_{lp}.tsv")
        for n in {args.segments, args.span_segments}:
            samples[(lp, n)] = load_sample(lp, n, args.seed, anns)
    for name in names:
        v = VARIANTS[name]
        why = variant_available(v)
        if why is not None:
            skipped[name] = why
            continue
        for lp in args.lps.split(","):
            sample = samples[(lp, args.span_segments if v.spans else args.segments)]
            result, wall = run_variant(v, sample, spec, Path(args.out))
            new = summarise(v, sample, result, wall)
            rows.extend(new)
            print(f"# {name} {lp}: " + json.dumps({k: new[0].get(k) for k in
                                                   ("items", "fail_rate", "acc_t", "spa", "f1", "s_per_seg")},
                                                  default=str), flush=True)
    for lp in args.lps.split(","):
        s = samples[(lp, args.segments)]
        print(f"# {lp}: {len(s.systems)} systems x {len(s.segs)} segments (score variants) "
              f"seg_ids {' '.join(s.segs)}; span sample seg_ids "
              f"{' '.join(samples[(lp, args.span_segments)].segs)}")
    print()
    print_table(rows)
    print()
    print_table(averaged(rows))
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")
    for r in rows:
        if r["failures"]:
            print(f"failures {r['variant']} {r['lp']}: {r['failures']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "skipped": skipped}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
