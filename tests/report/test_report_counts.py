"""One count of what was spent: the report, the manifest, the CLI summary and the store agree.

Before, the report summed judgments.jsonl, where an answer shared by several items (deduplication)
is repeated once per judgment, and its wall time was the last session's only.
"""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from polyjudge.api import BudgetExceeded, JudgeConfig, judge
from polyjudge.cli.main import main
from tests.engine.helpers import FAST_RETRY, duplicated_items, responder
from tests.helpers.openai_server import ScriptedServer

MODEL = "gpt-4o-mini"  # priced in the default table, so cost is counted


def _store_totals(run) -> tuple[int, int]:
    with sqlite3.connect(run / "store.sqlite") as db:
        prompt, completion = db.execute(
            "SELECT SUM(prompt_tokens), SUM(completion_tokens) FROM responses WHERE status='done'").fetchone()
    return int(prompt), int(completion)


def _judgment_totals(run) -> tuple[int, int]:
    rows = [json.loads(x) for x in (run / "judgments.jsonl").read_text().splitlines()]
    return (sum(r["usage"]["prompt_tokens"] for r in rows), sum(r["usage"]["completion_tokens"] for r in rows))


def test_report_manifest_summary_and_store_agree_over_two_sessions(tmp_path, capsys):
    items = duplicated_items()
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps(it.to_dict()) + "\n" for it in items))
    run = tmp_path / "run"
    with ScriptedServer(responder, latency_s=0.02) as srv:
        cfg = JudgeConfig(judges=(f"openai:{MODEL}@{srv.base_url}",), retry=FAST_RETRY, runs=2, concurrency=1,
                          max_cost=0.0001)
        with pytest.raises(BudgetExceeded):  # the first session stops at the cap
            judge(items, cfg, out=run)
        first = json.loads((run / "manifest.json").read_text())
        with pytest.raises(SystemExit) as exc:
            main(["judge", str(data), "-o", str(run), "--runs", "2", "--judge", f"openai:{MODEL}@{srv.base_url}"])
        assert exc.value.code == 0
    summary = capsys.readouterr().err + capsys.readouterr().out
    m = json.loads((run / "manifest.json").read_text())
    assert 0 < first["counts"]["sent_this_session"] < m["counts"]["distinct_requests"]

    prompt, completion = m["tokens"]["prompt"], m["tokens"]["completion"]
    assert (prompt, completion) == _store_totals(run)  # each request once
    judged = _judgment_totals(run)
    assert judged[0] > prompt and judged[1] > completion  # shared answers repeat in judgments.jsonl
    assert f"tokens: {prompt:,} prompt + {completion:,} completion  cost: ${m['cost_usd']:.4f}" in summary
    # wall time: both sessions
    assert m["wall_time_s"] == pytest.approx(first["wall_time_s_session"] + m["wall_time_s_session"], abs=0.002)
    assert m["wall_time_s"] > m["wall_time_s_session"]
    assert (f"wall time: {m['wall_time_s_session']:.1f}s this session, {m['wall_time_s']:.1f}s in all sessions"
            in summary)

    html = tmp_path / "report.html"
    with pytest.raises(SystemExit) as exc:
        main(["report", str(run), "-o", str(html)])
    assert exc.value.code == 0
    text = html.read_text()
    assert f"{prompt} prompt + {completion} completion" in text
    assert f"{judged[0]} prompt" not in text
    assert f"${m['cost_usd']:.4f}" in text and f"{m['wall_time_s']:.1f} s" in text
    per_judge = re.search(rf"<td>{re.escape(MODEL)}</td>(.*?)</tr>", text, re.S)
    assert per_judge is not None
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", per_judge.group(1))
    assert str(prompt) in cells and str(completion) in cells and f"${m['cost_usd']:.4f}" in cells
