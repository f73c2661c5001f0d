"""polyjudge.api.rerank against the scripted server: QE and MBR choices, ties, requests with identical
candidates and symmetric utilities, the dry run's price, the spending cap and the held-out guard."""

from __future__ import annotations

import json
import re

import pytest

from polyjudge.api import BudgetExceeded, InputError, JudgeConfig, ModelPrice, RerankConfig, rerank, rerank_estimate
from polyjudge.engine import RetryPolicy
from polyjudge.protocols.da import DirectAssessment
from polyjudge.protocols.registry import PROTOCOLS, register_protocol
from tests.helpers.openai_server import ScriptedServer

FAST_RETRY = RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.02, give_up_after_s=0.2)
TRANSLATION = re.compile(r"^English translation: (.*)$", re.M)
REFERENCE = re.compile(r"^English reference: (.*)$", re.M)


def quality(text: str) -> int:
    found = re.search(r"q=(\d+)", text)
    assert found, text
    return int(found.group(1))


def qe_responder(body) -> str:
    """Scores the translation's q=N."""
    return json.dumps({"score": quality(TRANSLATION.search(body["messages"][-1]["content"]).group(1))})


def mbr_responder(body) -> str:
    """100 minus the distance between the translation's and the reference's q=N (symmetric)."""
    user = body["messages"][-1]["content"]
    hyp, ref = TRANSLATION.search(user).group(1), REFERENCE.search(user).group(1)
    return json.dumps({"score": 100 - abs(quality(hyp) - quality(ref))})


def judged(srv) -> list[tuple[str, str | None]]:
    out = []
    for body in srv.completed:
        user = body["messages"][-1]["content"]
        ref = REFERENCE.search(user)
        out.append((TRANSLATION.search(user).group(1), ref.group(1) if ref else None))
    return out


def judge_for(srv, **kw) -> JudgeConfig:
    kw.setdefault("retry", FAST_RETRY)
    return JudgeConfig(protocol=kw.pop("protocol", "da"), judges=(f"openai:m@{srv.base_url}",), src_lang="de",
                       tgt_lang="en", **kw)


SOURCES = ["Quelle eins.", "Quelle zwei."]
CANDIDATES = [["one q=40", "one q=90", "one q=70", "one q=90 again"],
              ["two q=55", "two q=55", "two q=30"]]


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")


def test_qe_chooses_the_highest_score_and_the_first_on_a_tie(tmp_path):
    with ScriptedServer(qe_responder) as srv:
        res = rerank(SOURCES, CANDIDATES, judge=judge_for(srv), method="qe", out=tmp_path / "out")
    first, second = res.choices
    assert (first.chosen, first.score, first.translation) == (1, 90.0, "one q=90")  # q=90 twice: the first wins
    assert first.scores == (40.0, 90.0, 70.0, 90.0)
    assert (second.chosen, second.score) == (0, 55.0)  # two identical candidates tie: the first position
    # identical candidates are judged once: 4 + 2 distinct texts
    assert len(srv.completed) == 6 and sorted(judged(srv)) == sorted(
        {(c, None) for cands in CANDIDATES for c in cands})
    assert res.requests == 6 and res.requests_full == 7
    rows = [json.loads(line) for line in (tmp_path / "out" / "chosen.jsonl").read_text().splitlines()]
    assert [(r["chosen"], r["translation"], r["score"]) for r in rows] == [(2, "one q=90", 90.0), (1, "two q=55", 55.0)]
    summary = json.loads((tmp_path / "out" / "rerank.json").read_text())
    assert summary["requests"] == 6 and summary["gains"][0]["gain"] == pytest.approx((90 + 55) / 2 - (40 + 55) / 2)
    assert (tmp_path / "out" / "run" / "segments.tsv").is_file()


def test_a_rerun_resumes_from_the_run_directory(tmp_path):
    with ScriptedServer(qe_responder) as srv:
        rerank(SOURCES, CANDIDATES, judge=judge_for(srv), out=tmp_path / "out")
        again = rerank(SOURCES, CANDIDATES, judge=judge_for(srv), out=tmp_path / "out")
    assert len(srv.completed) == 6 and again.choices[0].chosen == 1


