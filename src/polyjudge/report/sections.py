"""Report sections built from run directories; each appears only when its data exists.

A section is plain data (tables, figures, key/value lists); the HTML template
renders it with autoescaping, so user text can never become markup. Figures
are SVG built by :mod:`polyjudge.report.svg`, which escapes its own labels.

Study outputs of other commands are read from a run directory
(``metaeval.json``, ``consistency.json``, ``validation.json``) or given on
their own (``polyjudge report --metaeval/--consistency/--validation``, which
needs no run directory). A meta-evaluation is rendered from its typed rows
(:class:`polyjudge.metaeval.results.MetaEvalResults`: computed in this
process, or read back from the JSON ``polyjudge meta-eval --format json``
wrote): each ranking column is a cell (rank and cluster shown as a tooltip),
the averages a ranking table; with ``--task none`` the per-LP standard
statistics (sys SPA/Pearson, seg Pearson/acc-t) are shown instead. A
consistency study is rendered from its typed κ rows
(:class:`polyjudge.metaeval.kappas.ConsistencyKappas`), a judge validation from
its typed selection tables (:class:`polyjudge.validation.results.ValidationResults`:
computed by ``polyjudge validate``, or read back from its ``--format json``, per
(β, τ) one table for decision consistency and one for |estimation bias|, plus a
key/value summary).

The section data (also accepted as written):

``metaeval.json`` (an older hand-written shape, still read)::

    {"results": [{"metric": "judge or metric name", "lp": "en-de",
                  "level": "seg" | "sys", "statistic": "pearson",
                  "value": 0.41, "ci": [0.33, 0.48],
                  "rank": 1, "cluster": 1}, ...],
     "ranking": [{"metric": "m", "rank": 1, "cluster": 1, "average": 0.7}, ...],
     "preset": "wmt24"}

  (a bare list of result objects is accepted too; ``ci``, ``rank``,
  ``cluster``, ``ranking`` and ``preset`` are optional). One table and one
  bar chart (a group per language pair) per level and statistic.

``consistency.json``::

    {"reference": "en",
     "results": [{"judge": "m", "language": "de", "kappa": 0.31,
                  "task": "xquad", "criterion": "yes/no"}, ...],
     "fleiss": [{"judge": "m", "task": "xquad", "criterion": "yes/no",
                 "subset": "all", "kappa": 0.22}, ...]}

  (``task``, ``criterion``, ``subset`` and ``fleiss`` are optional; one radar
  chart is drawn per task and criterion with at least three languages, one
  polygon per judge.)

``validation.json``::

    {"class_distribution": [{"case": "full", "rater": "human", "class": "2",
                             "count": 90, "group": "es"}, ...],
     "selection": {"target": "decision consistency", "higher_is_better": true,
                   "label": "β = 0, τ = 0.5",
                   "target_values": {"judge-a": 0.84, "judge-b": 0.61},
                   "rows": [{"metric": "hit rate (h/h)", "selected": "judge-b",
                             "metric_values": {"judge-a": 0.7, "judge-b": 0.8}}]},
     "notes": [["task", "tox"], ...]}

  (``group``, ``label`` and ``notes`` are optional; ``selection`` may be a
  list of such objects, one table each; a row may give ``loss`` itself,
  otherwise it is the distance between the best target value and the
  selected judge's.)
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from polyjudge.analysis import (
    aggregate_rows,
    available_run_aggregators,
    compare_aggregators,
    segment_deltas,
    single_run_stability,
    system_ranking,
    tie_stats,
)
from polyjudge.metaeval.kappas import ConsistencyKappas, ReferenceKappa
from polyjudge.metaeval.results import MetaEvalCell, MetaEvalResults
from polyjudge.report import svg
from polyjudge.report.annotation import annotation_blocks
from polyjudge.report.blocks import Cell as Cell
from polyjudge.report.blocks import Figure as Figure
from polyjudge.report.blocks import KeyValues as KeyValues
from polyjudge.report.blocks import Para as Para
from polyjudge.report.blocks import Section as Section
from polyjudge.report.blocks import SpanBrowser as SpanBrowser
from polyjudge.report.blocks import Table as Table
from polyjudge.report.format import interval, number, percent, seconds, usd
from polyjudge.report.load import STATUSES, RunData
from polyjudge.report.pairwise import pairwise_blocks
from polyjudge.report.rerank import rerank_blocks
from polyjudge.report.settled import settled_section
from polyjudge.report.simulation import simulation_blocks
from polyjudge.report.spanranking import span_ranking_blocks
from polyjudge.report.systems import comparison_blocks, run_comparison
from polyjudge.rundir.records import PRICE_UNKNOWN
from polyjudge.validation.results import ClassCount, SelectionTable, ValidationResults


def _slug(s: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in s).strip("-").lower() or "run"


# --------------------------------------------------------------------------- summary

def summary_section(run: RunData) -> Section:
    """Settings, counts, tokens, cost and time of the run, per judge, and every kind of failure.

    Costs are the ones recorded at judge time (the manifest's total and price
    table), never re-priced with today's prices.
    """
    j = run.judgments
    status = Counter(j.status)
    n_fail = len(j) - status.get("ok", 0)
    costs = run.judge_costs()
    cost = run.cost_usd
    unpriced = run.unpriced()
    wall = run.wall_time_s
    lat = j.latency_s[np.isfinite(j.latency_s)]
    kv = [
        ("signature", run.signature or "not recorded"),
        ("protocol", run.protocol or "not recorded"),
        ("judges", ", ".join(run.judges) or "none"),
        ("runs per item", str(run.n_runs)),
        ("aggregator", run.aggregator),
        ("items", str(len(run.segments))),
        ("systems", str(len({s.system for s in run.segments}))),
        ("judgments", f"{len(j)} ({status.get('ok', 0)} ok, {n_fail} failed)"),
        ("tokens", "{} prompt + {} completion".format(*run.tokens())),
        ("cost", (usd(cost) + (f" ({PRICE_UNKNOWN}: {', '.join(unpriced)})" if unpriced else ""))
         if cost is not None else "not recorded"),
        ("wall time", seconds(wall) if wall is not None else "not recorded"),
        ("latency per request", f"mean {seconds(float(lat.mean()), digits=2)}, "
         f"p95 {seconds(float(np.quantile(lat, 0.95)), digits=2)}" if lat.size else "not recorded"),
    ]
    temp = run.temperature
    if temp is not None:
        kv.insert(4, ("temperature", str(temp)))
    blocks: list[Any] = [KeyValues(kv)]

    rows = []
    for judge in run.judges:
        m = j.of_judge(judge)
        st = Counter(s for s, keep in zip(j.status, m) if keep)
        rows.append([judge, int(m.sum())] + [
            Cell(str(st.get(s, 0)), "bad" if s != "ok" and st.get(s, 0) else "") for s in STATUSES]
            + [*run.tokens(judge),
               PRICE_UNKNOWN if judge in unpriced else usd(costs[judge]) if costs else "n/a",
               number(float(np.nanmean(j.latency_s[m]))) if np.isfinite(j.latency_s[m]).any() else "n/a"])
    blocks.append(Table(["judge", "judgments", *STATUSES, "prompt tokens", "completion tokens",
                         "cost", "mean latency (s)"], rows, "Per judge"))

    if n_fail:
        reasons: dict[tuple[str, str], list[int]] = {}
        for k, (s, e) in enumerate(zip(j.status, j.error)):
            if s != "ok":
                reasons.setdefault((s, str(e or "no reason recorded")[:300]), []).append(k)
        frows = []
        for (s, e), ks in sorted(reasons.items(), key=lambda kv: -len(kv[1]))[:50]:
            k = ks[0]
            seg = run.segments[j.item_index[k]] if j.item_index[k] < len(run.segments) else None
            where = (f"{seg.system} / {seg.doc_id} / {seg.seg_id}, run {j.run_index[k]}, {j.judge[k]}"
                     if seg else f"item {j.item_index[k]}")
            frows.append([Cell(s, "bad"), e, len(ks), where, j.raw_text[k][:200]])
        blocks.append(Table(["status", "reason", "count", "first example", "raw answer (start)"],
                            frows, f"Failures ({n_fail}); none of them became a score"))
    return Section(f"summary-{_slug(run.name)}", "Summary", blocks, run.name)


# --------------------------------------------------------------------------- scores

def distribution_section(run: RunData, scores: np.ndarray) -> Section | None:
    if not np.isfinite(scores).any():
        return None
    systems = [s.system for s in run.segments]
    sys_arr = np.asarray(systems, dtype=object)
    groups = [(name, scores[sys_arr == name]) for name in dict.fromkeys(systems)]
    blocks: list[Any] = [Figure("score-distribution", svg.box_plot(groups, title="Segment scores per system"),
                                "Segment scores per system: box = quartiles, whiskers = 1.5 IQR, "
                                "diamond = mean.")]
    rows = []
    for name, v in groups:
        v = v[np.isfinite(v)]
        if v.size:
            q = np.quantile(v, [0.25, 0.5, 0.75])
            rows.append([name, v.size, number(v.mean()), number(v.std(ddof=1)) if v.size > 1 else "n/a",
                         number(v.min()), number(q[0]), number(q[1]), number(q[2]), number(v.max())])
    blocks.append(Table(["system", "n", "mean", "sd", "min", "q1", "median", "q3", "max"], rows))
    return Section(f"dist-{_slug(run.name)}", "Score distributions", blocks, run.name)


def ranking_section(run: RunData, scores: np.ndarray, *, n_boot: int = 1000) -> Section | None:
    systems = [s.system for s in run.segments]
    if len(set(systems)) < 1 or not np.isfinite(scores).any():
        return None
    ranking = system_ranking(systems, scores, n_boot=n_boot)
    rows = [[i + 1, r.system, number(r.mean), interval(r.lo, r.hi), r.n]
            for i, r in enumerate(ranking)]
    fig = svg.ci_plot([(r.system, r.mean, r.lo, r.hi) for r in ranking], title="System ranking")
    return Section(f"rank-{_slug(run.name)}", "System ranking", [
        Figure("system-ranking", fig, f"Mean segment score per system with 95% percentile bootstrap "
               f"confidence intervals ({n_boot} resamples of segments). Higher is better."),
        Table(["rank", "system", "mean", "95% CI", "segments"], rows)], run.name)


def systems_section(run: RunData, scores: np.ndarray, *, n_boot: int = 1000) -> Section | None:
    """Which systems differ: paired tests of every pair and the significance clusters."""
    segs = run.segments
    cmp = run_comparison([s.system for s in segs], [s.doc_id for s in segs], [s.seg_id for s in segs], scores,
                         draws=n_boot)
    if cmp is None:
        return None
    return Section(f"systems-{_slug(run.name)}", "Which systems differ", comparison_blocks(cmp), run.name)


# --------------------------------------------------------------------------- variability

def variability_section(run: RunData) -> Section | None:
    if run.n_runs < 2:
        return None
    judges = run.judges
    mats = {jd: run.score_matrix(jd) for jd in judges}
    deltas = []
    for jd, m in mats.items():
        d = segment_deltas(m, min_runs=2)  # items with at least two ok runs
        if (~np.isnan(d)).any():
            deltas.append((jd, d[~np.isnan(d)]))
    if not deltas:
        return None
    allv = np.concatenate([d for _, d in deltas])
    cap = float(np.quantile(allv, 0.999)) if allv.size > 1000 else None
    fig = svg.sorted_curves(deltas, ylabel="Δ = max − min", xlabel="segments, sorted by Δ",
                            cap=cap if cap and cap < allv.max() else None,
                            title="Per-segment variability across runs")
    blocks: list[Any] = [Figure("variability", fig,
                                f"Δ = max − min of each segment's score over its successful runs "
                                f"(up to {run.n_runs}), sorted from largest to smallest, one line per "
                                "judge." + (f" y axis capped at {number(cap)}." if cap and cap < allv.max()
                                            else ""))]
    rows = [[jd, d.size, number(d.mean()), number(float(np.median(d))), number(d.max()),
             percent(float((d == 0).mean()))] for jd, d in deltas]
    blocks.append(Table(["judge", "segments (≥2 ok runs)", "mean Δ", "median Δ", "max Δ", "Δ = 0"], rows))

    systems = [s.system for s in run.segments]
    trows = []
    for jd, m in mats.items():
        _, d1, t1 = tie_stats(aggregate_rows(m, "first"))
        _, d2, t2 = tie_stats(aggregate_rows(m, run.aggregator))
        trows.append([jd, d1, percent(t1), d2, percent(t2)])
    blocks.append(Table(["judge", "distinct scores, one run", "tied pairs, one run",
                         f"distinct scores, {run.aggregator} of runs", f"tied pairs, {run.aggregator} of runs"],
                        trows, "Ties before and after aggregating runs (share of segment pairs with "
                               "equal scores)"))
    names = available_run_aggregators()
    arows = []
    for jd, m in mats.items():
        for r in compare_aggregators(m, systems, names):
            if r.error:
                arows.append([jd, r.aggregator, Cell("not applicable", "bad", r.error), "", "", "", ""])
                continue
            arows.append([jd, r.aggregator, r.distinct, percent(r.tie_rate), number(r.mean),
                          number(r.pearson_vs_mean), number(r.kendall_sys_vs_mean)])
    blocks.append(Table(["judge", "aggregator", "distinct scores", "tied pairs", "mean score",
                         "segment r vs mean", "system τ vs mean"], arows, "Aggregators compared"))
    stab = _stability_rows(mats, systems, run.aggregator)
    if stab:
        blocks.append(Table(["judge", "run", f"system τ vs {run.aggregator} of all runs", "same best system"],
                            stab, "Would a single run have ranked the systems the same way?"))
    return Section(f"var-{_slug(run.name)}", "Variability across runs", blocks, run.name)


# --------------------------------------------------------------------------- expected vs sampled scores

def _score_mode(run: RunData) -> str:
    return str(run.manifest.config.protocol_options.get("score_mode", "sample")) if run.recorded else "sample"


def _or_na(x: float | None, fmt: Any = number) -> str:
    return "n/a" if x is None or not math.isfinite(x) else str(fmt(x))


def expected_blocks(obj: Any) -> list[Any]:
    """Tables of :meth:`polyjudge.metaeval.expected.ExpectedComparison.to_json` output(s)."""
    blocks: list[Any] = []
    for cmp in obj if isinstance(obj, list) else [obj]:
        if not isinstance(cmp, dict) or not isinstance(cmp.get("ways"), list):
            continue
        human = bool(cmp.get("human"))
        columns = ["way", "requests per item", "items scored", "distinct scores", "tied pairs",
                   f"system τ vs {cmp.get('reference', 'mean-all')} of sampled runs", "worst τ",
                   "same best system", "τ between runs"] + (["SPA", "acc-t"] if human else [])
        rows = []
        for w in cmp["ways"]:
            if not isinstance(w, dict):
                continue
            v = {k: (float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None)
                 for k, x in w.items()}
            row = [w.get("name", ""), w.get("requests", ""), w.get("n", ""), w.get("distinct", ""),
                   _or_na(v.get("tie_rate"), percent), _or_na(v.get("tau_vs_reference")), _or_na(v.get("tau_min")),
                   _or_na(v.get("same_best"), percent), _or_na(v.get("tau_between_runs"))]
            rows.append(row + ([_or_na(v.get("spa")), _or_na(v.get("acc_t"))] if human else []))
        blocks.append(Table(columns, rows,
                            f"Judge {cmp.get('judge', '')}: one expected-score request per item against "
                            f"{cmp.get('n_sampled_runs', '?')} sampled runs on the same {cmp.get('n_items', '?')} "
                            "items (for 'one sampled run' the numbers are means over the runs)."))
    return blocks


def expected_section(runs: Sequence[RunData]) -> Section | None:
    """An expected-score run (``score_mode=expected``) next to a sampled run of several runs with
    the same protocol and judge: ties, ranking stability (human agreement comes from
    ``polyjudge variability --expected``, shown as a study)."""
    from polyjudge.metaeval.expected import compare_expected

    blocks: list[Any] = []
    for e in (r for r in runs if _score_mode(r) == "expected"):
        for s in (r for r in runs if _score_mode(r) == "sample" and r.n_runs >= 2 and r.protocol == e.protocol):
            for judge in (j for j in e.judges if j in s.judges):
                try:
                    cmp = compare_expected(e.rundir.run_scores(judge), s.rundir.run_scores(judge),
                                           available_run_aggregators())
                except ValueError:
                    continue  # no items in common
                blocks += expected_blocks(cmp.to_json())
    return Section("expected-scores", "Expected scores against sampled runs", blocks) if blocks else None


def _stability_rows(mats: dict[str, np.ndarray], systems: list[str], aggregator: str) -> list[list[Any]]:
    """Per-run system-ranking stability (would one run alone have ranked the systems the same?)."""
    if len(set(systems)) < 2:
        return []
    rows: list[list[Any]] = []
    for jd, m in mats.items():
        for st in single_run_stability(m, systems, aggregator):
            rows.append([jd, st.run, number(st.kendall_tau),
                         Cell("yes" if st.same_best else "no", "" if st.same_best else "loss")])
    return rows


# --------------------------------------------------------------------------- spans

# Same colours as the highlighting in the span table (report.css).
SEVERITY_COLOURS = {"critical": "#7f0000", "major": "#e8605a", "minor": "#f2c12e", "neutral": "#a0a0a0"}

def spans_data(run: RunData, scores: np.ndarray) -> dict[str, Any] | None:
    """Compact rows for the JavaScript span browser, or None when no judgment has spans."""
    j = run.judgments
    if not any(s is not None for s in j.spans):
        return None
    systems = list(dict.fromkeys(s.system for s in run.segments))
    sys_idx = {s: i for i, s in enumerate(systems)}
    judges = run.judges
    judge_idx = {s: i for i, s in enumerate(judges)}
    sev_counts = Counter(sp.severity for spans in j.spans if spans for sp in spans)
    order = ["critical", "major", "minor", "neutral"]
    sevs = [s for s in order if s in sev_counts] + sorted(s for s in sev_counts if s not in order)
    sev_idx = {s: i for i, s in enumerate(sevs)}
    cats = sorted({sp.category for spans in j.spans if spans for sp in spans})
    cat_idx = {s: i for i, s in enumerate(cats)}
    st_idx = {s: i for i, s in enumerate(STATUSES)}
    segs = [[sys_idx[s.system], s.doc_id, s.seg_id, s.src or "", s.tgt or "",
             None if not math.isfinite(float(scores[i])) else round(float(scores[i]), 4)]
            for i, s in enumerate(run.segments)]
    rows = []
    for k in range(len(j)):
        spans = j.spans[k] or []
        sc = float(j.score[k])
        rows.append([int(j.item_index[k]), judge_idx.get(j.judge[k], 0), int(j.run_index[k]),
                     st_idx.get(j.status[k], len(STATUSES)), round(sc, 4) if math.isfinite(sc) else None,
                     [[sp.start, sp.end, sev_idx[sp.severity], cat_idx[sp.category], sp.description]
                      for sp in spans]])
    return {"systems": systems, "judges": judges, "statuses": list(STATUSES) + ["other"],
            "severities": sevs, "categories": cats, "segs": segs, "rows": rows,
            "has_text": any(s.tgt for s in run.segments)}


def spans_section(run: RunData, data_id: str, data: dict[str, Any]) -> Section:
    blocks: list[Any] = []
    sev_n: Counter[str] = Counter()
    cat_sev: Counter[tuple[str, str]] = Counter()
    omissions = 0
    for spans in run.judgments.spans:
        for sp in spans or []:
            sev_n[sp.severity] += 1
            cat_sev[(sp.category, sp.severity)] += 1
            omissions += sp.start == sp.end
    sevs = data["severities"]
    cats = sorted({c for c, _ in cat_sev}, key=lambda c: (-sum(cat_sev[(c, s)] for s in sevs), c))  # ties by name
    blocks.append(Para(f"{sum(sev_n.values())} spans in {len(run.judgments)} judgments "
                       f"({omissions} omissions, shown as ⌀ markers). Hover a highlighted span for its "
                       "category and description."))
    if cats:
        top = cats[:20]
        blocks.append(Figure("span-categories", svg.grouped_bars(
            top, [(s, [cat_sev[(c, s)] for c in top]) for s in sevs], ylabel="spans",
            title="Error spans by category and severity",
            colours=[SEVERITY_COLOURS.get(s, "#6baed6") for s in sevs]),
            "Spans per category (top 20) and severity."))
        blocks.append(Table(["category", *sevs, "total"],
                            [[c, *[cat_sev[(c, s)] for s in sevs], sum(cat_sev[(c, s)] for s in sevs)]
                             for c in cats]))
    if not data["has_text"]:
        blocks.append(Para("The run directory does not record the translations, so spans are listed "
                           "by position only."))
    blocks.append(SpanBrowser(data_id))
    return Section(f"spans-{_slug(run.name)}", "Error spans", blocks, run.name)


# --------------------------------------------------------------------------- study outputs

def _records(obj: Any, key: str) -> list[dict[str, Any]]:
    if isinstance(obj, list):
        return [r for r in obj if isinstance(r, dict)]
    if isinstance(obj, dict) and isinstance(obj.get(key), list):
        return [r for r in obj[key] if isinstance(r, dict)]
    return []


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def metaeval_blocks(res: MetaEvalResults | None) -> list[Any]:
    """Tables and per-LP bar charts of meta-eval results, rendered as they are typed
    (:meth:`~polyjudge.metaeval.results.MetaEvalResults.cells`: what the tables show)."""
    cells = res.cells() if res is not None else []
    if res is None or not cells:
        return []
    blocks: list[Any] = []
    ranking = res.averaged()
    if ranking:
        preset = res.preset or ""
        rows = [[r.metric, "" if r.rank is None else str(r.rank), number(r.average),
                 Cell("" if r.cluster is None else str(r.cluster), "best" if r.cluster == 1 else "")]
                for r in ranking]
        blocks.append(Table(["metric", "rank", "average", "significance cluster"], rows,
                            f"Ranking{f' ({preset} preset)' if preset else ''}: weighted average of the "
                            "task statistics rescaled to [0, 1]; cluster 1 = not significantly below the top."))
    groups: dict[tuple[str, str], list[MetaEvalCell]] = {}
    for c in cells:
        groups.setdefault((c.level, c.title), []).append(c)
    for (level, stat), cs in groups.items():
        lps = list(dict.fromkeys(c.lp for c in cs))
        metrics = list(dict.fromkeys(c.metric for c in cs))
        val = {(c.metric, c.lp): c for c in cs}
        best = {}
        for lp in lps:
            vs = [_num(val[(m, lp)].value) for m in metrics if (m, lp) in val]
            vs = [v for v in vs if math.isfinite(v)]
            best[lp] = max(vs) if vs else math.nan
        rows = []
        for m in metrics:
            row: list[Any] = [m]
            for lp in lps:
                hit = val.get((m, lp))
                if hit is None:
                    row.append("")
                    continue
                v = _num(hit.value)
                txt = number(v) + (f" {interval(*hit.ci)}" if hit.ci is not None else "")
                tip = ", ".join(f"{k} {x}" for k, x in (("rank", hit.rank), ("cluster", hit.cluster)) if x is not None)
                row.append(Cell(txt, "best" if v == best[lp] else "", tip))
            rows.append(row)
        label = " ".join(x for x in (level, stat) if x)
        blocks.append(Table(["metric", *lps], rows, f"{label} (best per column in bold)"))
        blocks.append(Figure(f"metaeval-{_slug(label)}", svg.grouped_bars(
            lps, [(m, [_num(val[(m, lp)].value) if (m, lp) in val else math.nan for lp in lps])
                  for m in metrics], ylabel=stat, title=f"Meta-evaluation: {label}"),
            f"{label} per language pair."))
    return blocks


def consistency_blocks(res: ConsistencyKappas | None) -> list[Any]:
    """Radar charts and κ tables of a consistency study's typed agreement rows."""
    if res is None or not res.cohen:
        return []
    ref = res.reference
    blocks: list[Any] = []
    groups: dict[tuple[str, str], list[ReferenceKappa]] = {}
    for r in res.cohen:
        groups.setdefault((r.task, r.criterion), []).append(r)
    for (task, crit), rs in groups.items():
        langs = list(dict.fromkeys(r.language for r in rs))
        judges = list(dict.fromkeys(r.judge for r in rs))
        val = {(r.judge, r.language): _num(r.kappa) for r in rs}
        series = [(jd, [val.get((jd, lg), math.nan) for lg in langs]) for jd in judges]
        label = " · ".join(x for x in (task, crit) if x) or "all"
        vals = [v for _, vs in series for v in vs if math.isfinite(v)]
        rmin = min(0.0, min(vals)) if vals else 0.0
        if len(langs) >= 3:
            blocks.append(Figure(f"consistency-{_slug(label)}", svg.radar(
                langs, series, rmin=rmin, rmax=1.0, title=f"κ with {ref}: {label}"),
                f"Cohen's κ between each judge's verdicts in {ref} and in each other language ({label})."))
        blocks.append(Table(["judge", *langs], [[jd, *[number(v) for v in vs]] for jd, vs in series],
                            f"κ with {ref}: {label}"))
    if res.fleiss:
        subsets = any(r.subset != "all" for r in res.fleiss)
        blocks.append(Table(["judge", "task", "criterion", *(["subset"] if subsets else []),
                             "Fleiss κ across languages"],
                            [[r.judge, r.task, r.criterion, *([r.subset] if subsets else []), number(_num(r.kappa))]
                             for r in res.fleiss]))
    tables = {t.key: t for t in res.factors}
    for key, title in FACTOR_TABLES:
        if key in tables:
            blocks.append(Table(list(tables[key].columns), [[_cell(x) for x in row] for row in tables[key].rows],
                                title))
    return blocks


