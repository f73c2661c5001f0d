"""Judge selection under competing definitions of performance (the paper's Table 3).

For each sensitivity β of the human reverse forced-choice matrix and each
cutoff τ: every definition of performance picks a judge; we report the
picked judge's decision consistency C and |estimation bias| B against the
human decisions, and the loss against the judge that is best for that
downstream goal. Downstream decisions threshold the multi-label vectors
(``srs``) by default: option k is positive when ``Ω_k >= τ``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from polyjudge.data.errors import InputError
from polyjudge.data.numbers import defined, stat_text
from polyjudge.data.rating_task import RatingTask
from polyjudge.validation import metrics as M
from polyjudge.validation.ppi import ppi_mean
from polyjudge.validation.ratings import Distributions, RatingCounts, human_distributions, judge_distributions
from polyjudge.validation.results import (
    JsonDoc,
    SelectionPick,
    SelectionTable,
    ValidationResults,
    as_float,
    read_tables,
    whole,
)

__all__ = ["SelectionReport", "SelectionRow", "SelectionSpec", "read_selection", "read_validation", "select_judges",
           "selection_json", "selection_results", "selections_text"]


@dataclass(frozen=True)
class SelectionRow:
    beta: float | None
    tau: float
    definition: str
    selected: str
    value: float
    consistency: float
    abs_bias: float
    consistency_loss: float  # C(selected) - best C  (<= 0)
    bias_excess: float  # |B|(selected) - best |B| (>= 0)


@dataclass(frozen=True)
class SelectionReport:
    task: str
    k: int
    option: str
    n_items: int
    judges: list[str]
    rows: list[SelectionRow]
    # (beta, tau) -> judge -> {"consistency", "bias", "prevalence", metric label -> value}
    per_judge: dict[str, dict[str, dict[str, float]]]
    human_prevalence: dict[str, float]
    ppi: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    lp: str | None = None  # the language pair of the items compared; None when the ratings name none

    def to_json(self) -> dict[str, Any]:
        """The JSON document (``lp`` only when the items have a pair, so a file without pairs reads as before)."""
        cleaned: dict[str, Any] = _clean(asdict(self))
        if self.lp is None:
            del cleaned["lp"]
        return cleaned

    def results(self) -> ValidationResults:
        """The typed rows the report shows (:func:`polyjudge.validation.results.selection_results`)."""
        return selection_results(self)

    def to_tsv(self) -> str:
        """One row per (beta, tau, definition); a first ``lp`` column when the items have a language pair."""
        cols = ["beta", "tau", "definition", "selected", "value", "consistency", "abs_bias",
                "consistency_loss", "bias_excess"]
        lead = [] if self.lp is None else ["lp"]
        lines = ["\t".join(lead + cols)]
        for r in self.rows:
            lines.append("\t".join([self.lp or ""] * len(lead) + [
                _fmt(getattr(r, c)) if c in ("beta", "tau") else _value(getattr(r, c)) for c in cols]))
        return "\n".join(lines) + "\n"

    def to_text(self) -> str:
        pair = "" if self.lp is None else f"language pair {self.lp}: "
        out = [f"{pair}task {self.task}: option '{self.option}' (k={self.k}), {self.n_items} items, "
               f"judges: {', '.join(self.judges)}",
               "decisions: positive when y_k >= tau; consistency loss and bias excess are "
               "against the best judge for that goal"]
        for (b, t) in sorted({(r.beta, r.tau) for r in self.rows}, key=lambda x: (x[0] or 0, x[1])):
            key = _key(b, t)
            out.append("")
            out.append(f"beta={_fmt(b)} tau={_fmt(t)}  human prevalence={stat_text(self.human_prevalence[key], '.3f')}")
            out.append(f"  {'definition':32s} {'selected':16s} {'value':>9s} {'C':>6s} {'dC':>7s} "
                       f"{'|B|':>6s} {'d|B|':>6s}")
            for r in self.rows:
                if r.beta == b and r.tau == t:
                    out.append(f"  {r.definition:32s} {r.selected:16s} {_value(r.value):>9s} "
                               f"{stat_text(r.consistency, '.3f'):>6s} {stat_text(r.consistency_loss, '+.3f'):>7s} "
                               f"{stat_text(r.abs_bias, '.3f'):>6s} {stat_text(r.bias_excess, '+.3f'):>6s}")
            prev = ", ".join(f"{j}={stat_text(self.per_judge[key][j]['prevalence'], '.3f')}" for j in self.judges)
            out.append(f"  prevalence by judge: {prev}")
            if key in self.ppi:
                for j, p in self.ppi[key].items():
                    out.append(f"  PPI++ with {j}: {_ppi_text(p, '')} lambda={stat_text(p['lam'], '.2f')} "
                               f"(n={p['n_labelled']}, N={p['n_unlabelled']}; "
                               f"humans only {_ppi_text(p, 'classical')})")
        if any(self.failures.values()):
            out.append("")
            out.append("failed judgments left out: " + ", ".join(f"{j}={n}" for j, n in self.failures.items() if n))
        return "\n".join(out) + "\n"


def _ppi_text(p: dict[str, Any], prefix: str) -> str:
    """``estimate [lower, upper]``, each part n/a when undefined (too few labels, no spread)."""
    est, lo, hi = (p[prefix or "estimate"], p[f"{prefix}_lower" if prefix else "lower"],
                   p[f"{prefix}_upper" if prefix else "upper"])
    band = "[n/a]" if defined(lo) is None or defined(hi) is None else f"[{lo:.3f}, {hi:.3f}]"
    return f"{stat_text(est, '.3f')} {band}"


def _value(x: Any) -> str:
    """A statistic in a row: ``%.4g``, n/a when undefined (text that is not a number as it is)."""
    return stat_text(x, ".4g") if isinstance(x, float | int) and not isinstance(x, bool) or x is None else str(x)


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return "nan" if math.isnan(x) else f"{x:.4g}"
    return str(x)


def _clean(x: Any) -> Any:
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return None
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def _key(beta: float | None, tau: float) -> str:
    return f"beta={_fmt(beta)},tau={_fmt(tau)}"


@dataclass(frozen=True)
class SelectionSpec:
    """How judges are compared: the β/τ grid, the option, the definitions and the PPI settings.

    ``reverse_fc(beta)`` returns the human F' for β; ``E_rev`` is the human
    error matrix used when building the human distributions (None: none).
    """

    reverse_fc: Callable[[float | None], np.ndarray]
    betas: list[float | None]
    taus: list[float]
    k: int = 0
    definitions: tuple[M.Definition, ...] = M.DEFAULT_DEFINITIONS
    downstream_agg: str = "srs"
    E_rev: np.ndarray | None = None
    ppi_alpha: float = 0.1
    ppi_labelled_fraction: float = 0.2
    seed: int = 0


def _common_items(task: RatingTask, human: RatingCounts, judges: list[RatingCounts], k: int) -> list[str]:
    """Items rated by the humans and by every judge (input errors for an unusable comparison)."""
    if not judges:
        raise InputError("no judges to compare")
    if not 0 <= k < task.n_options:
        raise InputError(f"option index {k} out of range")
    names = [j.name for j in judges]
    if len(set(names)) != len(names):
        raise InputError(f"judge names must be distinct: {names}")
    human_items = [i for i, c in zip(human.items, human.fc.sum(1) + human.rs.sum(1)) if c > 0]
    common = [i for i in human_items if all(i in set(j.items) for j in judges)]
    if len(common) < 2:
        raise InputError(f"only {len(common)} items are rated by the humans and every judge")
    return common


def _judge_table(jd: dict[str, Distributions], hd: Distributions, spec: SelectionSpec,
                 tau: float) -> dict[str, dict[str, float]]:
    """Per judge: consistency, bias, prevalence and every definition's value at one τ."""
    k = spec.k
    y_h = hd.omega if spec.downstream_agg == "srs" else hd.O
    table: dict[str, dict[str, float]] = {}
    for name, d in jd.items():
        y_j = d.omega if spec.downstream_agg == "srs" else d.O
        row = {"consistency": M.decision_consistency(y_j, y_h, k, tau),
               "bias": M.estimation_bias(y_j, y_h, k, tau),
               "prevalence": M.prevalence(y_j, k, tau)}
        for defn in spec.definitions:
            row[defn.label] = M.evaluate(defn, d.O, d.omega, hd.O, hd.omega, tau)
        table[name] = row
    return table


