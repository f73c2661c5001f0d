"""polyjudge judges as metrics of mbrs (the field's MBR library): swap COMET for a judge in one line.

::

    from mbrs.decoders import DecoderMBR
    from polyjudge.reranking.mbrs_metric import PolyjudgeMetric

    metric = PolyjudgeMetric(PolyjudgeMetric.Config(judge=JudgeConfig(protocol="da", judges=("openai:gpt-4.1-mini",)),
                                                    src_lang="de", tgt_lang="en"))
    out = DecoderMBR(DecoderMBR.Config(), metric).decode(hypotheses, hypotheses, source=src)

:class:`PolyjudgeMetric` is an mbrs ``Metric`` (reference-based: ``DecoderMBR``,
``DecoderPruningMBR``, ...); :class:`PolyjudgeQEMetric` an mbrs
``MetricReferenceless`` (``DecoderRerank``). Each batch mbrs asks for (a row of
scores, a whole pairwise matrix) is one judging through the engine, so the shared
response cache, batches and ``max_cost`` apply; identical (hypothesis, reference)
texts are judged once, and once per unordered pair for a protocol with
``symmetric_reference``. ``Config(utility="chrf")`` scores with sacrebleu's chrF
through the same path (what mbrs's own ``MetricChrF`` computes). Cells mbrs asks
for are computed as asked: a ``DecoderMBR`` given the hypotheses as references
also gets each hypothesis judged against itself (once per distinct text).
A failed judgment is NaN.

This module imports mbrs (and torch) when imported; nothing else in polyjudge
imports it, so polyjudge itself never needs mbrs (``pip install mbrs``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    import torch
    from mbrs.metrics import Metric, MetricReferenceless
except ImportError as exc:  # pragma: no cover - exercised only without mbrs
    raise ImportError("polyjudge.reranking.mbrs_metric needs mbrs: pip install mbrs") from exc

from polyjudge.reranking.candidates import SourceCandidates
from polyjudge.reranking.choose import pair_key
from polyjudge.reranking.scorers import ChrF, JudgeScorer, Request, Scorer


def _scorer(judge: Any, utility: str, out: str | Path | None) -> Scorer:
    if utility == "chrf":
        return ChrF()
    if utility != "judge":
        raise ValueError(f"utility must be 'judge' or 'chrf', got {utility!r}")
    from polyjudge.engine.session import as_spec, build_protocol

    spec = as_spec(judge)
    symmetric = bool(type(build_protocol(spec)).symmetric_reference)
    return JudgeScorer(spec, Path(out) if out is not None else None, symmetric=symmetric)


def _source(text: str | None, src_lang: str | None, tgt_lang: str | None, needs: bool) -> SourceCandidates:
    if text is None and needs:
        raise ValueError("a polyjudge judge needs the source sentence: pass source=... to decode()")
    return SourceCandidates(text or "", (), src_lang=src_lang, tgt_lang=tgt_lang)


def _as_tensor(values: list[float | None]) -> torch.Tensor:
    return torch.tensor([float("nan") if v is None else v for v in values], dtype=torch.float32)


class _Scoring:
    """The judging shared by both metric classes: batches of (source, hyp, ref) judged once each."""

    scorer: Scorer
    src_lang: str | None
    tgt_lang: str | None

    def _judge(self, triples: list[tuple[str | None, str, str | None]]) -> list[float | None]:
        needs = not isinstance(self.scorer, ChrF)
        sources: dict[str | None, SourceCandidates] = {}
        keys = list(dict.fromkeys(triples))
        requests = []
        for src, hyp, ref in keys:
            s = sources.setdefault(src, _source(src, self.src_lang, self.tgt_lang, needs))
            requests.append(Request(list(sources).index(src), s, hyp, ref))
        found = dict(zip(keys, self.scorer.score(requests)))
        return [found[t] for t in triples]


class PolyjudgeMetric(_Scoring, Metric):  # type: ignore[misc]
    """A polyjudge judge (or chrF) as an mbrs reference-based metric: the MBR utility."""

    @dataclass
    class Config(Metric.Config):  # type: ignore[misc]
        """``judge``: a JudgingSpec or JudgeConfig (its protocol must read the reference); ``utility``:
        ``judge`` or ``chrf``; languages for sources without them; ``out``: a run directory to keep
        (and resume) the judgments."""

        judge: Any = None
        utility: str = "judge"
        src_lang: str | None = None
        tgt_lang: str | None = None
        out: str | None = None

    def __init__(self, cfg: PolyjudgeMetric.Config) -> None:
        super().__init__(cfg)
        self.scorer = _scorer(cfg.judge, cfg.utility, cfg.out)
        self.src_lang, self.tgt_lang = cfg.src_lang, cfg.tgt_lang

    def score(self, hypothesis: str, reference: str, source: str | None = None) -> float:
        value = self._judge([(source, hypothesis, reference)])[0]
        return float("nan") if value is None else value

    def scores(self, hypotheses: list[str], references: list[str],
               sources: list[str] | None = None) -> torch.Tensor:
        srcs: list[str | None] = list(sources) if sources is not None else [None] * len(hypotheses)
        return _as_tensor(self._judge(list(zip(srcs, hypotheses, references))))

    def pairwise_scores(self, hypotheses: list[str], references: list[str],
                        source: str | None = None) -> torch.Tensor:
        order = {t: k for k, t in enumerate(dict.fromkeys([*hypotheses, *references]))}
        symmetric = self.scorer.symmetric
        cells = [pair_key(h, r, order, symmetric) for h in hypotheses for r in references]
        values = self._judge([(source, h, r) for h, r in cells])
        return _as_tensor(values).reshape(len(hypotheses), len(references))


class PolyjudgeQEMetric(_Scoring, MetricReferenceless):  # type: ignore[misc]
    """A polyjudge judge as an mbrs reference-free metric (QE reranking with ``DecoderRerank``)."""

    @dataclass
    class Config(MetricReferenceless.Config):  # type: ignore[misc]
        """``judge``: a JudgingSpec or JudgeConfig; languages for sources without them; ``out``: a run
        directory to keep (and resume) the judgments."""

        judge: Any = None
        src_lang: str | None = None
        tgt_lang: str | None = None
        out: str | None = None

    def __init__(self, cfg: PolyjudgeQEMetric.Config) -> None:
        super().__init__(cfg)
        self.scorer = _scorer(cfg.judge, "judge", cfg.out)
        self.src_lang, self.tgt_lang = cfg.src_lang, cfg.tgt_lang

    def score(self, hypothesis: str, source: str) -> float:
        value = self._judge([(source, hypothesis, None)])[0]
        return float("nan") if value is None else value

    def scores(self, hypotheses: list[str], sources: list[str]) -> torch.Tensor:
        return _as_tensor(self._judge([(s, h, None) for h, s in zip(hypotheses, sources)]))


__all__ = ["PolyjudgeMetric", "PolyjudgeQEMetric"]
