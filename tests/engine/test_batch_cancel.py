"""``polyjudge batch cancel`` during a live ``--batch`` run: the cancelled lines are pending, not failures.

Before, the run exited 3 with every judgment "failed" (batch_cancelled) and the manifest counted
them as failures.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from polyjudge.api import JudgeConfig, judge
from polyjudge.engine.batches import cancel_batches
from polyjudge.engine.errors import RunInterrupted
from tests.engine.helpers import FAST_BATCH, FAST_RETRY, responder
from tests.engine.test_server_numbers import items
from tests.helpers.openai_server import ScriptedServer


def _cancel_when_submitted(srv: ScriptedServer, run) -> threading.Thread:
    def go() -> None:
        deadline = time.monotonic() + 30
        while not srv.batches and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)  # the run has recorded the batch's id
        cancel_batches(run)
    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread


def test_cancelling_a_live_batch_leaves_its_lines_pending_and_a_rerun_sends_them(tmp_path, caplog):
    run = tmp_path / "run"
    with ScriptedServer(responder, batch_delay_s=60) as srv:
        cfg = JudgeConfig(judges=(f"openai:m@{srv.base_url}",), batch=True, batch_options=FAST_BATCH,
                          retry=FAST_RETRY)
        canceller = _cancel_when_submitted(srv, run)
        with caplog.at_level("WARNING", logger="polyjudge"), pytest.raises(RunInterrupted) as exc:
            judge(items(20), cfg, out=run)
        canceller.join()
        assert exc.value.exit_code == 130 and "re-run the same command to resume" in str(exc.value)
        assert "was cancelled: 20 of its requests were not answered and are left pending" in caplog.text
        result = exc.value.result
        assert result.status_counts() == {"pending": 20} and result.request_failed_count() == 0
        m = json.loads((run / "manifest.json").read_text())
        assert m["counts"]["status_pending"] == 20 and not m["failures"].get("batch_cancelled")
        assert all(json.loads(x)["status"] == "pending" for x in (run / "judgments.jsonl").read_text().splitlines())
        srv.batch_delay_s = 0
        again = judge(items(20), cfg, out=run)
        assert len(srv.batches) == 2 and len(srv.batch_lines) == 40
    assert again.status_counts() == {"ok": 20}
