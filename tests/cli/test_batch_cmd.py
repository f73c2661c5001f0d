"""`polyjudge batch status|cancel`, `judge --batch`, the spending cap's exit code 4, --dry-run in USD."""

import asyncio
import json

import pytest

from polyjudge.backends.batch import BatchLine
from polyjudge.backends.openai_batch import OpenAIBatchClient
from polyjudge.data.readers import read_items
from polyjudge.engine.plan import plan_tasks
from polyjudge.engine.store import BatchLineRow, Store
from polyjudge.protocols import get_protocol
from tests.helpers.cli import cli
from tests.helpers.openai_server import ScriptedServer


@pytest.fixture(autouse=True)
def fast_polling(monkeypatch):
    """Poll the test server every few milliseconds instead of every few seconds."""
    import functools

    import polyjudge.api as api  # where the command line's spec builder takes BatchOptions from
    from polyjudge.engine.batches import BatchOptions

    monkeypatch.setattr(api, "BatchOptions", functools.partial(BatchOptions, poll_initial_s=0.01, poll_max_s=0.05))


def answer(body):
    return json.dumps({"score": 10 + len(body["messages"][-1]["content"]) % 50 + int(body.get("seed") or 0)})


def write_items(path, n=6):
    path.write_text("".join(json.dumps({"src_lang": "en", "tgt_lang": "de",
                                        "src": f"s{i % 4}", "tgt": f"t{i % 4}", "seg_id": str(i),
                                        "system": f"S{i % 2}"})
                            + "\n" for i in range(n)), encoding="utf-8")
    return path


def submit_as_a_killed_run_would(srv, inp, run_dir):
    """A batch submitted and recorded by a run that was then killed."""
    run_dir.mkdir()
    tasks = plan_tasks(read_items(inp), get_protocol("da"), ["m"], runs=1, temperature=0.0, seed=0)
    tasks = list({t.key: t for t in tasks}.values())

    async def go():
        client = OpenAIBatchClient("m", srv.base_url)
        try:
            return await client.submit([BatchLine(t.key, t.request) for t in tasks], "pj-test")
        finally:
            await client.aclose()
    info = asyncio.run(go())
    store = Store(run_dir / "store.sqlite")
    store.add_batch("pj-test", "openai", "m", [BatchLineRow(t.key, 0, t.key, t.prompt_hash, "m", 0) for t in tasks],
                    endpoint=srv.base_url, key_env="OPENAI_API_KEY")
    store.update_batch("pj-test", batch_id=info.batch_id, status=info.status)
    store.close()
    return info, len(tasks)


def test_status_and_cancel_then_resume(tmp_path, capsys):
    inp = write_items(tmp_path / "in.jsonl")
    run = tmp_path / "run"
    with ScriptedServer(answer, batch_delay_s=60) as srv:
        info, lines = submit_as_a_killed_run_would(srv, inp, run)
        assert cli("batch", "status", run) == 0
        out = capsys.readouterr().out
        assert info.batch_id in out and "in_progress" in out and f"holding {lines} request line(s)" in out
        assert cli("batch", "status", run, "--offline", "--format", "json") == 0
        rows = json.loads(capsys.readouterr().out)
        assert rows[0]["batch_id"] == info.batch_id and rows[0]["total"] == lines and rows[0]["collected"] is False
        assert cli("batch", "cancel", run) == 0
        assert "cancelling" in capsys.readouterr().out
        # the resumed run re-attaches: the cancelled lines are pending, never failures, and go out
        # again at once in a new batch (the user re-ran the command after cancelling)
        srv.batch_delay_s = 0
        assert cli("judge", inp, "-o", run, "--judge", f"openai:m@{srv.base_url}", "--batch", "-q") == 0
        assert len(srv.batches) == 2 and len(srv.batch_lines) == 2 * lines
    err = capsys.readouterr().err
    assert "deduplication: 6 judgments from 4 distinct requests" in err
    assert "batch: 4 answers through the Batch API" in err
    assert cli("batch", "status", run, "--offline") == 0
    assert "2 batch(es); 0 open" in capsys.readouterr().out


def test_status_of_a_directory_without_a_store_exits_2(tmp_path, capsys):
    assert cli("batch", "status", tmp_path) == 2
    assert "not a run directory" in capsys.readouterr().err


def test_judge_batch_from_the_command_line(tmp_path, capsys):
    inp = write_items(tmp_path / "in.jsonl")
    with ScriptedServer(answer) as srv:
        assert cli("judge", inp, "-o", tmp_path / "run", "--judge", f"openai:m@{srv.base_url}", "--batch",
                   "--samples-per-request", "2", "--runs", "2", "-q") == 0
        assert srv.requests == [] and len(srv.batch_lines) == 4 and srv.batch_lines[0]["body"]["n"] == 2
    assert "samples per request: 4 requests answered several runs each" in capsys.readouterr().err


def test_spending_cap_exits_4_and_a_higher_cap_resumes(tmp_path, capsys):
    inp = write_items(tmp_path / "in.jsonl", n=12)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"m": {"input": 1000, "output": 1000}}))
    with ScriptedServer(answer) as srv:
        args = ["judge", inp, "-o", tmp_path / "run", "--judge", f"openai:m@{srv.base_url}", "--prices", prices,
                "-q", "--runs", "2"]
        assert cli(*args, "--max-cost", "0.6") == 4
        err = capsys.readouterr().err
        assert "polyjudge: error: spending cap reached: $" in err and "left of the $0.6000 cap" in err
        assert "of the $0.6000 cap" in err.split("tokens:")[1]  # the summary line says it too
        first = len(srv.requests)
        assert cli(*args, "--max-cost", "50") == 0
        sent = [(b["messages"][-1]["content"], b["seed"]) for b in srv.requests]
    assert 0 < first < len(sent) and len(sent) == len(set(sent))


def test_dry_run_prints_usd_with_and_without_batch_and_samples(tmp_path, capsys):
    inp = write_items(tmp_path / "in.jsonl")
    assert cli("judge", inp, "--judge", "openai:gpt-4.1-mini@http://127.0.0.1:9/v1", "--runs", "10",
               "--dry-run") == 0
    out = capsys.readouterr().out
    assert "40 requests to send (0 of 60 already in the store)" in out
    assert "20 judgment(s) answered by a request another item also sends" in out
    for label in ("one request per run, live", "one request per run, batch", "10 samples per request, live",
                  "10 samples per request, batch"):
        assert label in out