def test_mbr_judges_every_ordered_pair_of_distinct_texts_once(tmp_path):
    cands = [["a q=10", "b q=50", "a q=10", "c q=60", "d q=95"]]
    with ScriptedServer(mbr_responder) as srv:
        res = rerank(["Quelle."], cands, judge=judge_for(srv), method="mbr", out=tmp_path / "out")
    sent = judged(srv)
    # 5 candidates, one repeated: 4 distinct texts -> 4*3 ordered pairs + the repeated text against itself
    assert len(sent) == len(set(sent)) == 13 == res.requests
    assert ("a q=10", "a q=10") in sent and not any(h == r for h, r in sent if h != "a q=10")
    c = res.choices[0]
    # expected utility of b (q=50) over the others a, a, c, d: 100 - (40+40+10+45)/4
    assert c.scores[1] == pytest.approx(100 - (40 + 40 + 10 + 45) / 4)
    assert c.chosen == 1 and c.matrix[1][3] == 90.0 and c.matrix[0][2] == 100.0 and c.matrix[0][0] is None
    lines = [json.loads(x) for x in (tmp_path / "out" / "scores.jsonl").read_text().splitlines()]
    assert lines[0]["matrix"][1][3] == 90.0 and len(lines[0]["matrix"]) == 5


@pytest.fixture()
def symmetric_da(monkeypatch):
    PROTOCOLS.names()
    monkeypatch.setattr(PROTOCOLS, "_entries", dict(PROTOCOLS._entries))

    @register_protocol()
    class SymmetricDA(DirectAssessment):
        """Test protocol: DA whose judge is told the two texts are interchangeable."""

        name = "test-symmetric-da"
        symmetric_reference = True

    return SymmetricDA


def test_a_symmetric_utility_is_judged_once_per_pair(tmp_path, symmetric_da):
    cands = [[f"t{k} q={q}" for k, q in enumerate((10, 50, 60, 95, 20, 55))]]
    with ScriptedServer(mbr_responder) as srv:
        sym = rerank(["Quelle."], cands, judge=judge_for(srv, protocol="test-symmetric-da"), method="mbr",
                     out=tmp_path / "sym")
        n_sym = len(srv.completed)
        plain = rerank(["Quelle."], cands, judge=judge_for(srv, use_cache=False), method="mbr",
                       out=tmp_path / "plain")  # the shared cache would answer the same prompts
        n_plain = len(srv.completed) - n_sym
    assert (n_sym, n_plain) == (15, 30) == (sym.requests, plain.requests)  # N(N-1)/2 against N(N-1)
    assert sym.choices[0].chosen == plain.choices[0].chosen == 1  # the same utilities: the same choice
    assert sym.choices[0].scores == pytest.approx(plain.choices[0].scores)


def test_pruning_sends_fewer_requests_and_keeps_a_clear_winner(tmp_path):
    qs = [50, 52, 48, 51, 5, 95, 1, 99, 49, 53, 2, 97]
    cands = [[f"t{k} q={q}" for k, q in enumerate(qs)]]
    with ScriptedServer(mbr_responder) as srv:
        full = rerank(["Quelle."], cands, judge=judge_for(srv), method="mbr")
        n_full = len(srv.completed)
        pruned = rerank(["Quelle."], cands, judge=judge_for(srv, use_cache=False), method="mbr", prune=True,
                        prune_schedule=(4, 8))
        n_pruned = len(srv.completed) - n_full
    assert n_full == 12 * 11 and n_pruned < n_full and pruned.requests == n_pruned
    assert pruned.choices[0].chosen == full.choices[0].chosen
    assert pruned.choices[0].pruned  # the outliers were dropped


