"""polyjudge inside mbrs, and polyjudge's MBR against mbrs's own on fixed N-best lists.

mbrs (and torch) are test-only and heavy: these tests skip without them
(``pip install torch==2.13.0 mbrs`` in a separate venv runs them)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

pytest.importorskip("torch")
mbrs_decoders = pytest.importorskip("mbrs.decoders")
mbrs_metrics = pytest.importorskip("mbrs.metrics")

from polyjudge.api import JudgeConfig, rerank  # noqa: E402
from polyjudge.engine import RetryPolicy  # noqa: E402
from polyjudge.reranking.mbrs_metric import PolyjudgeMetric, PolyjudgeQEMetric  # noqa: E402
from tests.helpers.openai_server import ScriptedServer  # noqa: E402

WORDS = ("the", "a", "cat", "dog", "sat", "on", "mat", "quickly", "house", "red", "big", "runs", "near", "river",
         "old", "man", "sees", "green", "tree", "under")


def nbest_lists(n_sources: int = 40, n: int = 8, seed: int = 3) -> tuple[list[str], list[list[str]]]:
    """Fixed N-best lists: each source's candidates are edits of one sentence (some repeated, as samples are)."""
    rng = random.Random(seed)
    sources, lists = [], []
    for s in range(n_sources):
        base = [rng.choice(WORDS) for _ in range(rng.randint(5, 10))]
        cands = []
        for _ in range(n):
            words = list(base)
            for _ in range(rng.randint(0, 3)):
                op, k = rng.random(), rng.randrange(len(words))
                if op < 0.4:
                    words[k] = rng.choice(WORDS)
                elif op < 0.7 and len(words) > 3:
                    del words[k]
                else:
                    words.insert(k, rng.choice(WORDS))
            cands.append(" ".join(words))
        sources.append(f"Quelle {s}")
        lists.append(cands)
    return sources, lists


def mbrs_choice(metric, hyps: list[str], source: str | None = None) -> int:
    decoder = mbrs_decoders.DecoderMBR(mbrs_decoders.DecoderMBR.Config(), metric)
    return int(decoder.decode(hyps, hyps, source=source, nbest=1).idx[0])


def test_polyjudge_mbr_with_chrf_chooses_what_mbrs_decoder_mbr_chooses():
    sources, lists = nbest_lists()
    ours = rerank(sources, lists, method="mbr", utility="chrf")
    chrf = mbrs_metrics.MetricChrF(mbrs_metrics.MetricChrF.Config())
    theirs = [mbrs_choice(chrf, hyps) for hyps in lists]
    assert any(len(set(c)) < len(c) for c in lists)  # repeated candidates are part of the check
    # the chosen texts are equal (a tie between two copies of one text may pick either copy)
    assert [c.translation for c in ours.choices] == [hyps[k] for hyps, k in zip(lists, theirs)]
    # a text that occurs once is the same position; of several copies polyjudge takes the first (its tie rule)
    for c, hyps, k in zip(ours.choices, lists, theirs):
        assert c.chosen == (k if hyps.count(hyps[k]) == 1 else hyps.index(hyps[k]))


def test_chrf_through_the_adapter_is_mbrs_chrf_in_decoder_mbr():
    _, lists = nbest_lists(n_sources=15, n=6, seed=11)
    ours = PolyjudgeMetric(PolyjudgeMetric.Config(utility="chrf"))
    chrf = mbrs_metrics.MetricChrF(mbrs_metrics.MetricChrF.Config())
    for hyps in lists:
        assert ours.pairwise_scores(hyps, hyps).tolist() == chrf.pairwise_scores(hyps, hyps).tolist()  # float32 both
        assert hyps[mbrs_choice(ours, hyps)] == hyps[mbrs_choice(chrf, hyps)]


ANSWER = re.compile(r"^English translation: (.*)$", re.M)
REFERENCE = re.compile(r"^English reference: (.*)$", re.M)


def overlap(body) -> str:
    user = body["messages"][-1]["content"]
    hyp, ref = set(ANSWER.search(user).group(1).split()), REFERENCE.search(user)
    other = set(ref.group(1).split()) if ref else set(WORDS[:6])
    return json.dumps({"score": round(100 * len(hyp & other) / max(1, len(hyp | other)))})


