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