def _picks(beta: float | None, tau: float, table: dict[str, dict[str, float]], names: list[str],
           definitions: tuple[M.Definition, ...]) -> list[SelectionRow]:
    """The judge each definition picks, then the one each downstream goal would pick."""
    rows: list[SelectionRow] = []
    best_c = max(t["consistency"] for t in table.values())
    best_b = min(abs(t["bias"]) for t in table.values())
    for defn in definitions:
        vals = np.array([table[n][defn.label] for n in names], dtype=float)
        if np.isnan(vals).all():
            continue
        pick = int(np.nanargmax(vals) if defn.higher_is_better else np.nanargmin(vals))
        t = table[names[pick]]
        rows.append(SelectionRow(beta, tau, defn.label, names[pick], float(vals[pick]),
                                 t["consistency"], abs(t["bias"]), t["consistency"] - best_c,
                                 abs(t["bias"]) - best_b))
    # the judge each downstream goal would pick (first in judge order on ties)
    losses = {"best consistency": {n: -table[n]["consistency"] for n in names},
              "best |bias|": {n: abs(table[n]["bias"]) for n in names}}
    for goal, loss in losses.items():
        n_best = min(names, key=loss.__getitem__)
        t = table[n_best]
        rows.append(SelectionRow(beta, tau, f"[{goal}]", n_best, float("nan"), t["consistency"],
                                 abs(t["bias"]), t["consistency"] - best_c, abs(t["bias"]) - best_b))
    return rows


