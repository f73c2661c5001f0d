"""Pairwise study: systems compared two at a time on each source segment, in both orders.

From items with a ``system`` (several systems' translations of the same
segments, matched by ``doc_id`` + ``seg_id``), every pair of systems on each
segment (or a seeded sample of ``pairs`` pairs per segment) becomes two
``pairwise`` items, one per order (A/B and B/A). They are judged in one run
directory (``OUT/run``, so re-running resumes) through
:func:`polyjudge.engine.session.judge`. Per order the verdict is the majority
over every judge's successful runs (:func:`~polyjudge.protocols.pairwise.merge_verdicts`);
the two orders are then merged into a win/lose/tie outcome, or an
inconsistent one when the verdict changes with the order
(:mod:`polyjudge.analysis.pairwise` defines them, the position-bias
statistics and the Bradley–Terry ranking with bootstrap intervals).

Tables written next to the run directory (never inside it):

* ``pairwise.tsv``: one row per segment and pair: both verdicts, the outcome
  and the first system's win share;
* ``systems-bt.tsv``: the ranking, best first: ``system score ci_low ci_high
  win_rate comparisons`` (``score`` is the Bradley–Terry log-strength, mean
  zero; ``human`` too when human scores were given);
* ``systems-bt.sys.score``: the same scores in mt-metrics-eval's
  ``system<TAB>score`` layout;
* ``pairwise-seg.tsv``: ``system doc_id seg_id score comparisons``, each
  system's mean win share per segment, a segment-level score that
  ``polyjudge meta-eval --metric`` reads;
* ``position.json``: the position-bias statistics;
* ``pairwise.json``: settings, ranking, position bias, agreement with the
  human scores and failures (what ``--format json`` prints).

With human scores (``human``: any score file ``meta-eval`` reads, e.g. a WMT
MQM TSV with ``human_lower_better``), the ranking is compared with the human
system scores averaged over the same cells the judge compared: system-level
pairwise accuracy, Pearson and Kendall correlation.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polyjudge.analysis.pairwise import (
    PairJudgment,
    PositionBias,
    SegmentWinShare,
    SystemStrength,
    bradley_terry_ranking,
    position_bias,
    segment_win_shares,
)
from polyjudge.backends.spec import describe_judge
from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from polyjudge.data.shapes import normalise_fields
from polyjudge.engine.result import RunResult
from polyjudge.engine.session import as_spec, judge
from polyjudge.engine.spec import JudgingSpec
from polyjudge.metaeval.matrices import ScoreMatrix
from polyjudge.protocols.pairwise import SYSTEM_A, SYSTEM_B, TGT_B, PairwiseJudge, merge_verdicts
from polyjudge.protocols.spec import ProtocolSpec
from polyjudge.studies.pairwise_results import PairwiseRows, read_pairwise
from polyjudge.studies.tables import aligned, data_frame

RUN_DIR = "run"
PAIRS_TSV = "pairwise.tsv"
SYSTEMS_TSV = "systems-bt.tsv"
SYSTEMS_SYS_SCORE = "systems-bt.sys.score"
SEGMENTS_TSV = "pairwise-seg.tsv"
POSITION_JSON = "position.json"
STUDY_JSON = "pairwise.json"


@dataclass(frozen=True, slots=True)
class PairwiseConfig:
    """What to compare and how to rank.

    ``pairs``: pairs of systems judged per segment (a seeded sample, drawn per
    segment from ``seed``, doc_id and seg_id); None judges every pair.
    ``seed`` also seeds the bootstrap (``n_boot`` resamples of the source
    segments, ``level`` intervals). ``prior``: virtual ties between every two
    systems in the Bradley–Terry fit (0: the plain maximum-likelihood fit).
    ``input_format``, ``src_lang`` and ``tgt_lang`` apply when the items are
    read from a file; ``human``, ``human_format`` and ``human_lower_better``
    give human scores to compare the ranking with.
    """

    def __post_init__(self) -> None:
        object.__setattr__(self, "judge", as_spec(self.judge))  # the flat JudgeConfig shorthand is taken too
        normalise_fields(self)  # Python shapes; TypeError names a field

    judge: JudgingSpec = field(default_factory=lambda: JudgingSpec(protocol=ProtocolSpec(name="pairwise")))
    pairs: int | None = None
    seed: int = 0
    n_boot: int = 1000
    level: float = 0.95
    prior: float = 1.0
    human: str | Path | None = None
    human_format: str = "auto"
    human_lower_better: bool = False
    input_format: str | None = None
    src_lang: str | None = None
    tgt_lang: str | None = None

    def replace(self, **changes: Any) -> PairwiseConfig:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    def check(self) -> None:
        """Raise InputError for a setting the study cannot run with."""
        from polyjudge.metaeval.readers import FORMATS
        from polyjudge.protocols import PROTOCOLS
        from polyjudge.registry import UnknownNameError

        try:
            cls = PROTOCOLS.get(self.judge.protocol.name)
        except UnknownNameError as exc:
            raise InputError(str(exc), field="protocol") from None
        if not issubclass(cls, PairwiseJudge):
            raise InputError(f"the pairwise study needs the 'pairwise' protocol, not '{self.judge.protocol.name}'",
                             field="protocol")
        if self.pairs is not None and self.pairs < 1:
            raise InputError(f"pairs must be at least 1, got {self.pairs}", field="pairs")
        if self.n_boot < 0:
            raise InputError(f"bootstrap resamples must be at least 0, got {self.n_boot}", field="bootstrap")
        if not 0.0 < self.level < 1.0:
            raise InputError(f"level must be between 0 and 1, got {self.level}", field="level")
        if not (math.isfinite(self.prior) and self.prior >= 0):
            raise InputError(f"prior must be a number >= 0, got {self.prior}", field="prior")
        if self.human_format not in FORMATS:
            raise InputError(f"unknown human-score format {self.human_format!r} (choose from "
                             f"{', '.join(FORMATS)})", field="human-format")


# --------------------------------------------------------------------------- building pair items

def _segment_groups(items: Sequence[Item]) -> list[list[Item]]:
    """The items grouped by source segment (doc_id + seg_id), segments and systems in input order."""
    groups: dict[tuple[str | None, str], list[Item]] = {}
    for it in items:
        if not it.system:
            raise InputError("pairwise comparison needs a 'system' on every item", path=it.origin, field="system")
        if it.seg_id is None:
            raise InputError("pairwise comparison needs a 'seg_id' on every item (to find the other systems' "
                             "translations of the same source)", path=it.origin, field="seg_id")
        group = groups.setdefault((it.doc_id, it.seg_id), [])
        for other in group:
            if other.system == it.system:
                raise InputError(f"system {it.system!r} has two items for doc_id {it.doc_id!r}, seg_id "
                                 f"{it.seg_id!r}", path=it.origin, field="system")
            if other.src != it.src:
                raise InputError(f"the source of doc_id {it.doc_id!r}, seg_id {it.seg_id!r} differs from "
                                 f"system {other.system!r}'s", path=it.origin, field="src")
        group.append(it)
    return list(groups.values())


def _chosen_pairs(n_systems: int, pairs: int | None, seed: int, doc_id: str | None, seg_id: str
                  ) -> list[tuple[int, int]]:
    every = list(itertools.combinations(range(n_systems), 2))
    if pairs is None or pairs >= len(every):
        return every
    # One generator per segment: a segment's sample does not depend on the other segments.
    rng = random.Random(f"{seed}\x00{doc_id or ''}\x00{seg_id}")
    return [every[k] for k in sorted(rng.sample(range(len(every)), pairs))]


def _pair_item(a: Item, b: Item) -> Item:
    return Item(src=a.src, tgt=a.tgt, ref=a.ref if a.ref is not None else b.ref, src_lang=a.src_lang,
                tgt_lang=a.tgt_lang, doc_id=a.doc_id, seg_id=a.seg_id, system=f"{a.system} vs {b.system}",
                extra={TGT_B: b.tgt, SYSTEM_A: a.system, SYSTEM_B: b.system}, origin=a.origin)


def build_pair_items(items: Sequence[Item], *, pairs: int | None = None, seed: int = 0) -> list[Item]:
    """The ``pairwise`` items of ``items``: per segment and chosen pair (x, y), x shown as A
    then y shown as A, next to each other. Items need ``system`` and ``seg_id``; a
    segment's systems must share its source. Segments with one system give no pair."""
    out: list[Item] = []
    for group in _segment_groups(items):
        first = group[0]
        assert first.seg_id is not None  # checked while grouping
        for x, y in _chosen_pairs(len(group), pairs, seed, first.doc_id, first.seg_id):
            out += [_pair_item(group[x], group[y]), _pair_item(group[y], group[x])]
    return out


