"""A server's body nested deeper than Python's JSON parser goes is a malformed answer, recorded as a failure
(issue 35 review): it used to escape as a RecursionError that stopped the run, and stopped it again at every
resume after paying for the answer once more."""

import json

import pytest

from polyjudge.api import JudgeConfig, judge
from polyjudge.backends.reported import server_json
from tests.engine.helpers import FAST_RETRY
from tests.helpers.openai_server import Reply, ScriptedServer

DEPTH = 200_000
DEEP_CHOICES = '{"choices": ' + "[" * DEPTH + "]" * DEPTH + "}"
DEEP_USAGE = ('{"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", '
              '"content": "{\\"score\\": 5}"}}], "usage": ' + '{"a": ' * DEPTH + "1" + "}" * DEPTH + "}")


@pytest.mark.parametrize("body", [DEEP_CHOICES, DEEP_USAGE], ids=["choices", "usage"])
def test_a_body_nested_too_deeply_is_a_recorded_failure(tmp_path, body):
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"src": "a", "tgt": "b", "src_lang": "en", "tgt_lang": "de"}) + "\n")
    with ScriptedServer(lambda b: Reply(raw_body=body)) as srv:
        config = JudgeConfig(protocol="da", runs=1, retry=FAST_RETRY, max_failure_rate=1.0,
                             judges=(f"openai:m@{srv.base_url}",))
        result = judge(str(items), config, out=tmp_path / "run")
        sent = len(srv.requests)
        judge(str(items), config, out=tmp_path / "run")  # a resume: it runs to its end as well
    assert sent == FAST_RETRY.max_attempts  # a malformed body is retried, as any malformed body is
    assert result.status_counts() == {"request_failed": 1}
    (reason,) = json.loads((tmp_path / "run" / "manifest.json").read_text())["failures"]
    assert reason == "request_failed: malformed response body from server (after 3 attempts)"


def test_server_json_reads_json_and_refuses_what_it_cannot():
    assert server_json(b'{"a": [1, 2]}') == {"a": [1, 2]}
    for raw in ("[" * DEPTH + "]" * DEPTH, "{", b"\xff"):
        with pytest.raises(ValueError):
            server_json(raw)
