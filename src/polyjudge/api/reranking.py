"""Choosing one translation per source with a judge: QE reranking and MBR (``polyjudge rerank``).

::

    from polyjudge.api import JudgeConfig, rerank
    res = rerank(["Guten Morgen."], [["Good morning.", "Morning good.", "Good morning."]],
                 judge=JudgeConfig(protocol="da", judges=("openai:gpt-4.1-mini",)), method="mbr")
    res.choices[0].translation

The judging spec (``judge``) is what a :class:`~polyjudge.api.JudgingSpec` or
``JudgeConfig`` holds; the requests go through the engine as ``polyjudge judge``'s
do (shared response cache, batches, ``max_cost``). :func:`rerank_estimate` prices
it without sending anything. The choice rules are in :mod:`polyjudge.reranking.choose`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyjudge.data.errors import InputError
from polyjudge.data.shapes import normalise_fields
from polyjudge.reranking.choose import DEFAULT_SCHEDULE, Pruning
from polyjudge.reranking.run import METHODS, Gain, RerankResult, SourceChoice
from polyjudge.reranking.summary import CHOSEN, CHRF_REFERENCES, HELD_OUT_DIR, RUN_DIR, SCORES, SUMMARY

if TYPE_CHECKING:
    from polyjudge.engine.estimate import Estimate
    from polyjudge.engine.spec import JudgingSpec
    from polyjudge.reranking.candidates import SourceCandidates
    from polyjudge.reranking.scorers import JudgeScorer, Scorer

UTILITIES = ("judge", "chrf")


def _default_judge() -> JudgingSpec:
    from polyjudge.engine.spec import JudgingSpec

    return JudgingSpec()


@dataclass(frozen=True, slots=True)
class RerankConfig:
    """How to choose.

    ``judge``: the judging (a :class:`JudgingSpec` or the flat ``JudgeConfig``); its protocol scores
    candidates (QE: reference-free) or is the MBR utility (a protocol that reads the reference).
    ``utility``: ``judge``, or ``chrf`` (sacrebleu's chrF, MBR only: free, no judge). ``prune``:
    confidence-based pruning of MBR candidates with ``prune_schedule`` pseudo-references per step,
    ``prune_alpha`` and ``prune_bootstrap`` resamples (seeded by the judge's seed). ``held_out``: a
    second judge (spec text) that scores the chosen translations and the baselines; ``references``: a
    file with one reference per source (chrF against them is the other held-out check; a ``ref`` field
    of the candidates file does the same).
    """

    def __post_init__(self) -> None:
        from polyjudge.engine.session import as_spec

        object.__setattr__(self, "judge", as_spec(self.judge))
        normalise_fields(self)

    judge: JudgingSpec = field(default_factory=_default_judge)
    method: str = "qe"
    utility: str = "judge"
    prune: bool = False
    prune_schedule: tuple[int, ...] = DEFAULT_SCHEDULE
    prune_alpha: float = 0.99
    prune_bootstrap: int = 500
    held_out: str | None = None
    references: str | Path | None = None
    src_lang: str | None = None
    tgt_lang: str | None = None

    def replace(self, **changes: Any) -> RerankConfig:
        return dataclasses.replace(self, **changes)

    @property
    def pruning(self) -> Pruning | None:
        if not self.prune:
            return None
        return Pruning(tuple(self.prune_schedule), self.prune_alpha, self.prune_bootstrap, self.judge.generation.seed)

    def check(self) -> None:
        """InputError for a setting reranking cannot run with."""
        if self.method not in METHODS:
            raise InputError(f"unknown method {self.method!r} (choose from {', '.join(METHODS)})", field="method")
        if self.utility not in UTILITIES:
            raise InputError(f"unknown utility {self.utility!r} (choose from {', '.join(UTILITIES)})",
                             field="utility")
        if self.utility == "chrf" and self.method != "mbr":
            raise InputError("chrF needs a reference: it is an MBR utility (--method mbr), not a QE scorer",
                             field="utility")
        if self.prune and self.method != "mbr":
            raise InputError("pruning applies to MBR (--method mbr)", field="prune")
        if not self.prune_schedule or any(r < 1 for r in self.prune_schedule):
            raise InputError("the pruning schedule needs numbers of pseudo-references >= 1", field="prune-schedule")
        if not 0.0 < self.prune_alpha < 1.0:
            raise InputError(f"prune alpha must be between 0 and 1, got {self.prune_alpha}", field="prune-alpha")
        if self.prune_bootstrap < 1:
            raise InputError("prune bootstrap resamples must be at least 1", field="prune-bootstrap")


# --------------------------------------------------------------------------- inputs

def _sources(sources: Sequence[str] | str | Path, candidates: Sequence[Sequence[str]] | None,
             config: RerankConfig) -> list[SourceCandidates]:
    from polyjudge.data.textio import read_lines
    from polyjudge.reranking.candidates import from_lists, read_candidates, with_languages

    if isinstance(sources, str | Path) and candidates is None:
        found = read_candidates(sources, src_lang=config.src_lang, tgt_lang=config.tgt_lang)
    elif candidates is None or isinstance(sources, str | Path):
        raise InputError("give a candidates file, or a list of sources and a list of candidate lists",
                         field="candidates")
    else:
        found = with_languages(from_lists(list(sources), candidates), config.src_lang, config.tgt_lang)
    if config.references is not None:
        path = Path(config.references)
        if not path.is_file():
            raise InputError("file not found", path=str(path), field="references")
        refs = [r for r in read_lines(path)]
        while refs and not refs[-1].strip() and len(refs) > len(found):
            refs.pop()
        if len(refs) != len(found):
            raise InputError(f"{len(refs)} references for {len(found)} sources (one line per source)",
                             path=str(path), field="references")
        found = [dataclasses.replace(s, ref=r) for s, r in zip(found, refs)]
    return found


def _protocol_checked(config: RerankConfig) -> Any:
    """The protocol, checked for the method: a score, and a reference read by an MBR utility only."""
    from polyjudge.engine.session import build_protocol

    protocol = build_protocol(config.judge)
    name = protocol.name
    if protocol.compares_pairs:
        raise InputError(f"protocol '{name}' compares two candidates; reranking needs a protocol that scores one",
                         field="protocol")
    reads_ref = protocol.reference.on or (protocol.template is not None and protocol.template.uses("ref"))
    if config.method == "mbr" and not reads_ref:
        raise InputError(f"protocol '{name}' never shows the judge a reference, so it cannot be an MBR utility: "
                         "give --protocol-option with_reference=true, or a protocol whose prompt reads 'ref'",
                         field="protocol")
    if config.method == "qe" and protocol.reference.on:
        raise InputError("QE reranking is reference-free: drop with_reference=true (or use --method mbr)",
                         field="protocol")
    return protocol


def _scorer(config: RerankConfig, out: Path | None) -> Scorer:
    from polyjudge.reranking.scorers import ChrF, JudgeScorer

    if config.utility == "chrf":
        return ChrF()
    protocol = _protocol_checked(config)
    symmetric = config.method == "mbr" and bool(type(protocol).symmetric_reference)
    return JudgeScorer(config.judge, out / RUN_DIR if out is not None else None, name=_judge_name(config.judge),
                       symmetric=symmetric)


def _judge_name(spec: JudgingSpec) -> str:
    from polyjudge.backends.spec import describe_judge

    judges = ", ".join(describe_judge(j) for j in spec.judges.judges)
    return f"{spec.protocol.name} by {judges}"


def _held_out_scorer(config: RerankConfig, out: Path | None) -> JudgeScorer | None:
    from polyjudge.backends.spec import describe_judge, parse_judge
    from polyjudge.reranking.scorers import JudgeScorer

    if config.held_out is None:
        return None
    judge = parse_judge(config.held_out)
    if config.utility == "judge" and any(describe_judge(j) == describe_judge(judge)
                                         for j in config.judge.judges.judges):
        raise InputError(f"the held-out judge {describe_judge(judge)} is also the judge that chooses: a judge "
                         "rating its own choices is the self-reward the check guards against", field="held-out")
    spec = config.judge.replace(judges=dataclasses.replace(config.judge.judges, judges=(judge,)))
    if spec.protocol.options.get("with_reference") is not None:
        options = {k: v for k, v in spec.protocol.options.items() if k != "with_reference"}
        spec = spec.replace(protocol=dataclasses.replace(spec.protocol, options=options))
    return JudgeScorer(spec, out / HELD_OUT_DIR if out is not None else None, name=f"held-out {_judge_name(spec)}")


# --------------------------------------------------------------------------- running

def _claim(out: Path, sources: Sequence[str] | str | Path) -> None:
    from polyjudge.rundir.clash import Target, input_target, refuse_clashes
    from polyjudge.rundir.ownership import claim_study

    claim_study(out, "rerank", (CHOSEN, SCORES, SUMMARY), SUMMARY)
    if isinstance(sources, str | Path):
        refuse_clashes([Target("-o/--out", str(out), (CHOSEN, SCORES, SUMMARY))], input_target("CANDIDATES", sources))


def _write_marker(out: Path, config: RerankConfig) -> None:
    """``rerank.json`` saying the choice is under way, before anything is judged: a run stopped by the
    spending cap or Ctrl-C leaves a folder the next run recognises and resumes."""
    import json

    from polyjudge.rundir.ownership import atomic_write

    if not (out / SUMMARY).is_file():
        atomic_write(out / SUMMARY, [json.dumps({"method": config.method, "status": "incomplete"}), "\n"])


def _write(result: RerankResult, out: Path) -> None:
    from polyjudge.rundir.ownership import atomic_write

    atomic_write(out / CHOSEN, [result.chosen_jsonl()])
    atomic_write(out / SCORES, [result.scores_jsonl()])
    atomic_write(out / SUMMARY, [result.to_json(), "\n"])


def rerank(sources: Sequence[str] | str | Path, candidates: Sequence[Sequence[str]] | None = None,
           config: RerankConfig | None = None, *, out: str | Path | None = None, **settings: Any) -> RerankResult:
    """Choose one candidate per source (``sources`` and ``candidates`` as lists, or a candidates file as
    ``sources``) as ``config`` says; keyword ``settings`` are :class:`RerankConfig` fields (``judge=``,
    ``method="mbr"``, ...). With ``out``: the run directory is ``OUT/run`` (a held-out judge's
    ``OUT/held-out``; re-running resumes), and ``chosen.jsonl``, ``scores.jsonl`` and ``rerank.json`` are
    written there. The spending cap (``judge.budget.max_cost``) covers the whole choice."""
    from polyjudge.reranking.run import held_out_gain, rerank_mbr, rerank_qe, selection_gain
    from polyjudge.reranking.scorers import ChrF

    cfg = (config or RerankConfig()).replace(**settings) if settings else (config or RerankConfig())
    cfg.check()
    found = _sources(sources, candidates, cfg)
    out_dir = Path(out) if out is not None else None
    scorer = _scorer(cfg, out_dir)
    held = _held_out_scorer(cfg, out_dir)
    if out_dir is not None:
        _claim(out_dir, sources)
        _write_marker(out_dir, cfg)
    choices = rerank_qe(found, scorer) if cfg.method == "qe" else rerank_mbr(found, scorer, pruning=cfg.pruning)
    gains = [selection_gain(choices, scorer.name)]
    if held is not None:
        gains.append(held_out_gain(choices, held, with_reference=False))
    if all(s.ref for s in found):
        gains.append(held_out_gain(choices, ChrF(name=CHRF_REFERENCES), with_reference=True))
    result = RerankResult(cfg.method, scorer.name, choices, gains, cfg.pruning, scorer.symmetric)
    if out_dir is not None:
        _write(result, out_dir)
    return result


@dataclass(frozen=True, slots=True)
class RerankEstimate:
    """What :func:`rerank` would send: requests per source, and the engine's estimate of the
    judging (tokens, an upper bound of the cost); with pruning, the full matrix (pruning sends fewer)."""

    method: str
    sources: int
    candidates: int
    requests: int
    per_source: tuple[int, ...]
    pruning: bool
    judging: Estimate | None
    held_out: Estimate | None = None

    def describe(self) -> str:
        n = max(self.per_source, default=0)
        what = ("QE: one request per distinct candidate" if self.method == "qe" else
                "MBR: about N² requests per source (every candidate judged against every other one as its "
                "pseudo-reference, N(N-1) with self pairs skipped)")
        lines = [f"{what}. {self.sources} sources, {self.candidates} candidates: {self.requests} requests "
                 f"(at most {n} for one source)."]
        if self.pruning:
            lines.append("With pruning, fewer are sent: the count above is the full matrix, an upper bound.")
        if self.judging is not None:
            lines.append(self.judging.describe())
        else:
            lines.append("chrF is computed locally: nothing is sent, nothing costs.")
        if self.held_out is not None:
            lines.append("Held-out judge: " + self.held_out.describe())
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "sources": self.sources, "candidates": self.candidates,
                "requests": self.requests, "per_source": list(self.per_source), "pruning": self.pruning,
                "judging": None if self.judging is None else self.judging.to_dict(),
                "held_out": None if self.held_out is None else self.held_out.to_dict()}


def rerank_estimate(sources: Sequence[str] | str | Path, candidates: Sequence[Sequence[str]] | None = None,
                    config: RerankConfig | None = None, *, out: str | Path | None = None,
                    **settings: Any) -> RerankEstimate:
    """Price :func:`rerank` before anything is sent (nothing is written)."""
    from polyjudge.reranking.run import mbr_round, mbr_searches, qe_requests
    from polyjudge.reranking.scorers import JudgeScorer, Request

    cfg = (config or RerankConfig()).replace(**settings) if settings else (config or RerankConfig())
    cfg.check()
    found = _sources(sources, candidates, cfg)
    out_dir = Path(out) if out is not None else None
    scorer = _scorer(cfg, out_dir)
    if cfg.method == "qe":
        requests = qe_requests(found)
    else:
        requests = mbr_round(found, mbr_searches(found, symmetric=scorer.symmetric, pruning=None))
    per = [0] * len(found)
    for r in requests:
        per[r.index] += 1
    judging = scorer.estimate(requests) if isinstance(scorer, JudgeScorer) else None
    held = _held_out_scorer(cfg, out_dir)
    held_est = None
    if held is not None:  # the chosen one and the first of each source: at most two
        held_est = held.estimate([Request(k, s, c) for k, s in enumerate(found) for c in dict.fromkeys(
            s.candidates[:1] + s.candidates[1:2])])
    return RerankEstimate(cfg.method, len(found), sum(len(s.candidates) for s in found), len(requests), tuple(per),
                          cfg.prune, judging, held_est)


__all__ = ["CHOSEN", "HELD_OUT_DIR", "RUN_DIR", "SCORES", "SUMMARY", "UTILITIES", "Gain", "RerankConfig",
           "RerankEstimate", "RerankResult", "SourceChoice", "rerank", "rerank_estimate"]