def pair_judgments(result: RunResult) -> list[PairJudgment]:
    """One :class:`PairJudgment` per two consecutive items of a run over :func:`build_pair_items`.

    Each order's verdict pools every judge's successful runs (majority; a tie
    between the top verdicts is a tie); an order without one is None.
    """
    verdicts: list[str | None] = []
    for per_judge in result.by_item():
        answers = [str(j.annotation["verdict"]) for js in per_judge.values() for j in js if j.ok]
        verdicts.append(merge_verdicts(answers))
    out = []
    for k in range(0, len(result.items) - 1, 2):
        ab, ba = result.items[k], result.items[k + 1]
        first, second = ab.extra.get(SYSTEM_A), ab.extra.get(SYSTEM_B)
        if (ba.extra.get(SYSTEM_A), ba.extra.get(SYSTEM_B)) != (second, first) or ab.seg_id is None:
            raise ValueError("items are not the two orders of one pair (build them with build_pair_items)")
        out.append(PairJudgment(ab.doc_id, ab.seg_id, str(first), str(second), verdicts[k], verdicts[k + 1]))
    return out


# --------------------------------------------------------------------------- agreement with humans

@dataclass(frozen=True, slots=True)
class HumanAgreement:
    """The ranking against human system scores averaged over the cells the judge compared.

    ``human_scores``: system -> mean human score (higher is better) over the
    segments where the system was in a complete pair; systems without human
    scores there are left out of the statistics.
    """

    source: str
    systems: int
    pairwise_accuracy: float
    pearson: float
    kendall: float
    human_scores: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "systems": self.systems, "pairwise_accuracy": self.pairwise_accuracy,
                "pearson": _json_number(self.pearson), "kendall": _json_number(self.kendall),
                "human_scores": self.human_scores}