# Fu & Liu's factor analyses in a consistency study (studies.consistency.FactorTables.to_dict).
FACTOR_TABLES = (("languages", "κ with the reference per language, with its resource class, script and family"),
                 ("correlations", "Spearman correlation of resource class with κ"),
                 ("groups", "Mean κ per resource class, script and family"),
                 ("grade_gap", "Yes/No minus 1–5 grade κ (Δ)"))


def _cell(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    return number(float(value)) if isinstance(value, int | float) else str(value)


def validation_blocks(res: ValidationResults | None) -> list[Any]:
    """Summary, class distributions and judge-selection tables, rendered as they are typed."""
    if not isinstance(res, ValidationResults):
        return []
    blocks: list[Any] = []
    if res.notes:
        blocks.append(KeyValues(list(res.notes)))
    by_group: dict[str, list[ClassCount]] = {}
    for r in res.class_distribution:
        by_group.setdefault(r.group, []).append(r)
    for group, rs in by_group.items():
        blocks.append(_class_figure(group, rs))
    blocks += [_selection_table(sel) for sel in res.selection]
    return blocks


def _class_figure(group: str, rs: list[ClassCount]) -> Figure:
    cases = list(dict.fromkeys(r.case for r in rs))
    raters = list(dict.fromkeys(r.rater for r in rs))
    classes = sorted({r.cls for r in rs})
    cnt: Counter[tuple[str, str, str]] = Counter()
    for r in rs:
        cnt[(r.case, r.rater, r.cls)] += r.count
    # As in Hada et al.: for each class, the humans' bar then each judge's, same colour.
    series, colours, opac = [], [], []
    for ci, c in enumerate(classes):
        for ri, rater in enumerate(raters):
            vals = []
            for case in cases:
                tot = sum(cnt[(case, rater, k)] for k in classes)
                vals.append(100 * cnt[(case, rater, c)] / tot if tot else math.nan)
            series.append((f"{c} {rater}", vals))
            colours.append(svg.colour(ci))
            opac.append(1.0 if ri == 0 else max(0.25, 0.55 - 0.15 * (ri - 1)))
    sizes = [sum(cnt[(case, raters[0], k)] for k in classes) for case in cases]
    total = sum(sizes) or 1
    cat_labels = [f"{case} ({percent(n, total, digits=0)} of items)" for case, n in zip(cases, sizes)]
    title = "Class distribution by agreement case" + (f": {group}" if group else "")
    return Figure(f"class-distribution-{_slug(group or 'all')}", svg.grouped_bars(
        cat_labels, series, ylabel="% of items in the case", ymin=0, ymax=100, title=title,
        colours=colours, opacities=opac),
        title + ": share of each score class per rater within each case of human agreement.")


def _selection_table(sel: SelectionTable) -> Table:
    target = sel.target
    tv = dict(sel.target_values)
    finite = {k: v for k, v in tv.items() if math.isfinite(v)}
    best_j = (max if sel.higher_is_better else min)(finite, key=lambda jd: finite[jd]) if finite else None
    judges = list(tv)
    rows = []
    for r in sel.picks:
        got = tv.get(r.selected, math.nan)
        loss = r.loss if r.loss is not None else (
            abs(finite[best_j] - got) if best_j is not None and math.isfinite(got) else math.nan)
        mv = dict(r.metric_values)
        rows.append([r.metric, r.selected, number(got),
                     Cell(number(loss), "loss" if math.isfinite(loss) and loss > 1e-12 else "",
                          f"best judge for {target}: {best_j}" if best_j else "")]
                    + [number(mv[jd]) if jd in mv else "" for jd in judges])
    label = sel.label
    return Table(["selection metric", "selected judge", target, f"loss in {target}",
                  *[f"metric value: {jd}" for jd in judges]], rows,
                 f"Judge selection{f' ({label})' if label else ''}: which judge each agreement metric "
                 f"picks and what it costs in {target} (best: {best_j}, "
                 f"{number(finite.get(best_j, math.nan)) if best_j else 'n/a'}). Losses are highlighted.")


STUDY_SECTIONS = (("metaeval.json", "metaeval", "Meta-evaluation against human judgments", metaeval_blocks),
                  ("consistency.json", "consistency", "Multilingual consistency", consistency_blocks),
                  ("validation.json", "validation", "Judge validation", validation_blocks),
                  ("simulation.json", "simulation", "Judge validation: synthetic experiments", simulation_blocks),
                  ("pairwise.json", "pairwise", "Pairwise comparison", pairwise_blocks),
                  ("expected.json", "expected", "Expected scores against sampled runs", expected_blocks),
                  ("annotation.json", "annotation", "Human annotation campaign", annotation_blocks),
                  ("rerank.json", "rerank", "Reranking: the chosen translations against the baseline",
                   rerank_blocks),
                  ("span-ranking.json", "span-ranking", "Span metrics ranked under each span-F1 variant",
                   span_ranking_blocks))


def _run_study(run: RunData, fname: str) -> Section | None:
    for name, sid, title, fn in STUDY_SECTIONS:
        if name == fname:
            blocks = fn(run.extras.get(name))
            return Section(f"{sid}-{_slug(run.name)}", title, blocks, run.name) if blocks else None
    raise KeyError(fname)


def metaeval_section(run: RunData) -> Section | None:
    return _run_study(run, "metaeval.json")


def consistency_section(run: RunData) -> Section | None:
    return _run_study(run, "consistency.json")


def validation_section(run: RunData) -> Section | None:
    return _run_study(run, "validation.json")


def pairwise_section(run: RunData) -> Section | None:
    return _run_study(run, "pairwise.json")


def rerank_section(run: RunData) -> Section | None:
    return _run_study(run, "rerank.json")


def study_sections(studies: Mapping[str, Any]) -> list[Section]:
    """Sections of study outputs given on their own (file name -> parsed JSON), not in a run."""
    out: list[Section] = []
    for fname, sid, title, fn in STUDY_SECTIONS:
        if fname in studies:
            blocks = fn(studies[fname])
            if blocks:
                out.append(Section(f"{sid}-study", title, blocks))
    return out


# --------------------------------------------------------------------------- assembly

def build_sections(runs: Sequence[RunData], *, n_boot: int = 1000,
                   studies: Mapping[str, Any] | None = None) -> tuple[list[Section], dict[str, Any]]:
    """All sections for these runs, plus the JSON blobs the page's script reads (id -> data).

    ``studies`` are study outputs given on their own (file name as in a run
    directory -> parsed JSON); their sections follow the runs'.
    """
    sections: list[Section] = []
    data: dict[str, Any] = {}
    if len(runs) > 1:
        rows = []
        for r in runs:
            sc = r.final_scores()
            ok = sum(1 for s in r.judgments.status if s == "ok")
            rows.append([r.name, r.protocol or "", ", ".join(r.judges), len(r.segments), len(r.judgments),
                         percent(ok / len(r.judgments)) if len(r.judgments) else "n/a",
                         number(float(np.nanmean(sc))) if np.isfinite(sc).any() else "n/a", r.signature or ""])
        sections.append(Section("overview", "Runs in this report", [Table(
            ["run", "protocol", "judges", "items", "judgments", "ok", "mean score", "signature"], rows)]))
    for k, run in enumerate(runs):
        scores = run.final_scores()
        sections.append(summary_section(run))
        for sec in (distribution_section(run, scores), ranking_section(run, scores, n_boot=n_boot),
                    systems_section(run, scores, n_boot=n_boot),
                    settled_section(run.manifest.settled if run.recorded else {}, run.name, _slug(run.name)),
                    variability_section(run)):
            if sec is not None:
                sections.append(sec)
        sd = spans_data(run, scores)
        if sd is not None:
            data_id = f"spans-data-{k}"
            data[data_id] = sd
            sections.append(spans_section(run, data_id, sd))
        for fn in (rerank_section, metaeval_section, consistency_section, validation_section, pairwise_section):
            sec = fn(run)
            if sec is not None:
                sections.append(sec)
    expected = expected_section(runs)
    if expected is not None:
        sections.append(expected)
    sections.extend(study_sections(studies or {}))
    return sections, data
