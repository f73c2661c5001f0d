"""Which systems a judge separates, from Python: ``polyjudge compare-systems`` without the CLI.

The statistics (paired bootstrap, approximate randomization, paired t-test,
clusters) and the definitions they follow are in :mod:`polyjudge.metaeval.systems`;
here a run directory's segment scores, and optionally human scores for the same
segments, are read and the two comparisons are put side by side.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polyjudge.data.errors import InputError
from polyjudge.data.numbers import stat_text
from polyjudge.data.shapes import normalise_fields
from polyjudge.metaeval.readers import ScoreSource, resolve_item_key, select_pairs
from polyjudge.metaeval.systems import CORRECTIONS, TESTS, CompareSettings, PairComparison, SystemComparison
from polyjudge.metaeval.systems import compare_systems as compare_matrix

__all__ = ["CORRECTIONS", "TESTS", "CompareSettings", "CompareSystemsConfig", "CompareSystemsResult",
           "compare_systems", "compare_systems_per_lp", "format_per_lp"]

_TEST_NAMES = {"randomization": "paired approximate randomization", "bootstrap": "paired bootstrap",
               "t-test": "paired t-test"}
PAIR_FIELDS = ("system_a", "system_b", "n", "mean_a", "mean_b", "delta", "ci_low", "ci_high", "p_value",
               "p_adjusted", "p_bootstrap", "p_randomization", "p_ttest", "t", "win_rate", "significant")


@dataclass(frozen=True, slots=True)
class CompareSystemsConfig:
    """Human scores to set beside the judge's (any segment format meta-eval reads), how items
    are matched (``auto``, ``seg``, ``doc-seg`` as in meta-eval), and the tests' settings."""

    def __post_init__(self) -> None:
        normalise_fields(self)  # Python shapes; TypeError names a field

    human: str | Path | None = None
    human_format: str = "auto"
    human_lower_better: bool = False  # negate human scores (e.g. raw MQM error points)
    item_key: str = "auto"
    settings: CompareSettings = field(default_factory=CompareSettings)
    # the language pairs of the run (its items' src_lang/tgt_lang) to compare, each on its own (default:
    # every one); pool_lps compares the selected pairs as one, named "pooled: A+B"
    lps: tuple[str, ...] = ()
    pool_lps: bool = False


def _direction(p: PairComparison | None, alpha: float) -> int:
    """+1: system A significantly better, -1: system B, 0: no significant difference."""
    if p is None or not math.isfinite(p.p_adjusted) or p.p_adjusted >= alpha or p.delta == 0:
        return 0
    return 1 if p.delta > 0 else -1


def _oriented(p: PairComparison, a: str) -> dict[str, Any]:
    """A pair's numbers as seen from system ``a`` (the judge's higher-ranked system)."""
    row = {k: getattr(p, k) for k in PAIR_FIELDS}
    if p.system_a != a:
        row.update(system_a=p.system_b, system_b=p.system_a, mean_a=p.mean_b, mean_b=p.mean_a, delta=-p.delta,
                   ci_low=-p.ci_high, ci_high=-p.ci_low, t=-p.t, win_rate=1.0 - p.win_rate)
    return row