def read_human_scores(path: str | Path, fmt: str = "auto", *, lower_better: bool = False) -> ScoreMatrix:
    """Human scores as meta-eval reads them, higher is better (negated with ``lower_better``)."""
    from polyjudge.metaeval.readers import read_scores

    matrix = read_scores(path, fmt)
    return matrix.negated() if lower_better else matrix


def human_agreement(ranking: Sequence[SystemStrength], pairs: Sequence[PairJudgment], human: ScoreMatrix,
                    source: str) -> HumanAgreement:
    """Compare the Bradley–Terry scores with the human system scores (see :class:`HumanAgreement`);
    ``source`` names the human scores in messages."""
    import numpy as np

    from polyjudge.metaeval import stats
    from polyjudge.metaeval.readers import DOC_SEG_SEPARATOR

    by_doc = any(DOC_SEG_SEPARATOR in item for item in human.items)
    cells: dict[str, set[str]] = {}
    for p in pairs:
        if p.complete:
            key = f"{p.doc_id or ''}{DOC_SEG_SEPARATOR}{p.seg_id}" if by_doc else p.seg_id
            for s in (p.first, p.second):
                cells.setdefault(s, set()).add(key)
    item_index = {item: k for k, item in enumerate(human.items)}
    system_index = {s: k for k, s in enumerate(human.systems)}
    scores: dict[str, float] = {}
    for row in ranking:
        if row.system not in system_index:
            continue
        cols = [item_index[c] for c in sorted(cells.get(row.system, ())) if c in item_index]
        values = human.values[system_index[row.system], cols]
        values = values[~np.isnan(values)]
        if values.size:
            scores[row.system] = float(values.mean())
    if len(scores) < 2:
        raise InputError(f"human scores cover {len(scores)} of the ranked systems on the judged segments; "
                         "need at least two (do the system names and seg_ids match?)", path=source)
    ranked = [r for r in ranking if r.system in scores]
    h = np.array([scores[r.system] for r in ranked])
    m = np.array([r.score for r in ranked])
    return HumanAgreement(source, len(ranked), stats.pairwise_accuracy(h, m), stats.pearson(h, m),
                          stats.kendall(h, m), {r.system: scores[r.system] for r in ranked})