def select_judges(task: RatingTask, human: RatingCounts, judges: list[RatingCounts],
                  spec: SelectionSpec) -> SelectionReport:
    """Build the selection report over ``spec``'s β/τ grid."""
    k = spec.k
    common = _common_items(task, human, judges, k)
    names = [j.name for j in judges]
    hum = human.subset(common)
    jd: dict[str, Distributions] = {}
    jd_all: dict[str, tuple[list[str], Distributions]] = {}
    for j in judges:
        full = judge_distributions(j, task, spec.reverse_fc(spec.betas[0]))
        pos = {it: i for i, it in enumerate(j.items)}
        idx = [pos[i] for i in common]
        jd[j.name] = Distributions(full.O[idx], full.theta[idx], full.omega[idx])
        jd_all[j.name] = (j.items, full)
    rows: list[SelectionRow] = []
    per_judge: dict[str, dict[str, dict[str, float]]] = {}
    human_prev: dict[str, float] = {}
    ppi: dict[str, dict[str, Any]] = {}
    rng = np.random.default_rng(spec.seed)
    for beta in spec.betas:
        hd = human_distributions(hum, task, spec.reverse_fc(beta), spec.E_rev)
        for tau in spec.taus:
            key = _key(beta, tau)
            human_prev[key] = M.prevalence(hd.omega if spec.downstream_agg == "srs" else hd.O, k, tau)
            per_judge[key] = _judge_table(jd, hd, spec, tau)
            rows += _picks(beta, tau, per_judge[key], names, spec.definitions)
            ppi[key] = _ppi_block(task, common, hd, jd_all, k, tau, spec.downstream_agg, spec.ppi_alpha,
                                  spec.ppi_labelled_fraction, rng)
    return SelectionReport(task.name, k, task.options[k], len(common), names, rows, per_judge,
                           human_prev, ppi, {j.name: j.failures for j in judges})


def _ppi_block(task: RatingTask, common: list[str], hd: Distributions,
               jd_all: dict[str, tuple[list[str], Distributions]], k: int, tau: float, agg: str,
               alpha: float, frac: float, rng: np.random.Generator) -> dict[str, Any]:
    """PPI++ prevalence per judge. Judge-only items (rated by the judge, not by
    humans) are the unlabelled set; when there are fewer than two, a seeded
    random ``frac`` of the human-rated items is kept labelled and the rest is
    treated as unlabelled (a demonstration of the estimator on this corpus)."""
    y_h = (hd.omega if agg == "srs" else hd.O)
    Y_all = M.decisions(y_h, k, tau).astype(float)
    ok = ~np.isnan(y_h).any(1)
    out: dict[str, Any] = {}
    split = rng.permutation(len(common))
    for name, (items, d) in jd_all.items():
        y_j = d.omega if agg == "srs" else d.O
        pred = M.decisions(y_j, k, tau).astype(float)
        pos = {it: i for i, it in enumerate(items)}
        in_common = set(common)
        unl = [i for i, it in enumerate(items) if it not in in_common and not np.isnan(y_j[i]).any()]
        lab_idx = np.array([pos[c] for c in common])
        try:
            if len(unl) >= 2:
                r = ppi_mean(Y_all[ok], pred[lab_idx][ok], pred[unl], alpha=alpha)
            else:
                n_lab = max(2, int(round(frac * len(common))))
                lab, rest = split[:n_lab], split[n_lab:]
                lab, rest = lab[ok[lab]], rest[ok[rest]]
                r = ppi_mean(Y_all[lab], pred[lab_idx][lab], pred[lab_idx][rest], alpha=alpha)
        except InputError:
            continue
        out[name] = asdict(r)
    return out