def _clean(value: Any) -> Any:
    """JSON-safe: NaN and infinities become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def _num(x: float, digits: int = 4) -> str:
    return stat_text(x, f".{digits}f")


def _p(x: float) -> str:
    return stat_text(x, ".4f" if x >= 1e-4 else ".1e")


def _agreement(judge: int, human: int) -> str:
    if judge == human:
        return "agree" if judge else "agree (neither)"
    if judge and human:
        return "opposite"
    return "judge only" if judge else "human only"


@dataclass(frozen=True, slots=True)
class CompareSystemsResult:
    """The judge's comparison of the run's systems and, with human scores, the humans' on the
    systems both have; pairs are keyed by the judge's order (higher-ranked system first)."""

    run: str
    judge: SystemComparison
    human: SystemComparison | None = None
    human_source: str | None = None
    lp: str | None = None  # the language pair compared (None: the run's items name none)

    def pair_rows(self) -> list[dict[str, Any]]:
        """One dict per pair: the judge's numbers, and under ``human`` the humans' (same orientation)."""
        alpha = self.judge.settings.alpha
        rows = []
        for p in self.judge.pairs:
            row = _oriented(p, p.system_a)
            if self.human is not None:
                hp = self.human.pair(p.system_a, p.system_b)
                row["human"] = None if hp is None else _oriented(hp, p.system_a)
                hd = 0 if hp is None else _direction(hp, alpha) * (1 if hp.system_a == p.system_a else -1)
                row["agreement"] = "n/a" if hp is None else _agreement(_direction(p, alpha), hd)
            rows.append(row)
        return rows

    def to_dict(self) -> dict[str, Any]:
        s = self.judge.settings
        doc: dict[str, Any] = {
            "run": self.run, **({"lp": self.lp} if self.lp is not None else {}),
            "scores": "judge segment scores, higher is better",
            "settings": {"test": s.test, "correction": s.correction, "alpha": s.alpha, "bootstrap": s.n_boot,
                         "permutations": s.n_perm, "seed": s.seed, "ci_level": 1 - s.alpha,
                         "p_values": "two-sided, per pair; p_value is the deciding test's, uncorrected; "
                                     "p_adjusted after the correction"},
            "n_segments": self.judge.n_segments,
            "systems": [_system(r) for r in self.judge.systems], "clusters": self.judge.clusters(),
            "pairs": self.pair_rows()}
        if self.human is not None:
            doc["human"] = {"source": self.human_source, "systems": [_system(r) for r in self.human.systems],
                            "clusters": self.human.clusters(), "n_segments": self.human.n_segments}
        cleaned: dict[str, Any] = _clean(doc)
        return cleaned

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, ensure_ascii=False)

    def to_tsv(self) -> str:
        """One row per pair; human columns (``human_delta``, ...) and ``agreement`` with human scores."""
        cols = list(PAIR_FIELDS)
        human_cols = ["human_n", "human_delta", "human_ci_low", "human_ci_high", "human_p_value",
                      "human_p_adjusted", "agreement"] if self.human is not None else []
        lines = ["\t".join(cols + human_cols)]
        for row in self.pair_rows():
            cells = [_cell(row[c]) for c in cols]
            if self.human is not None:
                h = row.get("human") or {}
                cells += [_cell(h.get(c[len("human_"):], math.nan)) for c in human_cols[:-1]] + [row["agreement"]]
            lines.append("\t".join(cells))
        return "\n".join(lines) + "\n"

    def to_text(self) -> str:
        return "\n".join(_text_lines(self)) + "\n"

    def format(self, fmt: str = "text") -> str:
        if fmt == "json":
            return self.to_json() + "\n"
        return self.to_tsv() if fmt == "tsv" else self.to_text()


def _system(r: Any) -> dict[str, Any]:
    return {"system": r.system, "mean": r.mean, "n": r.n, "rank": r.rank, "cluster": r.cluster}


