import json

import pytest

from polyjudge.backends.openai import OpenAIBackend
from polyjudge.backends.replay import RecordingBackend, ReplayBackend
from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from polyjudge.engine import run
from polyjudge.protocols import get_protocol
from tests.helpers.openai_server import ScriptedServer


def test_record_then_replay_rescores_exactly(tmp_path):
    items = [Item(f"s{i}", f"t{i}", seg_id=str(i), system="X") for i in range(4)]
    with ScriptedServer(lambda b: json.dumps({"score": 10 * b["seed"] + len(b["messages"][-1]["content"]) % 7})) as srv:
        rec = RecordingBackend(OpenAIBackend("gpt-x", srv.base_url), tmp_path / "rec.jsonl")
        live = run(items, get_protocol("da"), [rec], runs=3, temperature=0.5)
    replayed = run(items, get_protocol("da"), [ReplayBackend(tmp_path / "rec.jsonl")], runs=3, temperature=0.5)
    assert replayed.judges == ["gpt-x"]
    assert [j.raw_text for j in replayed.judgments] == [j.raw_text for j in live.judgments]
    assert replayed.segment_scores() == live.segment_scores()
    # a request that was never recorded fails explicitly instead of inventing an answer
    other = run(items[:1], get_protocol("da"), [ReplayBackend(tmp_path / "rec.jsonl")], runs=4, temperature=0.5)
    assert [j.status for j in other.judgments] == ["ok", "ok", "ok", "request_failed"]


def test_bad_recording_names_the_line(tmp_path):
    p = tmp_path / "rec.jsonl"
    p.write_text('{"model": "m", "request": {}, "response": {"text": "x"}}\n{"model": "m"}\n')
    with pytest.raises(InputError) as exc:
        ReplayBackend(p)
    assert exc.value.line == 2


def test_samples_logprobs_reasoning_and_token_details_survive_record_and_replay(tmp_path):
    import asyncio

    from polyjudge.data.chat import GenerateRequest, GenerateResult, Message, TokenLogprob, Usage

    answer = GenerateResult("80", "stop", Usage(10, 5, cached_prompt_tokens=4, reasoning_tokens=2), 0.1, "m",
                            choices=("80", "70"), choice_finish_reasons=("stop", "length"),
                            logprobs=(TokenLogprob("80", -0.2, (("80", -0.2), ("70", -1.9))),), reasoning="hmm")
    plain = GenerateResult("50", "stop", Usage(3, 1), 0.1, "m")

    class Fixed:
        model = "m"

        def __init__(self):
            self.answers = [answer, plain]

        async def generate(self, request):
            return self.answers.pop(0)

        async def aclose(self):
            return None

    req = GenerateRequest(messages=(Message("user", "a"),), n=2, top_logprobs=2)
    req2 = GenerateRequest(messages=(Message("user", "b"),))
    rec = RecordingBackend(Fixed(), tmp_path / "rec.jsonl")

    async def go(backend):
        try:
            return [await backend.generate(r) for r in (req, req2)]
        finally:
            await backend.aclose()
    asyncio.run(go(rec))
    lines = [json.loads(x) for x in (tmp_path / "rec.jsonl").read_text().splitlines()]
    # an ordinary answer keeps the recording form it always had
    assert lines[1]["response"] == {"text": "50", "finish_reason": "stop",
                                    "usage": {"prompt_tokens": 3, "completion_tokens": 1}, "latency_s": 0.1}
    got, got_plain = asyncio.run(go(ReplayBackend(tmp_path / "rec.jsonl")))
    assert (got.choices, got.choice_finish_reasons, got.logprobs, got.reasoning) == (
        answer.choices, answer.choice_finish_reasons, answer.logprobs, answer.reasoning)
    assert got.usage == answer.usage and got_plain.usage == plain.usage and got_plain.reasoning is None