def test_a_polyjudge_judge_is_a_one_line_swap_in_decoder_mbr(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    hyps = ["the cat sat on the mat", "a cat sat on a mat", "the cat sat on the mat", "dogs run near rivers"]
    with ScriptedServer(overlap) as srv:
        judge = JudgeConfig(protocol="da", judges=(f"openai:m@{srv.base_url}",), src_lang="de", tgt_lang="en",
                            retry=RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.02))
        metric = PolyjudgeMetric(PolyjudgeMetric.Config(judge=judge, out=str(tmp_path / "run")))
        out = mbrs_decoders.DecoderMBR(mbrs_decoders.DecoderMBR.Config(), metric).decode(
            hyps, hyps, source="Die Katze sass auf der Matte.", nbest=1)
        sent = len(srv.completed)
        with pytest.raises(ValueError, match="source"):
            metric.pairwise_scores(hyps, hyps)
    assert out.sentence[0] == "the cat sat on the mat"
    assert sent == 3 * 3  # 3 distinct texts: every (hyp, ref) text pair judged once, the diagonal included
    assert (tmp_path / "run" / "segments.tsv").is_file()


def test_a_polyjudge_judge_reranks_in_decoder_rerank(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    hyps = ["big red tree", "the a cat dog sat on", "the cat", "the a cat dog sat on"]
    with ScriptedServer(overlap) as srv:
        judge = JudgeConfig(protocol="da", judges=(f"openai:m@{srv.base_url}",), src_lang="de", tgt_lang="en")
        metric = PolyjudgeQEMetric(PolyjudgeQEMetric.Config(judge=judge))
        out = mbrs_decoders.DecoderRerank(mbrs_decoders.DecoderRerank.Config(), metric).decode(hyps, "Quelle", nbest=1)
        sent = len(srv.completed)
    assert out.sentence[0] == "the a cat dog sat on" and sent == 3


# ../shared beside the clone (CI), or beside the folder of worktrees (a helper's worktree)
TED = next((p for p in (root / "shared" / "data" / "wmt-mqm" / "ted" / "ende" / "mqm_ted_ende.tsv"
                        for root in (Path(__file__).resolve().parents[3], Path(__file__).resolve().parents[4]))
            if p.is_file()), Path("../shared/data/wmt-mqm/ted/ende/mqm_ted_ende.tsv"))


def ted_lists(n_segments: int = 60) -> list[list[str]]:
    """The WMT21 TED en-de systems' translations of the first segments (the human reference left out)."""
    from polyjudge.data.readers import read_items

    groups: dict[str, dict[str, str]] = {}
    for it in read_items(TED, src_lang="en", tgt_lang="de"):
        if it.system != "ref" and it.seg_id is not None:
            groups.setdefault(it.seg_id, {})[it.system or ""] = it.tgt
    segs = sorted(groups, key=int)[:n_segments]
    return [[groups[s][name] for name in sorted(groups[s])] for s in segs]


@pytest.mark.skipif(not TED.is_file(), reason="the shared WMT MQM data (../shared/data) is absent")
def test_real_system_outputs_get_the_choices_of_mbrs():
    lists = ted_lists()
    ours = rerank([f"s{k}" for k in range(len(lists))], lists, method="mbr", utility="chrf")
    chrf = mbrs_metrics.MetricChrF(mbrs_metrics.MetricChrF.Config())
    theirs = [mbrs_choice(chrf, hyps) for hyps in lists]
    assert [c.translation for c in ours.choices] == [hyps[k] for hyps, k in zip(lists, theirs)]


def test_mbrs_pruning_decoder_takes_the_adapter_too():
    _, lists = nbest_lists(n_sources=10, n=20, seed=5)
    cfg = mbrs_decoders.DecoderPruningMBR.Config(sampling_scheduler=[4, 8, 20])
    ours = PolyjudgeMetric(PolyjudgeMetric.Config(utility="chrf"))
    chrf = mbrs_metrics.MetricChrF(mbrs_metrics.MetricChrF.Config())
    for hyps in lists:
        a = mbrs_decoders.DecoderPruningMBR(cfg, ours).decode(hyps, hyps, nbest=1)
        b = mbrs_decoders.DecoderPruningMBR(cfg, chrf).decode(hyps, hyps, nbest=1)
        assert a.sentence == b.sentence
