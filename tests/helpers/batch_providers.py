"""The Batch API providers as the batch tests see them: one record per provider, one scaffolding.

Every batch test runs the same judging against a provider's scripted server
(``tests/helpers/openai_server.py``, ``tests/helpers/anthropic_server.py``);
what differs between providers (the server, the judge spec, how a failing
line is scripted, how a batch's size reads on the server) is a field of
:class:`BatchProvider`, so a test written once holds for every provider.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from polyjudge.api import JudgeConfig, ModelPrice
from polyjudge.backends.batch import BatchClient, batch_client_for
from polyjudge.backends.registry import BackendSettings, JudgeSpec
from polyjudge.data.records import Item
from tests.engine.conftest import da_score
from tests.engine.helpers import FAST_BATCH, FAST_RETRY
from tests.engine.test_kill_resume import free_port
from tests.engine.test_lock import wait_for_port
from tests.helpers.anthropic_server import AnthropicServer, MReply
from tests.helpers.openai_server import Reply, ScriptedServer

ROOT = Path(__file__).resolve().parents[2]


def _openai_sizes(srv: Any) -> list[int]:
    return [b["request_counts"]["total"] for b in srv.batches.values()]


def _openai_bytes(srv: Any) -> list[int]:
    return [len(srv.files[b["input_file_id"]]) for b in srv.batches.values()]


def _anthropic_sizes(srv: Any) -> list[int]:
    return [len(b["requests"]) for b in srv.batches.values()]


def _anthropic_bytes(srv: Any) -> list[int]:
    return [len(json.dumps({"requests": b["requests"]}, separators=(",", ":"))) for b in srv.batches.values()]


def _openai_statuses(srv: Any) -> list[str]:
    return [b["status"] for b in srv.batches.values()]


def _anthropic_statuses(srv: Any) -> list[str]:
    return [srv.get_batch(batch_id)[1]["processing_status"] for batch_id in srv.batches]


def _sent_as_openai_asks(srv: Any, model: str) -> bool:
    """Chat-completion lines in one batch with OpenAI's 24-hour completion window."""
    line = srv.batch_lines[0]
    windows = [b["completion_window"] for b in srv.batches.values()]
    return (line["method"] == "POST" and line["url"] == "/v1/chat/completions"
            and line["body"]["model"] == model and windows == ["24h"])


def _sent_as_anthropic_asks(srv: Any, model: str) -> bool:
    """Messages API bodies with a forced tool, every call carrying the API version."""
    params = srv.batch_lines[0]["params"]
    return (params["model"] == model and params["tool_choice"]["type"] == "tool" and params["max_tokens"] > 0
            and all(h.get("anthropic-version") for h in srv.headers_seen))


@dataclass(frozen=True)
class BatchProvider:
    """One provider's Batch API as its scripted server shows it."""

    name: str  # the backend, also the ``provider`` column of the store's batches
    model: str
    server: Callable[..., Any]  # ScriptedServer or AnthropicServer: (responder, **options)
    server_module: str  # where its ``serve_forever`` lives, for a server in another process
    ended: str  # the store's status of a batch that ended well
    failing: dict[str, Any]  # translation -> the reply that fails its lines once (retryable)
    retry_statuses: tuple[str, ...]  # the server's statuses of the first batch (with ``failing``) and the retry
    invalid: Any  # a reply no retry can fix
    invalid_errors: tuple[str, ...]  # what the judgment's error of an ``invalid`` line says
    max_bytes: int  # a byte limit a few of the six items' lines fit under, but not all
    batch_sizes: Callable[[Any], list[int]]  # requests of each batch the server holds
    batch_bytes: Callable[[Any], list[int]]  # bytes of each batch the server holds
    batch_statuses: Callable[[Any], list[str]]  # the server's status of each batch it holds
    sent_as_asked: Callable[[Any, str], bool]  # the batches on the server are as the provider's API asks
    # The runs' temperature: above 0 for a provider that takes no seed (Anthropic), whose two runs at 0 would be
    # one request judged once (engine.session.one_request_per_item); the requests stay the same for both runs.
    temperature: float = 0.0

    def __str__(self) -> str:
        return self.name

    @property
    def prices(self) -> dict[str, ModelPrice]:
        return {self.model: ModelPrice(1.0, 2.0, batch_discount=0.5)}

    def judge_spec(self, base_url: str) -> str:
        return f"{self.name}:{self.model}@{base_url}"

    def client(self, base_url: str) -> BatchClient:
        """The provider's batch client, built as ``--batch`` builds it."""
        return batch_client_for(JudgeSpec.parse(self.judge_spec(base_url)), BackendSettings())

    def config(self, srv: Any, **kw: Any) -> JudgeConfig:
        """A live run of two runs per item on ``srv``, retried fast."""
        kw.setdefault("retry", FAST_RETRY)
        kw.setdefault("runs", 2)
        kw.setdefault("temperature", self.temperature)
        return JudgeConfig(judges=(self.judge_spec(srv.base_url),), **kw)

    def batched(self, srv: Any, **kw: Any) -> JudgeConfig:
        """The same run through the provider's Batch API, polled fast."""
        kw.setdefault("batch_options", FAST_BATCH)
        return self.config(srv, batch=True, **kw)


