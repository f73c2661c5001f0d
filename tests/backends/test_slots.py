"""Self-hosted servers are never sent more requests than they run at once, and re-sends count as retries.

The server here answers like llama.cpp: ``GET /props`` gives ``total_slots``
and the chat endpoint counts how many requests it holds at once.
"""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from polyjudge.api import JudgeConfig, judge
from polyjudge.backends.slots import props_url
from polyjudge.engine.errors import EndpointFailed
from polyjudge.engine.runner import RetryPolicy
from tests.backends.test_pool import dead_url

ANSWER = json.dumps({"id": "x", "object": "chat.completion", "model": "m",
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": '{"score": 70}'}}],
                     "usage": {"prompt_tokens": 5, "completion_tokens": 3}}).encode()


class LlamaLike:
    """A threaded server with ``total_slots`` (None: /props answers 404) and a fixed generation time."""

    def __init__(self, total_slots, delay_s=0.03):
        self.total_slots, self.delay_s = total_slots, delay_s
        self.in_flight = self.peak = self.chats = self.props = 0
        self.lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802
                with owner.lock:
                    owner.props += 1
                if self.path == "/props" and owner.total_slots is not None:
                    self._send(200, json.dumps({"total_slots": owner.total_slots, "model_path": "m.gguf"}).encode())
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers["Content-Length"]))
                with owner.lock:
                    owner.chats += 1
                    owner.in_flight += 1
                    owner.peak = max(owner.peak, owner.in_flight)
                time.sleep(owner.delay_s)
                with owner.lock:
                    owner.in_flight -= 1
                self._send(200, ANSWER)

            def _send(self, status, body):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda *a: None  # a client that gave up on a slow answer: not news
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def _items(tmp_path, n):
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"src_lang": "en", "tgt_lang": "de",
                                        "src": f"s{i}", "tgt": f"t{i}", "seg_id": str(i)}) + "\n"
                            for i in range(n)), encoding="utf-8")
    return path


def _run(tmp_path, judge_spec, n=24, concurrency=16, **config):
    return judge(_items(tmp_path, n), JudgeConfig(protocol="da", judges=(judge_spec,), concurrency=concurrency,
                                                  **config), out=tmp_path / "run")


def test_props_url_sits_beside_the_v1_base():
    assert props_url("http://h:8080/v1") == "http://h:8080/props" and props_url("http://h/x/") == "http://h/x/props"


def test_a_llama_cpp_server_gets_no_more_requests_than_its_slots(tmp_path):
    srv = LlamaLike(total_slots=2)
    try:
        result = _run(tmp_path, f"openai:m@{srv.base_url}")
    finally:
        srv.close()
    assert result.status_counts() == {"ok": 24}
    assert srv.peak == 2 and srv.props == 1 and srv.chats == 24  # asked once, never more than 2 at once


@pytest.mark.parametrize("total_slots", [None, 8])
def test_per_server_caps_a_single_server_and_wins_over_the_props(tmp_path, total_slots):
    srv = LlamaLike(total_slots=total_slots)
    try:
        _run(tmp_path, f"openai:m?per_server=3@{srv.base_url}")
    finally:
        srv.close()
    assert srv.peak <= 3 and srv.props == 0  # given: the server is not asked


def test_a_pool_asks_every_server_and_keeps_each_within_its_slots(tmp_path):
    one, two = LlamaLike(total_slots=1), LlamaLike(total_slots=3)
    try:
        result = _run(tmp_path, f"openai:m@{one.base_url},{two.base_url}", n=32)
    finally:
        one.close()
        two.close()
    assert result.status_counts() == {"ok": 32}
    assert one.peak == 1 and two.peak <= 3 and one.props == two.props == 1
    assert two.chats > one.chats  # the server with more slots took more


def test_resends_to_another_server_of_a_pool_are_counted_as_retries(tmp_path):
    live = LlamaLike(total_slots=None)
    try:
        _run(tmp_path, f"openai:m@{dead_url()},{live.base_url}", n=20, concurrency=4,
             retry=RetryPolicy(max_attempts=3, base_delay_s=0.01))
    finally:
        live.close()
    counts = json.loads((tmp_path / "run" / "manifest.json").read_text())["counts"]
    refused = json.loads((tmp_path / "run" / "manifest.json").read_text())["judges"][0]["servers"]
    assert len(refused) == 2 and live.chats == 20
    assert counts["retries"] >= 1  # every request first sent to the dead server was sent again


def test_a_pool_with_a_dead_server_and_a_slow_one_is_too_slow_not_unreachable(tmp_path):
    slow = LlamaLike(total_slots=None, delay_s=1.0)
    try:
        with pytest.raises(EndpointFailed) as exc:
            _run(tmp_path, f"openai:m@{dead_url()},{slow.base_url}", n=30, concurrency=2, timeout=0.2,
                 retry=RetryPolicy(max_attempts=2, base_delay_s=0.01, give_up_after_s=0.0))
    finally:
        slow.close()
    assert str(exc.value).startswith("the endpoint is too slow: timeout"), str(exc.value)