# --------------------------------------------------------------------------- the report's rows and the JSON

def _general(x: Any) -> str:
    """``%.4g`` (``-`` for None), the form validate uses for β and τ in its keys and labels."""
    if x is None:
        return "-"
    if isinstance(x, float | int) and not isinstance(x, bool):
        return "nan" if math.isnan(float(x)) else f"{float(x):.4g}"
    return str(x)


def _tables(rep: SelectionReport, beta: float | None, tau: float,
            rows: list[SelectionRow]) -> list[SelectionTable]:
    """The two selection tables of one (β, τ): decision consistency (loss = best C − selected C)
    and |estimation bias| (loss = selected |B| − best |B|); the oracle rows (``[best ...]``) are left
    out, the best judge is named in the caption."""
    table = rep.per_judge.get(f"beta={_general(beta)},tau={_general(tau)}") or {}
    label = ", ".join(x for x in ((f"β = {_general(beta)}" if beta is not None else ""),
                                  (f"τ = {_general(tau)}" if tau is not None else "")) if x)
    defs = [r for r in rows if not r.definition.startswith("[")]
    out = []
    for target, key, hib in (("decision consistency", "consistency", True), ("|estimation bias|", "bias", False)):
        tv: dict[str, float] = {}
        for j in rep.judges:
            v = as_float((table.get(j) or {}).get(key))
            tv[j] = abs(v) if key == "bias" else v
        for r in defs:  # selected judges' values are in the rows even without per_judge
            if not math.isfinite(tv.get(r.selected, math.nan)):
                tv[r.selected] = as_float(r.consistency if key == "consistency" else r.abs_bias)
        picks = tuple(SelectionPick(
            r.definition, r.selected,
            -as_float(r.consistency_loss) if key == "consistency" else as_float(r.bias_excess),
            tuple((j, as_float(table[j][r.definition])) for j in rep.judges if r.definition in (table.get(j) or {})))
            for r in defs)
        out.append(SelectionTable(label, target, hib, tuple(tv.items()), picks))
    return out


def selection_results(rep: SelectionReport) -> ValidationResults:
    """What the report shows of a validation: per (β, τ) a table for decision consistency and one for
    |estimation bias|, and a summary (task, option, items, judges, human prevalence, failures)."""
    groups: dict[tuple[float | None, float], list[SelectionRow]] = {}
    for r in rep.rows:
        groups.setdefault((r.beta, r.tau), []).append(r)
    tables = tuple(t for (beta, tau), rows in groups.items() for t in _tables(rep, beta, tau, rows))
    if rep.lp is not None:  # each table named by its language pair
        tables = tuple(replace(t, label=f"{rep.lp}: {t.label}") for t in tables)
    notes = [] if rep.lp is None else [("language pair", rep.lp)]
    notes += [("task", rep.task), ("option", f"{rep.option} (k={rep.k})"),
             ("items rated by humans and every judge", str(rep.n_items)), ("judges", ", ".join(rep.judges))]
    if rep.human_prevalence:
        notes.append(("human prevalence", "; ".join(
            f"{k}: {_general(v if math.isfinite(as_float(v)) else None)}" for k, v in rep.human_prevalence.items())))
    fails = {k: v for k, v in rep.failures.items() if v}
    notes.append(("failed judgments left out", ", ".join(f"{k}: {v}" for k, v in fails.items()) or "none"))
    return ValidationResults(tuple(notes), (), tables)


def selection_json(rep: SelectionReport) -> str:
    """The document ``polyjudge validate --format json`` writes."""
    return json.dumps(rep.to_json(), indent=2) + "\n"