def test_the_dry_run_prices_the_full_matrix_and_sends_nothing(tmp_path):
    prices = {"m": ModelPrice(1000.0, 1000.0)}
    with ScriptedServer(mbr_responder) as srv:
        est = rerank_estimate(SOURCES, CANDIDATES, judge=judge_for(srv, prices=prices), method="mbr", prune=True)
        qe = rerank_estimate(SOURCES, CANDIDATES, judge=judge_for(srv, prices=prices), method="qe")
    assert srv.completed == [] and not (tmp_path / "out").exists()
    # source 1: 4 distinct texts -> 4*3; source 2: 2 distinct of 3 (one repeated) -> 2*1 + the repeated one's self pair
    assert est.per_source == (12, 3) and est.requests == 15 == est.judging.requests_to_send
    assert est.judging.cost_usd > 0 and qe.requests == 6 and qe.per_source == (4, 2)
    text = est.describe()
    assert "N²" in text and "N(N-1)" in text and "upper bound" in text


def test_the_spending_cap_holds(tmp_path):
    cands = [[f"t{k} q={q}" for k, q in enumerate((10, 50, 60, 95, 20, 55))] for _ in range(3)]
    price = ModelPrice(1000.0, 1000.0)  # about a tenth of a dollar per request
    with ScriptedServer(mbr_responder) as srv:
        with pytest.raises(BudgetExceeded) as exc:
            rerank(["Quelle A.", "Quelle B.", "Quelle C."], cands,
                   judge=judge_for(srv, prices={"m": price}, max_cost=0.5, concurrency=1), method="mbr",
                   out=tmp_path / "out")
        sent = len(srv.completed)
        assert 0 < sent < 90 and exc.value.spent <= 0.5
        assert json.loads((tmp_path / "out" / "rerank.json").read_text())["status"] == "incomplete"
        done = rerank(["Quelle A.", "Quelle B.", "Quelle C."], cands,
                      judge=judge_for(srv, prices={"m": price}, max_cost=100.0), method="mbr", out=tmp_path / "out")
        bodies = [b["messages"][-1]["content"] for b in srv.completed]
    assert len(bodies) == len(set(bodies)) == 90  # resumed: nothing paid for twice
    assert done.requests == 90 and "status" not in json.loads((tmp_path / "out" / "rerank.json").read_text())


def test_the_spending_cap_holds_across_pruning_rounds_without_a_run_directory():
    qs = [50, 52, 48, 51, 5, 95, 1, 99, 49, 53, 2, 97]
    cands = [[f"t{k} q={q}" for k, q in enumerate(qs)]]
    price = ModelPrice(1000.0, 1000.0)
    with ScriptedServer(mbr_responder) as srv:
        with pytest.raises(BudgetExceeded):
            rerank(["Quelle."], cands, judge=judge_for(srv, prices={"m": price}, max_cost=6.0, concurrency=1,
                                                       use_cache=False),
                   method="mbr", prune=True, prune_schedule=(4, 8))
        billed = sum(sum(len(m["content"].split()) for m in b["messages"]) + len(mbr_responder(b).split())
                     for b in srv.completed) * 1000 / 1e6
        sent = len(srv.completed)
    assert sent > 4 * 11 and billed <= 6.0  # the first round (4 references) was paid, the cap still held


def test_the_held_out_judge_scores_the_choice_and_must_differ(tmp_path):
    def held_out(body):  # a judge that prefers the opposite of the choosing judge
        return json.dumps({"score": 100 - quality(TRANSLATION.search(body["messages"][-1]["content"]).group(1))})

    with ScriptedServer(qe_responder) as srv, ScriptedServer(held_out) as other:
        res = rerank(SOURCES, CANDIDATES, judge=judge_for(srv), method="qe", out=tmp_path / "out",
                     held_out=f"openai:m@{other.base_url}")
        with pytest.raises(InputError, match="self-reward"):
            rerank(SOURCES, CANDIDATES, judge=judge_for(srv), held_out=f"openai:m@{srv.base_url}")
    own, held = res.gains
    assert not own.held_out and own.gain == pytest.approx(25.0)
    assert held.held_out and held.gain == pytest.approx(-25.0)  # the held-out judge disagrees: shown, not hidden
    assert len(other.completed) == 3  # source 1: chosen + first; source 2: the first is the choice
    assert "held out" in res.to_text() and "self-reward" in res.to_text()
    assert (tmp_path / "out" / "held-out" / "segments.tsv").is_file()


