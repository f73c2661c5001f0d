"""What a run records about its judges: backend adaptations, requests per pooled server, the cached price."""

import json

import pytest

from polyjudge.api import JudgeConfig, judge
from polyjudge.cli.main import main
from tests.backends.test_openai_reasoning import o_series
from tests.engine.helpers import FAST_RETRY, responder
from tests.engine.test_scale import documents
from tests.helpers.openai_server import ScriptedServer

# input, output, cached input (USD per million tokens), batch discount
PRICE = (1.0, 4.0, 0.25, 0.5)


def test_a_reasoning_model_s_adaptations_are_in_the_manifest_and_signature_across_sessions(tmp_path):
    items = documents(n_docs=1, segments=2, systems=("A",))
    with ScriptedServer(o_series) as srv:
        cfg = JudgeConfig(judges=(f"openai:o4-mini@{srv.base_url}",), retry=FAST_RETRY, runs=1,
                          prices={"o4-mini": PRICE})
        first = judge(items, cfg, out=tmp_path / "run")
        again = judge(items, cfg, out=tmp_path / "run")  # nothing to send: the backend adapts to nothing now
    for result in (first, again):
        entry = result.manifest.judges[0]
        assert set(entry["adaptations"]) == {"max_tokens", "temperature"}
        assert "|adapted:o4-mini=max_tokens,temperature|" in result.manifest.signature
        assert result.manifest.counts["status_ok"] == 2
    assert again.manifest.counts["sent_this_session"] == 0
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["judges"][0]["adaptations"] == first.manifest.judges[0]["adaptations"]
    # every answer: 120 prompt tokens of which 64 cached, 400 completion tokens (384 of them reasoning)
    # reported for a request whose max_completion_tokens is 24: accounted at the 24 the request allows
    # (server numbers are data; engine.spend.vet_usage), and flagged in the manifest
    assert first.manifest.tokens == {"prompt": 240, "completion": 48, "cached_prompt": 128, "reasoning": 48}
    assert first.manifest.unknown["usage_anomalies"]["requests"] == 2
    per_answer = ((120 - 64) * 1.0 + 64 * 0.25 + 24 * 4.0) / 1e6
    assert first.manifest.cost_usd == pytest.approx(2 * per_answer, abs=1e-9)
    assert first.manifest.cost_usd < 2 * (120 * 1.0 + 400 * 4.0) / 1e6  # cheaper than at the full input price
    assert again.manifest.cost_usd == first.manifest.cost_usd


def test_a_judge_that_adapted_nothing_keeps_its_signature_and_manifest(tmp_path):
    with ScriptedServer(responder) as srv:
        result = judge(documents(n_docs=1), JudgeConfig(judges=(f"openai:m@{srv.base_url}",), retry=FAST_RETRY),
                       out=tmp_path / "run")
    assert "adapted:" not in result.manifest.signature
    assert "adaptations" not in json.loads((tmp_path / "run" / "manifest.json").read_text())["judges"][0]


def test_the_summary_shows_requests_per_server_of_a_pool(tmp_path, capsys):
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps(it.to_dict()) + "\n" for it in documents(n_docs=2)))
    with ScriptedServer(responder) as a, ScriptedServer(responder) as b:
        with pytest.raises(SystemExit) as exc:
            main(["judge", str(data), "-o", str(tmp_path / "run"), "--runs", "2", "-c", "4",
                  "--judge", f"openai:m@{a.base_url},{b.base_url}"])
        sent = {a.base_url: len(a.requests), b.base_url: len(b.requests)}
    assert exc.value.code == 0
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if x.startswith("requests per server (m): "))
    shown = dict(part.rsplit(" ", 1) for part in line.split(": ", 1)[1].split(", "))
    assert {url: int(n) for url, n in shown.items()} == sent and sum(sent.values()) == 24


def test_a_single_server_prints_no_per_server_line(tmp_path, capsys):
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps(it.to_dict()) + "\n" for it in documents(n_docs=1)))
    with ScriptedServer(responder) as srv:
        with pytest.raises(SystemExit) as exc:
            main(["judge", str(data), "-o", str(tmp_path / "run"), "--judge", f"openai:m@{srv.base_url}"])
    assert exc.value.code == 0
    assert "requests per server" not in capsys.readouterr().err


def test_reasoning_effort_reaches_every_request_the_signature_and_the_cache_key(tmp_path):
    """--reasoning-effort is part of each request (an answer at another effort is another answer)."""
    items = documents(n_docs=1, segments=2, systems=("A",))
    with ScriptedServer(o_series) as srv:
        base = JudgeConfig(judges=(f"openai:o4-mini@{srv.base_url}",), retry=FAST_RETRY, runs=1)
        low = judge(items, base.replace(reasoning_effort="low"), out=tmp_path / "low")
        again = judge(items, base.replace(reasoning_effort="low"), out=tmp_path / "low")
        sent_low = [b.get("reasoning_effort") for b in srv.requests if "messages" in b]
        high = judge(items, base.replace(reasoning_effort="high"), out=tmp_path / "high")
    assert set(sent_low) == {"low"} and again.manifest.counts["sent_this_session"] == 0
    assert "|effort:low|" in low.manifest.signature and "|effort:high|" in high.manifest.signature
    assert high.manifest.counts["sent_this_session"] == 2
    none = JudgeConfig(judges=("openai:o4-mini@http://127.0.0.1:9/v1",))
    assert none.reasoning_effort is None


def test_token_probabilities_are_stored_once_and_read_back(tmp_path):
    """The store keeps an answer's logprobs beside its text, so a resumed run re-parses expected scores."""
    from polyjudge.data.chat import GenerateRequest, GenerateResult, Message, TokenLogprob
    from polyjudge.engine.store import AnswerKey, Store, logprobs_of

    tokens = (TokenLogprob("7", -0.1, (("7", -0.1), ("8", -2.5))), TokenLogprob("0", -0.01, ()))
    store = Store(tmp_path / "s.sqlite")
    store.put_prompt("h", GenerateRequest(messages=(Message("user", "x"),), top_logprobs=5))
    store.put_result(AnswerKey("k", "h", "m", 0), GenerateResult("70", "stop", logprobs=tokens), 1)
    store.put_result(AnswerKey("k2", "h", "m", 1), GenerateResult("70", "stop"), 1)
    store.close()
    reread = Store(tmp_path / "s.sqlite", readonly=True)
    got = reread.get_many(["k", "k2"])
    assert logprobs_of(got["k"].logprobs) == tokens
    assert got["k2"].logprobs is None and logprobs_of(None) == ()


def test_the_embedded_judge_uses_the_options_measured_best_for_it_unless_told_otherwise():
    from polyjudge.backends.models import DEFAULT_MODEL
    from polyjudge.engine.session import build_protocol

    assert dict(DEFAULT_MODEL.defaults.protocol_options) == {"score_mode": "expected"}
    assert build_protocol(JudgeConfig()).score_mode == "expected"  # `polyjudge demo`, `score`, bare `judge`
    assert build_protocol(JudgeConfig(protocol_options={"score_mode": "sample"})).score_mode == "sample"
    assert build_protocol(JudgeConfig(judges=("openai:m",))).score_mode == "sample"
    assert build_protocol(JudgeConfig(protocol="mqm")).signature_fields().get("scores") is None