def selections_text(reports: Sequence[SelectionReport], fmt: str) -> str:
    """What ``polyjudge validate`` prints for one comparison per language pair: ``text`` (the tables one
    after another, each named by its pair), ``tsv`` (one table, the pair in its first column) or ``json``
    (one report as :func:`selection_json`; several as ``{"language_pairs": [report, ...]}``)."""
    if fmt == "json":
        if len(reports) == 1:
            return selection_json(reports[0])
        return json.dumps({"language_pairs": [r.to_json() for r in reports]}, indent=2) + "\n"
    if fmt == "tsv":
        tables = [r.to_tsv().splitlines(keepends=True) for r in reports]
        return "".join(tables[0] + [line for t in tables[1:] for line in t[1:]])
    return "\n".join(r.to_text() for r in reports)


def _is_report(obj: Any) -> bool:
    """True for ``polyjudge validate --format json`` output (``rows`` with ``definition``)."""
    return (isinstance(obj, dict) and "selection" not in obj and isinstance(obj.get("rows"), list)
            and any(isinstance(r, dict) and "definition" in r for r in obj["rows"]))


def read_selection(obj: Any, path: str) -> SelectionReport:
    """The :class:`SelectionReport` of a ``polyjudge validate --format json`` document (nulls as
    written; its :func:`selection_json` is the same text); an InputError naming ``path`` and the
    place in the JSON otherwise."""
    doc = JsonDoc(path)
    d = doc.obj(obj, "the file")
    rows = []
    for i, r in enumerate(doc.objects(d.get("rows"), "rows")):
        n = {k: doc.number(r.get(k), f"rows[{i}].{k}") for k in (
            "beta", "tau", "value", "consistency", "abs_bias", "consistency_loss", "bias_excess")}
        rows.append(SelectionRow(definition=str(r.get("definition")), selected=str(r.get("selected")),
                                 **n))  # type: ignore[arg-type]
    judges = d.get("judges")
    if judges is not None and (not isinstance(judges, list) or not all(isinstance(x, str) for x in judges)):
        raise doc.fail("judges", "must be a list of strings")
    per_judge = {key: {j: doc.numbers_of(doc.obj(v, f"per_judge.{key}.{j}"), f"per_judge.{key}.{j}")
                       for j, v in doc.obj(table, f"per_judge.{key}").items()}
                 for key, table in doc.obj(d.get("per_judge") or {}, "per_judge").items()}
    ppi = d.get("ppi")
    return SelectionReport(
        task=str(d.get("task", "")), k=whole(doc, d.get("k"), "k"), option=str(d.get("option", "")),
        n_items=whole(doc, d.get("n_items"), "n_items"), judges=list(judges or []), rows=rows, per_judge=per_judge,
        human_prevalence=doc.numbers_of(d.get("human_prevalence"), "human_prevalence"),
        ppi=doc.obj(ppi, "ppi") if ppi is not None else {},
        failures=doc.numbers_of(d.get("failures"), "failures"),
        lp=None if d.get("lp") is None else str(d["lp"]))


def read_validation_pairs(obj: dict[str, Any], path: str) -> ValidationResults:
    """A ``validate --format json`` document of several language pairs (``{"language_pairs": [report, ...]}``)
    as one :class:`ValidationResults`: each pair's notes (named by it) and tables one after another."""
    doc = JsonDoc(path)
    parts = [selection_results(read_selection(r, path)) for r in doc.objects(obj.get("language_pairs"),
                                                                             "language_pairs")]
    if not parts:
        raise doc.fail("language_pairs", "holds no report")
    notes = tuple(n for part in parts for n in part.notes)
    return ValidationResults(notes, (), tuple(t for part in parts for t in part.selection))


def read_validation(obj: Any, path: str) -> ValidationResults:
    """What the report shows of a validation file: the JSON of ``polyjudge validate --format json``
    (read by :func:`read_selection`) or the hand-written ``{"selection", "class_distribution",
    "notes"}``; an InputError naming ``path`` and the place in the JSON when it is neither, or has
    nothing to show."""
    if _is_report(obj):
        return read_selection(obj, path).results()
    if isinstance(obj, dict) and "language_pairs" in obj:
        return read_validation_pairs(obj, path)
    return read_tables(obj, path)