def _cell(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return stat_text(v, ".6g")  # n/a when undefined (too few shared segments), as in the text table
    return str(v)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    width = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    return ["  ".join(str(x).ljust(w) for x, w in zip(r, width)).rstrip() for r in [header, *rows]]


def _text_lines(res: CompareSystemsResult) -> list[str]:
    s = res.judge.settings
    level = f"{100 * (1 - s.alpha):g}%"
    corr = "uncorrected" if s.correction == "none" else f"{s.correction}-adjusted over {len(res.judge.pairs)} pairs"
    of = res.run if res.lp is None else f"{res.run}, {res.lp}"
    lines = [f"Systems of {of}: judge segment scores, higher is better ({res.judge.n_segments} segments).",
             f"Significance: {_TEST_NAMES[s.test]} (two-sided, {corr}, alpha {s.alpha:g}); delta = mean of "
             f"A - B on the segments both scored, {level} paired bootstrap interval ({s.n_boot} resamples); "
             f"{s.n_perm} randomization draws; seed {s.seed}.",
             "Clusters: each system in a cluster is significantly better than every system in every lower one.", ""]
    human = {r.system: r for r in res.human.systems} if res.human is not None else {}
    head = ["cluster", "rank", "system", "mean", "segments"] + (["human mean", "human cluster"] if human else [])
    rows = [[str(r.cluster), str(r.rank), r.system, _num(r.mean), str(r.n)]
            + ([_num(human[r.system].mean), str(human[r.system].cluster)] if r.system in human
               else ["n/a", "n/a"] if human else []) for r in res.judge.systems]
    lines += _table(head, rows) + [""]
    head = ["A", "B", "n", "delta", f"{level} CI", "p boot", "p AR", "p t", "p", "significant"]
    if res.human is not None:
        head += ["human delta", "human p", "agreement"]
    rows = []
    for row in res.pair_rows():
        cells = [row["system_a"], row["system_b"], str(row["n"]), _num(row["delta"]),
                 f"[{_num(row['ci_low'])}, {_num(row['ci_high'])}]", _p(row["p_bootstrap"]),
                 _p(row["p_randomization"]), _p(row["p_ttest"]), _p(row["p_adjusted"]),
                 "yes" if row["significant"] else "no"]
        if res.human is not None:
            h = row.get("human")
            cells += ([_num(h["delta"]), _p(h["p_adjusted"])] if h else ["n/a", "n/a"]) + [row["agreement"]]
        rows.append(cells)
    lines += _table(head, rows)
    if res.human is not None:
        lines += ["", f"Human scores: {res.human_source} (higher is better as read); clusters "
                      + " > ".join("{" + ", ".join(c) + "}" for c in res.human.clusters())]
    return lines


def _matrices(run: str | Path, config: CompareSystemsConfig) -> list[tuple[str | None, Any, Any]]:
    """(pair, judge matrix, human matrix or None) per language pair of the run (see ``select_pairs``)."""
    sources: list[ScoreSource] = [ScoreSource(run, "run")]
    if config.human is not None:
        sources.append(ScoreSource(config.human, config.human_format))
    tables = [src.table({}) for src in sources]
    out: list[tuple[str | None, Any, Any]] = []
    for lp, chosen in select_pairs(tables, config.lps, pool=config.pool_lps):
        key = resolve_item_key(chosen, config.item_key)
        found = [t.matrix(key) for t in chosen]
        out.append((lp, found[0], found[1] if len(found) > 1 else None))
    return out


def compare_systems_per_lp(run: str | Path, config: CompareSystemsConfig | None = None) -> list[CompareSystemsResult]:
    """:func:`compare_systems` for each language pair of the run (``config.lps``: some of them; with
    ``config.pool_lps`` one comparison of the selected pairs pooled); a pair not in the run is an
    InputError naming those that are."""
    config = config or CompareSystemsConfig()
    if config.item_key not in ("auto", "seg", "doc-seg"):
        raise InputError(f"unknown item key {config.item_key!r}", field="item-key")
    return [_compare(run, config, lp, judged, human) for lp, judged, human in _matrices(run, config)]


def compare_systems(run: str | Path, config: CompareSystemsConfig | None = None) -> CompareSystemsResult:
    """Every pair of the run's systems compared on the judge's segment scores (and on human
    scores when ``config.human`` is given), for one language pair: a run of several needs
    ``config.lps`` naming one, or ``pool_lps`` (:func:`compare_systems_per_lp` compares each);
    bad input raises :class:`InputError`."""
    results = compare_systems_per_lp(run, config)
    if len(results) > 1:
        raise InputError(f"the run holds {len(results)} language pairs ({', '.join(str(r.lp) for r in results)}): "
                         "choose one (lps), pool them (pool_lps), or compare each (compare_systems_per_lp)",
                         path=str(run), field="lp")
    return results[0]


def _compare(run: str | Path, config: CompareSystemsConfig, lp: str | None, judged: Any,
             human: Any) -> CompareSystemsResult:
    where = "" if lp is None else f" ({lp})"
    result = compare_matrix(judged.systems, judged.values, config.settings)
    if len(result.systems) < 2:
        raise InputError(f"needs at least two systems with scores{where}, found {len(result.systems)}",
                         path=str(run), field="system")
    if human is None:
        return CompareSystemsResult(str(run), result, lp=lp)
    shared = [k for k, s in enumerate(human.systems) if s in set(judged.systems)]
    if len(shared) < 2:
        raise InputError(f"has scores for {len(shared)} of the run's systems{where}; comparing needs two "
                         f"(run: {', '.join(judged.systems[:10])})", path=str(config.human), field="system")
    values = human.values[shared] * (-1.0 if config.human_lower_better else 1.0)
    human_result = compare_matrix([human.systems[k] for k in shared], values, config.settings)
    return CompareSystemsResult(str(run), result, human_result, str(config.human), lp=lp)


def format_per_lp(results: list[CompareSystemsResult], fmt: str = "text") -> str:
    """The comparisons of several language pairs as ``compare-systems`` prints them: one pair as
    :meth:`CompareSystemsResult.format`; several as one block per pair (text), an ``lp`` column (TSV)
    or ``{"language_pairs": [...]}`` (JSON)."""
    if len(results) == 1:
        return results[0].format(fmt)
    if fmt == "json":
        return json.dumps({"language_pairs": [r.to_dict() for r in results]}, indent=1, ensure_ascii=False) + "\n"
    if fmt == "tsv":
        lines: list[str] = []
        for r in results:
            head, *rows = r.to_tsv().splitlines()
            lines += [] if lines else [f"lp\t{head}"]
            lines += [f"{r.lp}\t{row}" for row in rows]
        return "\n".join(lines) + "\n"
    return "\n".join(r.to_text() for r in results)
