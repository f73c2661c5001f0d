"""A judge's settled request form is remembered in the shared response cache: a later run of the same
judge and request form against the same server holds no request while it learns it again (issue 35).

The hold is seen at the server: while a judge's form is unsettled, its first request goes alone and
the others wait for its answer, so exactly one request arrives before the first answer leaves.
"""

import json
import threading
import time

from polyjudge.api import JudgeConfig, judge
from polyjudge.cache import ResponseCache
from tests.backends.test_openai_reasoning import o_series
from tests.helpers.openai_server import Reply, ScriptedServer

DELAY_S = 0.3  # under adaptation.HOLD_S: the first answer comes before the hold would end by itself
# The servers here answer a GET (the slots question) in 60 ms, as a server across a network might: the hold
# lasts the whole HOLD_S (ten such answers), so it is seen at the server (a server that answers at once
# holds for MIN_HOLD_S: tests/backends/test_adaptation.py).
FAR = {"get_latency_s": 0.06}


class Timed:
    """Answers ``{"score": 70}`` (or as an o-series model, with ``reasoning``) after DELAY_S; notes when
    each request arrived and when the first answer left, and counts the 400 answers."""

    def __init__(self, reasoning=False):
        self.reasoning, self.lock = reasoning, threading.Lock()
        self.arrived, self.first_answer, self.rejected = [], None, 0

    def __call__(self, body):
        with self.lock:
            self.arrived.append(time.monotonic())
        reply = o_series(body) if self.reasoning else Reply(content=json.dumps({"score": 70}))
        if reply.status == 400:
            with self.lock:
                self.rejected += 1
            return reply
        time.sleep(DELAY_S)
        with self.lock:
            if self.first_answer is None:
                self.first_answer = time.monotonic()
        return reply

    def before_first_answer(self):
        return sum(t < self.first_answer for t in self.arrived)


def _items(tmp_path, name, n=16):
    path = tmp_path / f"{name}.jsonl"
    path.write_text("".join(json.dumps({"src_lang": "en", "tgt_lang": "de", "src": f"{name} s{i}",
                                        "tgt": f"{name} t{i}", "seg_id": str(i)}) + "\n" for i in range(n)),
                    encoding="utf-8")
    return path


def test_a_second_run_of_a_judge_sends_its_requests_at_once(tmp_path):
    cache = tmp_path / "cache"
    with ScriptedServer(first := Timed(), **FAR) as srv:
        url = srv.base_url
        judge(_items(tmp_path, "a"), JudgeConfig(protocol="da", concurrency=8, cache_path=str(cache),
                                                 judges=(f"openai:m@{url}",)), out=tmp_path / "a")
        assert first.before_first_answer() == 1  # the form is learned: the first request went alone
        second = Timed()
        srv.responder = second
        judge(_items(tmp_path, "b"), JudgeConfig(protocol="da", concurrency=8, cache_path=str(cache),
                                                 judges=(f"openai:m@{url}",)), out=tmp_path / "b")
    assert second.before_first_answer() == 8  # the remembered form: eight at once, none held
    with ResponseCache(cache) as kept:
        assert kept.settled_form(f"openai@{url}", "m", "") == {}


def test_a_remembered_adaptation_costs_no_rejected_request(tmp_path):
    cache = tmp_path / "cache"
    with ScriptedServer(first := Timed(reasoning=True), **FAR) as srv:
        url = srv.base_url
        judge(_items(tmp_path, "a"), JudgeConfig(protocol="da", concurrency=8, cache_path=str(cache),
                                                 judges=(f"openai:thinker@{url}",)), out=tmp_path / "a")
        assert first.rejected == 2  # max_tokens, then temperature
        srv.requests.clear()
        second = Timed(reasoning=True)
        srv.responder = second
        judge(_items(tmp_path, "b"), JudgeConfig(protocol="da", concurrency=8, cache_path=str(cache),
                                                 judges=(f"openai:thinker@{url}",)), out=tmp_path / "b")
        sent = list(srv.requests)
    assert second.rejected == 0 and second.before_first_answer() == 8
    assert all("max_completion_tokens" in r and "temperature" not in r for r in sent)
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert set(manifest["judges"][0]["adaptations"]) == {"max_tokens", "temperature"}


def test_another_request_form_or_server_learns_its_own_form(tmp_path):
    cache = tmp_path / "cache"
    with ScriptedServer(Timed(), **FAR) as srv:
        judge(_items(tmp_path, "a"), JudgeConfig(protocol="da", concurrency=8, cache_path=str(cache),
                                                 judges=(f"openai:m@{srv.base_url}",)), out=tmp_path / "a")
        other_form = Timed()
        srv.responder = other_form  # the same server, the judge asked for requests without a schema
        judge(_items(tmp_path, "b"), JudgeConfig(protocol="da", concurrency=8, cache_path=str(cache),
                                                 judges=(f"openai:m?structured=none@{srv.base_url}",)),
              out=tmp_path / "b")
    assert other_form.before_first_answer() == 1
    with ScriptedServer(other_server := Timed(), **FAR) as srv:  # the same judge and form on another server
        judge(_items(tmp_path, "c"), JudgeConfig(protocol="da", concurrency=8, cache_path=str(cache),
                                                 judges=(f"openai:m@{srv.base_url}",)), out=tmp_path / "c")
    assert other_server.before_first_answer() == 1


def test_a_run_that_may_not_read_the_cache_learns_the_form_again(tmp_path):
    cache = tmp_path / "cache"
    with ScriptedServer(Timed(), **FAR) as srv:
        judge(_items(tmp_path, "a"), JudgeConfig(protocol="da", concurrency=8, cache_path=str(cache),
                                                 judges=(f"openai:m@{srv.base_url}",)), out=tmp_path / "a")
        recording = Timed()
        srv.responder = recording
        judge(_items(tmp_path, "b"), JudgeConfig(protocol="da", concurrency=8, cache_path=str(cache),
                                                 record=str(tmp_path / "rec.jsonl"),
                                                 judges=(f"openai:m@{srv.base_url}",)), out=tmp_path / "b")
    assert recording.before_first_answer() == 1