OPENAI = BatchProvider(
    name="openai", model="m", server=ScriptedServer, server_module="tests.helpers.openai_server", ended="completed",
    failing={"A translation 1": Reply(status=500), "A translation 2": Reply(batch_error="batch_expired")},
    retry_statuses=("expired", "completed"),
    invalid=Reply(status=400), invalid_errors=("HTTP 400", "after 1 attempt"), max_bytes=3000,
    batch_sizes=_openai_sizes, batch_bytes=_openai_bytes, batch_statuses=_openai_statuses,
    sent_as_asked=_sent_as_openai_asks)
ANTHROPIC = BatchProvider(
    name="anthropic", model="claude-x", server=AnthropicServer, server_module="tests.helpers.anthropic_server",
    ended="ended", temperature=0.5,
    failing={"A translation 1": MReply(status=529), "A translation 2": MReply(batch_result="expired"),
             "B translation 1": MReply(batch_result="canceled")},
    retry_statuses=("ended", "ended"),
    invalid=MReply(status=400, error_message="bad thing"), invalid_errors=("invalid_request_error: bad thing",),
    max_bytes=4000, batch_sizes=_anthropic_sizes, batch_bytes=_anthropic_bytes, batch_statuses=_anthropic_statuses,
    sent_as_asked=_sent_as_anthropic_asks)
PROVIDERS = (OPENAI, ANTHROPIC)


def batch_items() -> list[Item]:
    """The engine tests' six items (two systems, three segments), which ``da_score`` judges."""
    return [Item(src=f"source {seg}", tgt=f"{system} translation {seg}", src_lang="en", tgt_lang="de",
                 doc_id="d1" if seg < 3 else "d2", seg_id=str(seg), system=system)
            for system in ("A", "B") for seg in range(1, 4)]


def da(body: dict[str, Any]) -> str:
    return json.dumps({"score": da_score(body)})


def user_text(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def fails_first(failing: dict[str, Any], times: int = 2) -> Callable[[dict[str, Any]], Any]:
    """A responder under which each listed translation gets its scripted reply ``times`` times
    (both runs of an item: the Messages API has no seed to tell them apart), then is answered."""
    seen: Counter[str] = Counter()

    def responder(body: dict[str, Any]) -> Any:
        for text, reply in failing.items():
            if text in user_text(body):
                seen[text] += 1
                if seen[text] <= times:
                    return reply
        return da(body)
    return responder


# ---------------------------------------------------------------------------- a run killed mid-batch

_SERVER = """
import sys
sys.path.insert(0, {root!r})
from tests.engine.helpers import responder
from {module} import serve_forever
serve_forever(responder, {port}, batch_delay_s=1.0, log_path={log!r})
"""

_JUDGE = """
import sys
from polyjudge.backends.batch import BatchLimits
from polyjudge.engine.batches import BatchOptions
from polyjudge.engine.session import JudgeConfig, judge
options = BatchOptions(poll_initial_s=0.05, poll_max_s=0.2, limits=BatchLimits(max_requests=10))
judge(sys.argv[1], JudgeConfig(judges=({spec!r},), runs=2, temperature={temperature!r}, batch=True,
                               batch_options=options), out=sys.argv[2])
"""


def logged(log: Path) -> list[dict[str, Any]]:
    """The server's log so far; a line still being written (no newline yet) is left for the next look."""
    text = log.read_text() if log.exists() else ""
    return [json.loads(x) for x in text[:text.rfind("\n") + 1].splitlines()]


def write_items(path: Path, n: int = 20) -> None:
    path.write_text("".join(json.dumps({"src": f"s{i}", "tgt": f"t{i}", "seg_id": str(i), "system": "X",
                                        "src_lang": "en", "tgt_lang": "de"}) + "\n"
                            for i in range(n)), encoding="utf-8")


def _stored(run: Path) -> tuple[int, int, int]:
    """Batches recorded, batches collected, answers stored."""
    db = sqlite3.connect(run / "store.sqlite")
    batches, collected = db.execute("SELECT COUNT(*), COALESCE(SUM(collected), 0) FROM batches").fetchone()
    answered = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    db.close()
    return int(batches), int(collected), int(answered)


def kill_then_resume(provider: BatchProvider, inp: Path, run: Path, log: Path) -> tuple[int, int, int]:
    """Judge ``inp`` into ``run`` through the provider's batches in another process, kill -9 it once its
    first batch line reached the server (in a server of a third process), then run it again to the end.
    Returns what the store held just after the kill."""
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    server = subprocess.Popen([sys.executable, "-c", _SERVER.format(
        root=str(ROOT), module=provider.server_module, port=port, log=str(log))])
    try:
        wait_for_port(port)
        script = _JUDGE.format(spec=provider.judge_spec(f"http://127.0.0.1:{port}/v1"),
                               temperature=provider.temperature)
        args = [sys.executable, "-c", script, str(inp), str(run)]
        proc = subprocess.Popen(args, env=env)
        deadline = time.time() + 30
        while time.time() < deadline and not any(x["kind"] == "batch_line" for x in logged(log)):
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)  # batches submitted, none ended (each takes a second)
        proc.wait()
        after_kill = _stored(run)
        subprocess.run(args, env=env, check=True, timeout=60)
    finally:
        server.kill()
        server.wait()
    return after_kill