def test_chrf_against_references_is_the_held_out_check(tmp_path):
    refs = tmp_path / "refs.txt"
    refs.write_text("one q=40\ntwo q=55\n", encoding="utf-8")
    with ScriptedServer(qe_responder) as srv:
        res = rerank(SOURCES, CANDIDATES, RerankConfig(judge=judge_for(srv), references=str(refs)))
    chrf = res.gains[-1]
    assert chrf.scorer == "chrF vs references" and chrf.held_out and chrf.baseline == pytest.approx(100.0)
    assert chrf.chosen < 100.0 and chrf.gain < 0


@pytest.mark.parametrize(("settings", "match"), [
    ({"method": "mbr", "judge": JudgeConfig(protocol="mqm")}, "never shows the judge a reference"),
    ({"method": "qe", "judge": JudgeConfig(protocol="mqm", protocol_options={"with_reference": "true"})},
     "reference-free"),
    ({"method": "qe", "judge": JudgeConfig(protocol="pairwise")}, "compares two candidates"),
    ({"method": "qe", "utility": "chrf"}, "MBR utility"),
    ({"method": "qe", "prune": True}, "pruning applies to MBR"),
    ({"method": "best"}, "unknown method"),
])
def test_settings_reranking_cannot_run_with_are_input_errors(settings, match):
    with pytest.raises(InputError, match=match):
        rerank(SOURCES, CANDIDATES, **settings)


def test_bad_candidate_lists_are_input_errors():
    with pytest.raises(InputError, match="2 sources but 1 candidate lists"):
        rerank(SOURCES, [["x"]], utility="chrf", method="mbr")
    with pytest.raises(InputError, match="non-empty list"):
        rerank(["s"], [[]], utility="chrf", method="mbr")


def test_batches_and_the_shared_cache_apply(tmp_path):
    from polyjudge.engine.batches import BatchOptions

    fast = BatchOptions(poll_initial_s=0.01, poll_max_s=0.05)
    with ScriptedServer(qe_responder) as srv:
        batched = rerank(SOURCES, CANDIDATES, judge=judge_for(srv, batch=True, batch_options=fast),
                         out=tmp_path / "batched")
        assert len(srv.batch_lines) == 6 and srv.completed == []  # the six requests went as one batch
        again = rerank(SOURCES, CANDIDATES, judge=judge_for(srv))  # no run directory: the shared cache answers
        assert srv.completed == [] and len(srv.batch_lines) == 6
    assert [c.chosen for c in batched.choices] == [c.chosen for c in again.choices] == [1, 0]


def test_the_metric_objects_rerank_judges_with_that_judge_inside_a_running_loop():
    """Judge.rerank (issue 50 item 5): the notebook metric object chooses as polyjudge.rerank does, with its
    own settings, also when called from a running event loop (a Jupyter cell); its estimate sends nothing."""
    import asyncio

    from polyjudge.api import Judge

    with ScriptedServer(mbr_responder) as srv:
        metric = Judge(protocol="da", judge=f"openai:m@{srv.base_url}", lp="de-en", progress=False)
        estimate = metric.rerank_estimate(SOURCES, CANDIDATES, method="mbr")
        assert srv.completed == []

        async def in_a_cell():
            return metric.rerank(SOURCES, CANDIDATES, method="mbr")

        res = asyncio.run(in_a_cell())
        sent = len(srv.completed)
        plain = rerank(SOURCES, CANDIDATES, judge=judge_for(srv, use_cache=False), method="mbr")
    assert [c.chosen for c in res.choices] == [c.chosen for c in plain.choices]
    assert [c.scores for c in res.choices] == [c.scores for c in plain.choices]
    assert estimate.requests == sent == res.requests > 0
    with pytest.raises(TypeError, match="prune_schedul"):
        metric.rerank(SOURCES, CANDIDATES, method="mbr", prune_schedul=(2,))