# --------------------------------------------------------------------------- result

def _num(x: float | None) -> str:
    if x is None or math.isnan(x):
        return ""
    return f"{x:.6g}"


def _json_number(x: float) -> float | None:
    return None if math.isnan(x) else x


def _tsv(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    return "".join("\t".join(r) + "\n" for r in [list(header), *rows])


@dataclass
class PairwiseResult:
    """The study's outcome: pairs, ranking, position bias, agreement with humans and failures."""

    config: PairwiseConfig
    input: str | None  # the input file, when the items came from one
    systems: list[str]  # every input system, first-seen order
    n_segments: int
    pairs: list[PairJudgment]
    ranking: list[SystemStrength]
    position: PositionBias
    failures: dict[str, int]
    agreement: HumanAgreement | None = None
    run: RunResult | None = field(default=None, repr=False)

    @property
    def unranked(self) -> list[str]:
        """Input systems without a single complete pair (not in the ranking)."""
        ranked = {r.system for r in self.ranking}
        return [s for s in self.systems if s not in ranked]

    # -- tables --------------------------------------------------------------
    def pairs_tsv(self) -> str:
        """``pairwise.tsv``."""
        rows = [[p.doc_id or "", p.seg_id, p.first, p.second, p.first_as_a or "", p.second_as_a or "", p.outcome,
                 _num(p.score)] for p in self.pairs]
        return _tsv(("doc_id", "seg_id", "system_1", "system_2", "verdict_ab", "verdict_ba", "outcome", "score_1"),
                    rows)

    def ranking_tsv(self) -> str:
        """``systems-bt.tsv``: best first."""
        header = ["system", "score", "ci_low", "ci_high", "win_rate", "comparisons"]
        human = self.agreement.human_scores if self.agreement is not None else None
        if human is not None:
            header.append("human")
        rows = []
        for r in self.ranking:
            row = [r.system, _num(r.score), _num(r.ci_low), _num(r.ci_high), _num(r.win_rate), str(r.comparisons)]
            if human is not None:
                row.append(_num(human.get(r.system)))
            rows.append(row)
        return _tsv(header, rows)

    def sys_score(self) -> str:
        """``systems-bt.sys.score``: mt-metrics-eval's ``system<TAB>score`` lines."""
        return "".join(f"{r.system}\t{_num(r.score)}\n" for r in self.ranking)

    def segment_shares(self) -> list[SegmentWinShare]:
        return segment_win_shares(self.pairs)

    def segments_tsv(self) -> str:
        """``pairwise-seg.tsv``: each system's mean win share per segment."""
        rows = [[s.system, s.doc_id or "", s.seg_id, _num(s.score), str(s.comparisons)]
                for s in self.segment_shares()]
        return _tsv(("system", "doc_id", "seg_id", "score", "comparisons"), rows)

    def to_tsv(self) -> str:
        return self.ranking_tsv()

    def to_text(self) -> str:
        """The ranking with its intervals (aligned), then one line each on the pairs,
        position bias and agreement with the humans."""
        rows = [[str(k), r.system, _num(r.score), _num(r.ci_low), _num(r.ci_high), _num(r.win_rate),
                 str(r.comparisons)] for k, r in enumerate(self.ranking, 1)]
        table = aligned(_tsv(("rank", "system", "score", "ci_low", "ci_high", "win_rate", "comparisons"), rows))
        p = self.position
        intervals = (f"with {self.config.level:.0%} bootstrap intervals over {self.n_segments} source segments "
                     f"({self.config.n_boot} resamples)" if self.config.n_boot else
                     f"over {self.n_segments} source segments (no intervals)")
        lines = [f"Bradley-Terry log-strengths (mean 0) {intervals}."]
        lines.append(f"{p.pairs} pairs judged in both orders: {p.complete} complete, {p.missing} missing a verdict; "
                     f"{_percent(p.inconsistency_rate)} position-inconsistent ({p.flips} flips, "
                     f"{p.flips_to_a} of them to A).")
        lines.append(f"Candidate A chosen in {_percent(p.a_share)} of {p.a_wins + p.b_wins} decisive verdicts "
                     f"(exact binomial p = {_num(p.p_value) or 'n/a'}); {p.ties} ties.")
        if self.unranked:
            lines.append(f"Not ranked (no complete pair): {', '.join(self.unranked)}.")
        if self.agreement is not None:
            a = self.agreement
            lines.append(f"Against human scores ({a.source}, {a.systems} systems): pairwise accuracy "
                         f"{_num(a.pairwise_accuracy) or 'n/a'}, Pearson {_num(a.pearson) or 'n/a'}, "
                         f"Kendall {_num(a.kendall) or 'n/a'}.")
        if self.failures:
            lines.append(f"Failed judgments: {sum(self.failures.values())} (see the run directory).")
        return table + "\n" + "\n".join(lines) + "\n"

    def settings(self) -> dict[str, Any]:
        c = self.config
        judges = [describe_judge(j) for j in c.judge.judges.judges]
        return {"protocol": c.judge.protocol.name, "judges": judges, "pairs": c.pairs, "seed": c.seed,
                "n_boot": c.n_boot, "level": c.level, "prior": c.prior,
                "ties": "half a win each (Bradley-Terry without a tie parameter)"}

    def to_dict(self) -> dict[str, Any]:
        """The ``pairwise.json`` document."""
        return {"input": self.input, "settings": self.settings(), "systems": self.systems,
                "n_segments": self.n_segments, "n_pairs": len(self.pairs),
                "ranking": [{k: (_json_number(v) if isinstance(v, float) else v)
                             for k, v in dataclasses.asdict(r).items()} for r in self.ranking],
                "unranked": self.unranked, "position": self.position.to_dict(),
                "agreement": None if self.agreement is None else self.agreement.to_dict(),
                "failures": self.failures}

    def to_json(self) -> str:
        """The ``pairwise.json`` the study writes."""
        return json.dumps(self.to_dict(), indent=1, ensure_ascii=False)

    def results(self) -> PairwiseRows:
        """The typed rows the report renders, exactly as :func:`read_pairwise` reads them back from
        :meth:`to_json` (built from the same document)."""
        return read_pairwise(json.loads(self.to_json()), "the pairwise study")

    def write(self, out_dir: str | Path) -> None:
        """Every table of the module docstring into ``out_dir`` (next to its ``run`` directory)."""
        d = Path(out_dir)
        d.mkdir(parents=True, exist_ok=True)
        (d / PAIRS_TSV).write_text(self.pairs_tsv(), encoding="utf-8")
        (d / SYSTEMS_TSV).write_text(self.ranking_tsv(), encoding="utf-8")
        (d / SYSTEMS_SYS_SCORE).write_text(self.sys_score(), encoding="utf-8")
        (d / SEGMENTS_TSV).write_text(self.segments_tsv(), encoding="utf-8")
        (d / POSITION_JSON).write_text(json.dumps(self.position.to_dict(), indent=1) + "\n", encoding="utf-8")
        (d / STUDY_JSON).write_text(self.to_json() + "\n", encoding="utf-8")

    def to_pandas(self, table: str = "ranking") -> Any:
        """``ranking`` (default), ``pairs`` or ``segments`` as a DataFrame."""
        if table == "ranking":
            recs = [dataclasses.asdict(r) for r in self.ranking]
            return data_frame(recs, [f.name for f in dataclasses.fields(SystemStrength)])
        if table == "pairs":
            recs = [{**dataclasses.asdict(p), "outcome": p.outcome, "score": p.score} for p in self.pairs]
            return data_frame(recs, [*(f.name for f in dataclasses.fields(PairJudgment)), "outcome", "score"])
        if table == "segments":
            recs = [dataclasses.asdict(s) for s in self.segment_shares()]
            return data_frame(recs, [f.name for f in dataclasses.fields(SegmentWinShare)])
        raise InputError(f"unknown table {table!r} (choose from ranking, pairs, segments)", field="table")


def _percent(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{100 * x:.1f}%"


# --------------------------------------------------------------------------- the study

def _items(items: Sequence[Item] | str | Path, config: PairwiseConfig) -> list[Item]:
    if isinstance(items, str | Path):
        from polyjudge.data.readers import read_items
        return read_items(items, fmt=config.input_format, src_lang=config.src_lang, tgt_lang=config.tgt_lang)
    return list(items)


def run_pairwise(items: Sequence[Item] | str | Path, config: PairwiseConfig | None = None,
                 out: str | Path | None = None) -> PairwiseResult:
    """Compare the systems of ``items`` (a list or an input file) pairwise in both orders and rank them.

    With ``out``, the run directory is ``OUT/run`` (re-running resumes) and the
    tables are written into ``OUT``. Bad input or settings raise InputError
    before anything is judged.
    """
    cfg = config or PairwiseConfig()
    cfg.check()
    todo = _items(items, cfg)
    human = (read_human_scores(cfg.human, cfg.human_format, lower_better=cfg.human_lower_better)
             if cfg.human is not None else None)
    systems = list(dict.fromkeys(it.system or "" for it in todo))
    pair_items = build_pair_items(todo, pairs=cfg.pairs, seed=cfg.seed)
    if not pair_items:
        raise InputError("no segment has translations of two systems: nothing to compare",
                         path=str(items) if isinstance(items, str | Path) else None)
    out_dir = Path(out) if out is not None else None
    run = judge(pair_items, cfg.judge, out=out_dir / RUN_DIR if out_dir is not None else None)
    pairs = pair_judgments(run)
    complete = [p for p in pairs if p.complete]
    ranked = [s for s in systems if any(s in (p.first, p.second) for p in complete)]
    try:
        ranking = bradley_terry_ranking(complete, ranked, n_boot=cfg.n_boot, level=cfg.level, seed=cfg.seed,
                                        prior=cfg.prior) if ranked else []
    except ValueError as exc:  # prior=0 and a system that won (or lost) every comparison
        raise InputError(str(exc), field="prior") from None
    result = PairwiseResult(cfg, str(items) if isinstance(items, str | Path) else None, systems,
                            len({p.segment for p in pairs}), pairs, ranking, position_bias(pairs), run.failures(),
                            None, run)
    try:
        if human is not None and ranking:
            result.agreement = human_agreement(ranking, pairs, human, str(cfg.human))
    finally:  # human scores that match no judged segment still leave the tables written
        if out_dir is not None:
            result.write(out_dir)
    return result


__all__ = ["POSITION_JSON", "PAIRS_TSV", "RUN_DIR", "SEGMENTS_TSV", "STUDY_JSON", "SYSTEMS_SYS_SCORE",
           "SYSTEMS_TSV", "HumanAgreement", "PairwiseConfig", "PairwiseResult", "build_pair_items",
           "human_agreement", "pair_judgments", "read_human_scores", "run_pairwise"]
